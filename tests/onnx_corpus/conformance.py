"""The checks the ``onnx_corpus`` tier runs on each model of ONNX's conformance corpus.

For a corpus case with float tensors (``tests/onnx_corpus.py``):

* the source is loaded by :func:`pytest_trt.model.load.load_model` (a refusal there is a
  ``ModelError`` and counts as a refusal, by reason);
* for FP16 and BF16: the plan resolves or is refused with a named ``ModelError``; the
  strongly typed realization passes ``onnx.checker.check_model(full_check=True)``
  (strict type inference, which is what BF16 gets since ONNX Runtime CPU lacks most
  BF16 kernels); where ONNX Runtime loads the source it loads the FP16 realization too;
  the emulation graph runs where the source runs;
* the FP32 policy's emulation graph reproduces the source's outputs bitwise.

Any other exception is an internal error (the tier fails on it). Run as a script for
the table without pytest: ``python tests/onnx_corpus/conformance.py [--sample N]``.
"""

from __future__ import annotations

import collections
import re
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the corpus generator

from onnx_corpus import CorpusCase, iter_corpus  # noqa: E402

from pytest_trt import PrecisionPolicy  # noqa: E402
from pytest_trt.errors import ModelError  # noqa: E402
from pytest_trt.model.load import load_model  # noqa: E402
from pytest_trt.realize import realize_emulation, realize_strong  # noqa: E402
from pytest_trt.reference.baseline import make_session, reference_model  # noqa: E402

LOW = ("fp16", "bf16")


@dataclass
class CaseResult:
    """What the checks found for one corpus case (failures name the case and the check)."""

    id: str
    source_refused: str | None = None          # reason key when load_model refused it
    source_checks: bool = False                # the source passes check_model(full_check=True)
    source_check_failure: str | None = None
    source_loads: bool = False                 # ONNX Runtime loads the source
    source_runs: bool = False                  # ... and runs it on the corpus inputs
    planned: dict[str, bool] = field(default_factory=dict)           # precision -> plan resolved
    refused: dict[str, str] = field(default_factory=dict)            # precision -> reason key
    check_failures: dict[str, str] = field(default_factory=dict)     # precision -> checker message
    inherited_check_failures: dict[str, str] = field(default_factory=dict)  # ... of a source that fails it
    ort_refusals: dict[str, str] = field(default_factory=dict)       # precision -> ORT message
    emulation_failures: dict[str, str] = field(default_factory=dict)  # precision -> message
    fp32_refused: str | None = None            # reason key when the FP32 plan is refused
    fp32_mismatch: str | None = None
    fp32_bitwise: bool = False
    internal: list[str] = field(default_factory=list)


def reason_key(exc: BaseException) -> str:
    """A short, stable key of a refusal's message: the class and the message's gist with
    names and numbers taken out (so the table counts reasons, not models)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    text = re.sub(r"^[^:'\"]*: ", "", text)  # the model's label
    text = re.sub(r"'[^']*'", "'…'", text)
    text = re.sub(r"\"[^\"]*\"", "'…'", text)
    text = re.sub(r"\b\d+\b", "N", text)
    return f"{type(exc).__name__}: {text.split(';')[0][:110]}"


def _first(exc: BaseException) -> str:
    s = str(exc).strip()
    return s.splitlines()[0][:300] if s else repr(exc)


def _tensor_feeds(case: CorpusCase) -> dict | None:
    if case.inputs is None:
        return None
    return dict(case.inputs)


def _run(model_bytes: bytes, feeds: dict, label: str):
    session = make_session(model_bytes, label=label)
    names = [o.name for o in session.get_outputs()]
    expected = {i.name for i in session.get_inputs()}
    return dict(zip(names, session.run(names, {k: v for k, v in feeds.items() if k in expected}), strict=True))


def _bitwise_equal(a, b) -> bool:
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and all(
            _bitwise_equal(x, y) for x, y in zip(a, b, strict=True))
    if a is None or b is None:
        return a is None and b is None
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _as_dtype_of(value, like):
    if isinstance(value, np.ndarray) and isinstance(like, np.ndarray) and value.dtype != like.dtype:
        return value.astype(like.dtype)
    return value


def check_case(case: CorpusCase) -> CaseResult:
    """Run every check on one case; never raises (internal errors are recorded)."""
    result = CaseResult(case.id)
    try:
        _check(case, result)
    except Exception:  # recorded; the tier fails on any
        result.internal.append(traceback.format_exc(limit=8))
    return result


def _check(case: CorpusCase, result: CaseResult) -> None:
    try:
        model = load_model(case.model)
    except ModelError as exc:
        result.source_refused = reason_key(exc)
        return
    try:
        onnx.checker.check_model(model.proto, full_check=True)
        result.source_checks = True
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
        result.source_check_failure = _first(exc)
    source_bytes = model.proto.SerializeToString()
    feeds = _tensor_feeds(case)
    source_out = None
    try:
        make_session(source_bytes, label=case.id)
        result.source_loads = True
    except ModelError:
        pass
    if result.source_loads and feeds is not None:
        try:
            source_out = _run(source_bytes, feeds, case.id)
            result.source_runs = True
        except Exception:  # ORT's own failure on its own conformance case: not ours
            pass

    for precision in LOW:
        try:
            plan = PrecisionPolicy(default=precision).resolve(model)
        except ModelError as exc:
            result.refused[precision] = reason_key(exc)
            continue
        result.planned[precision] = True
        strong = realize_strong(plan)
        try:
            onnx.checker.check_model(strong, full_check=True)
        except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
            # a source ONNX's own checker rejects cannot make a valid realization: counted apart
            kind = result.check_failures if result.source_checks else result.inherited_check_failures
            kind[precision] = _first(exc)
        if precision == "fp16" and result.source_loads:
            try:
                make_session(strong.SerializeToString(), label=f"{case.id} [fp16 realization]")
            except ModelError as exc:
                result.ort_refusals[precision] = _first(exc)
        if result.source_runs:
            try:
                _run(realize_emulation(plan).SerializeToString(), feeds, f"{case.id} [{precision} emulation]")
            except Exception as exc:
                result.emulation_failures[precision] = _first(exc)

    if result.source_runs:
        try:
            plan = PrecisionPolicy(default="fp32").resolve(model)
        except ModelError as exc:
            result.fp32_refused = reason_key(exc)
            return
        try:
            got = _run(realize_emulation(plan).SerializeToString(), feeds, f"{case.id} [fp32 emulation]")
        except Exception as exc:
            result.fp32_mismatch = f"FP32 emulation does not run: {_first(exc)}"
            return
        # the baseline: the source itself, or for a source with FP16/BF16 tensors its FP32 upcast
        baseline = reference_model(model)
        if baseline is not model:
            try:
                source_out = _run(baseline.proto.SerializeToString(), feeds, f"{case.id} [fp32 reference]")
            except Exception as exc:
                result.fp32_mismatch = f"the FP32 reference does not run: {_first(exc)}"
                return
            # the upcast reference writes FLOAT where the source's outputs are FP16/BF16; the
            # emulation keeps the source's output types: compare at the output's own type
            source_out = {n: _as_dtype_of(v, got.get(n)) for n, v in source_out.items()}
        diff = [n for n in source_out if not _bitwise_equal(source_out[n], got.get(n))]
        if diff:
            result.fp32_mismatch = f"outputs differ from the FP32 baseline's: {diff}"
        else:
            result.fp32_bitwise = True


# --------------------------------------------------------------------------------------
# the summary
# --------------------------------------------------------------------------------------
def summarize(results: list[CaseResult]) -> dict:
    """Counts over the results (the checked-in expectations are compared with this)."""
    counts: dict = {
        "models": len(results),
        "source_refused": len([r for r in results if r.source_refused]),
        "source_check_failures": sum(bool(r.source_check_failure) for r in results),
        "source_runs": sum(r.source_runs for r in results),
        "fp32_bitwise": sum(r.fp32_bitwise for r in results),
        "fp32_refused": sum(bool(r.fp32_refused) for r in results),
        "fp32_mismatch": sum(bool(r.fp32_mismatch) for r in results),
        "internal_errors": sum(bool(r.internal) for r in results),
    }
    for p in LOW:
        counts[p] = {
            "plans": sum(bool(r.planned.get(p)) for r in results),
            "refused": sum(p in r.refused for r in results),
            "check_failures": sum(p in r.check_failures for r in results),
            "inherited_check_failures": sum(p in r.inherited_check_failures for r in results),
            "ort_refusals": sum(p in r.ort_refusals for r in results),
            "emulation_failures": sum(p in r.emulation_failures for r in results),
        }
    return counts


def refusal_reasons(results: list[CaseResult]) -> dict[str, collections.Counter]:
    """``{"source"|"fp16"|"bf16": Counter(reason -> models)}``."""
    out = {"source": collections.Counter(), **{p: collections.Counter() for p in ("fp32", *LOW)}}
    for r in results:
        if r.source_refused:
            out["source"][r.source_refused] += 1
        if r.fp32_refused:
            out["fp32"][r.fp32_refused] += 1
        for p, why in r.refused.items():
            out[p][why] += 1
    return out


def table(results: list[CaseResult]) -> str:
    """The summary printed by the tier."""
    c = summarize(results)
    lines = [
        f"onnx {onnx.__version__} corpus: {c['models']} models with float tensors; "
        f"{c['source_refused']} refused by load_model; {c['source_check_failures']} sources fail "
        f"check_model(full_check=True) themselves; ONNX Runtime runs {c['source_runs']} sources",
        f"{'':<6}{'plans':>7}{'refused':>9}{'check':>7}{'ORT':>6}{'emul':>6}",
    ]
    for p in LOW:
        d = c[p]
        lines.append(f"{p:<6}{d['plans']:>7}{d['refused']:>9}{d['check_failures']:>7}"
                     f"{d['ort_refusals']:>6}{d['emulation_failures']:>6}")
    lines.append(f"fp32 policy bitwise equal to the FP32 baseline on {c['fp32_bitwise']} of "
                 f"{c['source_runs'] - c['fp32_refused']} runnable sources ({c['fp32_refused']} FP32 plans refused); "
                 f"internal errors {c['internal_errors']}")
    for where, reasons in refusal_reasons(results).items():
        for why, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"  refused [{where}] x{n}: {why}")
    for r in results:
        if r.source_check_failure:
            lines.append(f"  source fails check_model {r.id}: {r.source_check_failure}")
        for kind in ("check_failures", "inherited_check_failures", "ort_refusals", "emulation_failures"):
            for p, msg in getattr(r, kind).items():
                lines.append(f"  {kind} [{p}] {r.id}: {msg}")
        if r.fp32_mismatch:
            lines.append(f"  fp32 {r.id}: {r.fp32_mismatch}")
        for tb in r.internal:
            lines.append(f"  INTERNAL {r.id}: {tb.strip().splitlines()[-1]}")
    return "\n".join(lines)


def run_corpus(ids=None, families=None) -> list[CaseResult]:
    return [check_case(case) for case in iter_corpus(families, ids=ids, float_only=True)]


if __name__ == "__main__":  # pragma: no cover
    import argparse
    import json
    import time

    from onnx_corpus import sample

    parser = argparse.ArgumentParser()
    parser.add_argument("--sample", type=int, default=0)
    parser.add_argument("--families", nargs="*")
    parser.add_argument("--json")
    args = parser.parse_args()
    start = time.perf_counter()
    ids = sample(args.sample, 0, args.families) if args.sample else None
    results = run_corpus(ids, args.families)
    print(table(results))
    print(json.dumps(summarize(results), indent=1))
    print(f"{time.perf_counter() - start:.1f}s")
    if args.json:
        Path(args.json).write_text(json.dumps([r.__dict__ for r in results], indent=1, default=str))
