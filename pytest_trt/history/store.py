"""Where saved runs live: a directory, or a URL on the remote cache's storage, signed there.

``--trt-storage`` (console script: ``--storage``) is a directory (default ``<rootdir>/.trt-runs``)
or any URL the remote cache accepts (``file:///shared/runs``, ``https://host/path`` (WebDAV),
``s3://bucket/prefix``, ...). Both go through the remote cache's transport
(:class:`~pytest_trt.cache.remote.transport.Transport`: ``file`` paths opened without following
links, one request per object on WebDAV), URL checks and redaction
(:mod:`~pytest_trt.cache.remote.urls`). Layout, under the location::

    pytest-trt-runs-v1/<run id>/run.json                  the run: JSON report + fingerprint (+ gate)
    pytest-trt-runs-v1/<run id>/outputs/<sha256>.npz      --trt-save-outputs: engine outputs and feeds
    pytest-trt-runs-v1/<run id>/manifest.json             a directory's run: the file list (unsigned)
    pytest-trt-runs-v1/<run id>/manifest.<key id>.json    a URL's run: the file list, signed (Ed25519)

The manifest is written last, and *created only if absent* (``link(2)``, WebDAV ``MOVE`` with
``Overwrite: F``, a conditional write), exactly as the remote cache publishes its manifests: a run
exists once its manifest does, a reader never sees half a run, and two writers can never both
own one id (the second gets an error; ids carry 48 random bits, :mod:`~pytest_trt.history.runid`).
A run directory without a manifest is *incomplete* (being written, or its writer died): listed,
never selected, pruned once it is an hour old.

Trust. On a URL a run is signed with the remote cache's private key (``$PYTEST_TRT_REMOTE_CACHE_KEY``;
saving without it is a usage error) and read only through a manifest that verifies with a trusted
public key (``--trt-remote-cache-trust``), over its own signing context (a signature made for a
cache entry never verifies as a run). A manifest of an untrusted key, a bad signature, a file
whose size or sha256 differs: the run is *rejected*; never ``latest``, and naming it is a usage
error, so a run forged on the storage cannot hide a regression. A directory is trusted like the
local cache (whoever can write it); its manifest still holds every file's sha256, so a damaged
run is told apart from a good one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from .._version import __version__
from ..cache import CacheStats, safe_relative_path
from ..cache.remote.layout import ENV_AUTH, ENV_KEY, ENV_TRUST, EXTRA_HINT
from ..cache.remote.signing import (
    RejectedEntry,
    key_id,
    load_private_key,
    load_public_key,
    require_cryptography,
    sign_manifest,
    verify_manifest,
)
from ..cache.remote.transport import Transport, describe_error
from ..cache.remote.urls import Redactor, check_url, display_url
from ..core.jsonsafe import loads_bounded
from ..errors import UsageError
from .runid import RUN_ID_RE, run_time

__all__ = ["PREFIX", "RUN_CONTEXT", "RUN_FORMAT", "RunEntry", "RunStore", "StoreError", "open_store"]

PREFIX = "pytest-trt-runs-v1"
RUN_FILE = "run.json"
#: the format of run.json
RUN_FORMAT = "pytest-trt-run-v1"
#: the format of a run's manifest, and the signed prefix of a run's signature
MANIFEST_FORMAT = "pytest-trt-run-manifest-v1"
RUN_CONTEXT = b"pytest-trt saved run v1\n"
UNSIGNED_MANIFEST = "manifest.json"
MAX_MANIFEST_BYTES = 1 << 20
#: a run.json is read whole; past this it is refused as damaged (a real one: kilobytes to a few MiB)
MAX_RUN_BYTES = 512 << 20
#: an incomplete run younger than this may still be being written: prune leaves it
INCOMPLETE_GRACE = timedelta(hours=1)


class StoreError(Exception):
    """The storage could not be read or written (unreachable, refused); the message says why."""


@dataclass
class RunEntry:
    """One run of a storage, as listed: ``status`` ``ok`` (its manifest verified), ``rejected`` (why:
    ``reason``) or ``incomplete`` (no manifest). ``number``: 1-based, in time order."""

    id: str
    number: int = 0
    status: str = "ok"
    reason: str = ""
    #: the verified manifest payload (``ok`` only): name, created, exitstatus, gate, summary, files
    payload: dict[str, Any] = field(default_factory=dict)

    @property
    def time(self) -> datetime:
        return run_time(self.id) or datetime.min.replace(tzinfo=timezone.utc)

    @property
    def name(self) -> str | None:
        m = RUN_ID_RE.match(self.id)
        return m.group("name") if m else None

    @property
    def exitstatus(self) -> int | None:
        value = self.payload.get("exitstatus")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def size(self) -> int:
        files = self.payload.get("files") or {}
        return sum(int(meta.get("size") or 0) for meta in files.values() if isinstance(meta, dict))

    def describe(self) -> str:
        if self.status == "ok":
            gate = self.payload.get("gate")
            gated = "" if not gate else (" gate passed" if gate.get("passed") else " gate FAILED")
            return f"run {self.number} {self.id} (exit {self.exitstatus}{gated})"
        return f"run {self.number} {self.id} ({self.status}: {self.reason})" if self.reason else \
            f"run {self.number} {self.id} ({self.status})"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_sha256(path: Path) -> tuple[str, int]:
    h, size = hashlib.sha256(), 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


class RunStore:
    """The saved runs of one location (see the module docstring).

    Args:
        location: a directory (relative paths are taken from ``base``) or a URL.
        private_key: (URL) the signing key, an object or its path / PEM text; needed to save.
        trusted: (URL) public keys whose signatures are accepted (a key holder trusts its own).
        auth: (URL) ``user:password`` for WebDAV basic authentication.
        flag: the option in the user's spelling (``--trt-storage`` / ``--storage``), for messages.
        source: where the location came from (``ini trt_storage``), for messages; default ``flag``.
        base: what a relative directory is relative to.
    """

    def __init__(self, location: str, *, private_key: Any = None, trusted: Iterable[Any] = (), auth: str | None = None,
                 flag: str = "--trt-storage", source: str | None = None, base: Path | None = None,
                 trust_flag: str = "--trt-remote-cache-trust") -> None:
        self.flag = flag
        self.url = "://" in location
        self.private_key: Any = None
        self.trusted: dict[str, Any] = {}
        where = source or flag
        if self.url:
            check_url(location, where)
            try:
                require_cryptography()
            except UsageError:  # its message blames the remote cache; name saved runs and this option
                raise UsageError(f"{where}={display_url(location)}: saved runs at a URL (file:// too) are signed "
                                 f"and verified with the `cryptography` package: {EXTRA_HINT}; or save to a "
                                 f"directory ({flag}=DIR needs no extra)") from None
            if isinstance(private_key, str):
                private_key = load_private_key(private_key)
            self.private_key = private_key
            if private_key is not None:
                own = private_key.public_key()
                self.trusted[key_id(own)] = own
            for item in trusted:
                key = load_public_key(item, what=trust_flag) if isinstance(item, str) else item
                self.trusted[key_id(key)] = key
            if not self.trusted:
                raise UsageError(f"{where} {display_url(location)}: runs stored at a URL are signed, and no trusted "
                                 f"public key is given, so none could be verified. Pass {trust_flag} KEY (or "
                                 f"{ENV_TRUST}): the remote cache's .pub file or its 'ed25519:...' text")
            self.shown = display_url(location)
            self._redact = Redactor(location, auth)
            root = location
        else:
            path = Path(location).expanduser()
            if not path.is_absolute():
                path = (base or Path.cwd()) / path
            path = Path(os.path.abspath(path))
            if path.exists() and not path.is_dir():
                raise UsageError(f"{where}={location}: {path} is not a directory (saved runs are kept in a "
                                 f"directory, e.g. {flag}=.trt-runs)")
            self.shown = str(path)
            self._redact = Redactor(str(path))
            root = str(path)
        self.stats = CacheStats()
        #: damaged runs ``latest`` passed over (newest first), for a warning naming them
        self.skipped: list[RunEntry] = []
        # a directory goes through the standard library (no fsspec); only a URL needs the remote extra
        self.transport = Transport(root, auth if self.url else None, where, self.stats, what="saved runs")

    def close(self) -> None:
        self.transport.close()

    def __repr__(self) -> str:
        return f"RunStore({self.shown!r})"

    # ------------------------------------------------------------------ names
    def _run_dir(self, run_id: str) -> str:
        return self.transport.path(PREFIX, run_id)

    def _manifest_names(self) -> list[str]:
        return [f"manifest.{kid}.json" for kid in self.trusted] if self.url else [UNSIGNED_MANIFEST]

    def _error(self, what: str, exc: BaseException) -> StoreError:
        return StoreError(f"{what} {self.shown}: {self._redact(describe_error(exc))}")

    def check_writable(self) -> None:
        """UsageError when this store cannot be saved to: a URL needs the signing key."""
        if self.url and self.private_key is None:
            raise UsageError(f"{self.flag} {self.shown}: runs saved at a URL are signed with the remote cache's key, "
                             f"and none is set. Set {ENV_KEY} to the private key file of `pytest-trt remote-cache "
                             f"keygen` (builders only), or save to a directory")

    # ------------------------------------------------------------------ save
    def save(self, run: Mapping[str, Any], outputs: Mapping[str, Path] | None = None) -> str:
        """Store ``run`` (a dict with ``id``, written as run.json) and ``outputs`` (``{file name: local
        path}``, stored under ``outputs/``); the manifest last, created only if absent. Returns the id.

        Raises :class:`StoreError` when the storage refuses or the id exists already.
        """
        self.check_writable()
        run_id = str(run["id"])
        if not RUN_ID_RE.match(run_id):
            raise ValueError(f"not a run id: {run_id!r}")
        base = self._run_dir(run_id)
        body = (json.dumps(run, allow_nan=False, indent=None, separators=(",", ":"), default=str) + "\n").encode()
        files: dict[str, dict[str, Any]] = {RUN_FILE: {"sha256": _sha256(body), "size": len(body)}}
        sources: dict[str, Path | bytes] = {RUN_FILE: body}
        for name, local in sorted((outputs or {}).items()):
            digest, size = _file_sha256(local)
            files[f"outputs/{name}"] = {"sha256": digest, "size": size}
            sources[f"outputs/{name}"] = local
        report = run.get("report") or {}
        payload = {
            "kind": "pytest-trt-run", "id": run_id, "name": run.get("name"), "created": run.get("created"),
            "exitstatus": run.get("exitstatus"), "gate": run.get("gate"), "pytest_trt": __version__,
            "summary": {"tests": (report.get("summary") or {}).get("tests"),
                        "outputs": (report.get("summary") or {}).get("outputs"),
                        "backend": (report.get("session") or {}).get("backend"),
                        "backend_disclaimer": (report.get("session") or {}).get("backend_disclaimer"),
                        "precision": (report.get("session") or {}).get("precision"),
                        "saved_outputs": bool(outputs)},
            "files": files,
        }
        if self.url:
            signer = self.private_key
            assert signer is not None  # (check_writable)
            manifest = sign_manifest(signer, payload, context=RUN_CONTEXT, fmt=MANIFEST_FORMAT)
            published = f"manifest.{key_id(signer.public_key())}.json"
        else:
            manifest = (json.dumps({"format": MANIFEST_FORMAT, "signed": False, "payload": payload}, indent=1,
                                   sort_keys=True) + "\n").encode()
            published = UNSIGNED_MANIFEST
        staged = f"{base}/upload.{secrets.token_hex(8)}.json"
        try:
            for name, source in sources.items():
                self.transport.write(f"{base}/{name}", source)
            self.transport.write(staged, manifest)
            won = self.transport.publish_if_absent(staged, f"{base}/{published}", manifest)
        except FileExistsError:
            won = False
        except self.transport.errors as exc:
            raise self._error(f"cannot save run {run_id} to", exc) from None
        if not self.transport.webdav:  # (WebDAV's MOVE consumed the staged copy)
            with contextlib.suppress(Exception):
                self.transport.remove_tree(staged)
        if not won:
            raise StoreError(f"a run with id {run_id} exists already in {self.shown}; nothing was overwritten")
        return run_id

    # ------------------------------------------------------------------ list
    def entries(self, *, verify: bool = False) -> list[RunEntry]:
        """Every run of the storage in time order (oldest first, numbered from 1), each manifest
        verified; with ``verify`` each ``ok`` run's run.json too (its size and sha256 against the
        manifest, as ``runs show`` reads it): one that differs is ``damaged``, with why.

        Raises :class:`StoreError` when the storage cannot be read.
        """
        try:
            names = [n for n in self.transport.list_names(self.transport.path(PREFIX)) if RUN_ID_RE.match(n)]
        except self.transport.errors as exc:
            raise self._error("cannot list the saved runs of", exc) from None
        names.sort(key=lambda n: (run_time(n), n))
        found = []
        for number, run_id in enumerate(names, start=1):
            entry = self._entry(run_id)
            entry.number = number
            if verify:
                self.verify(entry)
            found.append(entry)
        return found

    def verify(self, entry: RunEntry) -> bool:
        """Check an ``ok`` run's run.json against its manifest; a run whose run.json differs becomes
        ``damaged`` (``reason`` says how). True when the entry is ``ok`` afterwards."""
        if entry.status != "ok":
            return False
        try:
            self.read_bytes(entry, RUN_FILE)
        except RejectedEntry as exc:
            entry.status, entry.reason = "damaged", str(exc)
            return False
        return True

    def _entry(self, run_id: str) -> RunEntry:
        base = self._run_dir(run_id)
        for name in self._manifest_names():
            try:
                data = self.transport.read_small(f"{base}/{name}", MAX_MANIFEST_BYTES)
            except FileNotFoundError:
                continue
            except RejectedEntry as exc:
                return RunEntry(run_id, status="rejected", reason=str(exc))
            except self.transport.errors as exc:
                raise self._error(f"cannot read run {run_id} of", exc) from None
            try:
                payload = self._verify(data, run_id)
            except RejectedEntry as exc:
                return RunEntry(run_id, status="rejected", reason=str(exc))
            return RunEntry(run_id, payload=payload)
        if self.url:
            try:
                others = [n for n in self.transport.list_names(base) if n.startswith("manifest.")]
            except self.transport.errors:
                others = []
            if others:
                return RunEntry(run_id, status="rejected",
                                reason=f"signed only by key(s) not trusted here ({', '.join(others)}); trusted: "
                                       f"{', '.join(self.trusted)}")
        return RunEntry(run_id, status="incomplete", reason="no manifest: being written, or its writer stopped")

    def _verify(self, data: bytes, run_id: str) -> dict[str, Any]:
        payload: Any
        if self.url:
            payload = verify_manifest(data, self.trusted, context=RUN_CONTEXT, fmt=MANIFEST_FORMAT)
        else:
            try:
                envelope = loads_bounded(data)
            except ValueError as exc:
                raise RejectedEntry(f"its manifest is not valid JSON ({str(exc)[:120]}; truncated or damaged)") from None
            if not isinstance(envelope, dict) or envelope.get("format") != MANIFEST_FORMAT:
                raise RejectedEntry(f"its manifest is not a {MANIFEST_FORMAT} file (damaged)")
            payload = envelope.get("payload")
        if not isinstance(payload, dict) or payload.get("kind") != "pytest-trt-run":
            raise RejectedEntry("its manifest holds no run (damaged)")
        if payload.get("id") != run_id:
            raise RejectedEntry(f"its manifest is for run {str(payload.get('id'))[:80]!r}, not this one (copied)")
        files = payload.get("files")
        if not isinstance(files, dict) or RUN_FILE not in files:
            raise RejectedEntry("its manifest lists no run.json (damaged)")
        for name, meta in files.items():
            if not (safe_relative_path(name) and isinstance(meta, dict) and isinstance(meta.get("size"), int)
                    and meta["size"] >= 0 and isinstance(meta.get("sha256"), str) and len(meta["sha256"]) == 64):
                raise RejectedEntry(f"its manifest has a malformed file record {str(name)[:80]!r}")
        return payload

    # ------------------------------------------------------------------ read
    def read_bytes(self, entry: RunEntry, name: str) -> bytes:
        """The verified bytes of a file of an ``ok`` run; RejectedEntry when they differ from the manifest."""
        meta = (entry.payload.get("files") or {}).get(name)
        if not isinstance(meta, dict):
            raise RejectedEntry(f"{name} is not a file of run {entry.id}")
        try:
            data = self.transport.read_small(f"{self._run_dir(entry.id)}/{name}", meta["size"])
        except FileNotFoundError:
            raise RejectedEntry(f"{name} is missing") from None
        except RejectedEntry:
            raise RejectedEntry(f"{name} is larger than its manifest's {meta['size']} bytes (damaged or "
                                f"tampered)") from None
        except self.transport.errors as exc:
            raise self._error(f"cannot read run {entry.id} of", exc) from None
        if len(data) != meta["size"] or _sha256(data) != meta["sha256"]:
            raise RejectedEntry(f"{name} has {len(data)} bytes with sha256 {_sha256(data)[:16]}..., its manifest says "
                                f"{meta['size']} bytes, {meta['sha256'][:16]}... (damaged or tampered)")
        return data

    def load(self, entry: RunEntry) -> dict[str, Any]:
        """The run (run.json) of an ``ok`` entry, verified; RejectedEntry when damaged."""
        if entry.status != "ok":
            raise RejectedEntry(f"run {entry.id} is {entry.status}" + (f": {entry.reason}" if entry.reason else ""))
        size = int(((entry.payload.get("files") or {}).get(RUN_FILE) or {}).get("size") or 0)
        if size > MAX_RUN_BYTES:
            raise RejectedEntry(f"its run.json has {size} bytes, more than a saved run can have")
        data = self.read_bytes(entry, RUN_FILE)
        try:
            run = json.loads(data)
        except ValueError as exc:
            raise RejectedEntry(f"its run.json is not JSON ({str(exc)[:120]})") from None
        if not isinstance(run, dict) or run.get("format") != RUN_FORMAT or not isinstance(run.get("report"), dict):
            raise RejectedEntry(f"its run.json is not a {RUN_FORMAT} run (another version of pytest-trt?)")
        return run

    def fetch_output(self, entry: RunEntry, name: str, dest: Path) -> Path:
        """Write the verified ``outputs/<name>`` of a run to ``dest``; RejectedEntry when it differs."""
        data = self.read_bytes(entry, f"outputs/{name}")
        dest.write_bytes(data)
        return dest

    # ------------------------------------------------------------------ select
    def select(self, spec: str, entries: list[RunEntry] | None = None) -> RunEntry:
        """The run ``spec`` names: ``latest`` (the newest run whose session exited 0, its drift gate
        included), a NUM (1-based, time order), a run id or a unique prefix of one, or a NAME (the
        newest run saved with that name). UsageError when none does, or the one named is not ``ok``."""
        entries = self.entries() if entries is None else entries
        spec = (spec or "latest").strip()
        listing = f"`pytest-trt runs list --storage={self.shown}` lists them"
        if spec == "latest":
            good = []
            # newest first; a damaged run (its run.json differs from its manifest) is skipped and
            # named in ``self.skipped``, never chosen (every later compare would be refused)
            for e in reversed([e for e in entries if e.status == "ok" and e.exitstatus == 0]):
                if self.verify(e):
                    good = [e]
                    break
                self.skipped.append(e)
            if not good:
                why = (f"{len(entries)} run(s) stored, none of them a verified run whose session exited 0 "
                       f"(with its drift gate); {listing}" if entries else "no run is stored there")
                raise UsageError(f"no run to compare with in {self.shown}: {why}. Save one first "
                                 f"(--trt-save=NAME or --trt-autosave)")
            return good[-1]
        if spec.isdigit():
            if not 1 <= int(spec) <= len(entries):
                raise UsageError(f"run {spec}: {self.shown} holds {len(entries)} run(s) (numbered 1 to "
                                 f"{len(entries)} in time order); {listing}")
            chosen: RunEntry | None = entries[int(spec) - 1]
        else:
            chosen = self._by_id_or_name(spec, entries)
        if chosen is None:
            raise UsageError(f"no saved run {spec!r} in {self.shown} (an id, NUM, NAME or latest; {listing})")
        if chosen.status != "ok":
            raise UsageError(f"{chosen.describe()} in {self.shown} cannot be used: a {chosen.status} run is never "
                             f"compared with")
        return chosen

    def _by_id_or_name(self, spec: str, entries: list[RunEntry]) -> RunEntry | None:
        """The run whose id is ``spec``, else whose id alone starts with it (8 characters at least),
        else the newest complete one named ``spec``; None when none is."""
        exact = [e for e in entries if e.id == spec]
        if exact:
            return exact[0]
        prefixed = [e for e in entries if e.id.startswith(spec)] if len(spec) >= 8 else []
        if len(prefixed) > 1:
            raise UsageError(f"run {spec!r}: {len(prefixed)} run ids start with it in {self.shown}; give more of the id")
        if prefixed:
            return prefixed[0]
        named = [e for e in entries if e.name == spec]
        complete = [e for e in named if e.status == "ok"] or named
        return complete[-1] if complete else None

    # ------------------------------------------------------------------ prune
    def prune(self, *, older_than: timedelta | None = None, keep: int | None = None, max_bytes: int | None = None,
              dry_run: bool = False, now: datetime | None = None, damaged: bool = False) -> list[RunEntry]:
        """Delete runs: older than ``older_than``, beyond the newest ``keep``, then the oldest while the
        runs' files (as their manifests list them) hold more than ``max_bytes``; with ``damaged`` every
        damaged run (run.json differs from its manifest) and, in a directory, every rejected one (a
        manifest that is not valid; at a URL a rejected run may be signed by a key not trusted here,
        and is left). Incomplete runs younger than an hour are left (they may be being written).
        Returns what was (or, ``dry_run``, would be) deleted, oldest first. Only run directories
        (names that are run ids) are ever touched."""
        entries = self.entries(verify=damaged)
        removed = _doomed(entries, now or datetime.now(timezone.utc), older_than, keep, max_bytes)
        if damaged:
            bad = ("damaged",) if self.url else ("damaged", "rejected")
            removed = sorted({e.id: e for e in removed + [e for e in entries if e.status in bad]}.values(),
                             key=lambda e: e.number)
        if not dry_run:
            for e in removed:
                try:
                    self.transport.remove_tree(self._run_dir(e.id))
                except self.transport.errors as exc:
                    raise self._error(f"cannot delete run {e.id} of", exc) from None
        return removed


def _doomed(entries: list[RunEntry], now: datetime, older_than: timedelta | None, keep: int | None,
            max_bytes: int | None) -> list[RunEntry]:
    """What :meth:`RunStore.prune` deletes, oldest first."""
    doomed: dict[str, RunEntry] = {}
    removable = [e for e in entries if not (e.status == "incomplete" and now - e.time < INCOMPLETE_GRACE)]
    if older_than is not None:
        doomed.update({e.id: e for e in removable if now - e.time > older_than})
    if keep is not None:
        complete = [e for e in removable if e.status != "incomplete"]
        doomed.update({e.id: e for e in complete[:max(0, len(complete) - keep)]})
        doomed.update({e.id: e for e in removable if e.status == "incomplete"})
    if max_bytes is not None:
        left = [e for e in removable if e.id not in doomed]
        total = sum(e.size for e in left)
        for e in left:
            if total <= max_bytes:
                break
            doomed[e.id] = e
            total -= e.size
    return sorted(doomed.values(), key=lambda e: e.number)


def open_store(location: str, *, flag: str = "--trt-storage", source: str | None = None, base: Path | None = None,
               trusted: Iterable[Any] = (), trust_flag: str = "--trt-remote-cache-trust",
               want_key: bool = False) -> RunStore:
    """A :class:`RunStore` configured as the remote cache is: for a URL, the private key from
    ``$PYTEST_TRT_REMOTE_CACHE_KEY`` (loaded when set, or required with ``want_key``), basic auth from
    ``$PYTEST_TRT_REMOTE_CACHE_AUTH``, ``trusted`` plus ``$PYTEST_TRT_REMOTE_CACHE_TRUST`` when none are given."""
    key = os.environ.get(ENV_KEY) or None
    trusted = tuple(trusted) or tuple(os.environ.get(ENV_TRUST, "").replace(",", " ").split())
    url = "://" in location
    store = RunStore(location, private_key=key if url else None, trusted=trusted if url else (),
                     auth=(os.environ.get(ENV_AUTH) or None) if url else None, flag=flag, source=source, base=base,
                     trust_flag=trust_flag)
    if want_key:
        store.check_writable()
    return store
