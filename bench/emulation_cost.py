"""What the ``emulate`` backend costs per run: its emulation graph vs the plain FP32 model.

Run: ``python bench/emulation_cost.py [--repeat 15] [--batches 1 8 32] [--sequence 128]``

For each model of the example suite (encoder opset 14 with the decomposed LayerNorm, encoder
opset 17 with ``LayerNormalization``, the convnet) and each batch size, on the same feeds:

* ``fp32``: ONNX Runtime CPU on the model as written, graph optimizations OFF: exactly the
  FP32 baseline session pytest-trt runs (``pytest_trt.reference.baseline.make_session``);
* ``fp32 opt``: the same model with ONNX Runtime's default optimizations (ORT_ENABLE_ALL), what
  a plain ``InferenceSession(path)`` does: a reference point, not something pytest-trt runs;
* ``emul keep``: the emulation graph of the deployed policy (FP16, LayerNorm and Softmax kept
  FP32) in the emulate backend's session (optimizations off);
* ``emul all``: the emulation graph of FP16 everywhere.

Times are per ``session.run``, best of N, interleaved (every session runs once per round, so
they all see the same machine load). ``casts`` is how many Cast nodes the emulation adds. The
ratio ``emul/fp32`` compares sessions with the same options, i.e. the cost of the rounding.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _machine import machine  # noqa: E402  (bench/ is run as scripts)

from pytest_trt.inputs import make_feeds  # noqa: E402
from pytest_trt.model.load import load_model  # noqa: E402
from pytest_trt.plan.policy import PrecisionPolicy  # noqa: E402
from pytest_trt.realize import realize_emulation  # noqa: E402
from pytest_trt.reference.baseline import make_session  # noqa: E402

MODELS = ROOT / "example_suite" / "models"
CASES = [
    ("encoder_opset14", "encoder_opset14.onnx", ["*/LayerNorm/*", "op:Softmax"]),
    ("encoder_opset17", "encoder_opset17.onnx", ["op:LayerNormalization", "op:Softmax"]),
    ("convnet", "convnet.onnx", []),
]


def best_of_interleaved(fns, repeat: int) -> list[float]:
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best


def optimized_session(model_bytes: bytes):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(model_bytes, sess_options=options, providers=["CPUExecutionProvider"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=15, help="best of N (default 15)")
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32], help="batch sizes (default 1 8 32)")
    ap.add_argument("--sequence", type=int, default=128, help="encoder sequence length (default 128)")
    args = ap.parse_args(argv)

    print(machine())
    print(f"ms per session.run, best of {args.repeat}, interleaved\n")
    header = (f"{'model':<16} {'batch':>5} {'casts':>6} {'fp32':>8} {'fp32 opt':>9} {'emul keep':>10} "
              f"{'emul all':>9} {'keep/fp32':>10} {'all/fp32':>9}")
    print(header)
    print("-" * len(header))
    for name, file, keep in CASES:
        model = load_model(MODELS / file)
        kept = realize_emulation(PrecisionPolicy("fp16", keep_fp32=keep).resolve(model))
        everything = realize_emulation(PrecisionPolicy("fp16").resolve(model))
        casts = sum(n.op_type == "Cast" for n in kept.graph.node) - sum(n.op_type == "Cast" for n in model.graph.node)
        sessions = [
            make_session(model.serialized(), label=name),
            optimized_session(model.serialized()),
            make_session(kept.SerializeToString(), label=f"{name} keep"),
            make_session(everything.SerializeToString(), label=f"{name} all"),
        ]
        for batch in args.batches:
            if name.startswith("encoder"):
                feeds = make_feeds(model, dims={"batch": batch, "sequence": args.sequence})
            else:
                feeds = make_feeds(model, dims={"batch": batch}, val_range={"image": (0.0, 1.0)})
            outs = [s.get_outputs()[0].name for s in sessions]
            fns = [lambda s=s, o=o, f=feeds: s.run([o], f) for s, o in zip(sessions, outs, strict=True)]
            for fn in fns:  # warm-up (first runs allocate)
                fn()
            t = best_of_interleaved(fns, args.repeat)
            print(f"{name:<16} {batch:>5} {casts:>6} {t[0] * 1e3:>8.3f} {t[1] * 1e3:>9.3f} {t[2] * 1e3:>10.3f} "
                  f"{t[3] * 1e3:>9.3f} {t[2] / t[0]:>9.2f}x {t[3] / t[0]:>8.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
