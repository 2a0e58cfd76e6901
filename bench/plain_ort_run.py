"""Plain ONNX Runtime CPU: load a model from its path and run it once; time and peak memory.

Run: ``python bench/plain_ort_run.py MODEL.onnx [--shapes 1x16 | --shapes input_ids:1x16 ...]
[--opt-level all|extended|basic|disable] [--json]``

The floor that pytest-trt's cost on a big model is measured against (the real-sized-models issue;
``bench/big_model.py`` runs this script as its baseline): what a person writes by hand to check
that a model runs, nothing more. One ``InferenceSession(path)`` on the CPU provider (the path, so
external data is read by ONNX Runtime itself, as it would be in production), one ``run`` of all
outputs on generated inputs, in this process, then:

* ``load_s``: wall time of ``InferenceSession(...)`` (read the graph and the external data,
  optimize, allocate);
* ``run_s``: wall time of the one ``session.run``;
* ``load_cpu_s``, ``run_cpu_s``: this process's user + system CPU seconds in each (on a loaded
  machine wall time also counts waiting for a core; compare both);
* ``peak_rss_bytes``: this process's peak resident set (``ru_maxrss``), which includes the Python
  interpreter, numpy and onnxruntime (``rss_before_load_bytes`` says how much of it that is).

Inputs: ``--shapes DxD`` gives every input that shape; ``--shapes NAME:DxD`` one input (repeat
for each input). Integer inputs whose name contains ``mask`` are all ones; other integer inputs
(token ids) are uniform in ``[0, --max-id)``; float inputs are standard normal, seeded. The graph
optimization level defaults to ONNX Runtime's own default (``all``), which is what a hand-written
script gets; ``--opt-level disable`` matches pytest-trt's sessions.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np
from _machine import machine  # noqa: E402  (bench/ is run as scripts)

OPT_LEVELS = ("disable", "basic", "extended", "all")
_INT_TYPES = {"tensor(int64)": np.int64, "tensor(int32)": np.int32}
_FLOAT_TYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64}


def _rss_now() -> int:
    # VmRSS of this process, in bytes (Linux); ru_maxrss only gives the peak.
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def _cpu_s() -> float:
    # user + system CPU seconds of this process: on a shared machine, wall time also counts waiting.
    t = os.times()
    return t.user + t.system


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def _parse_shape(text: str) -> tuple[int, ...]:
    try:
        dims = tuple(int(d) for d in text.lower().split("x"))
    except ValueError:
        dims = ()
    if not dims or any(d <= 0 for d in dims):
        raise ValueError(f"--shapes: {text!r} is not a shape like 1x16")
    return dims


def make_feeds(inputs, shapes: list[str], max_id: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Feeds for ``session.get_inputs()`` from ``--shapes`` (see the module docstring).

    Raises ValueError naming the input or the ``--shapes`` value that cannot be honoured.
    """
    names = [i.name for i in inputs]
    common: tuple[int, ...] | None = None
    per_input: dict[str, tuple[int, ...]] = {}
    for spec in shapes:
        if ":" in spec:
            name, _, shape = spec.rpartition(":")
            if name not in names:
                raise ValueError(f"--shapes names input {name!r}; the model's inputs are {names}")
            per_input[name] = _parse_shape(shape)
        else:
            common = _parse_shape(spec)
    rng = np.random.default_rng(seed)
    feeds = {}
    for inp in inputs:
        shape = per_input.get(inp.name, common)
        if shape is None:
            static = [d for d in inp.shape if isinstance(d, int)]
            if len(static) != len(inp.shape):
                raise ValueError(f"input {inp.name!r} has symbolic dims {inp.shape}: "
                                 f"give --shapes {inp.name}:DxD or --shapes DxD")
            shape = tuple(static)
        if inp.type in _INT_TYPES:
            dtype = _INT_TYPES[inp.type]
            if "mask" in inp.name:
                feeds[inp.name] = np.ones(shape, dtype=dtype)
            else:
                feeds[inp.name] = rng.integers(0, max_id, size=shape).astype(dtype)
        elif inp.type in _FLOAT_TYPES:
            feeds[inp.name] = rng.standard_normal(shape).astype(_FLOAT_TYPES[inp.type])
        else:
            raise ValueError(f"input {inp.name!r} has type {inp.type}, which this script does not generate")
    return feeds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("model", type=Path, help="the .onnx file (external data beside it is read by ONNX Runtime)")
    ap.add_argument("--shapes", nargs="+", default=[], help="DxD for every input, or NAME:DxD per input")
    ap.add_argument("--max-id", type=int, default=100, help="token ids are drawn from [0, MAX_ID) (default 100)")
    ap.add_argument("--opt-level", choices=OPT_LEVELS, default="all",
                    help="ONNX Runtime graph optimization level (default all, ONNX Runtime's own default)")
    ap.add_argument("--threads", type=int, default=0, help="intra-op threads (default 0: ONNX Runtime decides)")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    args = ap.parse_args(argv)
    if not args.model.is_file():
        ap.error(f"{args.model} is not a file")

    import onnxruntime as ort

    header = machine()
    rss_before = _rss_now()
    opts = ort.SessionOptions()
    opts.graph_optimization_level = {
        "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }[args.opt_level]
    opts.intra_op_num_threads = args.threads
    c0, t0 = _cpu_s(), time.perf_counter()
    session = ort.InferenceSession(str(args.model), opts, providers=["CPUExecutionProvider"])
    load_s, load_cpu_s = time.perf_counter() - t0, _cpu_s() - c0
    rss_after_load = _rss_now()
    try:
        feeds = make_feeds(session.get_inputs(), args.shapes, args.max_id)
    except ValueError as exc:
        ap.error(str(exc))
    c1, t1 = _cpu_s(), time.perf_counter()
    outputs = session.run(None, feeds)
    run_s, run_cpu_s = time.perf_counter() - t1, _cpu_s() - c1
    data = args.model.with_name(args.model.name + ".data")
    result = {
        "model": str(args.model),
        "model_bytes": args.model.stat().st_size,
        "external_data_bytes": data.stat().st_size if data.is_file() else 0,
        "inputs": {k: list(v.shape) for k, v in feeds.items()},
        "outputs": {o.name: list(v.shape) for o, v in zip(session.get_outputs(), outputs, strict=True)},
        "finite": bool(all(np.isfinite(v).all() for v in outputs if v.dtype.kind == "f")),
        "opt_level": args.opt_level,
        "load_s": round(load_s, 3),
        "run_s": round(run_s, 3),
        "total_s": round(load_s + run_s, 3),
        "load_cpu_s": round(load_cpu_s, 3),
        "run_cpu_s": round(run_cpu_s, 3),
        "load_average_1min": os.getloadavg()[0],
        "rss_before_load_bytes": rss_before,
        "rss_after_load_bytes": rss_after_load,
        "peak_rss_bytes": _peak_rss(),
        "machine": header,
        "cpus": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(header)
        print(f"{args.model}: {result['model_bytes'] / 1e6:.1f} MB graph + {result['external_data_bytes'] / 1e9:.2f} GB "
              f"external data; opt level {args.opt_level}; inputs {result['inputs']}")
        print(f"load {load_s:.2f} s ({load_cpu_s:.2f} s CPU), run {run_s:.2f} s ({run_cpu_s:.2f} s CPU), "
              f"total {load_s + run_s:.2f} s; "
              f"peak RSS {result['peak_rss_bytes'] / 1e9:.2f} GB (before load {rss_before / 1e9:.2f} GB, "
              f"after load {rss_after_load / 1e9:.2f} GB); outputs {result['outputs']}, finite {result['finite']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
