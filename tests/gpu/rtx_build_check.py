"""Exercise the TensorRT adapter's build path with TensorRT-RTX on a real GPU.

Run wherever ``tensorrt_rtx`` imports and a CUDA GPU is visible::

    POLYGRAPHY_USE_TENSORRT_RTX=1 python tests/gpu/rtx_build_check.py [--out report.json]

For every example-suite model under the policies the suite uses, it:

1. resolves the plan and realizes it strongly typed (Casts around the FP32 islands);
2. parses the realization with TensorRT-RTX into a strongly typed network and checks, for
   every layer carrying a planned node, that each float output tensor has the planned
   dtype (``check_network_dtypes``: no engine inspector needed);
3. builds through pytest-trt's ``tensorrt-rtx`` backend into an artifact cache (and again:
   the second build must be a cache hit);
4. builds the same realization through Polygraphy's RTX mode (``NetworkFromOnnxBytes``
   strongly typed + ``CreateConfigRTX``) as an independent cross-check;
5. tries to run the engine: on GPUs TensorRT-RTX cannot run on (compute capability 9.0,
   e.g. H100/H200) this must surface as ``BackendUnavailable`` with a clear reason (a skip
   in tests), never as a crash.

Exit status 0 when every build and dtype check passed (running may be unsupported), 1
otherwise. Results were recorded in docs/VERIFIED.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "example_suite" / "models"

CASES = [
    ("encoder_opset14.onnx", dict(default="fp16", keep_fp32=("*/LayerNorm/*", "op:Softmax")), {"batch": 2, "sequence": 16}),
    ("encoder_opset14.onnx", dict(default="fp16"), {"batch": 2, "sequence": 16}),
    ("encoder_opset17.onnx", dict(default="fp16", keep_fp32=("op:LayerNormalization", "op:Softmax")), {"batch": 2, "sequence": 16}),
    ("encoder_opset14.onnx", dict(default="bf16", keep_fp32=("*/LayerNorm/*",)), {"batch": 2, "sequence": 16}),
    ("convnet.onnx", dict(default="fp16"), {"batch": 4}),
    ("mixed_autocast.onnx", dict(as_is=True), {"batch": 4}),
    ("qdq_linear.onnx", dict(as_is=True), {"batch": 4}),
]


def network_check(trt, plan) -> dict:
    """Parse the strong realization with TensorRT-RTX and compare layer dtypes with the plan."""
    from pytest_trt.backends.tensorrt.backend import check_network_dtypes
    from pytest_trt.backends.tensorrt.compat import dtype_name, get_logger
    from pytest_trt.realize import realize_strong

    logger = get_logger(trt)
    builder = trt.Builder(logger)
    flags = 0
    if hasattr(trt.NetworkDefinitionCreationFlag, "STRONGLY_TYPED"):
        flags = 1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED)
    network = builder.create_network(flags)
    parser = trt.OnnxParser(network, logger)
    if not parser.parse(realize_strong(plan).SerializeToString()):
        errors = [str(parser.get_error(i)) for i in range(parser.num_errors)]
        return {"parsed": False, "errors": errors}
    carrying, float_outputs, dtypes = 0, 0, {}
    for i in range(network.num_layers):
        layer = network.get_layer(i)
        if "[ONNX Layer:" in (getattr(layer, "metadata", "") or ""):
            carrying += 1
        for j in range(layer.num_outputs):
            dt = dtype_name(layer.get_output(j).dtype)
            if dt in ("fp32", "fp16", "bf16"):
                float_outputs += 1
                dtypes[dt] = dtypes.get(dt, 0) + 1
    mismatches = check_network_dtypes(network, plan)
    return {
        "parsed": True,
        "layers": int(network.num_layers),
        "layers_with_onnx_metadata": carrying,
        "float_output_tensors": float_outputs,
        "float_output_dtypes": dtypes,
        "mismatches": [m.to_json() for m in mismatches],
    }


def polygraphy_build(plan) -> dict:
    """Independent cross-check: Polygraphy's RTX mode builds the same strong realization."""
    # Polygraphy 0.53 keeps the RTX config in its own package (polygraphy/backend/tensorrt_rtx/config.py)
    from polygraphy.backend.tensorrt_rtx import CreateConfigRTX
    from polygraphy.backend.trt import EngineBytesFromNetwork, NetworkFromOnnxBytes

    from pytest_trt.realize import realize_strong

    start = time.perf_counter()
    data = EngineBytesFromNetwork(
        NetworkFromOnnxBytes(realize_strong(plan).SerializeToString(), strongly_typed=True),
        config=CreateConfigRTX(),
    )()
    return {"bytes": int(getattr(data, "nbytes", 0) or len(bytes(data))), "seconds": round(time.perf_counter() - start, 3)}


def run_case(trt, backend, cache, model_name, policy_kwargs, dims) -> dict:
    from pytest_trt.backends.base import BuildConfig
    from pytest_trt.errors import BackendUnavailable
    from pytest_trt.inputs import make_feeds
    from pytest_trt.model.load import load_model
    from pytest_trt.plan.policy import PrecisionPolicy

    model = load_model(MODELS / model_name)
    policy = PrecisionPolicy(**policy_kwargs)
    row = {"model": model_name, "policy": policy.describe()}
    try:
        plan = policy.resolve(model)
        row["plan"] = plan.counts()
        row["network"] = network_check(trt, plan)
        start = time.perf_counter()
        engine = backend.build(plan, BuildConfig(typing="strong"), cache)
        row["build"] = {"cache_hit": engine.build_info.cache_hit, "seconds": round(time.perf_counter() - start, 3),
                        "plan_bytes": len(engine.engine_bytes), "typing": engine.typing,
                        "recorded_network_mismatches": len(engine.network_mismatches)}
        again = backend.build(plan, BuildConfig(typing="strong"), cache)
        row["second_build_cache_hit"] = again.build_info.cache_hit
        try:
            row["polygraphy_rtx"] = polygraphy_build(plan)
        except Exception as exc:  # a Polygraphy failure is reported, not fatal to the other checks
            row["polygraphy_rtx"] = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}
        feeds = make_feeds(model, dims=dims, val_range={n: (0, 1) for n in model.input_names()})
        try:
            outputs = engine.run(feeds)
            row["run"] = {"ok": True, "outputs": {k: list(v.shape) for k, v in outputs.items()}}
        except BackendUnavailable as exc:
            row["run"] = {"ok": False, "unavailable": exc.reason}
    except Exception as exc:
        row["error"] = f"{type(exc).__name__}: {exc}"
        row["traceback"] = traceback.format_exc(limit=6)
    row["passed"] = ("error" not in row and row["network"].get("parsed") and not row["network"]["mismatches"]
                     and row.get("second_build_cache_hit") is True)
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the results as JSON here")
    args = parser.parse_args(argv)
    os.environ.setdefault("POLYGRAPHY_USE_TENSORRT_RTX", "1")

    from pytest_trt.backends.base import get_backend
    from pytest_trt.backends.tensorrt.compat import import_module
    from pytest_trt.cache import ArtifactCache
    from pytest_trt.core import environment

    backend = get_backend("tensorrt-rtx")
    reason = backend.unavailable_reason()
    if reason:
        print(f"cannot run: {reason}")
        return 2
    trt = import_module("tensorrt-rtx")
    print(f"TensorRT-RTX {getattr(trt, '__version__', '?')}; GPU: {environment.gpu_summary()}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="rtx-check-") as tmp:
        cache = ArtifactCache(Path(tmp) / "cache")
        for model_name, policy_kwargs, dims in CASES:
            row = run_case(trt, backend, cache, model_name, policy_kwargs, dims)
            rows.append(row)
            net = row.get("network", {})
            print(f"\n== {model_name} [{row['policy']}] plan {row.get('plan')}")
            if "error" in row:
                print(f"   ERROR {row['error']}\n{row['traceback']}")
                continue
            print(f"   network: {net.get('layers')} layers, {net.get('float_output_tensors')} float outputs "
                  f"{net.get('float_output_dtypes')}, dtype mismatches vs plan: {len(net.get('mismatches', []))}")
            for m in net.get("mismatches", [])[:5]:
                print(f"     mismatch: {m}")
            print(f"   build: {row['build']}; second build cache hit: {row['second_build_cache_hit']}")
            print(f"   polygraphy RTX mode: {row['polygraphy_rtx']}")
            print(f"   run: {row['run']}")
    ok = all(r["passed"] for r in rows)
    print(f"\n{sum(r['passed'] for r in rows)} passed, {sum(not r['passed'] for r in rows)} failed")
    if args.out:
        Path(args.out).write_text(json.dumps({"gpu": environment.gpu_summary(), "rows": rows}, indent=2, default=str))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
