"""pytest-trt's extension points (pytest_trt/glue/hookspec.py) as a third-party plugin meets them:
pytester runs with a conftest or a ``-p`` plugin module that provides a backend, chooses it,
adds header lines and extends the JSON report; and ``register_backend`` in a fresh process."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from encoder_suite import ENCODER_PREAMBLE

REPO = Path(__file__).resolve().parents[2]

#: a tiny third-party backend: ONNX Runtime CPU emulation under another name
EMU2 = """
from pytest_trt.backends import Backend, get_backend


class Emu2Backend(Backend):
    name = "emu2"
    disclaimer = "CPU precision emulation (emu2 over ONNX Runtime), not TensorRT"

    def __init__(self):
        self.inner = get_backend("emulate")

    def unavailable_reason(self):
        return self.inner.unavailable_reason()

    def versions(self):
        return {"emu2": "0.1", **self.inner.versions()}

    def build(self, plan, config, cache, *, rebuild=False):
        engine = self.inner.build(plan, config, cache, rebuild=rebuild)
        engine.backend_name = self.name
        return engine
"""

PLUGIN = EMU2 + """

def pytest_trt_backends(config):
    return {"emu2": Emu2Backend}


def pytest_trt_report_header(config, session):
    return [f"emu2 plugin: session backend is {session.backend.name}"]


def pytest_trt_report_test(config, entry, records):
    entry["emu2"] = {"engines": [r["backend"] for r in records if r.get("kind") == "engine"]}
"""

TESTS = f"""
import pytest

{ENCODER_PREAMBLE}

@pytest.mark.trt(model=ENCODER, dims=DIMS, requires="emu2")
def test_through_emu2(trt):
    assert trt.engine.backend_name == "emu2"
    trt.check(trt.feeds())
"""


def _cache(pytester) -> str:
    return "--trt-cache-dir=" + str(pytester.path / "engine-cache")


def test_conftest_backend_is_selected_by_name_runs_tests_and_reports(pytester):
    pytester.makeconftest(PLUGIN)
    pytester.makepyfile(TESTS)
    report = pytester.path / "out.json"
    result = pytester.runpytest("--trt-backend", "emu2", _cache(pytester), f"--trt-report={report}")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        "pytest-trt *: backend emu2 (requested with --trt-backend emu2)",
        "emu2 plugin: session backend is emu2",
    ])
    data = json.loads(report.read_text())
    assert data["session"]["backend"] == "emu2"
    (test,) = data["tests"]
    assert test["emu2"] == {"engines": ["emu2"]}
    assert [e["backend"] for e in test["engines"]] == ["emu2"]


def test_a_plugin_backend_states_its_disclaimer_in_every_report(pytester):
    """The backend says what its results are (``Backend.disclaimer``); no report tests its name. Before,
    the terminal, the failure message and the HTML said "not TensorRT" only for a backend named
    ``emulate``, and the JSON said nothing: a plugin's emulation read as TensorRT everywhere."""
    pytester.makeconftest(PLUGIN)
    pytester.makepyfile(TESTS + """

@pytest.mark.trt(model=ENCODER, dims=DIMS, requires="emu2", precision="fp16")
def test_fails_through_emu2(trt):
    trt.check(trt.feeds(), atol=0.0, rtol=0.0, min_cosine=-1)
""")
    report, html = pytester.path / "out.json", pytester.path / "out.html"
    result = pytester.runpytest("--trt-backend", "emu2", _cache(pytester), f"--trt-report={report}",
                                f"--trt-html={html}")
    result.assert_outcomes(passed=1, failed=1)
    disclaimer = "CPU precision emulation (emu2 over ONNX Runtime), not TensorRT"
    result.stdout.fnmatch_lines([
        f"*(backend emu2: {disclaimer})",         # the failure message
        f"backend emu2 ({disclaimer})",           # the terminal summary
    ])
    data = json.loads(report.read_text())
    assert data["session"]["backend"] == "emu2" and data["session"]["backend_disclaimer"] == disclaimer
    assert f'<span class="tag emu">{disclaimer}</span>' in html.read_text()


def test_a_plugin_backend_that_states_nothing_is_not_reported_as_tensorrt(pytester):
    """A backend has to claim to be TensorRT (``disclaimer = None``): one that says nothing gets the
    plugin disclaimer in every report."""
    pytester.makeconftest(PLUGIN.replace('    disclaimer = "CPU precision emulation (emu2 over ONNX Runtime), '
                                         'not TensorRT"\n', ""))
    pytester.makepyfile(TESTS)
    report = pytester.path / "out.json"
    result = pytester.runpytest("--trt-backend", "emu2", _cache(pytester), f"--trt-report={report}")
    result.assert_outcomes(passed=1)
    said = "emu2 is a plugin backend that does not state that it runs TensorRT"
    result.stdout.fnmatch_lines([f"backend emu2 ({said})"])
    assert json.loads(report.read_text())["session"]["backend_disclaimer"] == said


def test_the_builtin_backends_answer_for_themselves():
    """The contract callers rely on instead of the name (pytest_trt.backends.base)."""
    from pytest_trt.backends import get_backend

    emulate, trt, rtx = get_backend("emulate"), get_backend("tensorrt"), get_backend("tensorrt-rtx")
    assert emulate.disclaimer == "CPU precision emulation on ONNX Runtime, not TensorRT"
    assert trt.disclaimer is None and rtx.disclaimer is None
    assert (emulate.uses_gpu, trt.uses_gpu, rtx.uses_gpu) == (False, True, True)
    assert (emulate.shape_specific, trt.shape_specific) == (False, True)
    assert "emulation has no weak typing" in emulate.typing_reason("weak")
    assert emulate.typing_reason("strong") is None and trt.typing_reason("auto") is None


def test_plugin_module_given_with_p_and_the_ini_value(pytester):
    pytester.makepyfile(emu2_plugin=PLUGIN, test_emu2=TESTS)
    pytester.syspathinsert()
    pytester.makeini("[pytest]\ntrt_backend = emu2\n")
    result = pytester.runpytest("-p", "emu2_plugin", _cache(pytester))
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["pytest-trt *: backend emu2 (requested with ini trt_backend emu2)"])


def test_requires_a_plugin_backend_skips_under_another_one(pytester):
    pytester.makeconftest(PLUGIN)
    pytester.makepyfile(TESTS)
    result = pytester.runpytest("--trt-backend", "emulate", _cache(pytester), "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*needs emu2: backend is emulate*"])


def test_unknown_backend_names_the_plugin_ones(pytester):
    pytester.makeconftest(PLUGIN)
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("--trt-backend", "emu3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown --trt-backend 'emu3': choose one of auto, tensorrt, "
                                 "tensorrt-rtx, emulate, emu2*"])


def test_select_hook_chooses_the_backend_for_auto(pytester):
    pytester.makeconftest(PLUGIN + """

def pytest_trt_select_backend(config, requested, source):
    if requested == "auto":
        from pytest_trt.backends import get_backend

        return get_backend("emu2"), "auto: chosen by the conftest"
""")
    pytester.makepyfile(TESTS)
    result = pytester.runpytest(_cache(pytester))
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["pytest-trt *: backend emu2 (auto: chosen by the conftest)"])


def test_bad_hook_results_are_usage_errors(pytester):
    pytester.makeconftest("""
def pytest_trt_backends(config):
    return ["emu2"]
""")
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("--trt-backend", "emulate")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*a pytest_trt_backends hook returned [[]'emu2'[]]: expected a dict*"])


def test_hooks_are_not_called_while_the_plugin_is_inert(pytester):
    pytester.makeconftest("""
def pytest_trt_backends(config):
    raise RuntimeError("pytest_trt_backends called while inert")


def pytest_trt_report_header(config, session):
    raise RuntimeError("pytest_trt_report_header called while inert")
""")
    pytester.makepyfile("def test_plain(): pass")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    assert "pytest-trt" not in result.stdout.str()


def test_plugin_backends_do_not_outlive_the_run(pytester):
    from pytest_trt.backends.base import backend_names

    pytester.makeconftest(PLUGIN)
    pytester.makepyfile("def test_nothing(): pass")
    pytester.runpytest("--trt-backend", "emu2").assert_outcomes(passed=1)
    assert "emu2" not in backend_names()


def _fresh(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120, cwd=REPO)


def test_register_backend_before_the_first_lookup_keeps_the_builtins():
    """In a fresh process: registering first neither hides the built-in backends nor is it
    overwritten by them (before, the built-in modules registered themselves on import and
    replaced an ``emulate`` registered earlier)."""
    proc = _fresh("""
        from pytest_trt.backends.base import Backend, backend_names, get_backend, register_backend, select_backend

        class Mine(Backend):
            name = "mine"
            def unavailable_reason(self): return None
            def versions(self): return {}
            def build(self, plan, config, cache, *, rebuild=False): raise NotImplementedError

        register_backend("mine", Mine)
        register_backend("emulate", Mine)
        print(type(get_backend("emulate")).__name__, type(get_backend("tensorrt")).__name__,
              type(get_backend("tensorrt-rtx")).__name__, type(select_backend("mine")[0]).__name__)
        print(",".join(backend_names()))
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == ["Mine TensorRTBackend TensorRTRTXBackend Mine",
                                           "tensorrt,tensorrt-rtx,emulate,mine"]


def test_register_backend_rejects_bad_names():
    from pytest_trt.backends.base import register_backend
    from pytest_trt.errors import UsageError

    with pytest.raises(UsageError, match="invalid backend name 'auto'"):
        register_backend("auto", object)
    with pytest.raises(UsageError, match="expected a Backend subclass, instance or factory"):
        register_backend("x", 3)


def test_plugin_backends_are_forgotten_after_a_usage_error(pytester):
    from pytest_trt.backends.base import backend_names

    pytester.makeconftest(PLUGIN)
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("--trt-backend", "emu3")  # fails after the hook registered emu2
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "emu2" not in backend_names()
