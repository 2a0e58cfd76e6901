"""pytest-trt's pytest plugin (entry point ``pytest11: trt``). Hooks in the order pytest calls them.

Importing this module imports neither TensorRT nor ONNX Runtime: collection works on
any machine, and the backend is chosen once per session in ``pytest_configure``.
"""

from __future__ import annotations

import json

import pytest

from . import settings as _settings
from ._version import __version__
from .errors import AccuracyError, BackendUnavailable, PrecisionError, PytestTrtError
from .fixtures import RECORDS_KEY, trt, trt_baseline, trt_build, trt_engine, trt_session  # noqa: F401  (fixtures)

SESSION_KEY = pytest.StashKey["object"]()
RESULTS_KEY = pytest.StashKey[list]()
PROPERTY = "pytest_trt"

MARKERS = (
    "trt(model=None, *, precision=None, keep_fp32=(), rules=(), policy=None, atol=None, rtol=None, shapes=None, "
    "dims=None, profile=None, val_range=None, seed=None, inputs=None, typing=None, as_is=False, expect_fp32=(), "
    "baseline='fp32', requires=None, tf32=None, locate_on_failure=None, allow_nonfinite=False): declare the model, precision policy, "
    "tolerances and inputs of a pytest-trt test (the `trt` fixture reads it). Closest marker wins per keyword; "
    "marker keywords override --trt-* options and ini. `requires='tensorrt'` skips, with the exact reason, "
    "unless that backend runs the session.",
)


def pytest_addoption(parser):
    _settings.add_options(parser)


def pytest_configure(config):
    for marker in MARKERS:
        config.addinivalue_line("markers", marker)
    config.stash[RESULTS_KEY] = []
    config.pluginmanager.register(ResultsCollector(config.stash[RESULTS_KEY]), "pytest-trt-results")
    if config.option.help or getattr(config.option, "markers", False) or getattr(config.option, "fixtures", False):
        return
    from . import xdist_gpus
    from .session import TrtSession

    # --trt-gpus: on a worker this sets CUDA_VISIBLE_DEVICES, so it runs before the session probes any GPU
    xdist_gpus.configure(config)
    try:
        session_settings = _settings.resolve_settings(config)
        started_at = getattr(config, "workerinput", {}).get("trt_session_start")
        session = TrtSession.create(session_settings, started_at=started_at)
    except BackendUnavailable as exc:
        raise pytest.UsageError(f"pytest-trt: {exc}") from None
    except PytestTrtError as exc:
        raise pytest.UsageError(f"pytest-trt: {exc}") from None
    config.stash[SESSION_KEY] = session
    if not hasattr(config, "workerinput"):
        # engines that took over a second, and "still building" heartbeats; every engine with -v.
        # The terminal reporter registers in its own pytest_configure: look it up when writing.
        def progress(line: str) -> None:
            reporter = config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.write_line(line)

        session.progress = progress
        session.verbose = config.option.verbose > 0


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist (controller): workers share the run's start time, so --trt-rebuild
    rebuilds each cache key once per run, not once per worker."""
    session = node.config.stash.get(SESSION_KEY, None)
    if session is not None:
        node.workerinput["trt_session_start"] = session.started_at


def pytest_report_header(config):
    from . import environment

    session = config.stash.get(SESSION_KEY, None)
    if session is None:
        return None
    s = session.settings
    versions = environment.library_versions()

    def v(name):
        return versions.get(name) or "not installed"

    precision = f"{s.precision} ({s.precision_source})" if not s.as_is else "as-is (model's own types)"
    cache_line = str(s.cache_dir)
    remote = [f"pytest-trt: {session.remote.describe()}"] if session.remote is not None else []
    return [
        f"pytest-trt {__version__}: backend {session.backend.name} ({session.backend_reason})",
        f"pytest-trt: default precision {precision}; typing {s.typing}; baseline ONNX Runtime {s.baseline_provider}; "
        f"input seed {s.seed}",
        f"pytest-trt: tensorrt {v('tensorrt')}, onnxruntime {v('onnxruntime')}, polygraphy {v('polygraphy')}, "
        f"onnx {v('onnx')}; GPU: {environment.gpu_summary()}",
        f"pytest-trt: cache {cache_line}" + (" (rebuild: cached entries ignored)" if s.rebuild else ""),
    ] + remote


def _short_longrepr(item, excinfo) -> str:
    """Our own errors carry the whole story in their message; show it without internal frames."""
    location = ""
    for entry in reversed(excinfo.traceback):
        if str(entry.path) == str(item.path):
            location = f"{item.path}:{entry.lineno + 1}: "
            break
    kind = excinfo.type.__name__
    notes = "".join(f"\n{note}" for note in getattr(excinfo.value, "__notes__", ()))  # e.g. Hypothesis's example
    return f"{location}{kind}\n{excinfo.value}{notes}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    records = item.stash.get(RECORDS_KEY, None)
    if records and call.when == "call":
        # The blob rides on the call report only (ResultsCollector reads it there; it stays out of
        # JUnit XML, which takes properties from the teardown report = item.user_properties).
        report.user_properties.append((PROPERTY, json.dumps(records, default=str)))
        item.user_properties.extend(_junit_properties(records))
    excinfo = call.excinfo
    if excinfo is not None and excinfo.errisinstance(BackendUnavailable):
        # Found only when an engine is loaded or run (e.g. TensorRT-RTX on a GPU it does not
        # support), wherever that happens: fixture, trt.check, assert_precision, locate,
        # user code. The test cannot run here; that is a skip with the reason, not a failure
        # (and not an xfail's "raised the wrong exception").
        report.outcome = "skipped"
        if hasattr(report, "wasxfail"):
            del report.wasxfail
        report.longrepr = (str(item.path), (item.location[1] or 0) + 1, f"Skipped: {excinfo.value.reason}")
        return report
    if excinfo is not None and excinfo.errisinstance((AccuracyError, PrecisionError, PytestTrtError)):
        if item.config.option.tbstyle in ("auto", "short", "line", "no"):
            report.longrepr = _short_longrepr(item, excinfo)
    return report


def _junit_properties(records):
    """Flat per-test properties for JUnit XML (GitHub test reporters show them)."""
    from .report.summary import junit_properties

    return junit_properties(records)


class ResultsCollector:
    """Collects per-test records from test reports.

    Records ride on ``report.user_properties``, which pytest-xdist serializes, so on the
    controller this sees every worker's results; reports are then written once there.
    """

    def __init__(self, sink: list):
        self.sink = sink

    def pytest_runtest_logreport(self, report):
        if report.when != "call":
            return
        for name, value in report.user_properties:
            if name == PROPERTY:
                self.sink.append({"nodeid": report.nodeid, "outcome": report.outcome, "records": json.loads(value)})


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    from .report.summary import write_terminal_summary

    session = config.stash.get(SESSION_KEY, None)
    if session is None or hasattr(config, "workerinput"):
        return
    write_terminal_summary(terminalreporter, session, list(config.stash[RESULTS_KEY]))


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """pytest-xdist (controller): add a finished worker's cache figures to the session's."""
    session = node.config.stash.get(SESSION_KEY, None)
    stats = getattr(node, "workeroutput", {}).get("trt_cache_stats")
    if session is not None and stats:
        session.worker_cache_stats.append(stats)


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    run = config.stash.get(SESSION_KEY, None)
    if run is None:
        return
    if hasattr(config, "workerinput"):
        if run._cache is not None:  # the worker's cache figures travel to the controller
            config.workeroutput["trt_cache_stats"] = run._cache.stats.to_json()
        if run._remote is not None:
            run._remote.close()
        return
    from .report import write_reports

    write_reports(run, list(config.stash[RESULTS_KEY]), exitstatus)
    if run._remote is not None:
        run._remote.close()
