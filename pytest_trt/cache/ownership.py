"""Whose directory: the cache deletes only what it created and tags only directories it created.

A directory is a pytest-trt cache when it carries the :data:`MARKER` file (written when the
cache creates the directory or adopts an empty one), or the layout of a cache written by
pytest-trt 0.1.0. :func:`claim_root` refuses any other non-empty directory; the scratch
directory (:func:`scratch_dir`) is never a link out of the cache, and garbage collection
considers only the names in :data:`SCRATCH_ITEM_RE` and :data:`PROBE_RE`.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
from pathlib import Path

from ..core.locations import CACHE_DIR_ENV
from ..errors import CacheError
from .entry import is_own_manifest, read_manifest_quietly
from .files import why, write_new
from .key import KEY_RE, KIND_RE, RESERVED_KINDS

__all__ = [
    "ADOPTABLE",
    "LEGACY_SCRATCH_DIR",
    "MARKER",
    "PROBE_RE",
    "SCRATCH_DIR",
    "SCRATCH_ITEM_RE",
    "claim_root",
    "is_cache_dir",
    "is_real_dir",
    "is_regular",
    "open_root",
    "scratch_dir",
    "source_note",
]

#: The file that makes a directory a pytest-trt cache. Written when the cache creates the
#: directory or adopts an empty one; a directory without it (and without the layout of a
#: cache written by pytest-trt 0.1.0) that holds other files is refused, never written into.
MARKER = ".pytest-trt-cache"
#: The cache's own scratch directory: builds in progress and entries being deleted.
SCRATCH_DIR = ".pytest-trt-tmp"
#: The scratch directory of caches written by pytest-trt 0.1.0: only its own items are collected.
LEGACY_SCRATCH_DIR = "tmp"
#: What a user may put into a new cache directory before pytest-trt first opens it (the GPU
#: workflow restores the TensorRT timing cache there): such a directory is adopted.
ADOPTABLE = frozenset({"timing-cache"})

MARKER_TEXT = (
    "This directory is a pytest-trt artifact cache (engines, realized models, FP32 baselines).\n"
    "pytest-trt deletes only the entries and scratch files it created here.\n"
)
#: the names of the scratch items the cache creates and of its write probes: nothing else is collected
SCRATCH_ITEM_RE = re.compile(r"^(build|trash)-[0-9a-f]{64}-[0-9]+-[0-9a-f]+$")
PROBE_RE = re.compile(r"^\.pytest-trt-probe-[0-9]+-[0-9a-f]+$")
_PROBE_PREFIX = ".pytest-trt-probe-"
_CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by pytest-trt.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)
_TAG_OWN_LINES = "".join(_CACHEDIR_TAG.splitlines(keepends=True)[:2]).encode()
_HINT_DIR = "Pass --trt-cache-dir=DIR (or set PYTEST_TRT_CACHE_DIR) to use a writable directory"


def source_note(source: str | None) -> str:
    """`` (from $PYTEST_TRT_CACHE_DIR)``: where the cache directory came from, when that is not in front of
    the user on the command line (an environment variable, the ini file)."""
    return f" (from {source})" if source and source.startswith(("$", "ini ")) else ""


def hint_dir(source: str | None) -> str:
    """How to give another cache directory, in the terms of where this one came from (``source``:
    ``$PYTEST_TRT_CACHE_DIR``, ``ini trt_cache_dir``, a flag, ``default`` or None)."""
    if source == f"${CACHE_DIR_ENV}":
        return (f"Set {CACHE_DIR_ENV} to a writable directory (or pass --trt-cache-dir=DIR, which takes "
                f"precedence over it)")
    if source and source.startswith("ini "):
        return f"Set {source.removeprefix('ini ')} in the ini file to a writable directory (or pass --trt-cache-dir=DIR)"
    return _HINT_DIR


def open_root(root: Path, source: str | None) -> None:
    """Open ``root`` for writing: claim it (:func:`claim_root`), create ``locks/`` and the scratch
    directory, probe both with a real write, and tag a directory the cache created (``CACHEDIR.TAG``).

    Raises:
        CacheError: naming the directory, where it came from (``source``) and the fix there.
    """
    hint = hint_dir(source)
    created = claim_root(root, hint, source=source)
    try:
        (root / "locks").mkdir(exist_ok=True)
        scratch = scratch_dir(root)
        # Entries, kind directories and events.jsonl live in the root itself: probe it (a
        # real write, since os.access() says yes to root on a chmod-protected directory).
        for where in (root, scratch):
            probe = where / f"{_PROBE_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            os.close(fd)
            os.unlink(probe)
        if created:  # a cache tag only on a directory the cache created itself
            with contextlib.suppress(FileExistsError):  # another process was first
                write_new(root / "CACHEDIR.TAG", _CACHEDIR_TAG.encode())
    except OSError as exc:
        raise CacheError(
            f"the pytest-trt cache directory {root}{source_note(source)} is not writable: {why(exc)}. {hint}, "
            f"or use the entries it holds read-only (pytest --trt-cache-read-only; "
            f"in Python ArtifactCache(..., read_only=True))."
        ) from exc


def claim_root(root: Path, hint: str, *, source: str | None = None) -> bool:
    """Make sure ``root`` is a pytest-trt cache; True when the cache created the directory.

    A new directory is created and marked; an existing one is used when it carries the
    marker or the layout of a pytest-trt 0.1.0 cache (then marked), or when it is empty or
    holds only what a user may restore into a cache (``timing-cache/``; then marked, not
    tagged). Any other directory is refused: the cache never writes into, tags or collects
    garbage in a directory it did not create. ``source`` (``$PYTEST_TRT_CACHE_DIR``, ``ini
    trt_cache_dir``, a flag) is where the user gave ``root``: the refusal names an environment
    variable or the ini file (a flag is on the command line in front of the user) and spells its
    fix there.
    """
    given = source_note(source)
    created = _make_dir(root, hint, given)
    if not root.is_dir():
        raise CacheError(f"the pytest-trt cache directory {root}{given} is not a directory. {hint}.")
    if not created:
        _refuse_if_foreign(root, hint, given, source)
    marker = root / MARKER
    if not os.path.lexists(marker):
        try:
            with contextlib.suppress(FileExistsError):  # another process was first
                write_new(marker, MARKER_TEXT.encode())
        except OSError as exc:
            raise CacheError(
                f"the pytest-trt cache directory {root}{given} is not writable: {why(exc)}. {hint}, "
                f"or use the entries it holds read-only (pytest --trt-cache-read-only; "
                f"in Python ArtifactCache(..., read_only=True))."
            ) from exc
    return created

def _make_dir(root: Path, hint: str, given: str) -> bool:
    """Create ``root``; True when this call created it, False when it existed (made by the user,
    or by another claimer a moment ago: the caller then checks whose it is)."""
    for attempt in (1, 2):
        try:
            os.mkdir(root, 0o777)
            return True
        except FileExistsError:
            return False
        except FileNotFoundError as exc:
            if attempt == 2:
                raise CacheError(
                    f"cannot create the pytest-trt cache directory {root}{given}: {why(exc)}. {hint}."
                ) from exc
            # Create the parents only, then root itself again with os.mkdir: mkdir(exist_ok=True) on
            # root would call a directory someone else made meanwhile "created" and skip the check.
            try:
                root.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc2:
                raise CacheError(
                    f"cannot create the pytest-trt cache directory {root}{given}: {why(exc2)}. {hint}."
                ) from exc2
        except OSError as exc:
            raise CacheError(
                f"cannot create the pytest-trt cache directory {root}{given}: {why(exc)}. {hint}."
            ) from exc
    raise AssertionError("unreachable")  # pragma: no cover


def _refuse_if_foreign(root: Path, hint: str, given: str, source: str | None) -> None:
    """Refuse an existing ``root`` that is neither a cache nor empty (but for :data:`ADOPTABLE`).

    Another claimer may be creating the same directory right now: it writes the marker before
    anything else, so the directory is listed first and checked for the marker after. Whatever
    of a claimer's the listing saw, its marker was there before; a marker written after the
    listing leaves the listing empty (adopted: both claimers agree). The marker counts only as a
    regular file, a link or directory of that name is the user's. A marker still being written
    (created, not yet filled) is a regular file: the directory is a cache.
    """
    try:
        names = os.listdir(root)
    except OSError as exc:
        raise CacheError(f"cannot read the pytest-trt cache directory {root}{given}: {why(exc)}. "
                         f"{hint}.") from exc
    if is_cache_dir(root):
        return
    foreign = sorted(n for n in names if n not in ADOPTABLE)
    if not foreign:
        return
    shown = ", ".join(repr(n) for n in foreign[:3]) + (", ..." if len(foreign) > 3 else "")
    marker = (f"its {MARKER} is not a regular file (a link or a directory)" if MARKER in names
              else f"no {MARKER} marker")
    raise CacheError(
        f"{root}{given} is not a pytest-trt cache: it holds other files ({shown}) and {marker}. "
        f"pytest-trt keeps its artifacts in a directory of its own and deletes only what it "
        f"created there, so it does not use this one. Give a new or empty directory, e.g. "
        f"{_example(root / '.trt-cache', source)}."
    )


def _example(path: Path, source: str | None) -> str:
    """A new cache directory given where the refused one came from (``PYTEST_TRT_CACHE_DIR=...``,
    ``trt_cache_dir = ... in the ini file``, else ``--trt-cache-dir=...``)."""
    if source and source.startswith("$"):
        return f"{source[1:]}={path}"
    if source and source.startswith("ini "):
        return f"{source.removeprefix('ini ')} = {path} in the ini file"
    return f"--trt-cache-dir={path}"


def scratch_dir(root: Path) -> Path:
    """The cache's own scratch directory, created when missing; never a link out of the cache."""
    scratch = root / SCRATCH_DIR
    with contextlib.suppress(FileExistsError):
        os.mkdir(scratch, 0o777)
    st = os.lstat(scratch)
    if not stat.S_ISDIR(st.st_mode):
        raise CacheError(
            f"{scratch} is not a directory (a symbolic link or a file): pytest-trt builds its entries "
            f"there and never follows a link out of its cache. Remove it; the cache recreates it."
        )
    return scratch


def is_cache_dir(path: Path | str) -> bool:
    """Whether ``path`` is a pytest-trt cache: it carries the marker file, or evidence that pytest-trt
    0.1.0 wrote it: its ``CACHEDIR.TAG`` with pytest-trt's own text (0.1.0 wrote it on every open), or
    its ``locks/`` and ``events.jsonl`` beside an entry whose manifest is pytest-trt's
    (:func:`~pytest_trt.cache.entry.is_own_manifest`). ``locks/`` and ``events.jsonl`` alone are
    generic names a user's folder may hold: they are not enough."""
    root = Path(path)
    if is_regular(root / MARKER):
        return True
    tag = root / "CACHEDIR.TAG"
    if is_regular(tag):
        with contextlib.suppress(OSError):
            with open(tag, "rb") as f:
                # 0.1.0 wrote this text: its signature line and pytest-trt's own line (the link after is
                # the spec's comment, left out by some copies)
                if f.read(4096).startswith(_TAG_OWN_LINES):
                    return True
    if is_real_dir(root / "locks") and is_regular(root / "events.jsonl") and _holds_own_entry(root):
        return True
    # a claimer writes the marker before anything else: one that began after the first look has it by now
    return is_regular(root / MARKER)


#: how many entry directories :func:`_holds_own_entry` reads at most (a bound on a user's big folder)
_ENTRY_PROBES = 64


def _holds_own_entry(root: Path) -> bool:
    """Whether some ``<kind>/<64 hex key>/manifest.json`` under ``root`` is pytest-trt's entry manifest."""
    probes = 0
    with contextlib.suppress(OSError):
        for kind in sorted(os.listdir(root)):
            if kind in RESERVED_KINDS or not KIND_RE.match(kind) or not is_real_dir(root / kind):
                continue
            for key in sorted(os.listdir(root / kind)):
                if not KEY_RE.match(key):
                    continue
                probes += 1
                if probes > _ENTRY_PROBES:
                    return False
                _, manifest = read_manifest_quietly(root / kind / key)
                if is_own_manifest(manifest, kind, key):
                    return True
    return False


def is_regular(path: Path) -> bool:
    """Whether ``path`` is a regular file (a link is not followed)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def is_real_dir(path: Path) -> bool:
    """Whether ``path`` is a directory, not a link to one."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False
