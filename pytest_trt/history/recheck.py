"""``pytest-trt runs recheck RUN --model PATH``: re-judge a run's saved engine outputs on this machine.

A run saved with ``--trt-save-outputs`` holds, per accuracy check, the feeds and the engine's
outputs. Here the FP32 reference of each check is computed afresh (ONNX Runtime on this machine,
the reference the check used: ``fp32`` or ``as-written``), and the saved outputs are compared
with it under the criterion the check recorded (its ``criterion``, read back with
:meth:`Criterion.from_json <pytest_trt.compare.criterion.Criterion.from_json>`: every tolerance and
floor with its level, so a default cosine floor stays a default one): a GPU runner's outputs judged
on a CPU laptop, as Polygraphy's ``--load-outputs`` does. A model file is taken only for the
checks whose recorded content hash it has.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cache.remote.signing import RejectedEntry
from ..compare import compare_outputs
from ..compare.criterion import Criterion
from ..compare.figures import DETAILS_MAX_ELEMENTS
from ..errors import UsageError
from ..model.load import load_model
from ..reference.baseline import fp32_baseline, reference_model
from .outputs import load_check_outputs
from .store import RunEntry, RunStore

__all__ = ["RecheckResult", "Rechecked", "recheck_run"]


@dataclass
class Rechecked:
    """One check of the run, judged again: ``passed`` now, ``recorded`` then, per output."""

    nodeid: str
    model: str
    policy: str
    passed: bool
    recorded: bool
    outputs: dict[str, tuple[bool, bool | None]]
    message: str

    @property
    def agrees(self) -> bool:
        return self.passed == self.recorded and all(now == then for now, then in self.outputs.values()
                                                    if then is not None)

    def to_json(self) -> dict[str, Any]:
        return {"nodeid": self.nodeid, "model": self.model, "policy": self.policy, "passed": self.passed,
                "recorded_passed": self.recorded, "agrees": self.agrees,
                "outputs": {n: {"passed": a, "recorded_passed": b} for n, (a, b) in self.outputs.items()}}


@dataclass
class RecheckResult:
    run: str
    checks: list[Rechecked] = field(default_factory=list)
    #: checks left out: (nodeid, why)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def agrees(self) -> bool:
        return all(c.agrees for c in self.checks)

    def to_json(self) -> dict[str, Any]:
        return {"run": self.run, "passed": self.passed, "agrees": self.agrees,
                "checks": [c.to_json() for c in self.checks],
                "skipped": [{"nodeid": n, "reason": r} for n, r in self.skipped]}


def _models_for(entry: RunEntry, saved: list, models: Sequence[str | Path], model_flag: str) -> dict[str, Any]:
    """``{sha256: Model}`` of the given files; UsageError when none is the model of a saved check."""
    loaded = {}
    for path in models:
        model = load_model(Path(path))
        loaded[model.sha256] = model
    recorded = {(check.get("fingerprint") or {}).get("model_sha256"): check.get("model") for _, check in saved}
    if not set(loaded) & set(recorded):
        given = ", ".join(f"{Path(p).name} (sha256 {m.sha256[:16]})" for p, m in zip(models, loaded.values(),
                                                                                   strict=False))
        wanted = ", ".join(f"{label} (sha256 {str(sha)[:16]})" for sha, label in recorded.items())
        raise UsageError(f"{model_flag}: {given} is not the model of any check saved in run {entry.id}; its checks "
                         f"were made on {wanted}. Give the model file the run tested")
    return loaded


def _recheck_one(store: RunStore, entry: RunEntry, test: Mapping[str, Any], check: Mapping[str, Any], model: Any,
                 directory: Path, *, cache: Any, provider: str) -> Rechecked:
    try:
        criterion = Criterion.from_json(check.get("criterion"))
    except UsageError as exc:
        raise UsageError(f"run {entry.id}: {test.get('nodeid')} ({check.get('model')}): {exc}") from None
    name = check["outputs_file"]["file"]
    try:
        path = store.fetch_output(entry, name, directory / name)
    except RejectedEntry as exc:
        raise UsageError(f"run {entry.id} in {store.shown} is damaged: {exc}") from None
    feeds, outputs = load_check_outputs(path)
    expected = fp32_baseline(reference_model(model, check.get("baseline") or "fp32"), feeds, provider=provider,
                             cache=cache)
    details = sum(int(getattr(v, "size", 0)) for v in outputs.values()) <= DETAILS_MAX_ELEMENTS
    compared = compare_outputs(outputs, expected, details=details, criterion=criterion)
    recorded_outputs = {out["name"]: out.get("passed") for out in check.get("outputs") or ()}
    return Rechecked(str(test.get("nodeid")), str(check.get("model")), str(check.get("policy")), compared.passed,
                     bool(check.get("passed")),
                     {n: (o.passed, recorded_outputs.get(n)) for n, o in compared.outputs.items()}, compared.message())


def recheck_run(store: RunStore, entry: RunEntry, run: Mapping[str, Any], models: Sequence[str | Path], *,
                cache: Any = None, provider: str = "cpu", model_flag: str = "--model") -> RecheckResult:
    """Re-judge every saved check of ``run`` whose model is among ``models`` (see the module docstring).

    UsageError: the run holds no saved outputs, a model file cannot be loaded, or none of ``models``
    has the content hash of a saved check (naming the recorded hashes).
    """
    report = run.get("report") or {}
    saved = [(test, check) for test in report.get("tests") or () for check in test.get("accuracy") or ()
             if check.get("outputs_file")]
    if not saved:
        raise UsageError(f"run {entry.id} holds no saved outputs: it was saved without --trt-save-outputs, so "
                         f"there is nothing to re-check")
    loaded = _models_for(entry, saved, models, model_flag)
    result = RecheckResult(entry.id)
    with tempfile.TemporaryDirectory(prefix="pytest-trt-recheck-") as tmp:
        for test, check in saved:
            sha = str((check.get("fingerprint") or {}).get("model_sha256"))
            if sha not in loaded:
                result.skipped.append((str(test.get("nodeid")), f"its model {check.get('model')} (sha256 {sha[:16]}) "
                                                                f"was not given ({model_flag})"))
                continue
            result.checks.append(_recheck_one(store, entry, test, check, loaded[sha], Path(tmp), cache=cache,
                                              provider=provider))
    return result
