"""pytest-trt's pytest plugin (entry point ``pytest11: trt``).

The hooks, in the order pytest calls them (not the order of this file): ``pytest_addhooks``,
``pytest_addoption``, ``pytest_configure`` (puts the plugin in use when options say so);
pytest-xdist's ``pytest_xdist_auto_num_workers`` (``-n auto``); at session start
``pytest_report_header`` and pytest-xdist's ``pytest_configure_node`` (controller, as each worker
starts); ``pytest_collection_modifyitems`` (the first trt test puts it in use)
and ``pytest_report_collectionfinish`` (that session's header); per test ``pytest_runtest_setup``,
``pytest_runtest_call``, ``pytest_runtest_makereport`` (with :class:`FallbackRecorder` around the
phases and :class:`ResultsCollector`'s ``pytest_runtest_logreport`` on the process that reports);
``pytest_testnodedown`` (xdist controller, per finished worker); ``pytest_sessionfinish``
(the reports are written), ``pytest_terminal_summary``, ``pytest_unconfigure``.
``pytest_trt_select_backend`` is pytest-trt's own hook (:mod:`pytest_trt.glue.hookspec`), its
default implementation called from :func:`~pytest_trt.glue.activation.activate`.

The plugin is inert until it is *in use* (shared/CONVENTIONS.md): a ``--trt-*`` option or
``trt_*`` ini value is given (known in ``pytest_configure``), or a trt test is collected (a
test with one of the plugin's own fixtures in its closure,
:data:`pytest_trt.glue.items.PLUGIN_FIXTURES`; known in
``pytest_collection_modifyitems``). Until then it imports nothing beyond pytest, runs no
subprocess, selects no backend and prints nothing. From then on, anything asked for that
cannot be honoured is a usage error (:meth:`~pytest_trt.run.session.TrtSession.create`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ._version import __version__
from .backends.base import select_backend
from .core import runstate
from .core.records import BaselineFallbackRecord, ParserRecord, Record, record_from_json
from .errors import AccuracyError, ParserCheckError, PrecisionError, PytestTrtError, UnsupportedGpu
from .glue import hookspec, runs, xdist_gpus
from .glue.activation import (
    CASE_KEY,
    RECORDS_KEY,
    SESSION_KEY,
    activate,
    current_session,
    forget_backends,
    item_records,
)
from .glue.fixtures import trt, trt_baseline, trt_build, trt_engine, trt_session  # noqa: F401  (fixtures)
from .glue.items import is_trt_item, unread_marker_message  # the one definition of a trt test
from .report.files import refuse_report_path, report_paths
from .report.outcomes import checked_something, classify, junit_outcome_properties
from .run import settings as _settings
from .run.session_patterns import unmatched_message

RESULTS_KEY = pytest.StashKey[list]()
#: header lines still to show (a session activated by collection shows them after "collected N items")
PENDING_HEADER_KEY = pytest.StashKey[bool]()
#: on a pytest-xdist worker: why the plugin could not be put in use (each trt test errors with it)
ACTIVATION_ERROR_KEY = pytest.StashKey[str]()
#: on a pytest-xdist worker: {nodeid: usage error} of tests marked ``trt`` that request no plugin fixture
UNREAD_MARKERS_KEY = pytest.StashKey[dict]()
PROPERTY = "pytest_trt"
#: on a trt test's setup report: "this is a trt test"; on a skipped trt test's report: the reason.
#: They ride on the reports (pytest-xdist serializes them) and never reach JUnit XML, which
#: takes properties from the teardown report only.
TEST_PROPERTY = "pytest_trt_test"
SKIP_PROPERTY = "pytest_trt_skip"

MARKERS = (
    "trt(model=None, *, precision=None, keep_fp32=(), rules=(), policy=None, atol=None, rtol=None, shapes=None, "
    "dims=None, profile=None, val_range=None, seed=None, inputs=None, typing=None, as_is=False, expect_fp32=(), "
    "baseline='fp32', requires=None, tf32=None, locate_on_failure=None, allow_nonfinite=False, no_check=False): declare the model, precision policy, "
    "tolerances and inputs of a pytest-trt test (the `trt` fixture reads it). Closest marker wins per keyword; "
    "marker keywords override --trt-* options and ini. `requires='tensorrt'` skips, with the exact reason, "
    "unless that backend runs the session.",
)


def pytest_addhooks(pluginmanager):
    """pytest-trt's own hooks (:mod:`pytest_trt.glue.hookspec`), for other plugins and conftests."""
    pluginmanager.add_hookspecs(hookspec)


def pytest_addoption(parser):
    _settings.add_options(parser)


def pytest_configure(config):
    for marker in MARKERS:
        config.addinivalue_line("markers", marker)
    config.stash[RESULTS_KEY] = []
    config.pluginmanager.register(ResultsCollector(config), "pytest-trt-results")
    config.pluginmanager.register(FallbackRecorder(), "pytest-trt-fallbacks")
    if config.option.help or getattr(config.option, "markers", False) or getattr(config.option, "fixtures", False):
        return
    # --trt-gpus: on a worker this sets CUDA_VISIBLE_DEVICES, so it runs before the session probes any GPU
    xdist_gpus.configure(config)
    if _settings.given_options(config):  # a --trt-* option or trt_* ini value puts the plugin in use
        activate(config)


@pytest.hookimpl(trylast=True)
def pytest_trt_select_backend(config, requested, source):
    """pytest-trt's own choice, after any plugin's: ``auto`` is TensorRT where it runs, else emulate."""
    return select_backend(requested, source)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """pytest-xdist ``-n auto``: with ``--trt-gpus auto`` (or ``N``), one worker per GPU."""
    return xdist_gpus.auto_num_workers(config)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    """The first collected (and selected) trt test puts the plugin in use; a report path that is
    a model or inputs file named in a ``trt`` marker is a usage error here, and so is a test marked
    ``trt`` itself that requests no plugin fixture (nothing would read its marker)."""
    _refuse_unread_markers(config, items)
    if current_session(config) is None:
        first = next((item for item in items if is_trt_item(item)), None)
        if first is None:
            return
        try:
            activate(config)
        except pytest.UsageError as exc:
            if not hasattr(config, "workerinput"):
                raise
            # A pytest-xdist worker that raises here crashes without showing the message (the
            # controller reports an internal error): each trt test errors with it instead.
            config.stash[ACTIVATION_ERROR_KEY] = str(exc)
            return
        config.stash[PENDING_HEADER_KEY] = True
    _refuse_reports_over_declared_inputs(config, items)


def _refuse_unread_markers(config, items) -> None:
    """A ``trt`` marker on a selected test that requests no plugin fixture: a usage error naming the
    tests and the fix (:func:`~pytest_trt.glue.items.unread_marker_message`). On a pytest-xdist
    worker, where raising here shows only an internal error, each such test errors with it instead."""
    unread = {item.nodeid: message for item in items if (message := unread_marker_message(item))}
    if not unread:
        return
    if hasattr(config, "workerinput"):
        config.stash[UNREAD_MARKERS_KEY] = unread
        return
    raise pytest.UsageError("pytest-trt: " + "\n".join(unread.values()))


def _refuse_reports_over_declared_inputs(config, items) -> None:
    """``--trt-report``/``--trt-html`` naming a marker's ``model=`` or ``inputs=`` file: a usage error
    at start (the report would replace it at the end), where the markers are known: in a process
    that collects and writes the reports. Under pytest-xdist the controller collects nothing, so
    there (and for models a test names only at run time, ``trt_build(path)``) the check runs when
    the model or the inputs are loaded (:meth:`pytest_trt.run.session.TrtSession.model`): that test errors.
    Either way the report is never written over a file that is not a pytest-trt report."""
    run = current_session(config)
    if run is None or hasattr(config, "workerinput") or not report_paths(run.settings):
        return
    for item in items:
        if not is_trt_item(item):
            continue
        for mark in item.iter_markers("trt"):
            declared = {"model": mark.args[0] if mark.args else mark.kwargs.get("model"),
                        "inputs file": mark.kwargs.get("inputs")}
            for what, value in declared.items():
                if not isinstance(value, (str, os.PathLike)):
                    continue
                path = Path(value)
                path = path if path.is_absolute() else Path(str(item.path)).parent / path
                try:
                    refuse_report_path(run.settings, path, f"the {what} of {item.nodeid}")
                except PytestTrtError as exc:
                    raise pytest.UsageError(f"pytest-trt: {exc}") from None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    error = item.config.stash.get(ACTIVATION_ERROR_KEY, None)
    if error is not None and is_trt_item(item):
        raise pytest.UsageError(error)
    unread = item.config.stash.get(UNREAD_MARKERS_KEY, {}).get(item.nodeid)
    if unread is not None:
        raise pytest.UsageError(f"pytest-trt: {unread}")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist (controller): workers share the run's start time, so --trt-rebuild
    rebuilds each cache key once per run, not once per worker."""
    session = current_session(node.config)
    if session is not None:
        node.workerinput["trt_session_start"] = session.started_at
        if session.outputs_dir is not None:  # --trt-save-outputs: workers write into the controller's staging folder
            node.workerinput["trt_outputs_dir"] = str(session.outputs_dir)


def pytest_report_header(config):
    session = current_session(config)
    if session is None:
        return None
    return header_lines(session, config)


def pytest_report_collectionfinish(config, start_path, items):
    """A session put in use by its first trt test states its header here, after collection."""
    if not config.stash.get(PENDING_HEADER_KEY, False):
        return None
    config.stash[PENDING_HEADER_KEY] = False
    return header_lines(config.stash[SESSION_KEY], config)


def header_lines(session, config=None) -> list[str]:
    """Everything needed to reproduce a result: backend and why, precision, versions, GPU, cache;
    then the lines of plugins' ``pytest_trt_report_header`` hooks (with ``config``)."""
    from .core import environment  # load path: imported once in use

    s = session.settings
    versions = dict(environment.library_versions())
    # The running onnxruntime module's version, not a distribution's metadata (onnxruntime and
    # onnxruntime-gpu can both be installed; docs/VERIFIED.md). The plugin is in use here, so
    # importing onnxruntime is fine (the session's runtime check already did).
    from .reference.baseline import onnxruntime_version  # load path: imported once in use

    ort_version = onnxruntime_version()
    versions["onnxruntime"] = None if ort_version == "missing" else ort_version

    def v(name):
        return versions.get(name) or "not installed"

    precision = f"{s.precision} ({s.precision_source})" if not s.as_is else "as-is (model's own types)"
    cache_line = str(s.cache_dir)
    remote = [f"pytest-trt: {session.remote.describe()}"] if session.remote is not None else []
    if s.keep_fp32:  # the session's patterns, where they came from (one matching in no model fails the run)
        where = _settings.describe_source(config, "trt_keep_fp32") if config is not None else \
            s.sources.get("trt_keep_fp32", "--trt-keep-fp32")
        remote.append(f"pytest-trt: session patterns: keep FP32 {', '.join(repr(p) for p in s.keep_fp32)} "
                      f"({where}; each must match a node in some model of the trt tests that run)")
    saved_runs = runs.header_line(session)
    if saved_runs:
        remote.append(saved_runs)
    return [
        f"pytest-trt {__version__}: backend {session.backend.name} ({session.backend_reason})",
        f"pytest-trt: default precision {precision}; typing {s.typing}; baseline ONNX Runtime {s.baseline_provider}; "
        f"input seed {s.seed}",
        f"pytest-trt: tensorrt {v('tensorrt')}, onnxruntime {v('onnxruntime')}, polygraphy {v('polygraphy')}, "
        f"onnx {v('onnx')}; GPU: {environment.gpu_summary()}",
        f"pytest-trt: cache {cache_line}" + (" (rebuild: cached entries ignored)" if s.rebuild else ""),
    ] + remote + _plugin_header_lines(session, config)


def _plugin_header_lines(session, config) -> list[str]:
    if config is None:
        return []
    lines: list[str] = []
    for result in config.hook.pytest_trt_report_header(config=config, session=session):
        lines.extend([result] if isinstance(result, str) else (result or ()))
    return [str(line) for line in lines]


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
def pytest_runtest_call(item):
    """After the test body, two automatic verdicts of the call phase.

    ``--trt-ledger``: the ledger of the engine the test's ``trt`` case built. When the body (or a
    parser check) failed, a ledger that cannot be made stays quiet: that failure is the headline.

    ``--trt-parser-check``: a failed automatic parser check fails the test in its call phase, after
    its body gave every other verdict, as a :class:`~pytest_trt.errors.ParserCheckError`; raised
    here, an xfail's ``raises=`` sees it (a negative control), which a verdict applied later to
    the report could not (it showed XPASS(strict)). It never turns a failure into a pass."""
    try:
        result = yield
    except (UnsupportedGpu, pytest.skip.Exception) as exc:  # a skip must not hide a parser failure (a CPU verdict)
        _auto_ledger(item, quiet=True)
        _raise_failed_parser_checks(item, exc)
        raise
    except BaseException:
        _auto_ledger(item, quiet=True)
        raise
    _auto_ledger(item, quiet=bool(_failed_parser_checks(item)))
    _raise_failed_parser_checks(item, None)
    return result


def _failed_parser_checks(item) -> list[ParserRecord]:
    """The automatic (--trt-parser-check) parser checks of a trt test that failed."""
    if current_session(item.config) is None:
        return []
    records = item.stash.get(RECORDS_KEY, None) or ()
    return [r for r in records if isinstance(r, ParserRecord) and not r.passed and not r.explicit]


def _raise_failed_parser_checks(item, cause) -> None:
    failed = _failed_parser_checks(item)
    if failed:
        text = "\n\n".join(r.message or r.error or "parser check failed" for r in failed)
        raise ParserCheckError(f"pytest-trt --trt-parser-check: the plan failed TensorRT-RTX's parser check\n{text}",
                               failed) from cause


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    # what the test raised, before pytest's unittest plugin turns an UnsupportedGpu (also a
    # unittest.SkipTest) into its own Skipped, which would point at _pytest/unittest.py
    excinfo = call.excinfo
    report = yield
    session = current_session(item.config)
    if session is None:  # not in use: leave every report alone
        return report
    trt_test = is_trt_item(item)
    if trt_test and call.when == "setup":
        report.user_properties.append((TEST_PROPERTY, item.nodeid))
    if excinfo is not None and excinfo.errisinstance(UnsupportedGpu):
        # The documented skip: an engine built for a GPU that cannot load it (TensorRT-RTX on
        # an unsupported compute capability), found when it is loaded or run wherever that
        # happens (fixture, trt.check, assert_precision, locate, user code). Not a failure,
        # and not an xfail's "raised the wrong exception". Every other BackendUnavailable is
        # an error: what was asked for cannot be honoured.
        report.outcome = "skipped"
        if hasattr(report, "wasxfail"):
            del report.wasxfail
        report.longrepr = (str(item.path), (item.location[1] or 0) + 1, f"Skipped: {excinfo.value.reason}")
    elif excinfo is not None and excinfo.errisinstance((AccuracyError, PrecisionError, PytestTrtError)):
        if item.config.option.tbstyle in ("auto", "short", "line", "no"):
            report.longrepr = _short_longrepr(item, excinfo)
    records = item.stash.get(RECORDS_KEY, None)
    if records and call.when == "call":
        # after the UnsupportedGpu skip: a failed parser check (it runs on the CPU) fails the test
        # even when the engine cannot load on this GPU
        _apply_parser_checks(report, records, excinfo)
    if trt_test:
        _require_run(item, call, report, session, records)
        _attach_results(item, call, report, session)
    return report


def _require_run(item, call, report, session, records) -> None:
    """A skipped trt test's reason on its report; under ``--trt-require-run`` a skipped trt test, and one
    that passed without checking anything (no record but a baseline note), fail instead."""
    source = session.settings.sources.get("trt_require_run", "--trt-require-run")
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = skip_reason_of(report)
        if session.settings.require_run:
            report.outcome = "failed"
            report.longrepr = (f"{item.nodeid}: pytest-trt: skipped ({reason}), but {source} asks every "
                               f"collected trt test to run here")
        else:
            report.user_properties.append((SKIP_PROPERTY, reason))
    elif call.when == "call" and report.passed and not hasattr(report, "wasxfail") \
            and session.settings.require_run and not checked_something(records):
        report.outcome = "failed"
        built = any(getattr(r, "kind", None) == "engine" for r in records or ())
        what = (f"it built or ran its engine on {session.backend.name}, where a build is no check, and compared "
                f"nothing" if built else "no engine built")
        report.longrepr = (f"{item.nodeid}: pytest-trt: passed without checking anything (no trt.check(), "
                           f"assert_precision, check_parser, locate or suggest; {what}), but {source} "
                           f"asks every collected trt test to test its engine here")


def _auto_ledger(item, *, quiet: bool) -> None:
    session = current_session(item.config)
    if session is None or not session.settings.ledger:
        return
    case = item.stash.get(CASE_KEY, None)
    if case is None:
        return
    try:
        case.auto_ledger()
    except Exception:
        if not quiet:
            raise


def skip_reason_of(report) -> str:
    """The reason of a skipped report (``longrepr`` is ``(path, lineno, "Skipped: reason")``)."""
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return text[len("Skipped: "):] if text.startswith("Skipped: ") else text


def _attach_results(item, call, report, session) -> None:
    """Every trt test reaches the reports with its pytest outcome (report/outcomes.py), its records
    (condensed: one per repeated check, unless --trt-report-all-records) and, when it failed, its message.

    The blob rides on the deciding phase's report only (ResultsCollector reads it there; it stays
    out of JUnit XML, which takes properties from the teardown report = item.user_properties).
    """
    facts = classify(item, call, report)
    if facts is None:
        return
    records: list[Record] = list(item.stash.get(RECORDS_KEY, None) or ())
    if records and not session.settings.report_all_records:
        from .report.condense import condense_records  # load path: imported once in use

        records = condense_records(records)
    # the records travel as JSON (pytest-xdist serializes the report); ResultsCollector reads them back
    blob = {**facts, "records": [rec.to_json() for rec in records]}
    report.user_properties.append((PROPERTY, json.dumps(blob, default=str)))
    if report.when != "teardown":
        item.user_properties.extend(junit_outcome_properties({**facts, "records": records}))
        if records:
            item.user_properties.extend(_junit_properties(records))
        elif facts.get("message"):
            item.user_properties.append(("trt_message", facts["message"]))


def _apply_parser_checks(report, records, excinfo) -> None:
    """--trt-parser-check beside another failure of the test body: the failed parser checks are
    shown as a section of its report (a passing body got a ParserCheckError from
    :func:`pytest_runtest_call` instead); they never turn a failure, skip or xfail into a pass."""
    failed = [r for r in records if isinstance(r, ParserRecord) and not r.passed and not r.explicit]
    if not failed or (excinfo is not None and excinfo.errisinstance(ParserCheckError)):
        return  # none, or already the test's failure (the call phase's, or trt.check_parser()'s)
    text = "\n\n".join(r.message or r.error or "parser check failed" for r in failed)
    report.sections.append(("pytest-trt parser check", text))


def _junit_properties(records: list[Record]) -> list[tuple[str, str]]:
    """Flat per-test properties for JUnit XML (GitHub test reporters show them)."""
    from .report.junit import junit_properties  # load path: imported once in use

    return junit_properties(records)


class FallbackRecorder:
    """While a trt test runs (setup, call, teardown), a CUDA baseline whose float nodes fell back to
    ONNX Runtime's CPU provider adds a ``baseline_fallback`` record to the test's records (once per
    model and node list), besides its ProviderFallbackWarning (:func:`pytest_trt.reference.baseline.warn_placement`)."""

    def _around(self, item):
        if current_session(item.config) is None or not is_trt_item(item):
            return None
        from .reference.baseline import FALLBACK_SINK  # load path: imported once in use

        def sink(record: BaselineFallbackRecord) -> None:
            records = item_records(item)
            if not any(isinstance(r, BaselineFallbackRecord) and r.model == record.model and r.nodes == record.nodes
                       for r in records):
                records.append(record)

        return FALLBACK_SINK, FALLBACK_SINK.set(sink)

    def _phase(self, item):
        token = self._around(item)
        try:
            yield
        finally:
            if token is not None:
                token[0].reset(token[1])

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item):
        yield from self._phase(item)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        yield from self._phase(item)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item):
        yield from self._phase(item)


class ResultsCollector:
    """Collects per-test records, trt tests and their skips from test reports.

    They ride on ``report.user_properties``, which pytest-xdist serializes, so on the
    controller this sees every worker's results; reports are then written once there. A
    controller that was not put in use by options is put in use by the first trt test a
    worker reports (it collects nothing itself).
    """

    def __init__(self, config):
        self.config = config
        self.sink = config.stash[RESULTS_KEY]
        self._by_nodeid: dict[str, dict] = {}

    def pytest_runtest_logreport(self, report):
        for name, value in report.user_properties:
            if name in (TEST_PROPERTY, SKIP_PROPERTY):
                session = activate(self.config)
                if name == TEST_PROPERTY:
                    session.trt_tests.add(report.nodeid)
                else:
                    session.skipped.append((report.nodeid, value))
                continue
            if name != PROPERTY:
                continue
            blob = json.loads(value)
            entry = self._by_nodeid.get(report.nodeid)
            if entry is None:
                entry = self._by_nodeid[report.nodeid] = {"nodeid": report.nodeid, "records": []}
                self.sink.append(entry)
            records = [record_from_json(rec) for rec in blob.pop("records", None) or ()]
            if records or not entry["records"]:
                entry["records"] = records
            if report.when == "teardown" and entry.get("outcome") not in (None, "passed"):
                entry.setdefault("teardown_message", blob.get("message"))
                continue  # an error after a failure: pytest reports both; the failure stays the outcome
            entry.update(blob)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    session = current_session(config)
    if session is None or hasattr(config, "workerinput"):
        return
    from .report.summary import write_terminal_summary  # load path: imported once in use

    write_terminal_summary(terminalreporter, session, list(config.stash[RESULTS_KEY]))


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """pytest-xdist (controller): add a finished worker's cache figures and session-pattern use to the session's."""
    session = current_session(node.config)
    output = getattr(node, "workeroutput", {})
    stats = output.get("trt_cache_stats")
    if session is not None and stats:
        session.worker_cache_stats.append(stats)
    if session is not None and output.get("trt_session_patterns"):
        session.patterns.merge(output["trt_session_patterns"])


def pytest_unconfigure(config):
    """Forget the backends plugins registered for this run and the run's memo tables
    (:mod:`pytest_trt.core.runstate`): an in-process pytester run must not leak them into the next."""
    session = current_session(config)
    if session is not None:
        forget_backends(session.plugin_backends)
        if session.state is not None:  # the run's memos end with the run
            session.state.clear()
            runstate.restore(session.previous_state)


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    run = current_session(config)
    if run is None:
        return
    if run.opened_cache is not None:  # the hits kept in memory reach events.jsonl before the run ends
        run.opened_cache.flush_events()
    if hasattr(config, "workerinput"):
        if run.opened_cache is not None:  # the worker's cache figures travel to the controller
            config.workeroutput["trt_cache_stats"] = run.opened_cache.stats.to_json()
        # which session patterns matched here: the controller judges the whole run
        config.workeroutput["trt_session_patterns"] = run.patterns.to_json()
        if run.opened_remote is not None:
            run.opened_remote.close()
        return
    if exitstatus == pytest.ExitCode.USAGE_ERROR:
        # refused before anything ran (e.g. a report path that is a model named in a marker):
        # no report, and none written over the path that was refused; no run saved
        if run.opened_remote is not None:
            run.opened_remote.close()
        runs.close(run)
        return
    # What fails the session although its tests did not: stated in the terminal summary (which
    # pytest writes after this hook), exit 1, never a traceback that loses the summary.
    run.session_failures.extend(unmatched_message(run.patterns, _settings.describe_source(config, "trt_keep_fp32")))
    if run.session_failures and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = exitstatus = pytest.ExitCode.TESTS_FAILED
    results = list(config.stash[RESULTS_KEY])
    # --trt-compare-run: the drift against the stored run; a failed --trt-compare-fail gate fails the
    # session (exit 1, one "pytest-trt drift gate FAILED ..." line), never a test item: see README "Did it get worse?"
    # A gate over a session that collected nothing failed too (it judged nothing): exit 1, not 5.
    if not runs.judge_drift(run, results, exitstatus) and session.exitstatus in (
            pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = exitstatus = pytest.ExitCode.TESTS_FAILED
    from .report import write_reports  # load path: imported once in use

    not_written = write_reports(run, results, exitstatus)
    run.session_failures.extend(not_written)
    if not_written and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = exitstatus = pytest.ExitCode.TESTS_FAILED
    # --trt-save / --trt-autosave: the run with its final exit status (a run is "latest" only if it is 0)
    if not runs.save_run(run, results, int(session.exitstatus)) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    runs.close(run)
    if run.opened_remote is not None:
        run.opened_remote.close()
