"""Saved runs in a pytest session (:mod:`pytest_trt.history`): open the storage, load the run to
compare with, stage saved outputs, judge the drift and save the run at the end.

The controller does all of it (under pytest-xdist the workers only write saved outputs into the
controller's staging folder, named in their ``workerinput``). When the session starts
(:func:`prepare`, called by :func:`~pytest_trt.glue.activation.activate`): contradictory options,
a storage that cannot be used (a URL without trusted keys; saving there without the signing key)
and a run to compare with that is missing, rejected or damaged are usage errors (exit 4). When it
ends (:func:`judge_drift` before the reports are written, :func:`save_run` after): a gate that
failed is a session failure (exit 1, one ``pytest-trt drift gate FAILED ...`` line); a run that
could not be saved is one too.

On the plugin's load path: the history modules are imported once the plugin is in use.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import UsageError

__all__ = ["History", "close", "header_line", "judge_drift", "prepare", "save_run"]


@dataclass
class History:
    """The controller's saved-runs state for one session."""

    store: Any
    #: the run compared with (its entry, and run.json), when --trt-compare-run is given
    entry: Any = None
    run: dict | None = None
    #: --trt-save-outputs: the staging folder this session created (removed at its end)
    staging: Path | None = None
    #: the drift against ``run`` (pytest_trt.history.drift.DriftReport), once judged
    drift: Any = None
    #: damaged runs --trt-compare-run=latest passed over (their entries), for the warnings (header, summary, JSON)
    skipped: tuple = ()
    #: the id this session's run is saved under (chosen before the reports are written)
    run_id: str | None = None
    saved: bool = False

    def to_json(self) -> dict[str, Any]:
        """The JSON report's ``history``."""
        return {"storage": self.store.shown, "saved_as": self.run_id,
                "compared_with": None if self.entry is None else self.entry.id,
                "drift": None if self.drift is None else self.drift.to_json(),
                "skipped_damaged": [{"id": e.id, "reason": e.reason} for e in self.skipped]}

    def skipped_line(self) -> str | None:
        """``newest run X skipped: damaged (why); compared with Y``, or None: the header's warning again,
        for the terminal summary, which ``-q`` and CI logs keep."""
        if not self.skipped:
            return None
        if len(self.skipped) == 1:
            named, why = f"newest run {self.skipped[0].id}", self.skipped[0].reason
        else:
            named = "newest runs " + ", ".join(e.id for e in self.skipped)
            why = "; ".join(f"{e.id}: {e.reason}" for e in self.skipped)
        used = f"compared with {self.entry.id}" if self.entry is not None else "compared with none"
        return (f"pytest-trt drift: WARNING: {named} skipped: damaged ({why}); {used} "
                f"(`pytest-trt runs prune --damaged` deletes them)")


def _flag(settings, dest: str, default: str) -> str:
    source = settings.sources.get(dest, "default")
    return default if source == "default" else source


def prepare(config: Any, session: Any) -> None:
    """At activation: a worker takes the staging folder; the controller checks the options, opens the
    storage and loads the run to compare with. Raises UsageError (the plugin makes it exit 4)."""
    s = session.settings
    worker = getattr(config, "workerinput", None)
    if worker is not None:
        staged = worker.get("trt_outputs_dir")
        session.outputs_dir = Path(staged) if staged else None
        return
    if s.save_outputs and not s.saves:
        raise UsageError(f"{_flag(s, 'trt_save_outputs', '--trt-save-outputs')} stores outputs with a saved run: add "
                         f"--trt-save=NAME or --trt-autosave")
    if s.compare_fail and not s.compare_run:
        raise UsageError(f"{_flag(s, 'trt_compare_fail', '--trt-compare-fail')} gates the drift against a saved run: "
                         f"add --trt-compare-run=RUN (or a bare --trt-compare-run for the latest)")
    if not (s.saves or s.compare_run):
        return
    from ..core.locations import default_runs_dir  # load path: imported once in use
    from ..history.store import StoreError, open_store  # load path: imported once in use

    location = s.storage or str(default_runs_dir(rootdir=s.rootdir))
    store = open_store(location, source=s.sources.get("trt_storage") if s.storage else None,
                       trusted=s.remote_cache_trust, want_key=s.saves)
    history = History(store=store)
    if s.compare_run:
        from ..cache.remote.signing import RejectedEntry  # load path: imported once in use

        flag = _flag(s, "trt_compare_run", "--trt-compare-run")
        try:
            history.entry = store.select(s.compare_run)
            history.skipped = tuple(store.skipped)
            history.run = store.load(history.entry)
        except StoreError as exc:
            raise UsageError(f"{flag}={s.compare_run}: {exc}") from None
        except RejectedEntry as exc:
            raise UsageError(f"{flag}={s.compare_run}: run {history.entry.id} in {store.shown} is damaged: {exc}. "
                             f"Compare with another run (`pytest-trt runs list --storage={store.shown}`)") from None
        except UsageError as exc:
            raise UsageError(f"{flag}={s.compare_run}: {exc}") from None
    if s.save_outputs:
        history.staging = Path(tempfile.mkdtemp(prefix="pytest-trt-outputs-"))
        session.outputs_dir = history.staging
    session.history = history


def header_line(session: Any) -> str | None:
    """The report header's line about saving and comparing, or None."""
    history = getattr(session, "history", None)
    if history is None:
        return None
    s = session.settings
    parts = []
    if s.saves:
        parts.append(f"saving this run{f' as {s.save_name!r}' if s.save_name else ''}"
                     + (" with outputs" if s.save_outputs else ""))
    if history.entry is not None:
        gate = f", gate {','.join(str(t) for t in s.compare_fail)}" if s.compare_fail else ""
        parts.append(f"comparing with run {history.entry.id} (#{history.entry.number}, exit "
                     f"{history.entry.exitstatus}{gate})")
    line = f"pytest-trt: runs in {history.store.shown}: " + "; ".join(parts)
    if history.skipped:
        line += ("\npytest-trt: WARNING: skipped damaged run(s) for " + str(s.compare_run) + ": "
                 + "; ".join(f"{e.id} ({e.reason})" for e in history.skipped)
                 + " (`pytest-trt runs prune --damaged` deletes them)")
    return line


def _report(session: Any, results: list, exitstatus: int) -> dict:
    from ..report.json_report import build_report, clean  # load path: imported once in use

    return clean(build_report(session, results, exitstatus))


def judge_drift(session: Any, results: list, exitstatus: int) -> bool:
    """Compare with the stored run (when asked) and choose the saved run's id; returns False when the
    drift gate failed (its line is appended to ``session.session_failures``)."""
    history = getattr(session, "history", None)
    if history is None:
        return True
    from ..history.drift import compare_reports, failure_line  # load path: imported once in use
    from ..history.runid import make_run_id  # load path: imported once in use

    if session.settings.saves:
        history.run_id = make_run_id(session.settings.save_name)
    if history.run is None:
        return True
    history.drift = compare_reports(history.run, _report(session, results, exitstatus), session.settings.compare_fail)
    if history.drift.gated and not history.drift.passed:
        session.session_failures.append(failure_line(history.drift))
        return False
    return True


def save_run(session: Any, results: list, exitstatus: int) -> bool:
    """Save this session's run (when asked); returns False when it could not be saved (the reason is
    appended to ``session.session_failures``). Removes the staging folder either way."""
    history = getattr(session, "history", None)
    if history is None or not history.run_id:
        return True
    from ..history.store import RUN_FORMAT, StoreError  # load path: imported once in use

    try:
        report = _report(session, results, exitstatus)
        referenced = {check["outputs_file"]["file"] for test in report.get("tests") or ()
                      for check in test.get("accuracy") or () if check.get("outputs_file")}
        outputs = {name: history.staging / name for name in referenced} if history.staging else {}
        missing = [name for name, path in outputs.items() if not path.is_file()]
        if missing:
            raise StoreError(f"saved outputs missing from the staging folder {history.staging}: {', '.join(missing[:3])}")
        drift = history.drift
        run = {
            "format": RUN_FORMAT, "id": history.run_id, "name": session.settings.save_name,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"), "exitstatus": int(exitstatus),
            "gate": None if drift is None or not drift.gated else {
                "against": drift.against, "expressions": [str(t) for t in drift.thresholds], "passed": drift.passed,
                "regressed": len(drift.regressed), "improved": len(drift.improved)},
            "fingerprint": (report.get("session") or {}).get("fingerprint"),
            "report": report,
        }
        history.store.save(run, outputs)
        history.saved = True
        return True
    except (StoreError, OSError, UsageError) as exc:
        flag = "--trt-save" if session.settings.save_name else "--trt-autosave"
        session.session_failures.append(f"pytest-trt: {flag}: run {history.run_id} was not saved to "
                                        f"{history.store.shown}: {exc}")
        return False
    finally:
        if history.staging is not None:
            with contextlib.suppress(OSError):
                shutil.rmtree(history.staging)


def close(session: Any) -> None:
    """Close the storage's connections and remove a staging folder left behind (a session that stopped early)."""
    history = getattr(session, "history", None)
    if history is None:
        return
    history.store.close()
    if history.staging is not None and history.staging.exists():
        with contextlib.suppress(OSError):
            shutil.rmtree(history.staging)
