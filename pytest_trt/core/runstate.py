"""Run-wide memo tables: the one home of state that outlives a single call.

Caches that would otherwise be module-level globals (ONNX Runtime sessions, upcast models,
checked models, TensorRT loggers, backend instances, what ``nvidia-smi`` said) live in a
:class:`RunState`. Exactly one is *current*:

* the pytest plugin makes a fresh one when a session is put in use (it is kept on the
  :class:`~pytest_trt.run.session.TrtSession` as ``state``) and discards it at
  ``pytest_unconfigure``, so nothing a session memoised is seen by the next one, also when
  several sessions run in one process (pytester's in-process runs);
* the ``pytest-trt`` console script and library callers outside pytest use the process's
  default state, which :func:`reset` replaces with an empty one.

Usage, in the module that owns a memo::

    from . import runstate

    def ort_session(key):
        table = runstate.current().table("baseline.sessions")
        ...

Table names are ``"<module>.<what>"``; a table is created empty on first use. The tables
are plain dicts (or what ``factory`` builds); callers that share one across threads take
:meth:`RunState.lock`.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


class RunState:
    """Named memo tables of one run (one pytest session, or the process outside pytest)."""

    def __init__(self) -> None:
        self._tables: dict[str, Any] = {}
        self._lock = threading.RLock()

    def table(self, name: str, factory: Callable[[], T] = dict) -> T:  # type: ignore[assignment]
        """The table called ``name``, created with ``factory()`` on first use."""
        with self._lock:
            if name not in self._tables:
                self._tables[name] = factory()
            return self._tables[name]

    def lock(self) -> threading.RLock:
        """One re-entrant lock for the tables of this run."""
        return self._lock

    def names(self) -> list[str]:
        """The tables created so far (for tests and debugging)."""
        with self._lock:
            return sorted(self._tables)

    def clear(self) -> None:
        """Drop every table."""
        with self._lock:
            self._tables.clear()


_current = RunState()


def current() -> RunState:
    """The run state in effect: the active pytest session's, else the process default."""
    return _current


def install(state: RunState) -> RunState:
    """Make ``state`` current; return the one it replaces (for :func:`restore`)."""
    global _current
    previous, _current = _current, state
    return previous


def restore(previous: RunState) -> None:
    """Undo :func:`install`."""
    global _current
    _current = previous


def reset() -> None:
    """Forget everything memoised in this process: a fresh, empty current state."""
    install(RunState())


@contextlib.contextmanager
def scoped(state: RunState | None = None) -> Iterator[RunState]:
    """Run a block with its own state (tests, the CLI): ``with runstate.scoped(): ...``."""
    state = state if state is not None else RunState()
    previous = install(state)
    try:
        yield state
    finally:
        restore(previous)
