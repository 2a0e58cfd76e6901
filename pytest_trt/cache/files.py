"""Durable file operations of the cache: exclusive writes, fsync, hashing, tree walks, removal.

What makes an entry "complete or absent" on disk: files written with ``O_EXCL`` and fsynced,
directories fsynced after renames, trees listed and removed without following symlinks, and
every file hashed from a descriptor opened with ``O_NOFOLLOW``. The entry format
(:mod:`pytest_trt.cache.manifest`) and the store (:mod:`pytest_trt.cache.store`) build on these.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import stat
import time
from pathlib import Path

__all__ = [
    "NO_SPACE",
    "fsync_dir",
    "hash_file",
    "parent_dirs",
    "remove_tree",
    "scan_tree",
    "space_hint",
    "touch",
    "tree_size",
    "why",
    "write_new",
]

#: errno values of a full disk (or quota)
NO_SPACE = frozenset(e for e in (errno.ENOSPC, getattr(errno, "EDQUOT", None)) if e is not None)
_CHUNK = 1 << 20


def why(exc: OSError) -> str:
    """The short reason of an OSError (its strerror), for messages."""
    return exc.strerror or str(exc)


def space_hint(exc: OSError) -> str:
    """A sentence to append to a message when ``exc`` is a full disk, else ``""``."""
    if getattr(exc, "errno", None) in NO_SPACE:
        return (
            ". The disk is full: free space, lower the cache size limit, or point --trt-cache-dir=DIR "
            "to a larger disk"
        )
    return ""


def parent_dirs(name: str) -> list[str]:
    """The directories a relative path needs: ``"a/b/c"`` -> ``["a", "a/b"]``."""
    bits = name.split("/")[:-1]
    return ["/".join(bits[: i + 1]) for i in range(len(bits))]


def scan_tree(root: Path) -> tuple[dict[str, Path], set[str], list[tuple[str, str]]]:
    """Regular files {rel: path}, directories {rel}, and anything else [(rel, what)] under ``root``."""
    files: dict[str, Path] = {}
    dirs: set[str] = set()
    odd: list[tuple[str, str]] = []
    stack = [("", str(root))]
    while stack:
        prefix, path = stack.pop()
        with os.scandir(path) as it:
            for item in it:
                rel = prefix + item.name
                if item.is_symlink():
                    odd.append((rel, "a symlink"))
                elif item.is_dir(follow_symlinks=False):
                    dirs.add(rel)
                    stack.append((rel + "/", item.path))
                elif item.is_file(follow_symlinks=False):
                    files[rel] = Path(item.path)
                else:
                    odd.append((rel, "a special file"))
    return files, dirs, sorted(odd)


def hash_file(path: Path, *, sync: bool = False) -> tuple[str, int]:
    """(sha256 hex, size) of a regular file, never following a symlink; ``sync``: fsync it too."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        h = hashlib.sha256()
        size = 0
        while True:
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                break
            h.update(chunk)
            size += len(chunk)
        if sync:
            try:
                os.fsync(fd)
            except OSError as exc:  # platforms that cannot fsync a read-only descriptor
                if exc.errno not in (errno.EBADF, errno.EINVAL):
                    raise
        return h.hexdigest(), size
    finally:
        os.close(fd)


def write_new(path: Path, data: bytes, *, sync: bool = False) -> None:
    """Write ``data`` to a file that must not exist yet (``O_EXCL``); ``sync``: fsync before closing."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """fsync a directory (its renames and new names); a full disk or an I/O error raises."""
    if os.name == "nt":
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno in NO_SPACE or exc.errno == errno.EIO:
            raise
    finally:
        os.close(fd)


def touch(path: Path) -> None:
    """Set the mtime of ``path`` to now (nanoseconds): an entry's last use, for LRU eviction."""
    now = time.time_ns()
    with contextlib.suppress(OSError):
        os.utime(path, ns=(now, now))  # (a validated manifest is a regular file, not a symlink)


def tree_size(path: Path) -> int:
    """Bytes of every file under ``path`` (symlinks counted as themselves, not followed)."""
    total = 0
    stack = [str(path)]
    while stack:
        with os.scandir(stack.pop()) as it:
            for item in it:
                if item.is_dir(follow_symlinks=False):
                    stack.append(item.path)
                else:
                    total += item.stat(follow_symlinks=False).st_size
    return total


def remove_tree(path: Path, *, strict: bool = False) -> None:
    """Delete a file, symlink or directory tree without following symlinks; ``strict``: raise on errors."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError:
        if strict:
            raise
        return
    try:
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(path, ignore_errors=not strict)
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError:
        if strict:
            raise
