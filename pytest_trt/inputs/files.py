"""Feeds on disk: ``.npz`` archives read and written (``--load-inputs``, saved falsifying examples).

Real data and replayable failures travel as ``.npz`` files, one array per input name.
Reading refuses what is not such an archive with an :class:`~pytest_trt.errors.InputError`
saying how to write one; writing is atomic and takes any input name.
"""

from __future__ import annotations

import math
import os
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from .generation import MAX_FEED_BYTES

__all__ = ["comment_text", "load_feeds", "save_feeds", "write_replay_script"]


def load_feeds(path: str | os.PathLike[str], *, origin: str | None = None) -> dict[str, np.ndarray]:
    """Read feeds from an ``.npz`` file (``np.savez(path, input_ids=..., ...)``).

    ``origin`` says how a relative path was resolved, for the "not found" message (the trt
    marker's paths are relative to the test file); without it, the current directory.
    """
    p = Path(path)
    if not p.exists():
        where = origin or (f"relative paths are resolved against the current directory {Path.cwd()}"
                           if not p.is_absolute() else "the path is absolute")
        raise InputError(f"feeds file not found: {p} ({where})")
    if p.is_dir():
        raise InputError(f"feeds path is a directory, not an .npz file: {p}")
    try:
        _check_declared_sizes(p)
        data = np.load(p, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise InputError(
            f"cannot read feeds file {p}: not a readable .npz archive ({exc}); write feeds with "
            f"np.savez(path, **feeds) or pytest_trt.inputs.save_feeds"
        ) from exc
    if isinstance(data, np.ndarray):
        raise InputError(
            f"feeds file {p} holds a single array (.npy), but feeds need a name per input: "
            f"np.savez(path, input_ids=..., attention_mask=...)"
        )
    try:
        with data:
            feeds = {k: data[k] for k in data.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError) as exc:
        raise InputError(f"cannot read feeds file {p}: an array in it is unreadable ({exc})") from exc
    if not feeds:
        raise InputError(f"feeds file {p} holds no arrays")
    for k, v in feeds.items():
        if not isinstance(v, np.ndarray):
            raise InputError(f"feeds file {p}: member {k!r} is not a .npy array; is this an .npz written by np.savez?")
    return feeds


def _check_declared_sizes(p: Path) -> None:
    """Refuse an array whose ``.npy`` header declares more data than its member holds, or more than
    :data:`~pytest_trt.inputs.MAX_FEED_BYTES`, before numpy allocates it.

    ``np.load`` allocates the whole array the header declares before reading a byte of it, so a
    forged or damaged header (``shape (10**12,)`` over 16 bytes of data) would otherwise end in a
    MemoryError. Only the headers are read here (numpy's own parser, which bounds the header size).
    A file that is not a zip archive is left to ``np.load`` (it reads ``.npy`` files too).
    """
    if not zipfile.is_zipfile(p):
        return
    with zipfile.ZipFile(p) as zf:
        for info in zf.infolist():
            if not info.filename.endswith(".npy"):
                continue
            name = info.filename[:-4]
            with zf.open(info) as fh:
                version = np.lib.format.read_magic(fh)
                # version 3.0 differs from 2.0 only in the header's text encoding (utf-8), which the
                # ASCII header of a numeric array does not use
                read = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
                    np.lib.format.read_array_header_2_0
                shape, _, dtype = read(fh)
                declared = math.prod(shape) * dtype.itemsize
                held = info.file_size - fh.tell()
            if declared > MAX_FEED_BYTES:
                raise InputError(
                    f"feeds file {p}: array {name!r} declares shape {tuple(shape)} of {dtype} "
                    f"({declared / 2**30:.3g} GiB), over the limit of {MAX_FEED_BYTES / 2**30:.0f} GiB per input; "
                    f"is the file damaged, or written for another model?")
            if declared > held and not dtype.hasobject:
                raise InputError(
                    f"feeds file {p}: array {name!r} declares shape {tuple(shape)} of {dtype} ({declared} bytes) "
                    f"but holds {max(held, 0)} bytes of data: the file is damaged or was not written completely; "
                    f"write feeds with np.savez(path, **feeds) or pytest_trt.inputs.save_feeds")


def save_feeds(path: str | os.PathLike[str], feeds: Mapping[str, Any]) -> Path:
    """Write feeds to an ``.npz`` file (``.npz`` appended when missing); return the path.

    Written atomically (a temporary file renamed into place), any input name works
    (also ``file``, which ``np.savez(**feeds)`` cannot take).
    """
    if not isinstance(feeds, Mapping) or not feeds:
        raise InputError("save_feeds needs a non-empty dict {input name: numpy array}")
    p = Path(path)
    if p.suffix != ".npz":
        p = p.with_name(p.name + ".npz")
    arrays = {}
    for k, v in feeds.items():
        if not isinstance(k, str) or not k:
            raise InputError(f"save_feeds: input names must be non-empty strings, got {k!r}")
        arr = np.asanyarray(v)
        if arr.dtype.hasobject:
            raise InputError(f"save_feeds: input {k!r} is an object array; .npz feeds hold numeric arrays only")
        arrays[k] = np.ascontiguousarray(arr)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".feeds-", suffix=".npz.tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "wb") as fh, zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
            for k, arr in arrays.items():
                with zf.open(k + ".npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, arr, allow_pickle=False)
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return p



def comment_text(text: object) -> str:
    """``text`` fit for one ``#`` comment line of a shell script: as it is when every character is
    printable, else its Python ``repr`` (quoted, with newlines and other control characters
    escaped). A node id carries the test file's name verbatim, and a name holding a newline
    would otherwise end the comment and put the rest on a line the shell runs (audit F11)."""
    text = str(text)
    return text if text.isprintable() else repr(text)


def write_replay_script(path: str | os.PathLike[str], command: str, comments: list[str]) -> Path:
    """Write an executable ``#!/bin/sh`` script: the ``comments`` (each made one safe line by
    :func:`comment_text`), then ``command``, whose arguments the caller has quoted (``shlex.quote``)."""
    script = Path(path)
    lines = ["#!/bin/sh", *(f"# {comment_text(c)}" for c in comments), command]
    script.write_text("\n".join(lines) + "\n", encoding="utf-8")
    script.chmod(0o755)
    return script
