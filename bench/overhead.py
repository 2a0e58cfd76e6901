"""Plugin overhead per accuracy test, warm cache: ``trt.check()`` vs a hand-written script.

Run: ``python bench/overhead.py [--tests 60] [--rounds 5] [--shapes 2x16 8x128] [--cpu-time] [--source DIR]``

``--cpu-time`` times with ``time.process_time`` (CPU time of the process, all its threads)
instead of the wall clock: steadier on a loaded machine, where the wall time of a few
milliseconds mostly measures the wait for a core.

``--source DIR`` measures the pytest_trt package under DIR (e.g. an older checkout from
``git archive``, put first on ``PYTHONPATH``) instead of this one, for a before/after.

The work of one accuracy test on the example encoder (``encoder_opset14.onnx``, FP16 with the
LayerNorm and Softmax kept FP32, the example suite's policy): generate inputs, run the FP32
ONNX Runtime baseline, run the emulation graph, compare. Measured three ways, side by side,
in one run of this script:

* ``script``: a hand-written loop doing exactly that with ONNX Runtime and numpy (sessions
  created once, graph optimizations off like pytest-trt's, inputs from ``numpy.random``,
  an allclose-style check ``|a - e| <= atol + rtol * |e|``). The floor: no pytest, no plugin.
* ``pytest, by hand``: the same code as the script, as N pytest tests (no pytest-trt
  fixture): what pytest itself costs per test (setup, call, teardown, reporting).
* ``pytest, empty``: N empty tests (``def test_empty(i): pass``, parametrized like the others):
  pytest's own fixed cost per test, which no plugin can go below. ``(trt - empty) / script``
  is what the plugin and the work cost over that floor, against the script.
* ``pytest-trt``: N identical tests ``@pytest.mark.trt(...)`` + ``trt.check()`` on a warm
  ``--trt-cache-dir``: marker parsing, the memoized model/plan/engine, generated inputs, the
  FP32 baseline read from the cache (validated), the emulation run, the comparison with
  figures, the records for the reports.

Per-test time inside pytest is the wall time of the whole test protocol (setup + call +
teardown + reports), taken by a ``pytest_runtest_protocol`` wrapper in the generated
conftest; the first test of each kind is dropped (it creates the ONNX Runtime sessions).
For each kind: the median over the tests, best (lowest) of ``--rounds`` pytest sessions
(and of as many script runs). Each pytest round is one subprocess running the three pytest kinds,
one file after another, so they see nearly the same load.

Target (issue 10): ``pytest-trt`` within 1.2x of ``script``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from _machine import machine  # noqa: E402  (bench/ is run as scripts)

ROOT = Path(__file__).resolve().parent.parent
_SOURCE = Path(sys.argv[sys.argv.index("--source") + 1]).resolve() if "--source" in sys.argv[:-1] else None
sys.path.insert(0, str(_SOURCE or ROOT))

ENCODER = ROOT / "example_suite" / "models" / "encoder_opset14.onnx"
KEEP = ["*/LayerNorm/*", "op:Softmax"]
RTOL, ATOL = 1e-2, 1e-2

CONFTEST = textwrap.dedent(
    """
    import json, os, time
    import pytest

    _TIMES = {}
    _CLOCK = getattr(time, os.environ.get("OVERHEAD_CLOCK", "perf_counter"))


    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        t0 = _CLOCK()
        try:
            return (yield)
        finally:
            _TIMES.setdefault(item.path.stem, []).append(_CLOCK() - t0)


    def pytest_sessionfinish(session):
        with open(os.environ["OVERHEAD_OUT"], "w") as f:
            json.dump(_TIMES, f)
    """
)

# The hand-written work, shared verbatim by the script and the "pytest, by hand" tests.
HANDWRITTEN = textwrap.dedent(
    """
    import numpy as np
    import onnxruntime as ort


    def make_session(path_or_bytes):
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.log_severity_level = 3
        return ort.InferenceSession(path_or_bytes, sess_options=options, providers=["CPUExecutionProvider"])


    def one_check(baseline, emulation, shape, seed, rtol, atol):
        rng = np.random.default_rng(seed)
        feeds = {"hidden_states": rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)}
        expected = baseline.run(None, feeds)[0]
        actual = emulation.run(None, feeds)[0]
        ok = bool(np.all(np.abs(actual - expected) <= atol + rtol * np.abs(expected)))
        assert ok
        return ok
    """
)


def write_project(root: Path, n: int, batch: int, seq: int, emulation: Path) -> None:
    (root / "conftest.py").write_text(CONFTEST)
    (root / "handwritten.py").write_text(HANDWRITTEN)
    shape = (batch, seq, 64)
    (root / "test_a_plugin.py").write_text(textwrap.dedent(f"""
        import pytest

        @pytest.mark.parametrize("i", range({n}))
        @pytest.mark.trt(model={str(ENCODER)!r}, precision="fp16", keep_fp32={KEEP!r},
                         dims={{"batch": {batch}, "sequence": {seq}}})
        def test_plugin(trt, i):
            trt.check(rtol={RTOL}, atol={ATOL})
    """))
    (root / "test_c_empty.py").write_text(textwrap.dedent(f"""
        import pytest

        @pytest.mark.parametrize("i", range({n}))
        def test_empty(i):
            pass
    """))
    (root / "test_b_handwritten.py").write_text(textwrap.dedent(f"""
        import pytest
        from handwritten import make_session, one_check

        @pytest.fixture(scope="module")
        def sessions():
            return make_session({str(ENCODER)!r}), make_session({str(emulation)!r})

        @pytest.mark.parametrize("i", range({n}))
        def test_by_hand(sessions, i):
            one_check(*sessions, {shape!r}, 0, {RTOL}, {ATOL})
    """))


CLOCK = "perf_counter"  # or "process_time" (--cpu-time)


def run_pytest(root: Path, cache: Path, out: Path, files: list[str]) -> dict:
    env = {**os.environ, "OVERHEAD_OUT": str(out), "OVERHEAD_CLOCK": CLOCK}
    if _SOURCE is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(_SOURCE), *filter(None, [os.environ.get("PYTHONPATH")])])
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-q",
           "--trt-cache-dir=" + str(cache), *files]
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"pytest failed:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(out.read_text())


def script_times(emulation: Path, n: int, shape) -> list[float]:
    namespace: dict = {}
    exec(HANDWRITTEN, namespace)  # noqa: S102  (the same text the pytest tests import)
    baseline = namespace["make_session"](str(ENCODER))
    emul = namespace["make_session"](str(emulation))
    times = []
    clock = getattr(time, CLOCK)
    for _ in range(n):
        t0 = clock()
        namespace["one_check"](baseline, emul, shape, 0, RTOL, ATOL)
        times.append(clock() - t0)
    return times[1:]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tests", type=int, default=60, help="tests (script iterations) per kind and round (default 60)")
    ap.add_argument("--rounds", type=int, default=5, help="pytest sessions / script runs; best is kept (default 5)")
    ap.add_argument("--shapes", nargs="+", default=["2x16", "8x128"],
                    help="BATCHxSEQUENCE of hidden_states [batch, sequence, 64] (default: 2x16 8x128)")
    ap.add_argument("--source", metavar="DIR", help="measure the pytest_trt package under DIR")
    ap.add_argument("--cpu-time", action="store_true", help="time.process_time instead of the wall clock")
    args = ap.parse_args(argv)
    global CLOCK
    CLOCK = "process_time" if args.cpu_time else "perf_counter"

    # the public names, so that --source can name a checkout from before the layout (issue 27)
    import pytest_trt
    from pytest_trt import PrecisionPolicy, load_model
    from pytest_trt.realize import realize_emulation

    print(machine())
    print(f"pytest_trt from {Path(pytest_trt.__file__).parent.parent}")
    print(f"{args.tests} tests per kind, median per test, best of {args.rounds} rounds; ms ({CLOCK})\n")
    header = (f"{'shape':>10} {'script':>9} {'pytest,empty':>13} {'pytest,by hand':>15} {'pytest-trt':>11} "
              f"{'trt/script':>11} {'trt/by hand':>12} {'by hand/script':>15} {'(trt-empty)/script':>19}")
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory(prefix="pytest-trt-overhead-") as tmp:
        tmp = Path(tmp)
        emulation = tmp / "emulation.onnx"
        plan = PrecisionPolicy("fp16", keep_fp32=KEEP).resolve(load_model(ENCODER))
        emulation.write_bytes(realize_emulation(plan).SerializeToString())
        for spec in args.shapes:
            batch, seq = (int(v) for v in spec.lower().split("x"))
            root = tmp / f"project-{spec}"
            root.mkdir()
            write_project(root, args.tests, batch, seq, emulation)
            cache = tmp / f"cache-{spec}"
            run_pytest(root, cache, tmp / "warm.json", ["test_a_plugin.py"])  # populate the cache
            kinds = ("test_a_plugin", "test_b_handwritten", "test_c_empty")
            best = {"script": float("inf"), **{kind: float("inf") for kind in kinds}}
            for _ in range(args.rounds):
                times = run_pytest(root, cache, tmp / "times.json", [f"{kind}.py" for kind in kinds])
                for kind in kinds:
                    best[kind] = min(best[kind], statistics.median(times[kind][1:]))
                best["script"] = min(best["script"], statistics.median(script_times(emulation, args.tests,
                                                                                    (batch, seq, 64))))
            s, h, p, e = best["script"], best["test_b_handwritten"], best["test_a_plugin"], best["test_c_empty"]
            print(f"{spec:>10} {s * 1e3:>9.3f} {e * 1e3:>13.3f} {h * 1e3:>15.3f} {p * 1e3:>11.3f} {p / s:>10.2f}x "
                  f"{p / h:>11.2f}x {h / s:>14.2f}x {(p - e) / s:>18.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
