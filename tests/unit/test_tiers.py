"""The one no-skip mechanism for CI tiers (tests/tiers.py, tests/conftest.py), as pytest users meet it."""

from __future__ import annotations

import os

import pytest

# The inner project loads the real tests/conftest.py hooks by path (under another module name).
CONFTEST = (
    "import importlib.util, sys\n"
    "sys.path.insert(0, {tests!r})\n"
    "_spec = importlib.util.spec_from_file_location('_trt_tier_hooks', {tests!r} + '/conftest.py')\n"
    "_mod = importlib.util.module_from_spec(_spec)\n"
    "_spec.loader.exec_module(_mod)\n"
    "pytest_configure = _mod.pytest_configure\n"
    "pytest_collection_modifyitems = _mod.pytest_collection_modifyitems\n"
    "pytest_runtest_makereport = _mod.pytest_runtest_makereport\n"
)

TEST_FILE = """
import pytest

@pytest.mark.trt_parser
def test_tier():
    pytest.skip("TensorRT-RTX not installed (pip install -e '.[rtx]')")

def test_plain():
    pytest.skip("an ordinary skip")

@pytest.mark.browser
def test_light_tier():
    pytest.skip("chromium not found")
"""


@pytest.fixture
def tier_project(pytester, request):
    tests_dir = str(request.config.rootpath / "tests")
    pytester.makeconftest(CONFTEST.format(tests=tests_dir))
    pytester.makepyfile(test_tier=TEST_FILE)
    return pytester


def test_tier_skip_is_a_skip_outside_ci(tier_project, monkeypatch):
    monkeypatch.delenv("PYTEST_TRT_CI_NO_SKIP", raising=False)
    result = tier_project.runpytest_subprocess("-m", "trt_parser or browser or not browser", "-rs")
    result.assert_outcomes(skipped=3)
    result.stdout.fnmatch_lines(["*TensorRT-RTX not installed*"])


def test_tier_skip_fails_in_ci_and_says_why(tier_project, monkeypatch):
    monkeypatch.setenv("PYTEST_TRT_CI_NO_SKIP", "1")
    result = tier_project.runpytest_subprocess("-m", "trt_parser or browser or not browser")
    result.assert_outcomes(failed=2, skipped=1)
    result.stdout.fnmatch_lines(["*tier trt_parser would have skipped*TensorRT-RTX not installed*PYTEST_TRT_CI_NO_SKIP=1*"])


def test_plain_pytest_leaves_heavy_tiers_out(tier_project, monkeypatch):
    monkeypatch.delenv("PYTEST_TRT_CI_NO_SKIP", raising=False)
    result = tier_project.runpytest_subprocess()
    result.assert_outcomes(skipped=2, deselected=1)


def test_the_plugins_environment_variables_are_isolated_from_every_test():
    """Newcomer 2026-11-26 defect 4: with ``PYTEST_TRT_CACHE_DIR`` exported (the README's CI recipe
    does), pytester runs shared that cache and two tests failed. tests/conftest.py removes the
    plugin's variables before every test; the harness's own switches stay."""
    from tiers import HARNESS_ENV

    leaked = [n for n in os.environ if n.startswith("PYTEST_TRT_") and n not in HARNESS_ENV]
    assert leaked == []
    assert "PYTEST_TRT_CI_NO_SKIP" in HARNESS_ENV
