"""How well ``emulate`` predicts real low-precision GPU kernels (issue 20), on ONNX Runtime's CUDA provider.

Run (a CUDA GPU and onnxruntime-gpu): ``python bench/gpu_fidelity.py [--json PATH] [--provider cuda]``
(``--provider cpu`` dry-runs the whole pipeline on a CPU-only machine: ONNX Runtime's CPU
provider computes FP16 in FP32, so those figures mean nothing).

ONNX Runtime's CUDA kernels are a *proxy* for low-precision GPU arithmetic, not TensorRT:
other kernels, other fusions, no Myelin. What this measures is whether the emulation graph
(FP32 arithmetic, every stored low-precision tensor rounded) predicts real FP16/BF16 kernels
on a GPU. Three parts:

1. FP32 references: every FP32 model on CUDA with TF32 off (the ``--trt-baseline-provider
   cuda`` session, checked by ``check_cuda_session``) and with TF32 on, against the CPU
   provider's; which providers the nodes ran on (ONNX Runtime's profile).
2. Fidelity: for the example suite's models (encoder opset 14/17 on normal and outlier
   activations, FP16/BF16 everywhere and with LayerNorm/Softmax kept FP32; the convnet) and
   every case of the calibration corpus (``tests/data/calibration``), the plan's strongly
   typed realization (``realize_strong``: real FP16/BF16 tensors and Casts) runs on CUDA
   node by node (graph optimizations off, "unfused") and with every optimization on
   ("fused": ONNX Runtime's fused LayerNorm, attention, GELU kernels). Each, and ``emulate``,
   is compared with the FP32 CPU reference under the precision's default tolerances
   (``compare_outputs``): verdicts and max abs errors.
3. Agreement counts: emulate vs unfused and emulate vs fused verdicts, over the cases that
   loaded on CUDA.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import calibration  # noqa: E402
from _machine import machine  # noqa: E402

from pytest_trt.compare import compare_outputs  # noqa: E402
from pytest_trt.inputs import make_feeds  # noqa: E402
from pytest_trt.model.load import load_model  # noqa: E402
from pytest_trt.plan.policy import PrecisionPolicy  # noqa: E402
from pytest_trt.realize import realize_emulation, realize_strong  # noqa: E402
from pytest_trt.reference.baseline import (  # noqa: E402
    check_cuda_session,
    cuda_placement,
    fp32_baseline,
    make_session,
    node_placement,
    run_session,
)

SUITE = ROOT / "example_suite" / "models"
ENC_DIMS = {"batch": 2, "sequence": 16}
NORMAL = {"hidden_states": (-1.0, 1.0)}
OUTLIERS = {"hidden_states": {"count": 2, "magnitude": 400.0}}
KEEP = {"encoder_opset14.onnx": ["*/LayerNorm/*", "op:Softmax"],
        "encoder_opset17.onnx": ["op:LayerNormalization", "op:Softmax"]}


def suite_cases() -> list[dict]:
    """The example suite's FP32 models as corpus-style cases (same fields as cases.json)."""
    out = []
    for file in ("encoder_opset14.onnx", "encoder_opset17.onnx"):
        for regime, extra in (("normal", {}), ("outliers", {"outliers": OUTLIERS})):
            for precision in ("fp16", "bf16"):
                for keep in ([], KEEP[file]):
                    out.append({
                        "id": f"suite_{file[:-5]}_{precision}_{regime}{'_keepLN' if keep else ''}",
                        "model": str(SUITE / file), "precision": precision, "keep_fp32": keep, "kind": regime,
                        "feeds": {"seed": 0, "dims": ENC_DIMS, "val_range": NORMAL, **extra},
                    })
    for precision in ("fp16", "bf16"):
        out.append({"id": f"suite_convnet_{precision}", "model": str(SUITE / "convnet.onnx"), "precision": precision,
                    "keep_fp32": [], "kind": "normal",
                    "feeds": {"seed": 0, "dims": {"batch": 2}, "val_range": {"image": (0.0, 1.0)}}})
    return out


def feeds_of(model, case: dict) -> dict:
    f = case["feeds"]
    return make_feeds(model, seed=f["seed"], dims=f.get("dims"),
                      val_range={k: tuple(v) for k, v in f["val_range"].items()},
                      outliers=f.get("outliers"), offset=f.get("offset"))


def ort_session(model_bytes: bytes, provider: str, *, optimize: bool, tf32: bool = False):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimize
                                        else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    if provider == "cuda":
        providers = [("CUDAExecutionProvider", {"use_tf32": "1" if tf32 else "0"})]
    else:
        providers = ["CPUExecutionProvider"]
    return ort.InferenceSession(model_bytes, sess_options=options, providers=providers)


def max_abs(actual: dict, expected: dict) -> float:
    worst = 0.0
    for name, e in expected.items():
        with np.errstate(invalid="ignore", over="ignore"):
            d = np.abs(actual[name].astype(np.float64) - e.astype(np.float64))
        if not np.isfinite(d).all():
            return math.nan
        worst = max(worst, float(d.max()) if d.size else 0.0)
    return worst


def fp32_section(provider: str) -> list[dict]:
    models = [SUITE / "encoder_opset14.onnx", SUITE / "encoder_opset17.onnx", SUITE / "convnet.onnx"]
    models += sorted(p for p in calibration.CORPUS.glob("*.onnx") if p.stem.count("_") == 1)  # healthy exports
    rows = []
    for path in models:
        model = load_model(path)
        case = next((c for c in suite_cases() + calibration.load_cases() if Path(c["model"]).name == path.name
                     or c["model"] == path.name), None)
        feeds = feeds_of(model, case)
        ref = fp32_baseline(model, feeds, provider="cpu")
        row = {"model": path.name}
        try:
            session = make_session(model.serialized(), provider=provider, label=path.name)
            if provider == "cuda":
                row["cuda_options_use_tf32"] = check_cuda_session(session, path.name).get("use_tf32")
                placement = cuda_placement(model, feeds)
                row["providers"] = placement["providers"]
                row["cpu_float_nodes"] = placement["cpu_float_nodes"]
            off = run_session(session, feeds)
            row["tf32_off_max_abs"] = max_abs(off, ref)
            on = run_session(ort_session(model.serialized(), provider, optimize=False, tf32=True), feeds)
            row["tf32_on_max_abs"] = max_abs(on, ref)
            row["ref_max"] = max(float(np.abs(v).max()) for v in ref.values())
        except Exception as exc:  # noqa: BLE001  (reported per model)
            row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        rows.append(row)
        print(f"  {path.name:<30} " + (row.get("error") or
              f"TF32 off {row['tf32_off_max_abs']:.2e}  TF32 on {row['tf32_on_max_abs']:.2e}  (max |ref| "
              f"{row['ref_max']:.3g})  providers {row.get('providers', '-')}  float nodes on CPU "
              f"{len(row.get('cpu_float_nodes', []))}"), flush=True)
    return rows


def fidelity_case(case: dict, provider: str) -> dict:
    path = Path(case["model"]) if Path(case["model"]).is_absolute() else calibration.CORPUS / case["model"]
    model = load_model(path)
    feeds = feeds_of(model, case)
    precision = case["precision"]
    plan = PrecisionPolicy(precision, keep_fp32=case["keep_fp32"]).resolve(model)
    ref = fp32_baseline(model, feeds, provider="cpu")
    names = model.output_names()
    row = {"id": case["id"], "precision": precision, "kind": case.get("kind")}
    emu = run_session(make_session(realize_emulation(plan).SerializeToString(), label="emulation"), feeds,
                      output_names=names)
    r = compare_outputs(emu, ref, precision=precision)
    row["emulate"] = {"passed": r.passed, "max_abs": max_abs(emu, ref)}
    strong_proto = realize_strong(plan)
    strong = strong_proto.SerializeToString()
    for label, optimize in (("unfused", False), ("fused", True)):
        try:
            if label == "unfused" and provider == "cuda":
                # where the realization's nodes ran: a float node on the CPU provider would be
                # CPU arithmetic (ONNX Runtime's CPU FP16 kernels compute in FP32), not a GPU kernel
                import tempfile

                with tempfile.TemporaryDirectory() as tmp:
                    profiled = make_session(strong, provider="cuda", label=case["id"], profile_dir=Path(tmp))
                    placement = node_placement(profiled, strong_proto, feeds)
                row["unfused_placement"] = placement
            out = run_session(ort_session(strong, provider, optimize=optimize), feeds, output_names=names)
        except Exception as exc:  # noqa: BLE001  (a kernel ONNX Runtime's CUDA provider lacks, e.g. BF16 Equal)
            row[label] = {"error": f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:160]}"}
            continue
        r = compare_outputs(out, ref, precision=precision)
        row[label] = {"passed": r.passed, "max_abs": max_abs(out, ref)}
    return row


def fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    return f"{v:.3g}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--provider", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--json", type=Path, help="write every figure as JSON")
    ap.add_argument("--limit", type=int, default=0, help="only the first N fidelity cases (dry runs)")
    args = ap.parse_args(argv)
    import onnxruntime as ort

    print(machine())
    print(f"onnxruntime {ort.__version__}, providers available: {', '.join(ort.get_available_providers())}; "
          f"realization on provider {args.provider}")
    t0 = time.time()
    print("\n1. FP32 on the provider vs the CPU reference (max abs difference)")
    fp32 = fp32_section(args.provider)
    print("\n2. Fidelity: verdict (P/F) and max abs error vs the FP32 CPU reference, default tolerances")
    header = f"{'case':<44} {'emulate':>14} {'unfused':>14} {'fused':>14}"
    print(header)
    print("-" * len(header))
    cases = suite_cases() + calibration.load_cases()
    if args.limit:
        cases = cases[: args.limit]
    rows = []
    for case in cases:
        row = fidelity_case(case, args.provider)
        rows.append(row)

        def cell(x):
            if "error" in x:
                return "load error"
            return f"{'P' if x['passed'] else 'F'} {fmt(x['max_abs'])}"

        cpu_nodes = row.get("unfused_placement", {}).get("cpu_float_nodes")
        where = "" if cpu_nodes is None else f"  float nodes on CPU: {len(cpu_nodes)}" + (
            f" ({', '.join(op for _, op in cpu_nodes[:4])})" if cpu_nodes else "")
        print(f"{row['id']:<44} {cell(row['emulate']):>14} {cell(row['unfused']):>14} {cell(row['fused']):>14}{where}",
              flush=True)
    placed = [r for r in rows if "unfused_placement" in r]
    if placed:
        on_cpu = [r["id"] for r in placed if r["unfused_placement"]["cpu_float_nodes"]]
        print(f"\nunfused realizations profiled: {len(placed)}; with float nodes on the CPU provider: {len(on_cpu)}"
              + (f" ({', '.join(on_cpu)})" if on_cpu else ""))
    print("\n3. Agreement with emulate's verdict")
    summary = {}
    for label in ("unfused", "fused"):
        comparable = [r for r in rows if "error" not in r[label]]
        agree = [r for r in comparable if r[label]["passed"] == r["emulate"]["passed"]]
        digits = [r for r in comparable if not math.isnan(r[label]["max_abs"]) and not math.isnan(r["emulate"]["max_abs"])
                  and f"{r[label]['max_abs']:.2g}" == f"{r['emulate']['max_abs']:.2g}"]
        both_nan = [r for r in comparable if math.isnan(r[label]["max_abs"]) and math.isnan(r["emulate"]["max_abs"])]
        differ = [r["id"] for r in comparable if r[label]["passed"] != r["emulate"]["passed"]]
        summary[label] = {"comparable": len(comparable), "agree": len(agree), "load_errors": len(rows) - len(comparable),
                          "same_max_abs_2_digits": len(digits), "both_nonfinite": len(both_nan), "disagree": differ}
        print(f"  {label}: verdict agrees in {len(agree)} of {len(comparable)} cases that loaded "
              f"({len(rows) - len(comparable)} did not load); max abs error equal to 2 significant digits in "
              f"{len(digits)}, non-finite in both in {len(both_nan)}; disagree: {', '.join(differ) or 'none'}")
    print(f"\n{time.time() - t0:.0f} s")
    if args.json:
        args.json.write_text(json.dumps({"machine": machine(), "onnxruntime": ort.__version__, "fp32": fp32,
                                         "cases": rows, "summary": summary}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
