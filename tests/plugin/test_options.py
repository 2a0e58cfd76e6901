"""The plugin as users meet it: options, ini twins, precedence, header, usage errors."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest


def test_help_lists_every_option_with_its_default(pytester):
    result = pytester.runpytest("--help")
    out = result.stdout.str()
    assert "pytest-trt (TensorRT engine accuracy testing)" in out
    for flag in ("--trt-fp16", "--trt-bf16", "--trt-backend", "--trt-cache-dir", "--trt-rebuild",
                 "--trt-require-run",
                 "--trt-atol", "--trt-rtol", "--trt-keep-fp32", "--trt-typing", "--trt-seed"):
        assert flag in out, flag
    # ini twins are listed too
    for ini in ("trt_fp16", "trt_backend", "trt_atol", "trt_cache_dir"):
        assert ini in out, ini
    assert "Default: auto" in out


def test_option_help_states_every_typing_and_the_calibrated_defaults():
    from pytest_trt.compare import DEFAULT_MIN_COSINE, DEFAULT_TOLERANCES
    from pytest_trt.core.choices import TYPING_CHOICES
    from pytest_trt.run.settings import OPTIONS

    helps = {o.name: o.help for o in OPTIONS}
    for choice in TYPING_CHOICES:
        assert f"{choice} = " in helps["trt-typing"], choice

    def stated(flag, pattern):
        found = re.search(pattern, helps[flag])
        assert found, (flag, pattern)
        return [float(x) for x in found.groups()]

    for precision, (rtol, atol) in DEFAULT_TOLERANCES.items():
        assert stated("trt-atol", rf"\b{precision} ([0-9.e+-]+)[,;]") == [atol], precision
        assert stated("trt-rtol", rf"\b{precision} ([0-9.e+-]+)[,;]") == [rtol], precision
    floors = [DEFAULT_MIN_COSINE["fp16"], DEFAULT_MIN_COSINE["bf16"]]
    for flag in ("trt-atol", "trt-rtol"):
        assert stated(flag, r"fp16 and bf16 also check a whole-output cosine floor, ([0-9.]+) and ([0-9.]+)\)") == floors


def test_markers_are_documented(pytester):
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(["*@pytest.mark.trt(model=None*keep_fp32*"])


def test_header_states_backend_reason_versions_gpu_and_cache(pytester):
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("--trt-backend", "auto")
    result.stdout.fnmatch_lines([
        "pytest-trt *: backend emulate (auto: TensorRT not installed, using CPU precision emulation (not TensorRT))",
        "pytest-trt: default precision fp32 (default)*",
        "pytest-trt: tensorrt not installed, onnxruntime *, polygraphy *, onnx *; GPU: no GPU",
        f"pytest-trt: cache {pytester.path}*.trt-cache*",
    ])
    assert result.ret == 0


def test_header_names_the_running_onnxruntime_module_not_package_metadata(pytester):
    # onnxruntime and onnxruntime-gpu can both be installed, and the metadata then names the wrong
    # build (docs/VERIFIED.md): the header must say which module runs. A conftest stands in for
    # the other build by changing the imported module's version (a subprocess: nothing leaks).
    pytester.makeconftest("import onnxruntime\nonnxruntime.__version__ = '0.0.0+running'\n")
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest_subprocess("--trt-backend", "auto")
    result.stdout.fnmatch_lines(["pytest-trt: tensorrt not installed, onnxruntime 0.0.0+running, polygraphy *"])
    assert result.ret == 0


def test_explicit_tensorrt_without_tensorrt_is_a_usage_error(pytester):
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("--trt-backend", "tensorrt")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*pytest-trt: --trt-backend tensorrt cannot run here: TensorRT not installed*"])


def test_unknown_backend_lists_the_choices(pytester):
    result = pytester.runpytest("--trt-backend", "cuda")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    # checked when the backend is selected, against the built-in and the plugins' backends
    result.stderr.fnmatch_lines(["*pytest-trt: unknown --trt-backend 'cuda': choose one of auto, tensorrt, "
                                 "tensorrt-rtx, emulate (other names come from plugins*"])


def test_fp16_and_bf16_together_are_rejected(pytester):
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("--trt-fp16", "--trt-bf16")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--trt-fp16 and --trt-bf16 both given*"])


def test_ini_twin_sets_the_default_precision(pytester):
    pytester.makeini("[pytest]\ntrt_bf16 = true\n")
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(["pytest-trt: default precision bf16 (ini trt_bf16)*"])


def test_command_line_beats_ini(pytester):
    pytester.makeini("[pytest]\ntrt_seed = 7\ntrt_backend = emulate\n")
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("--trt-seed", "11")
    result.stdout.fnmatch_lines(["*backend emulate (requested with ini trt_backend emulate)*", "*input seed 11*"])
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(["*input seed 7*"])


def test_negative_tolerance_is_a_usage_error(pytester):
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("--trt-atol", "-1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--trt-atol: invalid value '-1'*non-negative*"])


@pytest.mark.parametrize("how", ["option", "ini"])
def test_negative_seed_is_a_usage_error_at_start(pytester, how):
    """Newcomer 2026-11-26 defect 9: ``--trt-seed -1`` failed every trt test (InputError, exit 1), which
    a CI job reads as accuracy failures; like ``--trt-seed abc`` it is a usage error at start."""
    pytester.makepyfile("""
import pytest

@pytest.mark.trt(model="m.onnx")
def test_never_runs(trt):
    pass
""")
    if how == "ini":
        pytester.makeini("[pytest]\ntrt_seed = -1\n")
        result = pytester.runpytest()
        where = "ini trt_seed"
    else:
        result = pytester.runpytest("--trt-seed", "-1")
        where = "--trt-seed"
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{where}: invalid value '-1' for trt-seed: must be a non-negative integer*"])
    assert "never_runs" not in result.stdout.str()


def test_unwritable_cache_dir_fails_at_session_start(pytester):
    blocker = pytester.path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("--trt-cache-dir=" + str(blocker / "cache"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{blocker}*"])


def test_import_leaves_tensorrt_and_onnxruntime_out():
    code = (
        "import sys, pytest_trt, pytest_trt.plugin\n"
        "heavy = [m for m in ('tensorrt', 'tensorrt_rtx', 'onnxruntime') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "print('clean')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "clean" in out


def test_console_script_help_and_version():
    from pytest_trt import __version__
    from pytest_trt.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    out = subprocess.run([sys.executable, "-m", "pytest_trt.cli", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "plan" in out.stdout and "compare" in out.stdout
    assert __version__
