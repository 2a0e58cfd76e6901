"""Shared helpers of the reliability suite: models on disk, pytest runs in subprocesses, cache events.

Speed matters here (the whole directory runs in CI in about a minute on 2 cores):

* In-process pytester runs drop every module first imported inside the inner run and
  import it again in the next one. The pytest-trt modules an inner run uses, ONNX Runtime
  and Hypothesis (whose pytest plugin imports all of Hypothesis in its terminal summary)
  are imported here, once, so inner runs reuse them.
* Subprocess runs disable Hypothesis' pytest plugin (``-p no:hypothesispytest``: it costs
  a second or more per run and plays no part in these tests) and write bytecode to a
  per-session ``PYTHONPYCACHEPREFIX`` even where ``PYTHONDONTWRITEBYTECODE`` is set, so
  only the first subprocess compiles pytest-trt, numpy and onnx.
"""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper


# Pre-import what inner pytester runs use (see the module docstring): every pytest-trt
# module (some keep module-level caches of Model objects, which must not outlive the
# class they were made from), ONNX Runtime, and Hypothesis.
def _preimport() -> None:
    import pkgutil

    import pytest_trt

    names = ["onnxruntime", "hypothesis", "hypothesis.strategies", "hypothesis.internal.observability"]
    # (not __main__, which runs the CLI; not the deprecated shims of issue 27, which only
    # re-export and would warn DeprecationWarning)
    shims = {"pytest_trt.baseline", "pytest_trt.upcast", "pytest_trt.remote_cache", "pytest_trt.hookspec"}
    names += [m.name for m in pkgutil.walk_packages(pytest_trt.__path__, "pytest_trt.")
              if not m.name.endswith("__main__") and m.name not in shims]
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:  # optional dependencies (TensorRT, matplotlib) are imported lazily by their users
            pass


_preimport()

from pytest_trt.model.testing_models import decomposed_layernorm_block, graph_model  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
ENCODER = REPO / "example_suite" / "models" / "encoder_opset14.onnx"
#: Options of every subprocess pytest run (see the module docstring).
PYTEST_ARGS = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-q", "-rA", "--color=no")
#: Seconds a subprocess run may take before the test gives up on it.
RUN_TIMEOUT = 120


# ----------------------------------------------------------------------------- models


class Models:
    """Paths of small models written once per session (see :func:`models`)."""

    def __init__(self, root: Path):
        self.root = root
        #: dense + decomposed LayerNorm + MatMul, hidden_states float32[1, 8, 64] -> output [1, 8, 128]
        self.layernorm = root / "layernorm.onnx"
        #: Sqrt(x): NaN for negative inputs, in the FP32 baseline and in every engine alike
        self.nan = root / "nan_sqrt.onnx"
        #: one com.example::MyOp node that no backend implements
        self.custom = root / "custom_op.onnx"
        #: the layernorm model with its weights in external data whose file was deleted
        self.external = root / "external" / "model.onnx"
        #: random bytes, the first half of a real model, an empty file
        self.garbage = root / "garbage.onnx"
        self.truncated = root / "truncated.onnx"
        self.empty = root / "empty.onnx"
        #: a node reading a tensor nothing produces (onnx.checker rejects it)
        self.unchecked = root / "dangling_input.onnx"
        #: a model with an int64 input (token ids): its value range must be declared
        self.ids = root / "ids.onnx"


def _write_models(root: Path) -> Models:
    m = Models(root)
    onnx.save(decomposed_layernorm_block(hidden=64, seq=8, batch=1), m.layernorm)
    onnx.save(graph_model([helper.make_node("Sqrt", ["x"], ["y"], name="/sqrt/Sqrt")],
                          [("x", TensorProto.FLOAT, [2, 8])], [("y", TensorProto.FLOAT, [2, 8])]), m.nan)
    custom = helper.make_model(
        helper.make_graph([helper.make_node("MyOp", ["x"], ["y"], name="/custom/MyOp", domain="com.example")],
                          "custom", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])]),
        opset_imports=[helper.make_opsetid("", 14), helper.make_opsetid("com.example", 1)])
    custom.ir_version = 8
    onnx.save(custom, m.custom)
    m.external.parent.mkdir()
    onnx.save(decomposed_layernorm_block(hidden=64, seq=8, batch=1), m.external, save_as_external_data=True,
              all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    (m.external.parent / "weights.bin").unlink()
    m.garbage.write_bytes(bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8)))
    data = ENCODER.read_bytes()
    m.truncated.write_bytes(data[: len(data) // 2])
    m.empty.write_bytes(b"")
    dangling = graph_model([helper.make_node("Add", ["x", "nowhere"], ["y"], name="/add/Add")],
                           [("x", TensorProto.FLOAT, [2])], [("y", TensorProto.FLOAT, [2])], check=False)
    onnx.save(dangling, m.unchecked)
    ids = graph_model([helper.make_node("Cast", ["ids"], ["y"], name="/cast/Cast", to=TensorProto.FLOAT)],
                      [("ids", TensorProto.INT64, [1, 4])], [("y", TensorProto.FLOAT, [1, 4])])
    onnx.save(ids, m.ids)
    return m


@pytest.fixture(scope="session")
def models(tmp_path_factory) -> Models:
    """Small models on disk (bad ones included), shared by the whole session."""
    return _write_models(tmp_path_factory.mktemp("models"))


# ----------------------------------------------------------------------------- subprocess runs


@pytest.fixture(scope="session")
def subprocess_env(tmp_path_factory) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "TRT_FAULT_"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path_factory.mktemp("pycache"))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return env


class Run:
    """A pytest subprocess: ``proc``, and after :meth:`finish` its ``rc`` and combined ``out``."""

    def __init__(self, proc: subprocess.Popen, what: str):
        self.proc, self.what = proc, what
        self.rc: int | None = None
        self.out = ""

    @property
    def pid(self) -> int:
        return self.proc.pid

    def finish(self, timeout: float = RUN_TIMEOUT) -> Run:
        try:
            out, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, _ = self.proc.communicate()
            pytest.fail(f"{self.what} did not finish within {timeout}s:\n{out}")
        self.rc, self.out = self.proc.returncode, out
        return self

    def outcomes(self) -> dict[str, int]:
        """Counts from pytest's final summary line ("1 failed, 3 passed in 2.1s")."""
        import re

        last = [line for line in self.out.splitlines() if re.search(r"\d+ (passed|failed|error)", line)]
        if not last:
            return {}
        return {k: int(n) for n, k in re.findall(r"(\d+) (\w+)", last[-1]) if not k.startswith("s")}


@pytest.fixture(scope="session")
def finished_pytest(subprocess_env):
    """``run(cwd, *args, env=None) -> Run``, finished: a real ``python -m pytest`` run (for module fixtures)."""

    def run(cwd: Path, *args: str, env: dict | None = None) -> Run:
        cmd = [sys.executable, "-m", "pytest", *PYTEST_ARGS, *args]
        proc = subprocess.Popen(cmd, cwd=cwd, env={**subprocess_env, **(env or {})}, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        return Run(proc, " ".join(cmd)).finish()

    return run


def default_sigint() -> None:
    """In the child before exec: SIGINT as Python expects it (KeyboardInterrupt), whatever the launcher
    did. A shell that starts the suite as `cmd &` without job control ignores SIGINT for it, exec keeps
    an ignored signal, and a child that ignores SIGINT never sees the Ctrl-C a test sends (it hung
    until the test's timeout, 120 s)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def start_pytest(subprocess_env):
    """``start(cwd, *args, env=None) -> Run``: a real ``python -m pytest`` run; killed at teardown if alive."""
    runs: list[Run] = []

    def start(cwd: Path, *args: str, env: dict | None = None, prefix: tuple = ()) -> Run:
        cmd = [*prefix, sys.executable, "-m", "pytest", *PYTEST_ARGS, *args]
        proc = subprocess.Popen(cmd, cwd=cwd, env={**subprocess_env, **(env or {})}, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, preexec_fn=default_sigint)
        run = Run(proc, " ".join(cmd))
        runs.append(run)
        return run

    yield start
    for run in runs:
        if run.proc.poll() is None:
            run.proc.kill()
        run.proc.communicate(timeout=30)
