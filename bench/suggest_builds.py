"""How many builds ``suggest`` needs as models grow: builds vs node count.

Run: ``python bench/suggest_builds.py [--layers 1 2 4 8 16 32] [--max-builds 30]``

On TensorRT every candidate of :func:`pytest_trt.suggest_fp32_islands` is an engine build
(seconds to minutes), so the number of builds, not CPU time here, is what matters. Two sets:

* synthetic encoders of L layers, BERT-style names, each layer ``dense (MatMul, Add) ->
  decomposed LayerNorm (9 nodes + 2 Constants) -> + residual``. The residual carries the input's
  outliers (two features of magnitude 400) through every layer, so the LayerNorm of EVERY
  layer overflows in FP16: a search that needed one build per broken module would need L+;
  the answer should be ``*/LayerNorm/*`` (or every layer's scope) in a number of builds that
  does not grow with L;
* the real models of the example suite and tests/data (torch.onnx exports: BERT, GPT-2, ViT at
  opsets 14 and 17), FP16 everywhere, with outliers on float inputs (atol 1e-2 like the example
  suite) and default tolerances on token-id models.

Every search starts on an empty cache (every build real). Columns: nodes (graph nodes),
compute (compute nodes in the plan), builds (distinct plans built and run, the first included),
layerwise (layerwise comparison runs), seconds, the verdict, ``fp16 %`` (share of compute nodes
left in FP16 by the suggested policy) and the suggested patterns. A third set runs the real
models at a tolerance FP16 cannot meet (rtol 1e-3, atol 1e-4): the error accumulates without a
single divergent node, the case where the search is most expensive.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _machine import machine  # noqa: E402  (bench/ is run as scripts)
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from pytest_trt.cache import ArtifactCache  # noqa: E402
from pytest_trt.inputs import make_feeds  # noqa: E402
from pytest_trt.model.load import load_model  # noqa: E402
from pytest_trt.model.testing_models import sample_feeds  # noqa: E402
from pytest_trt.plan.policy import PrecisionPolicy  # noqa: E402
from pytest_trt.suggest import suggest_fp32_islands  # noqa: E402

HIDDEN, SEQ = 64, 8
OUTLIERS = {"*": {"count": 2, "magnitude": 400.0}}
TIGHT = (1e-3, 1e-4)


def synthetic_encoder(layers: int, seed: int = 0):
    """L layers of dense + decomposed LayerNorm + residual, torch.onnx-style names, opset 14."""
    rng = np.random.default_rng(seed)
    nodes, inits = [], []

    def const(name, value):
        out = f"{name}_output_0"
        nodes.append(helper.make_node("Constant", [], [out], name=name,
                                      value=numpy_helper.from_array(np.array(value, np.float32))))
        return out

    def node(op, name, inputs, **attrs):
        out = f"{name}_output_0"
        nodes.append(helper.make_node(op, inputs, [out], name=name, **attrs))
        return out

    x = "hidden_states"
    for i in range(layers):
        p, s = f"encoder.layer.{i}.attention.output", f"/encoder/layer.{i}/attention/output"
        w = (np.eye(HIDDEN) + 0.02 * rng.standard_normal((HIDDEN, HIDDEN))).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"{p}.dense.weight"),
                  numpy_helper.from_array((0.01 * rng.standard_normal(HIDDEN)).astype(np.float32), f"{p}.dense.bias"),
                  numpy_helper.from_array((1 + 0.1 * rng.standard_normal(HIDDEN)).astype(np.float32),
                                          f"{p}.LayerNorm.weight"),
                  numpy_helper.from_array((0.1 * rng.standard_normal(HIDDEN)).astype(np.float32),
                                          f"{p}.LayerNorm.bias")]
        h = node("MatMul", f"{s}/dense/MatMul", [x, f"{p}.dense.weight"])
        h = node("Add", f"{s}/dense/Add", [f"{p}.dense.bias", h])
        ln = f"{s}/LayerNorm"
        mean = node("ReduceMean", f"{ln}/ReduceMean", [h], axes=[-1], keepdims=1)
        sub = node("Sub", f"{ln}/Sub", [h, mean])
        pow_ = node("Pow", f"{ln}/Pow", [sub, const(f"{ln}/Constant", 2.0)])
        var = node("ReduceMean", f"{ln}/ReduceMean_1", [pow_], axes=[-1], keepdims=1)
        add = node("Add", f"{ln}/Add", [var, const(f"{ln}/Constant_1", 1e-12)])
        sqrt = node("Sqrt", f"{ln}/Sqrt", [add])
        div = node("Div", f"{ln}/Div", [sub, sqrt])
        mul = node("Mul", f"{ln}/Mul", [div, f"{p}.LayerNorm.weight"])
        norm = node("Add", f"{ln}/Add_1", [mul, f"{p}.LayerNorm.bias"])
        x = node("Add", f"/encoder/layer.{i}/Add", [norm, x])  # residual: keeps the outliers
    nodes[-1].output[0] = "last_hidden_state"
    graph = helper.make_graph(nodes, f"synthetic_encoder_{layers}",
                              [helper.make_tensor_value_info("hidden_states", TensorProto.FLOAT, [1, SEQ, HIDDEN])],
                              [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [1, SEQ, HIDDEN])],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    return model


def real_models():
    """(label, model path, feeds maker, atol) for the checked-in models."""
    out = []
    for name in ("encoder_opset14", "encoder_opset17", "convnet"):
        path = ROOT / "example_suite" / "models" / f"{name}.onnx"
        if name == "convnet":
            out.append((name, path, lambda m: make_feeds(m, dims={"batch": 4}, val_range={"image": (0.0, 1.0)}),
                        None))
        else:
            out.append((name, path, lambda m: make_feeds(m, dims={"batch": 2, "sequence": 16},
                                                         outliers=OUTLIERS), 1e-2))
    for path in sorted((ROOT / "tests" / "data").glob("*.onnx")):
        def feeds(m, path=path):
            import onnx

            proto = onnx.load(str(path))
            for vi in proto.graph.input:  # the test models have symbolic dims: fix them for sample_feeds
                for d in vi.type.tensor_type.shape.dim:
                    if d.dim_param:
                        d.dim_value = {"batch": 2}.get(d.dim_param, 8)
            f = sample_feeds(proto)
            if "pixel_values" in f:
                f = make_feeds(m, dims={"batch": 2}, outliers=OUTLIERS)
            return f
        out.append((path.stem, path, feeds, 1e-2 if "vit" in path.stem else None))
    return out


def run_one(label, model, feeds, atol, max_builds, rtol=None):
    with tempfile.TemporaryDirectory(prefix="pytest-trt-suggest-") as tmp:
        cache = ArtifactCache(tmp)
        t0 = time.perf_counter()
        found = suggest_fp32_islands(model, PrecisionPolicy("fp16"), feeds, backend="emulate", cache=cache,
                                     rtol=rtol, atol=atol, max_builds=max_builds)
        seconds = time.perf_counter() - t0
    patterns = ", ".join(found.patterns) if found.patterns else "(none)"
    if len(patterns) > 60:
        patterns = patterns[:57] + "..."
    low = f"{100 * found.low_precision_share:.0f}%" if found.passed else "-"
    print(f"{label:<26} {len(model.graph.node):>6} {found.compute_nodes:>8} {found.builds:>7} "
          f"{found.layerwise_runs:>10} {seconds:>8.2f} {found.reason:<15} {low:>6} {patterns}")
    return found


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32])
    ap.add_argument("--max-builds", type=int, default=30)
    ap.add_argument("--no-real", action="store_true", help="only the synthetic sweep")
    args = ap.parse_args(argv)

    print(machine())
    print("backend emulate; FP16 everywhere to start; every build real (empty cache per search)\n")
    header = (f"{'model':<26} {'nodes':>6} {'compute':>8} {'builds':>7} {'layerwise':>10} {'seconds':>8} "
              f"{'verdict':<15} {'fp16 %':>6} patterns")
    print(header)
    print("-" * len(header))
    for layers in args.layers:
        model = load_model(synthetic_encoder(layers))
        feeds = make_feeds(model, outliers=OUTLIERS)
        run_one(f"synthetic, {layers} layer(s)", model, feeds, 1e-2, args.max_builds)
    if not args.no_real:
        print("\nreal models (outliers on float inputs, atol 1e-2 where they have them; else default tolerances):")
        for label, path, make, atol in real_models():
            model = load_model(path)
            run_one(label, model, make(model), atol, args.max_builds)
        print(f"\nreal models at rtol {TIGHT[0]:g}, atol {TIGHT[1]:g}: tighter than FP16 rounding allows, so the "
              f"error builds up gradually (no single divergent node):")
        for label, path, make, _ in real_models():
            model = load_model(path)
            run_one(label, model, make(model), TIGHT[1], args.max_builds, rtol=TIGHT[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
