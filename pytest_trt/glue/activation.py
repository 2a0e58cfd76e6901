"""Putting the plugin in use, and where a pytest run keeps pytest-trt's state.

The plugin (:mod:`pytest_trt.plugin`), the fixtures (:mod:`pytest_trt.glue.fixtures`) and the
GPU-per-worker hooks (:mod:`pytest_trt.glue.xdist_gpus`) all need the run's
:class:`~pytest_trt.run.session.TrtSession` and a test's records; this module owns the stash keys
they live under and :func:`activate`, which creates the session the first time the plugin is
*in use* (shared/CONVENTIONS.md). The three import it and not each other, so there is no
import cycle between them.

On the plugin's load path: it imports pytest and light package modules only (``settings``,
``errors``, ``runstate``, ``session``, ``backends.base``); nothing heavy until the plugin is in use.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from ..backends.base import Backend, register_backend, unregister_backend
from ..core import runstate
from ..errors import PytestTrtError, UsageError
from ..report.files import check_report_paths, refuse_report_path
from ..run import settings as _settings
from ..run.session import TrtSession
from . import runs

if TYPE_CHECKING:  # pragma: no cover
    from ..core.records import Record

#: the run's TrtSession on ``config.stash`` (absent while the plugin is inert)
SESSION_KEY = pytest.StashKey[TrtSession]()
#: a test item's records (:mod:`pytest_trt.core.records`), in the order the test made them
RECORDS_KEY = pytest.StashKey["list[Record]"]()
#: a test item's ``trt`` case (:class:`~pytest_trt.glue.case.TrtCase`), set by the ``trt`` fixture
CASE_KEY = pytest.StashKey[Any]()


def current_session(config: pytest.Config) -> TrtSession | None:
    """The run's session, or None while the plugin is not in use."""
    return config.stash.get(SESSION_KEY, None)


def item_records(node: pytest.Item) -> list[Record]:
    """The records list of a test item (created empty on first use); producers append to it."""
    records = node.stash.get(RECORDS_KEY, None)
    if records is None:
        records = []
        node.stash[RECORDS_KEY] = records
    return records


def activate(config: pytest.Config) -> TrtSession:
    """Put the plugin in use (once): resolve the settings, select the backend, check that what
    was asked for can be honoured. Returns the :class:`~pytest_trt.run.session.TrtSession`;
    raises ``pytest.UsageError`` naming the fix."""
    session = current_session(config)
    if session is not None:
        return session
    plugin_backends: tuple[str, ...] = ()
    state = runstate.RunState()  # this session's memos; discarded at pytest_unconfigure
    previous_state = runstate.install(state)
    try:
        _settings.check_path_option_forms(config)
        session_settings = _settings.resolve_settings(config)
        if not hasattr(config, "workerinput"):  # the controller writes the reports: it checks their paths
            check_report_paths(session_settings)
        started_at = getattr(config, "workerinput", {}).get("trt_session_start")
        plugin_backends = _register_plugin_backends(config)
        source = session_settings.sources.get("trt_backend", "--trt-backend")
        selected = config.hook.pytest_trt_select_backend(config=config, requested=session_settings.backend,
                                                         source=source)
        _check_selected(selected)
        session = TrtSession.create(session_settings, started_at=started_at, selected=selected)
        runs.prepare(config, session)  # saved runs: the storage, the run to compare with (usage errors now)
    except PytestTrtError as exc:
        forget_backends(plugin_backends)
        runstate.restore(previous_state)
        raise pytest.UsageError(f"pytest-trt: {exc}") from None
    session.state, session.previous_state = state, previous_state
    session.plugin_backends = plugin_backends
    session.guard_input = lambda path, what: refuse_report_path(session.settings, path, what)
    session.extend_test_entry = lambda entry, records: config.hook.pytest_trt_report_test(
        config=config, entry=entry, records=records)
    config.stash[SESSION_KEY] = session
    if not hasattr(config, "workerinput"):
        session.progress = _progress_writer(config)
        session.verbose = config.option.verbose > 0
    return session


def _register_plugin_backends(config: pytest.Config) -> tuple[str, ...]:
    """Register the backends plugins provide (``pytest_trt_backends``); returns their names."""
    found: dict[str, object] = {}
    for provided in config.hook.pytest_trt_backends(config=config):
        if not isinstance(provided, dict):
            raise UsageError(f"a pytest_trt_backends hook returned {provided!r}: expected a dict "
                             f"{{name: Backend subclass, instance or factory}}")
        for name, factory in provided.items():
            if name in found and found[name] is not factory:
                raise UsageError(f"two pytest_trt_backends hooks provide a backend named {name!r}: "
                                 f"rename one, or disable one plugin with -p no:NAME")
            found[name] = factory
    for name, factory in found.items():
        register_backend(name, factory)
    return tuple(found)


def _check_selected(selected: Any) -> None:
    if not (isinstance(selected, tuple) and len(selected) == 2 and isinstance(selected[0], Backend)):
        raise UsageError(f"a pytest_trt_select_backend hook returned {selected!r}: expected (Backend, reason)")


def forget_backends(names: tuple[str, ...] | list[str]) -> None:
    """Unregister the backends plugins registered for a run (at its end, or when activation fails)."""
    if names:
        for name in names:
            unregister_backend(name)


def _progress_writer(config: pytest.Config) -> Callable[[str], None]:
    """``progress(line)``: engines that took over a second, and "still building" heartbeats (every
    engine with ``-v``), written to the terminal past pytest's output capture, as pytest's live
    logging does (``CaptureManager.global_and_fixture_disabled``): under the default capture
    (fd) a line written while a test runs would otherwise land in the test's captured output.
    The heartbeat writes from its own thread while the test's thread waits for the build; a
    lock keeps two writers from toggling capture at once. The terminal reporter and capture
    manager register in their own pytest_configure: looked up when writing."""
    lock = threading.Lock()

    def progress(line: str) -> None:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        capman = config.pluginmanager.get_plugin("capturemanager")
        with lock, (capman.global_and_fixture_disabled() if capman is not None else contextlib.nullcontext()):
            reporter.write_line(line)

    return progress


__all__ = ["RECORDS_KEY", "SESSION_KEY", "activate", "current_session", "forget_backends", "item_records"]
