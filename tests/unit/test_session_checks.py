"""``TrtSession.create`` refuses what the session cannot honour (issue 15 item 1): a typing the
installed TensorRT lacks (checked against the fake TensorRT module of tests/unit, named as a
fake), and a baseline provider that is not there."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from pytest_trt.backends.tensorrt import backend as trt_backend
from pytest_trt.backends.tensorrt import compat as trt_compat
from pytest_trt.core import runstate
from pytest_trt.errors import UsageError
from pytest_trt.run.session import TrtSession
from pytest_trt.run.settings import Settings

_spec = importlib.util.spec_from_file_location("_pytest_trt_fake_tensorrt", Path(__file__).with_name("fake_tensorrt.py"))
fake_tensorrt = sys.modules.setdefault("_pytest_trt_fake_tensorrt", importlib.util.module_from_spec(_spec))
if not hasattr(fake_tensorrt, "make_fake_tensorrt"):
    _spec.loader.exec_module(fake_tensorrt)


@pytest.fixture
def fake_trt(monkeypatch):
    previous = runstate.install(runstate.RunState())  # fresh backend instances (no cached import error)

    def install(version):
        fake = fake_tensorrt.make_fake_tensorrt(version)
        monkeypatch.setitem(sys.modules, fake.__name__, fake)
        monkeypatch.setattr(trt_backend, "tensorrt_unavailable_reason", lambda module="tensorrt": None)
        monkeypatch.setattr(trt_backend, "installed_version", lambda backend: version)
        monkeypatch.setattr(trt_compat, "installed_version", lambda backend: version)
        monkeypatch.setattr("pytest_trt.reference.baseline.check_runtime", lambda *a, **k: None)  # no onnxruntime-gpu here

    yield install
    runstate.restore(previous)


def _settings(tmp_path, **kw):
    return Settings(cache_dir=tmp_path / "cache", sources={"trt_typing": "--trt-typing",
                                                           "trt_backend": "--trt-backend"}, **kw)


def test_weak_typing_on_tensorrt_11_is_a_usage_error(fake_trt, tmp_path):
    fake_trt("11.4.0.106")
    with pytest.raises(UsageError, match=r"--trt-typing weak cannot be honoured by tensorrt \(requested with --trt-backend tensorrt\): "
                                         r"TensorRT 11 has no "
                                         r"weak typing"):
        TrtSession.create(_settings(tmp_path, backend="tensorrt", typing="weak"))
    session = TrtSession.create(_settings(tmp_path, backend="tensorrt", typing="strong"))
    assert session.backend.name == "tensorrt"


def test_the_cli_names_its_own_typing_flag(fake_trt, tmp_path):
    # the console script's session says --typing (the source it passes), not --trt-typing
    from pytest_trt.cli import build_parser
    from pytest_trt.cli.common import session_from_args

    fake_trt("11.4.0.106")
    args = build_parser().parse_args(["compare", "m.onnx", "--backend", "tensorrt", "--typing", "weak",
                                      f"--cache-dir={tmp_path / 'cache'}"])
    with pytest.raises(UsageError, match=r"^--typing weak cannot be honoured by tensorrt \(requested with --backend tensorrt\): "
                                         r"TensorRT 11 has no weak"):
        session_from_args(args)


def test_weak_typing_on_tensorrt_10_is_accepted(fake_trt, tmp_path):
    fake_trt("10.13.0.35")
    assert TrtSession.create(_settings(tmp_path, backend="tensorrt", typing="weak")).backend.name == "tensorrt"


def test_baseline_provider_that_is_not_there_is_a_usage_error(tmp_path):
    pytest.importorskip("onnxruntime")
    import onnxruntime

    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("this ONNX Runtime has the CUDA provider")
    with pytest.raises(UsageError, match="--trt-baseline-provider cuda: ONNX Runtime's CUDAExecutionProvider is "
                                         "not available here"):
        TrtSession.create(_settings(tmp_path, backend="emulate", baseline_provider="cuda"))


def test_baseline_provider_messages_name_the_interface_used(tmp_path):
    """The API (``make_session(provider=...)``) has no pytest option: its message names the
    provider, not ``--trt-baseline-provider``; the pytest check passes its own spelling."""
    onnxruntime = pytest.importorskip("onnxruntime")
    from pytest_trt.reference.baseline import check_runtime, make_session

    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("this ONNX Runtime has the CUDA provider")
    with pytest.raises(UsageError, match="^baseline provider 'cuda': ") as info:
        make_session(b"", provider="cuda")
    assert "--trt-" not in str(info.value)
    with pytest.raises(UsageError, match="^ini trt_baseline_provider cuda: "):
        check_runtime("cuda", source="ini trt_baseline_provider")


def test_cuda_session_with_tf32_on_is_a_usage_error():
    """check_cuda_session reads the options ONNX Runtime reports (a stand-in session object:
    the real CUDA provider runs in tests/gpu/test_cuda_baseline.py)."""
    from pytest_trt.reference.baseline import check_cuda_session

    class ReportedSession:  # the two methods of onnxruntime.InferenceSession that it reads
        def __init__(self, tf32):
            self.tf32 = tf32

        def get_providers(self):
            return ["CUDAExecutionProvider", "CPUExecutionProvider"]

        def get_provider_options(self):
            return {"CUDAExecutionProvider": {"use_tf32": self.tf32, "device_id": "0"}}

    assert check_cuda_session(ReportedSession("0"), "m.onnx")["use_tf32"] == "0"
    with pytest.raises(UsageError, match="reports use_tf32='1' for m.onnx .*TF32 off"):
        check_cuda_session(ReportedSession("1"), "m.onnx")
