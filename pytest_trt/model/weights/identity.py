"""A model's identity (the ``model`` part of every cache key) and the memo that spares re-reading it.

Identity: sha256 over a header, the sha256 of the model's structure serialized without tensor
data (every initializer reduced to name, element type and dims; ``SerializeToString(
deterministic=True)``), then, for each main-graph initializer in graph order, its name and
the sha256 of its values' bytes (raw little-endian, as ONNX stores them). So a path, an
in-memory ``ModelProto``, a single-file and an external-data form of one model share one
identity, and no serialization of the weights is ever made.

Reading every weight byte is the cost (about 0.5-1 GB/s per core here). A run may skip it
for an external-data file only through :class:`DigestMemo`, a record of the digests read from
that file together with its ``(st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns)``. The memo
cannot lie the way a bare mtime check can: any write changes ``st_ctime_ns``; a record taken
less than :data:`RACY_SECONDS` after the file's last change is not trusted (git's racy-clean
rule: a write within the file system's timestamp granularity after the record could leave the
stat unchanged), so it is re-read and re-recorded. The memo lives in the local cache
(``<cache>/memo/``), is never uploaded, and is only an optimization: without one (no cache
opened in this run) every byte is hashed.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import onnx
from onnx import TensorProto

from ...core import runstate
from .store import WeightStore

__all__ = ["MEMO_DIR", "RACY_SECONDS", "DigestMemo", "copy_fields", "current_memo", "model_identity", "structure_bytes",
           "use_memo"]

#: a memo record taken less than this many seconds after its file last changed is not trusted
RACY_SECONDS = 2.0
#: where the memo lives inside a cache directory
MEMO_DIR = "memo"
_HEADER = b"pytest-trt model identity v2\n"
_CHUNK = 8 << 20
_MEMO_TABLE = "weights.memo"


def _stat_key(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


class DigestMemo:
    """sha256 digests of byte ranges of files, trusted only while the file's stat is unchanged.

    One JSON file per data file, ``<directory>/<st_dev>-<st_ino>.json``: ``{"stat": [dev, ino,
    size, mtime_ns, ctime_ns], "recorded_ns": ..., "path": ..., "ranges": {"<offset>:<length>":
    sha256}}``. Written atomically (``os.replace``); two processes recording the same file
    leave one of their (both correct) records.
    """

    def __init__(self, directory: Path, *, read_only: bool = False) -> None:
        self.directory = Path(directory)
        self.read_only = read_only

    def _file(self, st: os.stat_result) -> Path:
        return self.directory / f"{st.st_dev}-{st.st_ino}.json"

    def _load(self, st: os.stat_result) -> dict | None:
        try:
            record = json.loads(self._file(st).read_text())
        except (OSError, ValueError):
            return None
        return record if isinstance(record, dict) and record.get("stat") == _stat_key(st) else None

    @staticmethod
    def trusted(record: dict | None, st: os.stat_result) -> bool:
        """Whether a record (made for this exact stat) was taken long enough after the last change."""
        if record is None:
            return False
        last_change = max(st.st_mtime_ns, st.st_ctime_ns)
        recorded = record.get("recorded_ns")
        return isinstance(recorded, int) and recorded - last_change >= RACY_SECONDS * 1e9

    def lookup(self, path: Path, ranges: list[tuple[int, int]]) -> dict[tuple[int, int], str]:
        """The trusted digests among ``ranges`` of ``path`` (possibly none)."""
        try:
            st = os.stat(path)
        except OSError:
            return {}
        record = self._load(st)
        if not self.trusted(record, st):
            return {}
        known = record.get("ranges", {}) if record else {}
        return {r: known[f"{r[0]}:{r[1]}"] for r in ranges if isinstance(known.get(f"{r[0]}:{r[1]}"), str)}

    def record(self, path: Path, before: os.stat_result, recorded_ns: int, digests: dict[tuple[int, int], str]) -> None:
        """Remember ``digests`` of ``path`` read after ``before`` was taken (at ``recorded_ns``); nothing
        is recorded when the file changed meanwhile."""
        if self.read_only or not digests:
            return
        try:
            after = os.stat(path)
        except OSError:
            return
        if _stat_key(after) != _stat_key(before):
            return  # it changed while we read it: these digests describe no state of the file
        record = self._load(after)
        ranges = dict(record.get("ranges", {})) if record and self.trusted(record, after) else {}
        ranges.update({f"{o}:{n}": d for (o, n), d in digests.items()})
        data = {"stat": _stat_key(after), "recorded_ns": recorded_ns, "path": str(path), "ranges": ranges}
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            tmp = self.directory / f".{after.st_dev}-{after.st_ino}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
            tmp.write_text(json.dumps(data, sort_keys=True))
            os.replace(tmp, self._file(after))
        except OSError:
            return  # a memo is an optimization: never fail for it


def use_memo(directory: Path | None, *, read_only: bool = False) -> None:
    """Make ``directory`` this run's digest memo (the session calls it when it opens its cache)."""
    table: dict = runstate.current().table(_MEMO_TABLE)
    table["memo"] = DigestMemo(directory, read_only=read_only) if directory is not None else None


def current_memo() -> DigestMemo | None:
    """This run's digest memo, or None when no cache was opened."""
    return runstate.current().table(_MEMO_TABLE).get("memo")


def structure_bytes(proto: onnx.ModelProto) -> bytes:
    """The model serialized without tensor data: initializers reduced to name, element type and dims.

    Built field by field, so the weights of an in-memory model are not copied on the way.
    """
    skel = onnx.ModelProto()
    copy_fields(proto, skel, skip="graph")
    copy_fields(proto.graph, skel.graph, skip="initializer")
    for init in proto.graph.initializer:
        t = skel.graph.initializer.add()
        t.name, t.data_type = init.name, init.data_type
        t.dims.extend(init.dims)
    return skel.SerializeToString(deterministic=True)


def copy_fields(src: Any, dst: Any, *, skip: str) -> None:
    """Copy every set field of the message ``src`` into ``dst`` except the field ``skip`` (no deep copy of it)."""
    for fd, value in src.ListFields():
        if fd.name == skip:
            continue
        target = getattr(dst, fd.name)
        if fd.is_repeated:
            target.extend(value)
        elif fd.message_type is not None:
            target.CopyFrom(value)
        else:
            setattr(dst, fd.name, value)


def _hash_inline(tensor: TensorProto, store: WeightStore) -> str:
    if tensor.data_type == TensorProto.STRING:
        return hashlib.sha256(b"\0".join(tensor.string_data)).hexdigest()
    return hashlib.sha256(store.raw(tensor.name).data).hexdigest()


def _hash_range(path: Path, offset: int, length: int) -> str:
    h = hashlib.sha256()
    buf = bytearray(min(_CHUNK, max(length, 1)))
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as f:
        done = 0
        while done < length:
            n = os.preadv(f.fileno(), [view[:min(len(buf), length - done)]], offset + done)
            if n <= 0:
                raise OSError(f"{path} ended at byte {offset + done} while hashing (truncated?)")
            h.update(view[:n])  # hashlib releases the GIL for large buffers: threads hash in parallel
            done += n
    return h.hexdigest()


def model_identity(proto: onnx.ModelProto, store: WeightStore, memo: DigestMemo | None = None,
                   progress: Callable[[int], None] | None = None) -> str:
    """The identity of a model (see the module docstring); ``memo`` spares re-reading unchanged files."""
    digests: dict[str, str] = {}
    by_file: dict[Path, list[tuple[str, int, int]]] = {}
    for name in store.names:
        if store.is_external(name):
            ref = store.ref(name)
            by_file.setdefault(ref.path, []).append((name, ref.offset, ref.length))
        else:
            digests[name] = _hash_inline(store.tensor(name), store)
    for path, items in by_file.items():
        known = memo.lookup(path, [(o, n) for _, o, n in items]) if memo is not None else {}
        todo = [(name, o, n) for name, o, n in items if (o, n) not in known]
        before, started = (os.stat(path), time.time_ns()) if todo else (None, 0)
        fresh: dict[tuple[int, int], str] = {}
        if todo:
            workers = max(1, min(4, os.cpu_count() or 1))
            with ThreadPoolExecutor(workers) as pool:
                ranges = [(path, o, n) for _, o, n in todo]
                for (_, o, n), digest in zip(ranges, pool.map(lambda r: _hash_range(*r), ranges), strict=True):
                    fresh[(o, n)] = digest
                    if progress is not None:
                        progress(n)
            if memo is not None and before is not None:
                memo.record(path, before, started, fresh)
        for name, o, n in items:
            digests[name] = known.get((o, n)) or fresh[(o, n)]
    h = hashlib.sha256(_HEADER)
    h.update(hashlib.sha256(structure_bytes(proto)).digest())
    for name in store.names:
        h.update(name.encode("utf-8") + b"\0" + digests[name].encode("ascii") + b"\n")
    return h.hexdigest()
