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
import stat
from pathlib import Path

from ..errors import CacheError
from .files import why, write_new

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
    "scratch_dir",
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
    # named where the user may not see it from the command line: an environment variable, the ini file
    given = f" (from {source})" if source and source.startswith(("$", "ini ")) else ""
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
    """Whether ``path`` is a pytest-trt cache: it carries the marker file, or the layout of a cache
    written by pytest-trt 0.1.0 (its ``CACHEDIR.TAG``, or its ``locks/`` beside ``events.jsonl``)."""
    root = Path(path)
    if is_regular(root / MARKER):
        return True
    tag = root / "CACHEDIR.TAG"
    if is_regular(tag):
        with contextlib.suppress(OSError):
            with open(tag, "rb") as f:
                if b"created by pytest-trt" in f.read(4096):
                    return True
    return is_real_dir(root / "locks") and is_regular(root / "events.jsonl")


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
