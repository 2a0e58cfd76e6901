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
        "trt tests: 3 trt test(s) passed without checking anything: "
        "test_a_trt_test_that_passed_without_checking_anything_is_reported_in_every_report.py::test_no_check, "
        "test_a_trt_test_that_passed_without_checking_anything_is_reported_in_every_report.py::test_session_only, "
        "test_a_trt_test_that_passed_without_checking_anything_is_reported_in_every_report.py::test_builds_only "
        "(built/ran, compared nothing)",
        "  (no trt.check(), assert_precision, *--trt-require-run fails such tests)",
    ])
    report = json.loads((pytester.path / "r.json").read_text())
    by_name = {t["nodeid"].split("::")[-1]: t for t in report["tests"]}
    assert {n: (t["outcome"], t["checked"], t["verdict"]) for n, t in by_name.items()} == {
        "test_checks": ("passed", True, "passed"),
        "test_no_check": ("passed", False, "passed, but nothing was checked"),
        "test_session_only": ("passed", False, "passed, but nothing was checked"),
        "test_builds_only": ("passed", False, "passed, but nothing was checked"),  # emulate: a graph, no check
    }
    assert report["summary"]["passed_unchecked"] == 3
    html = (pytester.path / "r.html").read_text()
    assert "<b>3</b>passed without checking anything" in html
    assert html.count('<span class="pill" title="passed, but nothing was checked">UNCHECKED</span>') == 3
    junit = (pytester.path / "j.xml").read_text()
    assert junit.count('name="trt_verdict" value="passed, but nothing was checked"') == 3


def test_require_run_fails_a_trt_test_that_checked_nothing(pytester):
    pytester.makepyfile(NO_CHECK)
    result = _run(pytester, "--trt-require-run")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, failed=3)
    result.stdout.fnmatch_lines_random([
        "*::test_no_check: pytest-trt: passed without checking anything (no trt.check(), assert_precision, "
        "check_parser, locate or suggest; no engine built), but --trt-require-run asks every collected trt "
        "test to test its engine here",
        "*::test_session_only: pytest-trt: passed without checking anything*",
    ])


# review2 row 2: a failed check caught inside a test that passed. Before: "3 passed", exit 0, with
# verdict "passed" and checked true in the JSON while summary.outputs_failed / precision_checks_failed
# were > 0 on a green run; nothing in the terminal said that a passing test had a failed check.
CAUGHT_INSIDE = HEADER + """
from pytest_trt import AccuracyError, PrecisionError

@pytest.mark.trt(model=ENCODER, dims=DIMS, val_range=NORMAL, atol=1e-12, rtol=1e-12)
def test_swallowed(trt):
    try:
        trt.check()
    except AssertionError:
        pass

@pytest.mark.trt(model=ENCODER, dims=DIMS, val_range=NORMAL, atol=1e-12, rtol=1e-12)
def test_raises_control(trt):
    with pytest.raises(AccuracyError):
        trt.check()

@pytest.mark.trt(model=ENCODER, dims=DIMS, val_range=NORMAL)
def test_swallowed_precision(trt):
    with pytest.raises(PrecisionError):
        trt.assert_precision("*/LayerNorm/*", "fp32")

@pytest.mark.trt(model=ENCODER, dims=DIMS, val_range=NORMAL, atol=5e-2)
def test_clean(trt):
    trt.check()
"""


def test_a_failed_check_caught_inside_a_passing_test_is_reported_as_caught_not_as_a_clean_pass(pytester):
    pytester.makepyfile(CAUGHT_INSIDE)
    result = _run(pytester, "--trt-fp16", "--trt-report=r.json", "--trt-html=r.html", "--junitxml=j.xml")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()  # pytest.raises is a legitimate negative control
    result.assert_outcomes(passed=4)
    name = "test_a_failed_check_caught_inside_a_passing_test_is_reported_as_caught_not_as_a_clean_pass.py"
    result.stdout.fnmatch_lines([
        f"trt tests: 3 trt test(s) passed, a failed check was caught by the test: {name}::test_swallowed, "
        f"{name}::test_raises_control, {name}::test_swallowed_precision",
        "  (their failures are counted as caught, not as failures*",
        "accuracy: 3 output(s) in 3 test(s), 2 outside tolerance (2 caught inside a passing test)*",
        "caught * ...::test_raises_control *",
        "caught * ...::test_swallowed *",
        "ok * ...::test_clean *",
        "precision checks: 0 passed, 0 failed (1 more caught inside a passing test); *; in failures caught "
        "(negative controls, or inside a passing test): * fail*",
    ])
    report = json.loads((pytester.path / "r.json").read_text())
    verdicts = {t["nodeid"].split("::")[-1]: (t["outcome"], t["verdict"]) for t in report["tests"]}
    caught = ("passed", "passed, a failed check was caught by the test")
    assert verdicts == {"test_swallowed": caught, "test_raises_control": caught, "test_swallowed_precision": caught,
                        "test_clean": ("passed", "passed")}
    summary = report["summary"]
    assert summary["passed_caught_in_test"] == 3
    assert (summary["outputs_failed"], summary["precision_checks_failed"]) == (0, 0)  # a green run
    assert summary["outputs_caught"] == 2 * len(report["tests"][0]["accuracy"][0]["outputs"])
    assert summary["precision_checks_caught"] == 1
    html = (pytester.path / "r.html").read_text()
    assert "<b>3</b>passed, a failed check was caught by the test" in html
    assert html.count('title="passed, a failed check was caught by the test">ok, CAUGHT</span>') == 3
    junit = (pytester.path / "j.xml").read_text()
    assert junit.count('name="trt_verdict" value="passed, a failed check was caught by the test"') == 3


# review3 row 1: the caught verdict covered only tests that passed. A test that caught a failed check and
# then called pytest.skip() was "SKIPPED (tested nothing)", and a non-strict xfail that swallowed it
# XPASSed; both left summary.outputs_failed > 0 on a green run (rc 0), the table row FAIL.
CAUGHT_THEN_NOT_FAILED = HEADER + """
from pytest_trt import AccuracyError

@pytest.mark.trt(model=ENCODER, dims=DIMS, val_range=NORMAL, atol=1e-12, rtol=1e-12)
def test_skipped_after(trt):
    try:
        trt.check()
    except AccuracyError:
        pytest.skip("flaky on this box")

@pytest.mark.xfail(reason="sometimes fails")
@pytest.mark.trt(model=ENCODER, dims=DIMS, val_range=NORMAL, atol=1e-12, rtol=1e-12)
def test_xpassed_after(trt):
    try:
        trt.check()
    except AccuracyError:
        pass

@pytest.mark.xfail(strict=True, raises=AccuracyError, reason="a negative control")
@pytest.mark.trt(model=ENCODER, dims=DIMS, val_range=NORMAL, atol=1e-12, rtol=1e-12)
def test_control(trt):
    trt.check()

@pytest.mark.trt(model=ENCODER, dims=DIMS, val_range=NORMAL)
def test_plain_skip(trt):
    pytest.skip("no GPU here")
"""


def test_a_failed_check_caught_then_skipped_or_xpassed_is_caught_not_tested_nothing(pytester):
    pytester.makepyfile(CAUGHT_THEN_NOT_FAILED)
    result = _run(pytester, "--trt-fp16", "--trt-report=r.json", "--trt-html=r.html", "--junitxml=j.xml")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.assert_outcomes(skipped=2, xpassed=1, xfailed=1)
    name = "test_a_failed_check_caught_then_skipped_or_xpassed_is_caught_not_tested_nothing.py"
    result.stdout.fnmatch_lines([
        "trt tests: 1 of 4 SKIPPED (tested nothing): 1 x no GPU here.*; 1 skipped after a failed check (listed below)",
        f"trt tests: 1 trt test(s) skipped after a failed check: {name}::test_skipped_after (flaky on this box)",
        f"trt tests: 1 trt test(s) xpassed after a failed check: {name}::test_xpassed_after",
        "  (their failures are counted as caught, not as failures*",
    ])
    assert "FAIL " not in result.stdout.str()
    report = json.loads((pytester.path / "r.json").read_text())
    verdicts = {t["nodeid"].split("::")[-1]: (t["outcome"], t["verdict"]) for t in report["tests"]}
    assert verdicts == {"test_skipped_after": ("skipped", "skipped after a failed check"),
                        "test_xpassed_after": ("xpassed", "xpassed after a failed check"),
                        "test_control": ("xfailed", "expected failure, caught"),
                        "test_plain_skip": ("skipped", "skipped")}
    summary = report["summary"]
    assert (summary["skipped_caught_in_test"], summary["xpassed_caught_in_test"]) == (1, 1)
    assert summary["passed_caught_in_test"] == 0
    assert summary["outputs_failed"] == 0  # a green run
    assert summary["outputs_caught"] == 3 * len(report["tests"][0]["accuracy"][0]["outputs"])
    html = (pytester.path / "r.html").read_text()
    assert 'title="skipped after a failed check">SKIP, CAUGHT</span>' in html
    assert 'title="xpassed after a failed check">XPASS, CAUGHT</span>' in html
    junit = (pytester.path / "j.xml").read_text()
    assert 'name="trt_verdict" value="skipped after a failed check"' in junit
    assert 'name="trt_verdict" value="xpassed after a failed check"' in junit


def test_the_head_line_counts_a_test_skipped_after_a_failed_check_as_skipped(pytester):
    """review4 row 2: the head line said "2 ran, none skipped" while pytest said "1 skipped"."""
    path = pytester.makepyfile(CAUGHT_THEN_NOT_FAILED)
    result = _run(pytester, "--trt-fp16", f"{path.name}::test_skipped_after", f"{path.name}::test_xpassed_after")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.assert_outcomes(skipped=1, xpassed=1)
    result.stdout.fnmatch_lines(["trt tests: 2 ran, 1 skipped after a failed check (listed below)"])
    assert "none skipped" not in result.stdout.str()


def test_under_require_run_a_test_skipped_after_a_failed_check_still_fails(pytester):
    path = pytester.makepyfile(CAUGHT_THEN_NOT_FAILED)
    result = _run(pytester, "--trt-fp16", "--trt-require-run", f"{path.name}::test_skipped_after", "--trt-report=r.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.assert_outcomes(failed=1)
    [test] = json.loads((pytester.path / "r.json").read_text())["tests"]
    assert (test["outcome"], test["verdict"]) == ("failed", "failed")
    assert json.loads((pytester.path / "r.json").read_text())["summary"]["outputs_failed"] > 0


# review2 row 4: on emulate a build writes an ONNX graph, so a test that only built or ran its engine
# compared nothing. Before: verdict "passed", checked true, and not in the "passed without checking
# anything" line; --trt-require-run let it pass. A backend that says its build is a check
# (Backend.build_is_a_check, a real TensorRT builder) keeps such a test checked.
BUILD_ONLY = HEADER + """
@pytest.mark.trt(model=ENCODER, dims=DIMS, val_range=NORMAL)
def test_engine_only(trt):
    trt.engine

@pytest.mark.trt(model=ENCODER, dims=DIMS, val_range=NORMAL)
def test_run_only(trt):
    trt.run(trt.feeds())
"""

#: a third-party backend over emulate that claims (for the test's sake) that its build is a check
STRICT_BUILDER = """
from pytest_trt.backends import Backend, get_backend


class BuilderBackend(Backend):
    name = "builder"
    disclaimer = "a test backend"
    build_is_a_check = True

    def __init__(self):
        self.inner = get_backend("emulate")

    def unavailable_reason(self):
        return None

    def versions(self):
        return {"builder": "0.1", **self.inner.versions()}

    def build(self, plan, config, cache, *, rebuild=False):
        return self.inner.build(plan, config, cache, rebuild=rebuild)


def pytest_trt_backends(config):
    return {"builder": BuilderBackend}
"""


@pytest.mark.parametrize("backend", ["emulate", "builder"])
def test_only_building_or_running_counts_as_a_check_only_where_the_backends_build_is_one(pytester, backend):
    pytester.makeconftest(STRICT_BUILDER)
    pytester.makepyfile(BUILD_ONLY)
    result = _run(pytester, "--trt-backend", backend, "--trt-report=r.json")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    report = json.loads((pytester.path / "r.json").read_text())
    checked = {t["nodeid"].split("::")[-1]: (t["checked"], t["verdict"]) for t in report["tests"]}
    if backend == "builder":
        assert checked == {"test_engine_only": (True, "passed"), "test_run_only": (True, "passed")}
        assert "passed without checking anything" not in result.stdout.str()
        return
    nothing = (False, "passed, but nothing was checked")
    assert checked == {"test_engine_only": nothing, "test_run_only": nothing}
    assert report["summary"]["passed_unchecked"] == 2
    result.stdout.fnmatch_lines(["trt tests: 2 trt test(s) passed without checking anything: "
                                 "*::test_engine_only (built/ran, compared nothing), "
                                 "*::test_run_only (built/ran, compared nothing)"])
    required = _run(pytester, "--trt-backend", backend, "--trt-require-run")
    required.assert_outcomes(failed=2)
    required.stdout.fnmatch_lines(["*::test_engine_only: pytest-trt: passed without checking anything (*; it built "
                                   "or ran its engine on emulate, where a build is no check, and compared nothing)*"])
