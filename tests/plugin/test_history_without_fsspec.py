"""Saved runs in a local directory need only the standard library: no fsspec, no ``remote`` extra.

The processes below cannot import fsspec: a ``-p nofsspec`` plugin (pytest) or a ``-c`` preamble
(the console script) puts ``sys.modules["fsspec"] = None`` before pytest-trt runs, so any
``import fsspec`` raises ImportError exactly as in an install without the ``remote`` extra.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_trt.errors import UsageError
from pytest_trt.history.store import PREFIX

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "example_suite"
BLOCK = "import sys; sys.modules['fsspec'] = None\n"


@pytest.fixture
def project(pytester):
    pytester.makeini("[pytest]\n")
    (pytester.path / "models").mkdir()
    shutil.copy(SUITE / "models" / "encoder_opset17.onnx", pytester.path / "models" / "encoder_opset17.onnx")
    shutil.copy(SUITE / "models" / "encoder_opset14.onnx", pytester.path / "models" / "encoder_opset14.onnx")
    shutil.copy(SUITE / "conftest.py", pytester.path / "conftest.py")
    shutil.copy(SUITE / "test_encoder_fp16.py", pytester.path / "test_encoder_fp16.py")
    (pytester.path / "nofsspec.py").write_text(BLOCK)
    return pytester


def _env() -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST_", "PYTEST_TRT_", "PYTEST_ADDOPTS"))}


def test_saving_and_comparing_runs_in_a_directory_needs_no_fsspec(project):
    base = [sys.executable, "-m", "pytest", "-p", "nofsspec", "-p", "no:cacheprovider", "-q",
            f"--trt-cache-dir={project.path / 'cache'}", "--trt-fp16", "-k", "opset17"]
    probe = subprocess.run([*base, "--co"], cwd=project.path, env=_env(), capture_output=True, text=True, timeout=300)
    assert probe.returncode == 0, probe.stdout + probe.stderr
    saved = subprocess.run([*base, "--trt-save=nofs"], cwd=project.path, env=_env(), capture_output=True, text=True,
                           timeout=300)
    assert saved.returncode == 0, saved.stdout + saved.stderr
    assert "pytest-trt[remote]" not in saved.stdout + saved.stderr
    assert [p.name.rsplit("-", 1)[1] for p in (project.path / ".trt-runs" / PREFIX).iterdir()] == ["nofs"]
    compared = subprocess.run([*base, "--trt-compare-run=nofs"], cwd=project.path, env=_env(), capture_output=True,
                              text=True, timeout=300)
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert "output(s) compared" in compared.stdout
    listed = subprocess.run([sys.executable, "-c", BLOCK + "from pytest_trt.cli import main; "
                             "sys.exit(main(['runs', 'list']))"], cwd=project.path, env=_env(), capture_output=True,
                            text=True, timeout=120)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert "saved runs in" in listed.stdout and "-nofs" in listed.stdout


class _Missing:
    def __getattr__(self, name):
        raise ImportError("No module named 'fsspec'")


def test_a_url_without_fsspec_names_saved_runs_and_the_extra(monkeypatch):
    from pytest_trt.cache.remote import transport

    monkeypatch.setattr(transport, "fsspec", _Missing())
    with pytest.raises(UsageError) as caught:
        transport.open_filesystem("s3://bucket/runs", None, flag="ini trt_storage", what="saved runs")
    text = str(caught.value)
    assert text.startswith("ini trt_storage s3://bucket/runs: fsspec (for saved runs at a URL) is not installed")
    assert "pip install 'pytest-trt[remote]'" in text
    # a directory, given as a path or file://, never asks for fsspec
    assert transport.open_filesystem("/srv/runs", None)[1] == "/srv/runs"
    assert transport.open_filesystem("file:///srv/runs", None)[1] == "/srv/runs"


NO_REMOTE = "import sys; sys.modules['fsspec'] = None; sys.modules['cryptography'] = None\n"


def test_a_url_without_the_remote_extra_names_saved_runs_the_option_and_the_extra(project):
    """``file://`` and ``https://`` runs are signed (cryptography): without the extra the message named
    "the remote cache" and neither the option nor saved runs (review3 row 5)."""
    (project.path / "noremote.py").write_text(NO_REMOTE)
    url = (project.path / "urlruns").as_uri()
    saved = subprocess.run([sys.executable, "-m", "pytest", "-p", "noremote", "-p", "no:cacheprovider", "-q",
                            f"--trt-cache-dir={project.path / 'cache'}", "--trt-fp16", "-k", "opset17",
                            "--trt-save=u1", f"--trt-storage={url}"],
                           cwd=project.path, env=_env(), capture_output=True, text=True, timeout=300)
    assert saved.returncode == 4, saved.stdout + saved.stderr
    assert (f"--trt-storage={url}: saved runs at a URL (file:// too) are signed and verified with the "
            f"`cryptography` package: install the remote extra: pip install 'pytest-trt[remote]'; or save to a "
            f"directory (--trt-storage=DIR needs no extra)") in saved.stderr
    assert "remote cache" not in saved.stderr and not (project.path / "urlruns").exists()
    for where in (url, "https://127.0.0.1:9/runs"):
        listed = subprocess.run([sys.executable, "-c", NO_REMOTE + "from pytest_trt.cli import main; "
                                 f"sys.exit(main(['runs', 'list', '--storage={where}']))"], cwd=project.path,
                                env=_env(), capture_output=True, text=True, timeout=120)
        assert listed.returncode == 2, listed.stdout + listed.stderr
        assert f"--storage={where}: saved runs at a URL (file:// too) are signed" in listed.stderr
        assert "pytest-trt[remote]" in listed.stderr and "--storage=DIR" in listed.stderr
