"""Issue 28, "nothing lost at the end of a long run" (audit F8, newcomer defects 1 and 10).

A ``--trt-report``/``--trt-html`` path (or ini twin) that cannot be written used to run every
test and then crash in ``pytest_sessionfinish``: a traceback, exit 1, pytest's and pytest-trt's
summary lost, a ``.tmp`` file left beside the target. Now such a path is a usage error when the
session starts (exit 4); a write that still fails at the end (a full disk) prints the summary and
one line, removes the temporary file, moves an earlier run's report out of the way and exits 1;
and a report never replaces the model under test or an input.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from encoder_suite import ENCODER, ENCODER_PREAMBLE

ONE_TEST = f"""
import pytest
{ENCODER_PREAMBLE}
@pytest.mark.trt(model=ENCODER, dims=DIMS, val_range=NORMAL)
def test_accuracy(trt):
    trt.check()
"""


def _leftovers(root: Path) -> list[str]:
    """Temporary or probe files of the plugin left anywhere under ``root``."""
    return sorted(str(p) for p in root.rglob(".*") if p.name.endswith(".tmp") or p.name.startswith(".pytest-trt-probe"))


def _run(pytester, *args):
    return pytester.runpytest(f"--trt-cache-dir={pytester.path / 'cache'}", "-p", "no:cacheprovider", *args)


# ----------------------------------------------------------------------------------- at start
def _directory(p):
    (p / "adir").mkdir()
    return p / "adir"


def _under_a_file(p):
    (p / "afile").write_text("a file where a directory should be")
    return p / "afile" / "r.out"


def _fifo(p):
    os.mkfifo(p / "pipe")
    return p / "pipe"


def _foreign_file(p):
    (p / "notes.json").write_text('{"my": "own data"}')
    return p / "notes.json"


@pytest.mark.parametrize("flag", ["--trt-report", "--trt-html", "ini trt_report", "ini trt_html"])
@pytest.mark.parametrize("where, message", [
    (_directory, "is a directory: give a file path"),
    (_under_a_file, "which is a file, not a directory"),
    (lambda p: Path("/proc/r.out"), "cannot be written: no file can be created in /proc"),
    (lambda p: Path("/sys/r.out"), "cannot be written: no file can be created in /sys (Permission denied)"),
    (_fifo, "is not a regular file (a device, pipe or socket)"),
    (_foreign_file, "exists and is a file that is not a pytest-trt report: the report never replaces a file"),
], ids=["directory", "under-a-file", "proc", "unwritable-parent", "fifo", "foreign-file"])
def test_an_unusable_report_path_is_a_usage_error_at_start(pytester, flag, where, message):
    """Before: every test ran, then a traceback in pytest_sessionfinish (IsADirectoryError,
    NotADirectoryError, FileNotFoundError for /proc), exit 1, the summary lost."""
    pytester.makepyfile(ONE_TEST)
    path = where(pytester.path)
    if flag.startswith("ini"):
        pytester.makeini(f"[pytest]\n{flag[4:]} = {path}\n")
        result = _run(pytester)
    else:
        result = _run(pytester, f"{flag}={path}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines([f"*pytest-trt: {flag}={path}*"])
    assert message in result.stderr.str()
    assert "passed" not in result.stdout.str()  # stopped before running anything
    assert _leftovers(pytester.path) == []


def test_the_same_path_for_both_reports_is_a_usage_error(pytester):
    pytester.makepyfile(ONE_TEST)
    result = _run(pytester, "--trt-report=r.out", "--trt-html=./r.out")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*are the same file: the HTML report would replace the JSON one*"])


def test_a_missing_parent_directory_is_created_and_an_earlier_report_replaced(pytester):
    pytester.makepyfile(ONE_TEST)
    result = _run(pytester, "--trt-report=out/deep/r.json", "--trt-html=out/deep/r.html")
    assert result.ret == 0
    first = json.loads((pytester.path / "out" / "deep" / "r.json").read_text())
    assert first["exitstatus"] == 0
    result = _run(pytester, "--trt-report=out/deep/r.json", "--trt-html=out/deep/r.html")  # replaces its own report
    assert result.ret == 0 and _leftovers(pytester.path) == []


# ----------------------------------------------------------------------------------- at the end
#: the inner project's conftest: a full disk for every file written after the tests ran (a file-size
#: limit of 200 bytes, RLIMIT_FSIZE, in the inner pytest's own process; SIGXFSZ ignored, so a write
#: beyond it fails with EFBIG "File too large" instead of killing the process)
FULL_DISK = """
import resource, signal
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (200, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
"""


def test_a_full_disk_at_the_end_keeps_the_summary_removes_the_tmp_and_moves_the_old_report(pytester):
    pytester.makepyfile(ONE_TEST)
    assert _run(pytester, "--trt-report=r.json", "--trt-html=r.html").ret == 0  # an earlier run's reports
    old_json, old_html = (pytester.path / "r.json").read_text(), (pytester.path / "r.html").read_text()
    pytester.makeconftest(FULL_DISK)
    # pipes, not pytester's output files: the file-size limit would cut those too. No bytecode written
    # either: the limit would cut a .pyc the inner run writes at the end (the report modules) at 200
    # bytes, and CPython installs the cut file (it does not check the write's length), so every later
    # import of that module fails with "marshal data too short" where bytecode is written
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([sys.executable, "-m", "pytest", f"--trt-cache-dir={pytester.path / 'cache'}", "-p",
                           "no:cacheprovider", "--trt-report=r.json", "--trt-html=r.html"],
                          cwd=pytester.path, capture_output=True, text=True, timeout=600, env=env)
    result = pytest.RunResult(proc.returncode, proc.stdout.splitlines(), proc.stderr.splitlines(), 0.0)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines([
        "*= pytest-trt =*",
        "trt tests: 1 ran, none skipped",
        f"pytest-trt: --trt-html={pytester.path / 'r.html'} was not written: File too large; the report of an "
        "earlier run there was renamed to r.html.stale (kept, and out of the way so that nothing reads it as "
        "this run's)",
        f"pytest-trt: --trt-report={pytester.path / 'r.json'} was not written: File too large; the report of an "
        "earlier run there was renamed to r.json.stale*",
        "*1 passed*",
    ])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert not (pytester.path / "r.json").exists() and not (pytester.path / "r.html").exists()
    assert (pytester.path / "r.json.stale").read_text() == old_json  # nothing lost
    assert (pytester.path / "r.html.stale").read_text() == old_html
    assert _leftovers(pytester.path) == []


# ----------------------------------------------------------------------------------- over an input
def test_a_report_path_that_is_the_model_or_an_input_is_refused_at_start(pytester):
    """Newcomer defect 10: ``--trt-report=models/encoder.onnx`` silently replaced the model under test."""
    model = pytester.path / "encoder.onnx"
    model.write_bytes(ENCODER.read_bytes())
    np.savez(pytester.path / "feeds.npz", hidden_states=np.zeros((2, 8, 64), np.float32))
    pytester.makepyfile("""
import pytest

@pytest.mark.trt(model="encoder.onnx", inputs="feeds.npz")
def test_accuracy(trt):
    trt.check()
""")
    for flag, path, what in (("--trt-report", model, "an ONNX model"), ("--trt-html", "feeds.npz", "an .npz archive")):
        result = _run(pytester, f"{flag}={path}")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"*{flag}=*{Path(path).name} exists and is {what}*the report never replaces*"])
    assert model.read_bytes() == ENCODER.read_bytes()


def test_a_marker_model_created_during_the_run_at_the_report_path_is_refused_at_collection(pytester):
    """The model does not exist when the session starts (a fixture writes it): the marker names it."""
    pytester.makepyfile(f"""
import shutil
import pytest

@pytest.fixture(scope="session", autouse=True)
def exported():
    shutil.copy({str(ENCODER)!r}, "generated.onnx")

@pytest.mark.trt(model="generated.onnx", dims={{"batch": 2, "sequence": 8}})
def test_generated(trt):
    trt.check()
""")
    result = _run(pytester, "--trt-report=generated.onnx")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--trt-report=*generated.onnx is the model of test_*::test_generated*"])
    assert not (pytester.path / "generated.onnx").exists()  # nothing ran


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_a_model_loaded_at_run_time_from_the_report_path_errors_and_is_never_replaced(pytester, xdist):
    """``trt_build(path)`` names its model only when the test runs: that test errors when it loads
    the model, and the report at the end is not written over the file."""
    pytester.makepyfile(f"""
import shutil

def test_builds_its_own(trt_build):
    shutil.copy({str(ENCODER)!r}, "made.onnx")
    trt_build("made.onnx", precision="fp16")
""")
    result = pytester.runpytest_subprocess(f"--trt-cache-dir={pytester.path / 'cache'}", "-p", "no:cacheprovider",
                                           "--trt-report=made.onnx", *xdist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*--trt-report=*made.onnx is the model a test loads*",
                                 "pytest-trt: --trt-report=*made.onnx was not written: the path now holds an ONNX "
                                 "model, which the report never replaces; it was left as it is"])
    onnx.load(str(pytester.path / "made.onnx"))  # still the model
