"""Calibrate the default FP16/BF16 tolerances on the calibration corpus (issue 15, item 6).

Run: ``python bench/calibration.py [--only healthy|planted] [--json PATH]``

The corpus is ``tests/data/calibration/cases.json`` (written by
``tests/data/make_calibration_models.py``): real torch.onnx exports of BERT, GPT-2, ViT,
ConvNeXt and ResNet (opset 14 decomposed and opset 17 fused LayerNorm), healthy on three seeds
in FP16 and BF16, and with breakage planted that is real for the precision (FP16 LayerNorm
overflow on outlier activations, attention scores beyond FP16's range, CNN activations beyond
it; BF16 precision loss from a large common offset into a lowered LayerNorm; NaN from a
planted division in either).

Every case runs on the ``emulate`` backend (the plan's emulation graph on ONNX Runtime CPU)
against the FP32 ONNX Runtime CPU baseline, exactly as a test would. Printed per case:

* ``max abs``: the largest |actual - expected| (``nan`` when a non-finite value appears where
  the reference is finite);
* ``x tol``: the element rule's factor, ``max |a - e| / max(atol, rtol * |e|)`` under the
  precision's defaults (pytest_trt.compare.DEFAULT_TOLERANCES): a case passes the element
  rule iff ``x tol <= 1``; ``inf`` for NaN/Inf;
* ``1-cos`` and ``SNR dB`` over the whole output, and ``cos x``, the same factor for the
  default cosine floor: ``(1 - cos) / (1 - min_cosine)`` (``inf`` when the output is not finite);
* ``verdict``: what :func:`pytest_trt.compare_outputs` says under the precision's defaults
  (element rule and cosine floor): the real comparator, not a re-implementation;
* ``margin``: for a healthy case 1 / max(x tol, cos x) (goal >= 2), for a planted one
  max(x tol, cos x), the factor by which the stronger check fails it (goal >= 10).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _machine import machine  # noqa: E402  (bench/ is run as scripts)

from pytest_trt.compare import (  # noqa: E402
    DEFAULT_MIN_COSINE,
    DEFAULT_TOLERANCES,
    compare_outputs,
    cosine_similarity,
    snr_db,
)
from pytest_trt.inputs import make_feeds  # noqa: E402
from pytest_trt.model.load import load_model  # noqa: E402
from pytest_trt.plan.policy import PrecisionPolicy  # noqa: E402
from pytest_trt.realize import realize_emulation  # noqa: E402
from pytest_trt.reference.baseline import fp32_baseline, make_session, run_session  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "calibration"


def load_cases(only: str | None = None) -> list[dict]:
    cases = json.loads((CORPUS / "cases.json").read_text())["cases"]
    return [c for c in cases if only is None or c["kind"] == only]


def case_feeds(model, case: dict) -> dict:
    f = case["feeds"]
    return make_feeds(model, seed=f["seed"], dims=f.get("dims"), val_range={k: tuple(v) for k, v in f["val_range"].items()},
                      outliers=f.get("outliers"), offset=f.get("offset"))


def element_factor(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> float:
    """max |a - e| / max(atol, rtol * |e|): <= 1 iff every element passes; inf on NaN/Inf."""
    a = actual.astype(np.float64)
    e = expected.astype(np.float64)
    if not np.isfinite(a).all() or not np.isfinite(e).all():
        both = np.isfinite(a) & np.isfinite(e)
        if not np.array_equal(np.isnan(a), np.isnan(e)) or not np.array_equal(np.isinf(a) & ~both, np.isinf(e) & ~both):
            return math.inf
    ok = np.isfinite(a) & np.isfinite(e)
    d = np.abs(a[ok] - e[ok])
    allowed = np.maximum(atol, rtol * np.abs(e[ok]))
    return float((d / allowed).max()) if d.size else 0.0


def run_case(case: dict, provider: str = "cpu") -> dict:
    """Emulate one case; its outputs and the FP32 reference's."""
    model = load_model(CORPUS / case["model"])
    feeds = case_feeds(model, case)
    plan = PrecisionPolicy(case["precision"], keep_fp32=case["keep_fp32"]).resolve(model)
    session = make_session(realize_emulation(plan).SerializeToString(), label=f"emulation of {case['model']}")
    actual = run_session(session, feeds, output_names=model.output_names())
    expected = fp32_baseline(model, feeds, provider=provider)
    return {"actual": actual, "expected": expected}


def figures(actual: dict, expected: dict, precision: str, tolerances=None, min_cosine=None) -> dict:
    rtol, atol = (tolerances or DEFAULT_TOLERANCES)[precision]
    floor = (min_cosine or DEFAULT_MIN_COSINE)[precision]
    fac, max_abs, cos, snr = 0.0, 0.0, 1.0, math.inf
    for name, e in expected.items():
        a = actual[name]
        fac = max(fac, element_factor(a, e, rtol, atol))
        with np.errstate(invalid="ignore", over="ignore"):
            d = np.abs(a.astype(np.float64) - e.astype(np.float64))
        max_abs = math.nan if math.isnan(max_abs) or not np.isfinite(d).all() else max(max_abs, float(d.max()))
        if np.isfinite(a).all():
            cos = min(cos, cosine_similarity(a, e))
            snr = min(snr, snr_db(a, e))
        else:
            cos, snr = math.nan, math.nan
    cos_factor = math.inf if math.isnan(cos) else (1.0 - cos) / (1.0 - floor) if floor is not None else 0.0
    verdict = compare_outputs(actual, expected, precision=precision, rtol=rtol, atol=atol,
                              min_cosine=floor if floor is not None else -1.0).passed
    return {"factor": fac, "max_abs": max_abs, "cosine": cos, "snr_db": snr, "cos_factor": cos_factor,
            "passed": verdict}


def fmt(v: float, spec: str = ".2g") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "nan"
    if math.isinf(v):
        return "inf"
    return format(v, spec)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=("healthy", "planted"), help="run only healthy or only planted cases")
    ap.add_argument("--json", type=Path, help="also write the per-case figures as JSON")
    args = ap.parse_args(argv)

    print(machine())
    print("defaults: " + ", ".join(f"{p} rtol={r:g} atol={a:g} min_cosine={DEFAULT_MIN_COSINE[p]}"
                                   for p, (r, a) in DEFAULT_TOLERANCES.items()))
    header = (f"{'case':<30} {'LN':<10} {'kind':<7} {'max abs':>8} {'x tol':>7} {'1-cos':>8} {'cos x':>7} "
              f"{'SNR dB':>6} {'verdict':>7} {'margin':>7}  goal")
    print(header)
    print("-" * len(header))
    rows = []
    worst = {"healthy": math.inf, "planted": math.inf}
    for case in load_cases(args.only):
        out = run_case(case)
        f = figures(out["actual"], out["expected"], case["precision"])
        healthy = case["kind"] == "healthy"
        strongest = max(f["factor"], f["cos_factor"])
        margin = (1.0 / strongest if strongest else math.inf) if healthy else strongest
        ok = margin >= (2.0 if healthy else 10.0) and f["passed"] == healthy
        worst[case["kind"]] = min(worst[case["kind"]], margin)
        name = case["id"].replace("_opset", "/")
        one_minus_cos = 1.0 - f["cosine"] if not math.isnan(f["cosine"]) else math.nan
        print(f"{name:<30} {case['layernorm']:<10} {case['kind']:<7} {fmt(f['max_abs']):>8} {fmt(f['factor']):>7} "
              f"{fmt(one_minus_cos):>8} {fmt(f['cos_factor']):>7} {fmt(f['snr_db'], '.1f'):>6} "
              f"{'pass' if f['passed'] else 'FAIL':>7} {fmt(margin, '.3g'):>7}  {'met' if ok else 'MISSED'}")
        rows.append({"id": case["id"], **f, "margin": margin, "ok": ok})
    print(f"\nworst healthy margin {fmt(worst['healthy'], '.3g')} (goal >= 2), "
          f"smallest planted factor {fmt(worst['planted'], '.3g')} (goal >= 10); "
          f"verdicts: {sum(r['passed'] for r in rows)} pass, {sum(not r['passed'] for r in rows)} fail; "
          f"goal missed by {sum(not r['ok'] for r in rows)} of {len(rows)}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
