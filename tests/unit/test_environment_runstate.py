"""What core/environment.py found is remembered per run (runstate), not per process.

A fake ``nvidia-smi`` (a shell script first on PATH) that counts its calls stands in for the GPU.
"""

from __future__ import annotations

import os
import stat

import pytest

from pytest_trt.core import environment, runstate

SMI = """#!/bin/sh
echo x >> "$(dirname "$0")/calls"
echo "0, GPU-1f0e2c44-5b6a-4c1d-9e8f-0a1b2c3d4e5f, NVIDIA H100 80GB HBM3, 9.0, 580.65.06, 81559 MiB"
"""


@pytest.fixture
def smi_calls(tmp_path, monkeypatch):
    exe = tmp_path / "nvidia-smi"
    exe.write_text(SMI)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)

    def calls() -> int:
        log = tmp_path / "calls"
        return len(log.read_text().splitlines()) if log.exists() else 0

    return calls


def test_gpus_are_asked_once_per_run_and_forgotten_on_request(smi_calls):
    with runstate.scoped():
        assert [g.name for g in environment.gpus()] == ["NVIDIA H100 80GB HBM3"]
        environment.gpus()
        assert smi_calls() == 1
        environment.forget_gpus()
        environment.gpus()
        assert smi_calls() == 2
    with runstate.scoped():  # a new run (a new pytest session) asks again
        environment.gpus()
        assert smi_calls() == 3


def test_versions_are_remembered_per_run():
    with runstate.scoped() as state:
        versions = environment.library_versions()
        assert versions["numpy"] == environment.dist_version("numpy") is not None
        assert environment.library_versions() is versions
        assert environment.dist_version("no-such-distribution-pytest-trt") is None
        assert {"environment.library_versions", "environment.dist_versions"} <= set(state.names())
    with runstate.scoped():
        assert environment.library_versions() is not versions
