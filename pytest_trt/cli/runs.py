"""``pytest-trt runs list|show|diff|recheck|prune``: the runs pytest saved (``--trt-save``, ``--trt-autosave``).

Usage errors (exit 2): a storage that cannot be opened or read, a run that is missing, rejected
(forged: its signature does not verify) or damaged, a model file that is not the one a run
tested. ``diff --fail`` exits 1 on a regression, or when it compared no output at all (the gate
judged nothing); ``recheck`` exits 1 when a re-judged verdict disagrees with the recorded one (a
check recorded as failed that fails again, a caught negative control, agrees: exit 0).
"""

from __future__ import annotations

import sys
from datetime import timedelta
from typing import Any

from ..backends.base import disclaimer_of
from ..cache.remote.signing import RejectedEntry
from ..core.formatting import as_float, fmt_cos, fmt_err, fmt_ratio
from ..errors import UsageError
from ..history.drift import compare_reports, failure_line
from ..history.gate import parse_gate
from ..history.recheck import recheck_run
from ..history.store import RunStore, StoreError, open_store
from ..history.text import drift_lines
from ..report.rows import criterion_text
from ..run.settings import parse_size
from .cache import parse_age
from .common import cache_dir_from_args, emit_json, storage_from_args

__all__ = ["run_diff", "run_list", "run_prune", "run_recheck", "run_show"]


def _store(args: Any) -> RunStore:
    location = storage_from_args(args)
    return open_store(location, flag="--storage", trusted=tuple(args.remote_cache_trust),
                      trust_flag="--remote-cache-trust")


def _entries(store: RunStore):
    try:
        return store.entries()
    except StoreError as exc:
        raise UsageError(str(exc)) from None


def _load(store: RunStore, spec: str, entries=None) -> tuple[Any, dict]:
    entries = _entries(store) if entries is None else entries
    entry = store.select(spec, entries)
    if store.skipped:
        print(f"warning: {spec}: skipped damaged run(s) " + "; ".join(f"{e.id} ({e.reason})" for e in store.skipped),
              file=sys.stderr)
        store.skipped.clear()
    try:
        return entry, store.load(entry)
    except RejectedEntry as exc:
        raise UsageError(f"run {entry.id} in {store.shown} is damaged: {exc}") from None
    except StoreError as exc:
        raise UsageError(str(exc)) from None


def _disclaimer(recorded: dict) -> str | None:
    """The disclaimer of the backend a saved run used (``recorded``: its manifest summary or its report's
    session): the one it recorded, else the registry's for its name (:func:`disclaimer_of`; a backend not
    known here says so), None for TensorRT itself."""
    if "backend_disclaimer" in recorded:
        return recorded["backend_disclaimer"]
    name = recorded.get("backend")
    return disclaimer_of(str(name)) if name else None


def run_list(args: Any) -> int:
    store = _store(args)
    try:
        try:  # each run.json checked against its manifest, as `runs show` reads it
            entries = store.entries(verify=True)
        except StoreError as exc:
            raise UsageError(str(exc)) from None
        if args.json:
            emit_json({"storage": store.shown, "runs": [
                {"num": e.number, "id": e.id, "name": e.name, "status": e.status, "reason": e.reason or None,
                 "created": e.payload.get("created"), "exitstatus": e.exitstatus, "gate": e.payload.get("gate"),
                 "summary": e.payload.get("summary"), "size": e.size,
                 "backend_disclaimer": _disclaimer(e.payload.get("summary") or {}) if e.status == "ok" else None}
                for e in entries]})
            return 0
        print(f"saved runs in {store.shown}: {len(entries)}")
        for e in entries:
            if e.status != "ok":
                print(f"{e.number:>4}  {e.id}  {e.status.upper()}: {e.reason}")
                continue
            summary = e.payload.get("summary") or {}
            gate = e.payload.get("gate")
            gated = "" if not gate else ("  gate passed" if gate.get("passed") else "  gate FAILED")
            outputs = " +outputs" if summary.get("saved_outputs") else ""
            print(f"{e.number:>4}  {e.id}  exit {e.exitstatus}{gated}  {summary.get('backend')} "
                  f"{summary.get('precision')}  {summary.get('tests')} test(s), {summary.get('outputs')} output(s)"
                  f"{outputs}")
            disclaimer = _disclaimer(summary)
            if disclaimer:
                print(f"      (backend {summary.get('backend')}: {disclaimer})")
        return 0
    finally:
        store.close()


def run_show(args: Any) -> int:
    store = _store(args)
    try:
        entry, run = _load(store, args.run_spec)
        report = run.get("report") or {}
        recorded = report.get("session") or {"backend": (entry.payload.get("summary") or {}).get("backend")}
        disclaimer = _disclaimer(recorded)
        if args.json:
            emit_json({"num": entry.number, "backend_disclaimer": disclaimer, **run})
            return 0
        print(f"run {entry.number}: {entry.id}" + (f" ({run.get('name')})" if run.get("name") else ""))
        print(f"  created {run.get('created')}, exit {run.get('exitstatus')}"
              + (f", gate {'passed' if run['gate'].get('passed') else 'FAILED'} against {run['gate'].get('against')}"
                 if run.get("gate") else ""))
        if disclaimer:
            print(f"  (backend {recorded.get('backend')}: {disclaimer})")
        for key, value in (run.get("fingerprint") or {}).items():
            print(f"  {key}: {value}")
        for test in report.get("tests") or ():
            for check in test.get("accuracy") or ():
                for out in check.get("outputs") or ():
                    verdict = "ok  " if out.get("passed") else "FAIL"
                    criterion = criterion_text(check.get("criterion"), str(out.get("name"))) or "no criterion recorded"
                    cosine = as_float(out.get("cosine"))
                    print(f"  {verdict} {test.get('nodeid')}[{out.get('name')}]  x tol "
                          f"{fmt_ratio(as_float(out.get('tolerance_ratio')))}  max abs {fmt_err(as_float(out.get('max_abs')))}"
                          f"  max rel {fmt_err(as_float(out.get('max_rel')))}  cosine "
                          f"{'n/a' if cosine is None else fmt_cos(cosine)}  [{check.get('precision')}: {criterion}]")
        return 0
    finally:
        store.close()


def run_diff(args: Any) -> int:
    thresholds = parse_gate(args.fail, "--fail")
    store = _store(args)
    try:
        entries = _entries(store)
        a_entry, a = _load(store, args.run_a, entries)
        b_entry, b = _load(store, args.run_b, entries)
        drift = compare_reports(a, b.get("report") or {}, thresholds)
        if args.json:
            emit_json({"a": a_entry.id, "b": b_entry.id, **drift.to_json()})
        else:
            print(f"run {b_entry.number} {b_entry.id} against run {a_entry.number} {a_entry.id}")
            for line in drift_lines(drift, title="drift", flag="--fail", save="pytest --trt-save NAME"):
                print(line)
        if drift.gated and not drift.passed:
            if args.json:  # the line CI logs look for, on stderr beside the JSON
                print(failure_line(drift, flag="--fail", save="pytest --trt-save NAME"), file=sys.stderr)
            return 1
        return 0
    finally:
        store.close()


def _age(text: str | None) -> timedelta | None:
    """``--older-than``: the rule of ``cache prune --max-age`` (a unit required, :func:`~.cache.parse_age`)."""
    return None if text is None else timedelta(seconds=parse_age(text, "--older-than"))


def run_prune(args: Any) -> int:
    older = _age(args.older_than)
    try:
        max_bytes = parse_size(args.max_size)
    except UsageError:
        raise UsageError(f"--max-size {args.max_size!r}: give a size such as 2G or 500M") from None
    if older is None and args.keep is None and max_bytes is None and not args.damaged:
        raise UsageError("runs prune: say what to delete: --older-than AGE, --keep N, --max-size SIZE or --damaged")
    store = _store(args)
    try:
        try:
            removed = store.prune(older_than=older, keep=args.keep, max_bytes=max_bytes, dry_run=args.dry_run,
                                  damaged=args.damaged)
        except StoreError as exc:
            raise UsageError(str(exc)) from None
        if args.json:
            emit_json({"storage": store.shown, "dry_run": bool(args.dry_run),
                       "deleted": [{"id": e.id, "status": e.status, "size": e.size} for e in removed]})
            return 0
        what = "would delete" if args.dry_run else "deleted"
        print(f"{what} {len(removed)} run(s) of {store.shown}")
        for e in removed:
            print(f"  {e.id} ({e.status}, {e.size} bytes)")
        return 0
    finally:
        store.close()


def run_recheck(args: Any) -> int:
    store = _store(args)
    try:
        entry, run = _load(store, args.run_spec)
        from ..cache import ArtifactCache  # the FP32 baselines are cached like pytest's

        cache = ArtifactCache(cache_dir_from_args(args).resolve())
        try:
            result = recheck_run(store, entry, run, args.model, cache=cache)
        except StoreError as exc:
            raise UsageError(str(exc)) from None
        if args.json:
            emit_json(result.to_json())
        else:
            print(f"run {entry.number} {entry.id}: {len(result.checks)} saved check(s) judged again against the FP32 "
                  f"ONNX Runtime reference computed here")
            for check in result.checks:
                verdict = "passed" if check.passed else "FAILED"
                agree = "agrees with the recorded verdict" if check.agrees else \
                    f"DISAGREES: recorded {'passed' if check.recorded else 'failed'}"
                print(f"  {verdict}  {check.nodeid} ({check.model} [{check.policy}]): {agree}")
                if not check.passed:
                    print("    " + check.message.replace("\n", "\n    "))
            for nodeid, why in result.skipped:
                print(f"  skipped  {nodeid}: {why}")
            print("every verdict agrees with the recorded one" if result.agrees else
                  "some verdicts DISAGREE with the recorded ones")
        return 0 if result.agrees else 1
    finally:
        store.close()
