"""Run ids: unique without coordination, ordered by time, named by the user.

A run id is ``<UTC time>-<random>-<name>``: ``20261127T101500123456Z-3f9a2c1b4d5e-fp16-main``.
The time (microseconds) orders runs; 48 random bits make two runners, or two sessions in the
same microsecond, pick different ids without asking anyone; the store creates a run only if
its id is absent (:meth:`pytest_trt.history.store.RunStore.save`), so even that impossibility
loses nothing silently. Never a counter: two xdist workers or two CI runners could both take
the next number. ``NUM`` (``pytest-trt runs show 3``) is a run's 1-based index in time order
at the moment of asking, a convenience of the listing, never stored.

Standard library only: the plugin's option checks read it.
"""

from __future__ import annotations

import re
import secrets
from datetime import datetime, timezone

from ..errors import UsageError

__all__ = ["RUN_ID_RE", "check_name", "make_run_id", "run_time"]

_TIME_FORMAT = "%Y%m%dT%H%M%S%fZ"
_NAME = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}"
#: ``<time>-<12 hex>`` and an optional ``-<name>``
RUN_ID_RE = re.compile(rf"^(?P<time>\d{{8}}T\d{{12}}Z)-(?P<random>[0-9a-f]{{12}})(?:-(?P<name>{_NAME}))?$")


def check_name(name: str, flag: str = "--trt-save") -> str:
    """``name`` if it can name a run, else :class:`~pytest_trt.errors.UsageError` naming ``flag``.

    Letters, digits, ``_``, ``.`` and ``-``, at most 64 characters, not starting with ``.`` or ``-``;
    not only digits (``3`` means the third run) and not ``latest`` (a selector).
    """
    if not re.fullmatch(_NAME, name or ""):
        raise UsageError(f"{flag}={name!r}: a run name is 1 to 64 letters, digits, '_', '.' or '-', not starting "
                         f"with '.' or '-' (e.g. {flag}=fp16-main)")
    if name.isdigit() or name == "latest":
        raise UsageError(f"{flag}={name!r}: {'a number selects the run at that position' if name.isdigit() else 'latest selects the latest run'}; "
                         f"choose a name with a letter in it (e.g. {flag}=run-{name})")
    return name


def make_run_id(name: str | None = None, *, now: datetime | None = None) -> str:
    """A fresh run id (``name`` already checked with :func:`check_name`)."""
    when = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    run_id = f"{when.strftime(_TIME_FORMAT)}-{secrets.token_hex(6)}"
    return f"{run_id}-{name}" if name else run_id


def run_time(run_id: str) -> datetime | None:
    """The UTC time a run id was made, or None when ``run_id`` is not one."""
    m = RUN_ID_RE.match(run_id)
    if not m:
        return None
    return datetime.strptime(m.group("time"), _TIME_FORMAT).replace(tzinfo=timezone.utc)
