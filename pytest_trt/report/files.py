"""Where the report files go: checked when the session starts, written atomically at its end.

A report path that cannot be written used to be found only after every test ran: a
traceback in ``pytest_sessionfinish``, the summary lost, a ``.tmp`` file left behind (audit
F8). Now :func:`check_report_path` refuses, when the session starts (a usage error, exit 4),
a directory, a path under a file, a place where no file can be created (``/proc``,
``/sys``, an unwritable directory: a probe file is created and removed), a path that is not
a regular file, and an existing file that is not a pytest-trt report of the same kind (the
model under test, an input, a file of the user's: the plugin rewrites only what it wrote).
A missing parent directory is fine: it is created at the end.

:func:`write_report_file` writes through a temporary file and ``os.replace``. If that still
fails (a full disk), the temporary file is removed and the report of an earlier run at
that path is renamed out of the way (``PATH.stale``, or ``PATH.stale.N``), never deleted:
its content is kept, while a CI gate reading PATH finds no file instead of reading the
earlier run's verdict as this run's. The caller states the failure in one line and fails
the session (exit 1). Imports nothing heavy: the plugin calls the check at session start.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from pathlib import Path

from ..errors import UsageError

__all__ = ["check_report_path", "check_report_paths", "is_report_file", "refuse_report_path", "report_paths",
           "same_path", "write_atomically", "write_report_file"]

#: how much of an existing file is read to recognise a pytest-trt report
HEAD_BYTES = 4096
#: the first bytes of a JSON report (``json.dumps(indent=1)`` puts schema_version first) and of an HTML report
_JSON_HEAD = re.compile(rb'\A\s*\{\s*"schema_version"\s*:')
_HTML_MARKS = (b'<meta name="generator" content="pytest-trt', b"<title>pytest-trt report</title>")
#: files the plugin creates beside a report (and removes): the temporary file and the start-up probe
TMP_PREFIX = "."
PROBE_PREFIX = ".pytest-trt-probe-"


def is_report_file(path: Path, kind: str) -> bool:
    """Whether ``path`` holds a pytest-trt report of ``kind`` (``json`` or ``html``), or nothing (empty)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(HEAD_BYTES)
    except OSError:
        return False
    if not head.strip():
        return True  # an empty placeholder (e.g. `touch r.json`): nothing to lose
    if kind == "json":
        return bool(_JSON_HEAD.match(head))
    return any(mark in head for mark in _HTML_MARKS)


def _what_it_is(path: Path) -> str:
    """A short guess at a foreign file, for the message (``an ONNX model``, ``an .npz archive``)."""
    suffix = path.suffix.lower()
    return {".onnx": "an ONNX model", ".npz": "an .npz archive (input feeds?)", ".npy": "a NumPy array",
            ".py": "a Python file"}.get(suffix, "a file that is not a pytest-trt report")


def check_report_path(path: Path, flag: str, kind: str) -> None:
    """UsageError when ``path`` (the value of ``flag``, e.g. ``--trt-report``) cannot take the
    report; nothing is written except a probe file, created and removed, in its directory."""
    given = f"{flag}={path}"
    if path.is_dir():
        raise UsageError(f"{given} is a directory: give a file path, e.g. {flag}={path / ('report.' + kind)}")
    if path.exists() or path.is_symlink():
        try:
            mode = os.stat(path).st_mode
        except OSError as exc:
            raise UsageError(f"{given} cannot be used: {exc.strerror or exc}") from None
        if not stat.S_ISREG(mode):
            raise UsageError(f"{given} is not a regular file (a device, pipe or socket): the report is written "
                             f"by replacing the file; give a file path")
        if not is_report_file(path, kind):
            raise UsageError(f"{given} exists and is {_what_it_is(path)}: the report never replaces a file the "
                             f"plugin did not write (the model under test, an input); choose another path, or "
                             f"remove the file")
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise UsageError(f"{given} lies under {ancestor}, which is a file, not a directory: choose another path")
    try:  # what the report's temporary file (or its missing parent directories) will need
        fd, probe = tempfile.mkstemp(dir=ancestor, prefix=PROBE_PREFIX)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"{given} cannot be written: no file can be created in {ancestor} "
                         f"({exc.strerror or exc}); choose a writable path (checked at start, so that a long run "
                         f"does not lose its report at the end)") from None


def report_paths(settings) -> list[tuple[str, Path, str]]:
    """``(flag, path, kind)`` of the session's report files (``--trt-report``/``ini trt_report``, ...)."""
    out = []
    for dest, flag, path, kind in (("trt_report", "--trt-report", settings.report_json, "json"),
                                   ("trt_html", "--trt-html", settings.report_html, "html")):
        if path:
            source = settings.sources.get(dest, flag)
            out.append((flag if source == "default" else source, Path(path), kind))
    return out


def check_report_paths(settings) -> None:
    """:func:`check_report_path` for each report of the session, and the two not the same file."""
    paths = report_paths(settings)
    for flag, path, kind in paths:
        check_report_path(path, flag, kind)
    if len(paths) == 2 and same_path(paths[0][1], paths[1][1]):
        raise UsageError(f"{paths[0][0]}={paths[0][1]} and {paths[1][0]}={paths[1][1]} are the same file: the "
                         f"HTML report would replace the JSON one; give two paths")


def refuse_report_path(settings, path: Path, what: str) -> None:
    """UsageError when ``path`` (an input the session loads: ``what``, e.g. ``the model``) is one of
    the session's report paths: the report written at the end would replace it."""
    for flag, report, _ in report_paths(settings):
        if same_path(Path(path), report):
            raise UsageError(f"{flag}={report} is {what} ({path}): the report never replaces an input of the "
                             f"session (like `pytest-trt plan --export-onnx`, which never replaces its model); "
                             f"choose another report path")


def same_path(a: Path, b: Path) -> bool:
    """Whether two paths name the same file: the same inode when both exist (symbolic and hard
    links included), else the same resolved path."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return Path(os.path.abspath(a)).resolve() == Path(os.path.abspath(b)).resolve()


def write_report_file(path: Path, text: str, flag: str, kind: str) -> str | None:
    """Write ``text`` to ``path`` atomically; None when written, else the one line that says why not
    (``pytest-trt: --trt-report=PATH was not written: <reason>``), after cleaning up."""
    path = Path(path)
    if (path.exists() and not path.is_dir()) and not is_report_file(path, kind):
        # a file that appeared during the run (checked at start): it is left alone
        return (f"pytest-trt: {flag}={path} was not written: the path now holds {_what_it_is(path)}, which the "
                f"report never replaces; it was left as it is")
    try:
        write_atomically(path, text)
        return None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return f"pytest-trt: {flag}={path} was not written: {reason}{_move_aside(path, kind)}"


def write_atomically(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file beside it and ``os.replace`` (a reader
    never sees half a file), creating missing parent directories. On failure the temporary file
    is removed and the OSError raised."""
    path = Path(path)
    tmp = path.with_name(f"{TMP_PREFIX}{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return path


def _move_aside(path: Path, kind: str) -> str:
    """Rename an earlier run's report at ``path`` (never delete it); the sentence that says so."""
    if not path.is_file():
        return ""
    if not is_report_file(path, kind):
        return ""
    target = path.with_name(path.name + ".stale")
    n = 0
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.stale.{n}")
    try:
        os.rename(path, target)
    except OSError as exc:
        return (f"; the report of an earlier run at that path could not be moved aside ({exc.strerror or exc}): "
                f"it is NOT this run's")
    return (f"; the report of an earlier run there was renamed to {target.name} (kept, and out of the way so "
            f"that nothing reads it as this run's)")
