"""What a trt test is, and a trt test that checked nothing (review1 defects 1 and 2).

Before: a test marked ``trt`` that requested no plugin fixture passed without its marker being
read (a missing model, a typo'd pattern), counted as "trt tests: 1 ran" and ``passed`` in the
JSON; a trt test whose body called no check and built no engine passed as silently.
"""

from __future__ import annotations

import json

import pytest
from encoder_suite import ENCODER_PREAMBLE

HEADER = f"""
import pytest
{ENCODER_PREAMBLE}"""

MARKED_WITHOUT_FIXTURE = """
import pytest

@pytest.mark.trt(model="models/does_not_exist.onnx", keep_fp32=["*/LayerNrom/*"])
def test_marker_without_fixture():
    assert True

def test_plain():
    pass
"""


def _run(pytester, *args):
    return pytester.runpytest(f"--trt-cache-dir={pytester.path / 'cache'}", "-p", "no:cacheprovider", *args)


def test_a_marker_on_a_test_without_a_plugin_fixture_is_a_usage_error_naming_the_test_and_the_fix(pytester):
    pytester.makepyfile(MARKED_WITHOUT_FIXTURE)
    result = _run(pytester, "--trt-report=r.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines([
        "*pytest-trt: test_a_marker_on_a_test_without_a_plugin_fixture_is_a_usage_error_naming_the_test_and_the_fix"
        ".py::test_marker_without_fixture: @pytest.mark.trt on a test that requests no pytest-trt fixture: *"
        "Request the `trt` fixture (def test_marker_without_fixture(trt): ... trt.check()), or remove the marker"])
    assert not (pytester.path / "r.json").exists()


def test_a_marker_given_by_pytest_param_counts_as_the_tests_own(pytester):
    pytester.makepyfile("""
import pytest

@pytest.mark.parametrize("x", [1, pytest.param(2, marks=pytest.mark.trt(model="m.onnx"))])
def test_param(x):
    pass
""")
    result = _run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*::test_param[[]2[]]: @pytest.mark.trt on a test that requests no pytest-trt "
                                 "fixture*def test_param(trt)*"])


def test_a_deselected_marked_test_is_no_error(pytester):
    pytester.makepyfile(MARKED_WITHOUT_FIXTURE)
    result = _run(pytester, "-k", "plain")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1)


def test_under_xdist_the_marked_test_errors_with_the_message(pytester):
    pytester.makepyfile(MARKED_WITHOUT_FIXTURE)
    result = pytester.runpytest_subprocess(f"--trt-cache-dir={pytester.path / 'cache'}", "-p", "no:cacheprovider",
                                           "-n", "1")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["E * pytest.UsageError: pytest-trt: *::test_marker_without_fixture: "
                                 "@pytest.mark.trt on a test that requests no pytest-trt fixture*"])


def test_an_inherited_marker_over_a_test_without_a_plugin_fixture_leaves_it_a_plain_test(pytester):
    """``pytestmark`` and a class marker configure the trt tests among them; the others are not counted."""
    pytester.makepyfile(HEADER + """
pytestmark = pytest.mark.trt(model=ENCODER, dims=DIMS, val_range=NORMAL)

def test_helper_logic():
    assert 1 + 1 == 2

@pytest.mark.trt(atol=5e-2)
class TestEncoder:
    def test_accuracy(self, trt):
        trt.check()

    def test_plain_method(self):
        pass
""")
    result = _run(pytester, "--trt-report=r.json")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["trt tests: 1 ran, none skipped"])
    report = json.loads((pytester.path / "r.json").read_text())
    assert [t["nodeid"].split("::")[-1] for t in report["tests"]] == ["test_accuracy"]


NO_CHECK = HEADER + """
@pytest.mark.trt(model=ENCODER, dims=DIMS, val_range=NORMAL)
def test_checks(trt):
    trt.check()

@pytest.mark.trt(model=ENCODER, dims=DIMS, val_range=NORMAL)
def test_no_check(trt):
    trt.feeds()  # inputs made, nothing compared

def test_session_only(trt_session):
    assert trt_session.backend.name

@pytest.mark.trt(model=ENCODER, dims=DIMS, val_range=NORMAL)
def test_builds_only(trt_engine):
    assert trt_engine is not None  # an engine built: the test checks it builds
"""


def test_a_trt_test_that_passed_without_checking_anything_is_reported_in_every_report(pytester):
    pytester.makepyfile(NO_CHECK)
    result = _run(pytester, "--trt-report=r.json", "--trt-html=r.html", "--junitxml=j.xml")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines([
        "trt tests: 4 ran, none skipped",
        "trt tests: 2 trt test(s) passed without checking anything: "
        "test_a_trt_test_that_passed_without_checking_anything_is_reported_in_every_report.py::test_no_check, "
        "test_a_trt_test_that_passed_without_checking_anything_is_reported_in_every_report.py::test_session_only",
        "  (no trt.check(), assert_precision, *--trt-require-run fails such tests)",
    ])
    report = json.loads((pytester.path / "r.json").read_text())
    by_name = {t["nodeid"].split("::")[-1]: t for t in report["tests"]}
    assert {n: (t["outcome"], t["checked"], t["verdict"]) for n, t in by_name.items()} == {
        "test_checks": ("passed", True, "passed"),
        "test_no_check": ("passed", False, "passed, but nothing was checked"),
        "test_session_only": ("passed", False, "passed, but nothing was checked"),
        "test_builds_only": ("passed", True, "passed"),
    }
    assert report["summary"]["passed_unchecked"] == 2
    html = (pytester.path / "r.html").read_text()
    assert "<b>2</b>passed without checking anything" in html
    assert html.count('<span class="pill" title="passed, but nothing was checked">UNCHECKED</span>') == 2
    junit = (pytester.path / "j.xml").read_text()
    assert junit.count('name="trt_verdict" value="passed, but nothing was checked"') == 2


def test_require_run_fails_a_trt_test_that_checked_nothing(pytester):
    pytester.makepyfile(NO_CHECK)
    result = _run(pytester, "--trt-require-run")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines_random([
        "*::test_no_check: pytest-trt: passed without checking anything (no trt.check(), assert_precision, "
        "check_parser, locate or suggest, and no engine built), but --trt-require-run asks every collected trt "
        "test to test its engine here",
        "*::test_session_only: pytest-trt: passed without checking anything*",
    ])
