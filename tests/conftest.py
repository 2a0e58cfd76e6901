"""Test-suite setup.

pytester's in-process runs snapshot ``sys.modules`` and drop modules first imported
inside the inner run; re-importing onnx's C extension in the same process then aborts
(protobuf registers its descriptors twice). Importing the C-extension libraries here,
before any inner run, keeps them in the snapshot. This is about our test harness only:
the plugin itself still imports them lazily (see test_import_leaves_tensorrt_and_onnxruntime_out).
"""

import hypothesis  # noqa: F401  (its pytest plugin would otherwise import it in every inner run)
import numpy  # noqa: F401
import onnx  # noqa: F401

try:
    import onnxruntime  # noqa: F401
except ImportError:  # the suite needs it, but let collection report that clearly
    pass

pytest_plugins = ["pytester"]


import os  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from tiers import (  # noqa: E402
    DOCUMENTED_GPU_SKIP,
    GPU_NO_SKIP_ENV,
    HARNESS_ENV,
    HEAVY_TIERS,
    NO_SKIP_ENV,
    NO_SKIP_TIERS,
    no_skip_tiers,
)


@pytest.fixture(autouse=True)
def _isolate_pytest_trt_env(monkeypatch):
    """Every test starts without the plugin's own environment variables (``$PYTEST_TRT_CACHE_DIR``,
    ``$PYTEST_TRT_REMOTE_CACHE*``, and any added later): the README's CI recipe exports
    ``PYTEST_TRT_CACHE_DIR``, and a contributor's shell may hold the others, which would move
    the cache of every pytester run (a test counting builds then finds cache hits) or switch a
    remote on. A test that needs one sets it with ``monkeypatch.setenv``."""
    for name in [n for n in os.environ if n.startswith("PYTEST_TRT_") and n not in HARNESS_ENV]:
        monkeypatch.delenv(name)


def pytest_configure(config):
    for name, needs in NO_SKIP_TIERS.items():
        config.addinivalue_line("markers", f"{name}: {needs}; a skip is a failure when {NO_SKIP_ENV}=1")


def pytest_collection_modifyitems(config, items):
    """A plain `pytest` leaves the heavy tiers out; `pytest -m TIER` (or any -m) decides itself."""
    if config.option.markexpr:
        return
    keep, drop = [], []
    for item in items:
        (drop if any(item.get_closest_marker(t) for t in HEAVY_TIERS) else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under PYTEST_TRT_CI_NO_SKIP=1 a skipped tier test fails, with the skip's reason."""
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    tiers = [t for t in no_skip_tiers() if item.get_closest_marker(t)]
    if not tiers:
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if DOCUMENTED_GPU_SKIP in reason and not set(tiers) & set(NO_SKIP_TIERS):
        return  # the documented skip: TensorRT-RTX on a compute capability it does not support
    switch = f"{NO_SKIP_ENV}=1" + (f" and {GPU_NO_SKIP_ENV}=1" if not set(tiers) & set(NO_SKIP_TIERS) else "")
    report.outcome = "failed"
    report.longrepr = (
        f"{item.nodeid}: tier {', '.join(tiers)} would have skipped ({reason}), but {switch} "
        f"says everything this tier needs is installed here (.ci/run and the GPU workflow install it). "
        f"Install what the reason names, or unset {NO_SKIP_ENV} outside CI."
    )


# The plugin's tests act only on folders they created. A test that runs a pytest session or the console
# script without --trt-cache-dir/--cache-dir or --trt-storage/--storage from the repository would fill
# the checkout's default directories (a recheck test once made .trt-cache here): the session fails then.
_REPO = Path(__file__).resolve().parents[1]
_DEFAULT_DIRS = (".trt-cache", ".trt-runs")
_REPO_DIRS_BEFORE = pytest.StashKey[set]()


def pytest_sessionstart(session):
    session.config.stash[_REPO_DIRS_BEFORE] = {n for n in _DEFAULT_DIRS if (_REPO / n).exists()}


def pytest_sessionfinish(session, exitstatus):
    if hasattr(session.config, "workerinput"):  # xdist workers: the controller judges once, at the end
        return
    before = session.config.stash.get(_REPO_DIRS_BEFORE, set())
    made = [n for n in _DEFAULT_DIRS if (_REPO / n).exists() and n not in before]
    if made:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        line = (f"the plugin's tests created {', '.join(made)} in the repository ({_REPO}): a test ran a session or "
                f"the console script with the default cache or run storage; give it a directory under tmp_path")
        if reporter is not None:
            reporter.write_line(f"ERROR: {line}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
