"""No false greens (issue 15 items 1 and 2) and a plugin that stays inert where unused (issue 19 item 7).

Each test shows the run that used to end green without testing what it promised, and that
it is now a usage error or a failure naming the fix.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from encoder_suite import ENCODER_PREAMBLE

REPO = Path(__file__).resolve().parents[2]

HEADER = f"""
import pytest
{ENCODER_PREAMBLE}"""

#: an accuracy test that passes on every backend in FP32
ACCURACY_TEST = HEADER + """
@pytest.mark.trt(model=ENCODER, dims=DIMS, val_range=NORMAL)
def test_accuracy(trt):
    trt.check()
"""

# Runs pytest in a fresh interpreter, records every subprocess started, and reports which
# heavy modules got imported: what the plugin did in a session where it is not in use.
PROBE = r"""
import json, subprocess, sys
started = []
_Popen = subprocess.Popen
class Recording(_Popen):
    def __init__(self, args, *a, **k):
        started.append(str(args))
        super().__init__(args, *a, **k)
subprocess.Popen = Recording
import pytest
code = pytest.main(sys.argv[1:] + ["-p", "no:cacheprovider"])
heavy = [m for m in ("numpy", "onnx", "onnxruntime", "tensorrt", "tensorrt_rtx", "polygraphy") if m in sys.modules]
print("PROBE " + json.dumps({"exit": int(code), "heavy": heavy, "subprocesses": started}))
"""


def _probe(pytester, *args):
    pytester.makepyfile(probe=PROBE)
    result = pytester.run(sys.executable, str(pytester.path / "probe.py"), *args)
    line = next(ln for ln in result.outlines if ln.startswith("PROBE "))
    import json

    return json.loads(line[len("PROBE "):]), result.stdout.str()


# --------------------------------------------------------------------------------------
# Issue 19 item 7: inert where unused
# --------------------------------------------------------------------------------------
def test_plugin_is_inert_in_a_project_without_trt_tests(pytester):
    pytester.makepyfile(test_plain="def test_plain():\n    assert 1 + 1 == 2\n")
    found, out = _probe(pytester, "test_plain.py")
    assert found["exit"] == 0, out
    assert found["heavy"] == [], f"imported {found['heavy']} in a session without trt tests"
    assert found["subprocesses"] == [], f"started {found['subprocesses']} (nvidia-smi?) in a session without trt tests"
    assert "pytest-trt" not in out, "header or summary lines in a session without trt tests:\n" + out


def test_a_collected_trt_test_puts_the_plugin_in_use_and_states_the_header(pytester):
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n",
                        test_uses_trt="def test_session(trt_session):\n    assert trt_session.backend.name\n")
    found, out = _probe(pytester)
    assert found["exit"] == 0, out
    assert "numpy" in found["heavy"] and "onnxruntime" in found["heavy"]
    assert "pytest-trt" in out and "backend emulate (auto:" in out, out  # the header, after collection
    assert "trt tests: 1 ran, none skipped" in out, out


def test_a_project_fixture_named_trt_something_leaves_the_plugin_inert(pytester):
    """Newcomer 2026-11-26 defect 11: a trt test was "a fixture whose name starts with trt", so a
    project fixture ``trtable_rows`` (or a TensorRT-LLM suite's ``trtllm_model``) switched the
    plugin on: header, summary, imports. Only the plugin's own fixtures count, also through a
    project fixture that requests one (the closure is transitive)."""
    pytester.makeconftest("""
import pytest

@pytest.fixture
def trtable_rows():
    return [1, 2]

@pytest.fixture
def trtllm_model():
    return "llm"
""")
    pytester.makepyfile(test_plain="def test_rows(trtable_rows, trtllm_model):\n    assert trtable_rows\n")
    found, out = _probe(pytester, "test_plain.py")
    assert found["exit"] == 0, out
    assert found["heavy"] == [], f"imported {found['heavy']} for a project fixture named trt*"
    assert "pytest-trt" not in out, "header or summary lines for a project fixture named trt*:\n" + out


def test_a_project_fixture_that_requests_a_plugin_fixture_makes_a_trt_test(pytester):
    pytester.makeconftest("""
import pytest

@pytest.fixture
def my_backend_name(trt_session):
    return trt_session.backend.name
""")
    pytester.makepyfile(test_indirect="def test_indirect(my_backend_name):\n    assert my_backend_name\n")
    result = pytester.runpytest("test_indirect.py", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*= pytest-trt =*", "trt tests: 1 ran, none skipped"])


def test_a_trt_option_alone_puts_the_plugin_in_use(pytester):
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest("--trt-seed=3")
    result.stdout.fnmatch_lines(["pytest-trt *: backend emulate*", "*input seed 3*"])


# --------------------------------------------------------------------------------------
# Issue 15 item 1: what cannot be honoured is a usage error
# --------------------------------------------------------------------------------------
def test_baseline_provider_cuda_without_cuda_is_a_usage_error_not_a_green_of_skips(pytester):
    """Before: every accuracy test skipped ("provider CUDAExecutionProvider is not available")
    and pytest exited 0."""
    pytester.makepyfile(ACCURACY_TEST)
    result = pytester.runpytest("--trt-baseline-provider", "cuda")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines([
        "*pytest-trt: --trt-baseline-provider cuda: ONNX Runtime's CUDAExecutionProvider is not available here*"
        "pytest-trt[[]gpu[]]*elsewhere use the default provider cpu*"])
    assert "skipped" not in result.stdout.str()


def test_cuda_provider_that_falls_back_to_the_cpu_is_a_usage_error(pytester, monkeypatch):
    """onnxruntime-gpu on a machine whose CUDA libraries do not load lists the CUDA provider,
    then silently creates a CPU session: the "cuda" baseline would be the CPU one."""
    import onnxruntime

    real = onnxruntime.get_available_providers()
    monkeypatch.setattr(onnxruntime, "get_available_providers", lambda: ["CUDAExecutionProvider", *real])
    pytester.makepyfile(ACCURACY_TEST)
    result = pytester.runpytest("--trt-baseline-provider", "cuda")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ONNX Runtime could not create its CUDAExecutionProvider (it fell back to "
                                 "CPUExecutionProvider)*"])


def test_onnxruntime_missing_is_a_usage_error_naming_the_extra(pytester):
    """Before: a plain ``pip install pytest-trt`` skipped every accuracy test and exited 0."""
    pytester.makepyfile(ACCURACY_TEST)
    pytester.makepyfile(no_ort="import sys\nsys.modules['onnxruntime'] = None  # as if not installed\n")
    result = pytester.runpytest_subprocess("-p", "no_ort")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines(['*pytest-trt: ONNX Runtime is not installed*pip install "pytest-trt[[]cpu[]]"*'])


def test_under_xdist_the_controller_counts_skips_and_workers_report_the_usage_error(pytester):
    """The controller collects nothing: a worker's report puts it in use; a worker that
    cannot be put in use errors each trt test with the message (raising during a worker's
    collection showed only an xdist internal error)."""
    pytester.makepyfile(SKIPPING)
    result = pytester.runpytest_subprocess("-n", "2")
    result.assert_outcomes(passed=1, skipped=3)
    result.stdout.fnmatch_lines(["*= pytest-trt =*", "trt tests: 2 of 3 SKIPPED (tested nothing): *"])
    pytester.makepyfile(no_ort="import sys\nsys.modules['onnxruntime'] = None  # as if not installed\n")
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no_ort")
    result.assert_outcomes(errors=3, skipped=1)  # every trt test; the plain test still skips itself
    result.stdout.fnmatch_lines(['E * pytest.UsageError: pytest-trt: ONNX Runtime is not installed*'
                                 'pytest-trt[[]cpu[]]*'])


def test_onnxruntime_failing_to_import_is_a_usage_error_naming_the_extra(pytester):
    pytester.makepyfile(ACCURACY_TEST)
    broken = pytester.mkpydir("onnxruntime")  # shadows the real one: a broken install
    (broken / "__init__.py").write_text(
        "raise ImportError('libonnxruntime.so.1.32.0: cannot open shared object file')\n")
    result = pytester.runpytest_subprocess()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines(["*pytest-trt: ONNX Runtime cannot be imported (ImportError: libonnxruntime.so*"
                                 'reinstall it: pip install "pytest-trt[[]cpu[]]"*'])


def test_tensorrt_import_failure_under_explicit_tensorrt_is_a_usage_error(pytester, monkeypatch):
    """A GPU (a stand-in nvidia-smi on PATH) and a TensorRT whose import fails."""
    bin_dir = pytester.mkdir("bin")
    smi = bin_dir / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho '0, NVIDIA Stand-in GPU, 9.0, 555.42, 81559 MiB'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    broken = pytester.mkpydir("tensorrt")
    (broken / "__init__.py").write_text("raise ImportError('libnvinfer.so.10: cannot open shared object file')\n")
    pytester.makepyfile(ACCURACY_TEST)
    result = pytester.runpytest_subprocess("--trt-backend", "tensorrt")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines(["*pytest-trt: --trt-backend tensorrt cannot run here: TensorRT cannot be "
                                 "imported: libnvinfer.so.10*"])


def test_backend_failures_are_errors_and_only_the_unsupported_gpu_skips(pytester):
    """Before: any BackendUnavailable raised in a test became a skip."""
    pytester.makepyfile(HEADER + """
from pytest_trt.errors import BackendUnavailable, UnsupportedGpu

def test_backend_gone(trt_session):
    raise BackendUnavailable("TensorRT cannot be imported: libnvinfer.so.10")

def test_rtx_on_cc90(trt_session):
    raise UnsupportedGpu("TensorRT-RTX does not support compute capability 9.0")

from hypothesis import given, settings, strategies as st

CALLS = []

@settings(max_examples=5, database=None)
@given(st.integers(0, 10))
def test_rtx_on_cc90_in_a_property_test(trt_session, x):
    # the engine loads once: a second call raises from another line, as in the TensorRT backend
    CALLS.append(x)
    if len(CALLS) == 1:
        raise UnsupportedGpu("TensorRT-RTX does not support compute capability 9.0 (first load)")
    raise UnsupportedGpu("TensorRT-RTX does not support compute capability 9.0 (remembered)")
""")
    result = pytester.runpytest("-rs")
    result.assert_outcomes(failed=1, skipped=2)  # the property test skips: no Hypothesis FlakyFailure
    result.stdout.fnmatch_lines(["*BackendUnavailable*", "TensorRT cannot be imported: libnvinfer.so.10",
                                 "SKIPPED*TensorRT-RTX does not support compute capability 9.0"])
    result.stdout.fnmatch_lines(["SKIPPED*test_backend_failures_are_errors_and_only_the_unsupported_gpu_skips.py:*"
                                 "compute capability 9.0 (first load)"])
    result.stdout.no_fnmatch_line("*_pytest*unittest.py*")  # the skip points at the test, not at pytest
    result.stdout.no_fnmatch_line("*Flaky*")


SKIPPING = HEADER + """
@pytest.mark.trt(model=ENCODER, requires="tensorrt", dims=DIMS, val_range=NORMAL)
def test_on_gpu_only(trt):
    trt.check()

@pytest.mark.trt(model=ENCODER, dims=DIMS, val_range=NORMAL)
def test_runs(trt):
    trt.check()

@pytest.mark.skip(reason="flaky on Tuesdays")
def test_marked(trt):
    trt.check()

def test_not_trt():
    pytest.skip("nothing to do with pytest-trt")
"""


def test_summary_first_line_says_how_many_trt_tests_were_skipped_and_why(pytester):
    pytester.makepyfile(SKIPPING)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, skipped=3)  # green: the summary must say what was not tested
    lines = result.stdout.lines
    section = next(i for i, ln in enumerate(lines) if "pytest-trt" in ln and "====" in ln)
    first = next(ln for ln in lines[section + 1:] if ln.strip())
    assert first.startswith("trt tests: 2 of 3 SKIPPED (tested nothing): "), first
    assert "1 x needs tensorrt: TensorRT not installed" in first and "1 x flaky on Tuesdays" in first, first
    assert "nothing to do with pytest-trt" not in first  # not a trt test


@pytest.mark.parametrize("how", ["option", "ini"])
def test_require_run_turns_every_skipped_trt_test_into_a_failure(pytester, how):
    pytester.makepyfile(SKIPPING)
    if how == "ini":
        pytester.makeini("[pytest]\ntrt_require_run = true\n")
        result = pytester.runpytest()
    else:
        result = pytester.runpytest("--trt-require-run")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # requires= skips inside the test (a failure), the skip marker in setup (an error)
    result.assert_outcomes(passed=1, skipped=1, failed=1, errors=1)
    source = "--trt-require-run" if how == "option" else "ini trt_require_run"
    result.stdout.fnmatch_lines_random([
        f"*test_on_gpu_only: pytest-trt: skipped (needs tensorrt: TensorRT not installed), but {source} asks every "
        "collected trt test to run here*",
        f"*test_marked: pytest-trt: skipped (flaky on Tuesdays), but {source}*",
    ])


def test_typing_the_backend_lacks_is_an_error_not_a_skip(pytester, monkeypatch):
    """``typing="weak"`` on a backend that has none (here: declared on TensorRT 11 through the
    backend's own check) used to skip the test."""
    pytester.makepyfile(HEADER + """
@pytest.mark.trt(model=ENCODER, typing="weak", dims=DIMS, val_range=NORMAL)
def test_weak(trt):
    trt.check()
""")
    import importlib

    # the live module (an earlier in-process pytester run may have left a stale one on the package)
    EmulateBackend = importlib.import_module("pytest_trt.backends.emulate").EmulateBackend

    # the class, not an instance: backend instances are memos of each run (pytest_trt.core.runstate)
    monkeypatch.setattr(EmulateBackend, "supports",
                        lambda self, plan, config: "TensorRT 11 has no weak typing (removed in 11.0; use strong typing)"
                        if config.typing == "weak" else None)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*UsageError*", "*emulate cannot build encoder_opset14.onnx*as this test declares it: "
                                 "TensorRT 11 has no weak typing*"])


# --------------------------------------------------------------------------------------
# Issue 15 item 2: path options in the space form
# --------------------------------------------------------------------------------------
FP16_PROJECT_TEST = HEADER + """
@pytest.mark.trt(model=ENCODER, dims=DIMS, val_range=NORMAL)
def test_layernorm_must_fail_in_fp16(trt):
    trt.check(trt.feeds(outliers=OUTLIERS), atol=1e-2)
"""


@pytest.fixture
def fp16_project(pytester):
    """A project that finds its tests through ``testpaths`` and sets ``trt_fp16`` in its ini,
    and an existing report file outside it (the second run of a CI job)."""
    project = pytester.mkdir("project")
    (project / "tox.ini").write_text("[pytest]\ntestpaths = tests\ntrt_fp16 = true\n")
    (project / "tests").mkdir()
    (project / "tests" / "test_model.py").write_text(FP16_PROJECT_TEST)
    elsewhere = pytester.mkdir("elsewhere")
    report = elsewhere / "r.json"
    report.write_text('{\n "schema_version": 3\n}\n')  # a report of an earlier run (another file is refused)
    return project, report


def test_space_form_silently_dropped_the_project_ini_without_the_check(pytester, fp16_project, monkeypatch):
    """The old false green, reproduced with the check switched off: pytest takes the report
    path for a test path, the rootdir leaves the project, its ini (``testpaths``,
    ``trt_fp16 = true``) is dropped, and the test that must fail in FP16 passes in FP32."""
    import pytest_trt.run.settings

    project, report = fp16_project
    monkeypatch.chdir(project)
    monkeypatch.setattr(pytest_trt.run.settings, "check_path_option_forms", lambda config: None)
    result = pytester.runpytest("--trt-report", str(report))
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines_random([f"rootdir: {project.parent}", "*default precision fp32 (default)*",
                                        "*encoder_opset14.onnx [[]fp32[]]"])


@pytest.mark.parametrize("flag", ["--trt-report", "--trt-html", "--trt-cache-dir"])
def test_space_form_path_option_is_a_usage_error_showing_the_equals_form(pytester, fp16_project, flag, monkeypatch):
    project, report = fp16_project
    value = str(report if flag != "--trt-cache-dir" else report.parent)
    monkeypatch.chdir(project)
    result = pytester.runpytest_subprocess(flag, value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    err = result.stderr.str()
    assert f"write it {flag}={value}" in err, err
    assert "pytest-dev/pytest#8846" in err
    # the proof of the silent drop: pytest took the path for a test path and left the project
    assert f"(this run: rootdir {project.parent}, ini file none)" in err, err


def test_equals_form_keeps_the_project_ini_and_the_fp16_test_fails(pytester, fp16_project, monkeypatch):
    project, report = fp16_project
    monkeypatch.chdir(project)
    result = pytester.runpytest_subprocess(f"--trt-report={report}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*default precision fp16 (ini trt_fp16)*", "*AccuracyError*"])


def test_space_form_in_pytest_addopts_is_refused_too(pytester, fp16_project, monkeypatch):
    project, report = fp16_project
    monkeypatch.chdir(project)
    monkeypatch.setenv("PYTEST_ADDOPTS", f"--trt-html {report}")
    result = pytester.runpytest_subprocess()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--trt-html {report} (PYTEST_ADDOPTS): write it --trt-html={report}*"])


# --------------------------------------------------------------------------------------
# CI: the GPU workflow runs every trt test, and no workflow uses the space form
# --------------------------------------------------------------------------------------
def _run_lines(name: str) -> list[str]:
    yaml = pytest.importorskip("yaml")
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / name).read_text())
    return [step["run"] for job in workflow["jobs"].values() for step in job["steps"] if "run" in step]


def test_gpu_workflow_requires_every_trt_test_to_run():
    pytest_runs = [run for run in _run_lines("gpu.yml") if "pytest " in run and "example_suite" in run]
    assert pytest_runs and all("--trt-require-run" in run for run in pytest_runs), pytest_runs


@pytest.mark.parametrize("name", ["cpu.yml", "gpu.yml"])
def test_workflows_write_path_options_with_equals(name):
    import shlex

    from pytest_trt.run.settings import OPTIONS

    path_flags = {f"--{o.name}" for o in OPTIONS if o.path}
    for run in _run_lines(name):
        words = shlex.split(run.replace("\\\n", " "))
        assert not path_flags & set(words), f"{name}: a path option in the space form in {run!r}"


# --------------------------------------------------------------------------------------
# Issue 28: an infinite tolerance in the marker or trt.check() (newcomer defect 2)
# --------------------------------------------------------------------------------------
OVERFLOW_TESTS = HEADER + """
import math

@pytest.mark.trt(model=ENCODER, precision="fp16", dims=DIMS, val_range=NORMAL, atol=math.inf)
def test_marker_inf(trt):
    trt.check(trt.feeds(outliers=OUTLIERS))

@pytest.mark.trt(model=ENCODER, precision="fp16", dims=DIMS, val_range=NORMAL, rtol={"fp16": math.inf})
def test_marker_per_precision_inf(trt):
    trt.check(trt.feeds(outliers=OUTLIERS))

@pytest.mark.trt(model=ENCODER, precision="fp16", dims=DIMS, val_range=NORMAL)
def test_check_inf(trt):
    trt.check(trt.feeds(outliers=OUTLIERS), atol=float("inf"))
"""


def test_an_infinite_tolerance_in_the_marker_or_check_never_passes_an_overflow(pytester):
    """Before: all three passed a LayerNorm that overflows in FP16 (max abs error 9.44, cosine 0.935),
    while the CLI (--atol inf) and --trt-atol inf refused an infinite tolerance."""
    pytester.makepyfile(OVERFLOW_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider", f"--trt-cache-dir={pytester.path / 'cache'}")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) == 0, result.stdout.str()
    assert outcomes.get("errors", 0) + outcomes.get("failed", 0) == 3
    out = result.stdout.str()
    assert "@pytest.mark.trt(atol=inf): an infinite tolerance switches the accuracy check off" in out
    assert "@pytest.mark.trt(rtol={'fp16': inf})" in out
    assert "Add no_check=True to the marker" in out
    assert "atol=inf (output 'last_hidden_state') switches the accuracy check off" in out
    assert "Pass no_check=True" in out


def test_no_check_in_the_marker_records_the_figures_and_says_so(pytester):
    pytester.makepyfile(HEADER + """
@pytest.mark.trt(model=ENCODER, precision="fp16", dims=DIMS, val_range=NORMAL, no_check=True)
def test_figures_only(trt):
    result = trt.check(trt.feeds(outliers=OUTLIERS))
    assert result.no_check and result.outputs["last_hidden_state"].max_abs > 1
""")
    result = pytester.runpytest("-p", "no:cacheprovider", f"--trt-cache-dir={pytester.path / 'cache'}",
                                "--trt-report=r.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["accuracy: 1 output(s) in 1 test(s), 0 outside tolerance, 1 without a tolerance "
                                 "verdict (no_check)*", "nocheck *"])
    import json

    data = json.loads((pytester.path / "r.json").read_text())
    assert data["tests"][0]["accuracy"][0]["no_check"] is True


def test_no_check_with_explicit_tolerances_says_they_apply_and_counts_the_output_once(pytester):
    """review2 row 10. Before: ``no_check=True`` with atol/rtol failed on the element tolerance while the
    message said "no_check: no tolerance verdict", and the summary counted the output both "outside
    tolerance" and "without a tolerance verdict"."""
    pytester.makepyfile(HEADER + """
@pytest.mark.trt(model=ENCODER, precision="fp16", dims=DIMS, val_range=NORMAL, atol={"fp16": 1e-9},
                 rtol={"fp16": 1e-9}, no_check=True)
def test_no_check_tight(trt):
    trt.check()
""")
    result = pytester.runpytest("-p", "no:cacheprovider", f"--trt-cache-dir={pytester.path / 'cache'}")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "no_check: only the given atol/rtol and floors apply (tolerances not given are inf" in out
    assert "no_check: no tolerance verdict" not in out
    result.stdout.fnmatch_lines(["accuracy: 1 output(s) in 1 test(s), 1 outside tolerance; worst first*"])


# --------------------------------------------------------------------------------------
# Issue 28: a session-wide pattern that matches nothing (newcomer defect 3)
# --------------------------------------------------------------------------------------
CONVNET = REPO / "example_suite" / "models" / "convnet.onnx"
TWO_MODELS = HEADER + f"""
CONVNET = {str(CONVNET)!r}

@pytest.mark.trt(model=ENCODER, precision="fp16", dims=DIMS, val_range=NORMAL)
def test_encoder(trt):
    trt.check(atol=5e-2)

@pytest.mark.trt(model=CONVNET, precision="fp16", dims={{"batch": 2}})
def test_convnet(trt):
    trt.check(atol=5e-2)

def test_plain():
    pass
"""


def _pattern_run(pytester, *args):
    # two files, so that under -n 2 --dist loadfile each worker sees one model
    head, _, rest = TWO_MODELS.partition("@pytest.mark.trt(model=ENCODER")
    encoder, _, convnet = ("@pytest.mark.trt(model=ENCODER" + rest).partition("@pytest.mark.trt(model=CONVNET")
    pytester.makepyfile(test_encoder=head + encoder, test_convnet=head + "@pytest.mark.trt(model=CONVNET" + convnet)
    return pytester.runpytest_subprocess(f"--trt-cache-dir={pytester.path / 'cache'}", "-p", "no:cacheprovider",
                                         *args)


def test_a_session_pattern_matching_no_model_fails_the_session_with_the_closest_names(pytester):
    """Before: ``--trt-keep-fp32 '*/LayerNrom/*'`` (a typo) was dropped for every model, exit 0."""
    result = _pattern_run(pytester, "--trt-keep-fp32=*/LayerNrom/*")
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "pytest-trt: session patterns: keep FP32 '*/LayerNrom/*' (--trt-keep-fp32 on the command line; *)",
        "pytest-trt: session pattern '*/LayerNrom/*' (--trt-keep-fp32 on the command line) matched no node in any "
        "model of the trt tests that ran (convnet.onnx, encoder_opset14.onnx); closest: */LayerNorm/*",
    ])


def test_the_ini_twin_and_pytest_addopts_are_named_as_the_source(pytester, monkeypatch):
    pytester.makeini("[pytest]\ntrt_keep_fp32 =\n    op:Softmx\n")
    result = _pattern_run(pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["pytest-trt: session pattern 'op:Softmx' (ini trt_keep_fp32 (*tox.ini)) matched no "
                                 "node in any model *closest: op:Softmax*"])
    monkeypatch.setenv("PYTEST_ADDOPTS", "--trt-keep-fp32=op:Softmx")
    result = _pattern_run(pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*session pattern 'op:Softmx' (--trt-keep-fp32 in $PYTEST_ADDOPTS) matched no*"])


def test_a_pattern_matching_some_model_passes_and_no_trt_test_run_says_nothing(pytester):
    result = _pattern_run(pytester, "--trt-keep-fp32=*/LayerNorm/*")
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.OK and "matched no node" not in result.stdout.str()
    result = _pattern_run(pytester, "--trt-keep-fp32=*/LayerNrom/*", "-k", "plain")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK and "matched no node" not in result.stdout.str()


def test_session_patterns_are_judged_over_every_xdist_worker(pytester):
    """Each worker saw one model (one file each): the pattern matching the encoder only must not fail
    the run, the typo must, and once (aggregated on the controller)."""
    result = _pattern_run(pytester, "-n", "2", "--dist", "loadfile", "--trt-keep-fp32=*/LayerNorm/*",
                          "--trt-keep-fp32=op:Softmx")
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert out.count("matched no node") == 1 and "session pattern 'op:Softmx'" in out
    assert "(convnet.onnx, encoder_opset14.onnx)" in out  # both workers' models
    assert "session pattern '*/LayerNorm/*'" not in out


def test_a_malformed_session_pattern_is_a_usage_error_at_start(pytester):
    result = _pattern_run(pytester, "--trt-keep-fp32=op:Soft*")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--trt-keep-fp32: precision pattern 'op:Soft*': 'op:' takes one exact op type*"])


def test_trt_build_applies_the_session_patterns_as_a_trt_test_does(pytester):
    """Before: ``trt_build(model)`` without a policy ignored ``--trt-keep-fp32``, so an engine built by
    hand ran the session's FP32 islands in FP16; and its model did not count for the unmatched check."""
    pytester.makepyfile(test_build=HEADER + """
def test_build(trt_build):
    engine = trt_build(ENCODER, precision="fp16")
    kept = [n for n, d in engine.plan.nodes.items() if "/LayerNorm/" in n and d.kind == "compute"]
    assert kept and all(engine.plan.nodes[n].precision == "fp32" for n in kept), "session pattern not applied"

def test_build_with_a_policy_takes_it_as_it_is(trt_build):
    from pytest_trt import PrecisionPolicy
    engine = trt_build(ENCODER, PrecisionPolicy("fp16"))
    assert all(d.precision == "fp16" for d in engine.plan.nodes.values() if d.kind == "compute")
""")
    cache = f"--trt-cache-dir={pytester.path / 'cache'}"
    result = pytester.runpytest_subprocess(cache, "-p", "no:cacheprovider", "--trt-keep-fp32=*/LayerNorm/*")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result = pytester.runpytest_subprocess(cache, "-p", "no:cacheprovider", "--trt-keep-fp32=*/LayerNrom/*",
                                           "-k", "test_build and not policy")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*session pattern '*/LayerNrom/*' (--trt-keep-fp32 on the command line) matched no "
                                 "node in any model*closest: */LayerNorm/*"])


QWEN3 = REPO / "tests" / "data" / "exports" / "qwen3_dynamo_opset18.onnx"


def test_a_session_class_pattern_typo_suggests_the_closest_classes_not_node_names(pytester):
    """review2 row 9. Before: ``--trt-keep-fp32='class:*RMSNrom'`` suggested "closest: class:Linear,
    class:Qwen3MLP, class:TextModel": the session message ranked a ``class:`` pattern as a node name.
    Now it ranks class names as the per-model PatternError does (Qwen3RMSNorm first)."""
    pytester.makepyfile(f"""
import pytest

@pytest.mark.trt(model={str(QWEN3)!r}, precision="fp16", dims={{"batch": 1, "sequence": 4}})
def test_plan(trt):
    assert trt.plan is not None
""")
    result = pytester.runpytest(f"--trt-cache-dir={pytester.path / 'cache'}", "-p", "no:cacheprovider",
                                "--trt-keep-fp32=class:*RMSNrom")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.stdout.fnmatch_lines(["pytest-trt: session pattern 'class:*RMSNrom' (--trt-keep-fp32 on the command line) "
                                 "matched no node in any model * closest: class:Qwen3RMSNorm, *"])
