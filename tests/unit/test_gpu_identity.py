"""Which GPU CUDA will use, resolved through the GPU UUID, and what the cache key then says.

A FAKE ``nvidia-smi`` (a shell script put first on PATH, run as a real subprocess) describes a
machine with two different GPU models; ``CUDA_VISIBLE_DEVICES`` is set as users and
``--trt-gpus`` set it: indices, UUIDs, UUID prefixes, MIG ids. Nothing here touches a GPU.
"""

from __future__ import annotations

import os
import stat

import pytest

from pytest_trt.backends.tensorrt import backend as trt_backend
from pytest_trt.core import environment, runstate
from pytest_trt.glue import xdist_gpus

H100 = "GPU-1f0e2c44-5b6a-4c1d-9e8f-0a1b2c3d4e5f"
A100 = "GPU-9a8b7c6d-0e1f-4a2b-8c3d-4e5f6a7b8c9d"
MIG = "MIG-4c2f1e0d-aaaa-5bbb-9ccc-dddddddddddd"
SMI = f"""#!/bin/sh
case "$1" in
  -L)
    echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: {H100})"
    echo "GPU 1: NVIDIA A100-SXM4-40GB (UUID: {A100})"
    echo "  MIG 1g.5gb      Device  0: (UUID: {MIG})" ;;
  --query-gpu=*)
    echo "0, {H100}, NVIDIA H100 80GB HBM3, 9.0, 580.65.06, 81559 MiB"
    echo "1, {A100}, NVIDIA A100-SXM4-40GB, 8.0, 580.65.06, 40960 MiB" ;;
  *)
    echo "| NVIDIA-SMI 580.65.06   Driver Version: 580.65.06   CUDA Version: 13.0 |" ;;
esac
"""


@pytest.fixture
def machine(tmp_path, monkeypatch):
    exe = tmp_path / "nvidia-smi"
    exe.write_text(SMI)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    environment.forget_gpus()
    with runstate.scoped():  # the run's memos (cuda_driver_version) start empty and end with the test
        yield monkeypatch
    environment.forget_gpus()


def _visible(monkeypatch, value):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
    environment.forget_gpus()
    return [g.name for g in environment.gpus()]


@pytest.mark.parametrize("value, names", [
    (None, ["NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB"]),
    ("1", ["NVIDIA A100-SXM4-40GB"]),
    ("1,0", ["NVIDIA A100-SXM4-40GB", "NVIDIA H100 80GB HBM3"]),
    (A100, ["NVIDIA A100-SXM4-40GB"]),
    (f"{A100},{H100}", ["NVIDIA A100-SXM4-40GB", "NVIDIA H100 80GB HBM3"]),
    ("GPU-9a8b7c6d", ["NVIDIA A100-SXM4-40GB"]),  # a unique UUID prefix, as CUDA accepts
    (A100[4:], ["NVIDIA A100-SXM4-40GB"]),  # without the "GPU-" prefix
    (MIG, ["NVIDIA A100-SXM4-40GB"]),  # a MIG instance: its parent GPU
    ("1,7,0", ["NVIDIA A100-SXM4-40GB"]),  # CUDA stops at the first invalid entry
    ("GPU-", []),  # ambiguous prefix: names no device
    ("-1", []),
    ("", []),
])
def test_visible_devices_resolve_through_the_uuid(machine, value, names):
    if value is None:
        environment.forget_gpus()
        assert [g.name for g in environment.gpus()] == names
    else:
        assert _visible(machine, value) == names


def test_cache_key_names_the_model_cuda_uses_not_the_instance(machine):
    _visible(machine, A100)
    a100 = trt_backend.device_info()
    assert a100 == {"gpu": "NVIDIA A100-SXM4-40GB", "compute_capability": "8.0", "driver": "580.65.06",
                    "cuda": "13.0"}
    _visible(machine, "1")
    assert trt_backend.device_info() == a100  # same GPU by index: same key
    _visible(machine, H100)
    assert trt_backend.device_info()["gpu"] == "NVIDIA H100 80GB HBM3"
    assert all("GPU-" not in str(v) for v in a100.values())  # the UUID (the instance) is never in the key


def test_workers_get_one_gpu_each_and_their_keys_name_their_model(machine):
    """--trt-gpus mapping with UUIDs in CUDA_VISIBLE_DEVICES: each worker's device identity."""
    machine.setenv("CUDA_VISIBLE_DEVICES", f"{A100},{H100}")
    environment.forget_gpus()
    tokens = xdist_gpus.visible_devices()
    assert tokens == [A100, H100]
    mapping = xdist_gpus.assign_devices(["gw0", "gw1", "gw2"], tokens, None)
    assert mapping == {"gw0": A100, "gw1": H100, "gw2": A100}
    seen = {}
    for worker, token in mapping.items():  # what each worker sees once the controller set its env
        machine.setenv("CUDA_VISIBLE_DEVICES", token)
        environment.forget_gpus()
        assert len(environment.gpus()) == 1
        seen[worker] = trt_backend.device_info()["gpu"]
    assert seen == {"gw0": "NVIDIA A100-SXM4-40GB", "gw1": "NVIDIA H100 80GB HBM3", "gw2": "NVIDIA A100-SXM4-40GB"}


def test_index_tokens_for_workers(machine):
    tokens = xdist_gpus.visible_devices()
    assert tokens == ["0", "1"]
    assert xdist_gpus.assign_devices(["gw0", "gw1"], tokens, 2) == {"gw0": "0", "gw1": "1"}
    with pytest.raises(pytest.UsageError, match="--trt-gpus 3 but only 2 visible GPU"):
        xdist_gpus.assign_devices(["gw0", "gw1", "gw2"], tokens, 3)


@pytest.mark.parametrize("tx, dist, ids", [
    (["popen", "popen"], "load", ["gw0", "gw1"]),          # -n 2, as xdist spells it by pytest_configure
    (["3*popen", "ssh=host//python=python3"], "load", ["gw0", "gw1", "gw2", "gw3"]),
    (["popen"], "no", None),
    ([], "load", None),
])
def test_worker_ids_from_the_public_tx_option(tx, dist, ids):
    from types import SimpleNamespace

    config = SimpleNamespace(option=SimpleNamespace(tx=tx, dist=dist))
    assert xdist_gpus._worker_ids(config) == ids


def test_every_record_names_the_gpu_its_process_runs_on(machine):
    """Engine and accuracy records carry the GPU (name, UUID) of their process: under --trt-gpus the
    worker's assigned one (its CUDA_VISIBLE_DEVICES); null on the emulate backend (CPU)."""

    from pytest_trt.backends import get_backend
    from pytest_trt.report.json_report import entry_of_test
    from pytest_trt.run.session import BuildEvent, TrtSession
    from pytest_trt.run.settings import Settings

    def worker(worker_id, token, backend="tensorrt"):
        machine.setenv("CUDA_VISIBLE_DEVICES", token)
        machine.setenv("PYTEST_XDIST_WORKER", worker_id)
        environment.forget_gpus()
        session = TrtSession(settings=Settings(), backend=get_backend(backend), backend_reason="test")
        return session.record_gpu()

    assert worker("gw0", "0") == {"name": "NVIDIA H100 80GB HBM3", "uuid": H100, "cuda_visible_devices": "0",
                                  "worker": "gw0"}
    gw1 = worker("gw1", A100)
    assert (gw1["name"], gw1["uuid"], gw1["cuda_visible_devices"]) == ("NVIDIA A100-SXM4-40GB", A100, A100)
    assert worker("gw1", "1", backend="emulate") is None
    assert worker("gw0", "-1") is None  # no GPU visible

    event = BuildEvent("m.onnx", "fp16", "tensorrt", False, 1.5, "k", gw1)
    res = {"nodeid": "t.py::test", "outcome": "passed", "records": [
        {"kind": "engine", **event.to_json()},
        {"kind": "accuracy", "model": "m.onnx", "backend": "tensorrt", "policy": "fp16", "seed": 0, "gpu": gw1,
         "baseline": "fp32",
         "result": {"passed": True, "outputs": {}}}]}
    entry = entry_of_test(res)
    assert entry["engines"][0]["gpu"] == gw1 and entry["accuracy"][0]["gpu"] == gw1


def test_cuda_baselines_are_keyed_by_gpu_model_not_instance(machine, tmp_path):
    """A CUDA baseline is cached per GPU model (like engines): the same model under another
    CUDA_VISIBLE_DEVICES spelling is a hit, another model is a new entry. ONNX Runtime's CPU
    provider computes the values here (no GPU); the key is what is under test."""
    from pytest_trt.cache import ArtifactCache
    from pytest_trt.model.testing_models import decomposed_layernorm_block, sample_feeds
    from pytest_trt.reference import baseline

    def cpu_session(key, make_bytes, *, provider="cpu", label="model"):
        return real_cached_session(key, make_bytes, provider="cpu", label=label)

    real_cached_session = baseline.cached_session
    machine.setattr(baseline, "cached_session", cpu_session)
    machine.setattr(baseline, "cuda_placement", lambda model, feeds: {})
    model = decomposed_layernorm_block()
    feeds = sample_feeds(model)
    cache = ArtifactCache(tmp_path / "cache")
    for visible in (A100, "1", H100, "0"):
        _visible(machine, visible)
        baseline.fp32_baseline(model, feeds, provider="cuda", cache=cache)
    assert (cache.stats.builds, cache.stats.local_hits) == (2, 2)  # one entry per GPU model
    keys = sorted(p.name for p in (tmp_path / "cache" / "baseline").iterdir())
    assert len(keys) == 2
    _visible(machine, A100)
    assert baseline.cuda_device_part() == {"gpu": "NVIDIA A100-SXM4-40GB", "compute_capability": "8.0",
                                           "driver": "580.65.06"}
