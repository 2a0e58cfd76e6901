"""Export a TinyLlama-shaped ``LlamaModel`` (about 1.03B parameters, random weights) to ONNX.

The "real architecture at real size" model of the real-sized-models issue: hidden 2048, 22 layers,
intermediate 5632, 32 attention heads, 4 key/value heads (grouped-query attention), vocab 32000,
RMSNorm and rotary embeddings. Nothing is downloaded: the model is built from a config with
transformers' default initialisation under ``torch.manual_seed(0)``, then exported by the dynamo
exporter with its weights as ONNX external data::

    OUT/llama1b.onnx        graph, about 2.4 MB
    OUT/llama1b.onnx.data   weights, about 4.1 GB (FP32)

Run it in a separate venv (torch and transformers are not dependencies of pytest-trt)::

    python3 -m venv torchenv && . torchenv/bin/activate
    pip install torch==2.13.0 transformers onnx onnxscript
    /usr/bin/time -v python bench/make_llama1b.py OUT_DIR

Made with torch 2.13.0+cpu, transformers 5.24.0, onnx 1.23.2, onnxscript 0.7.2 (opset 18).
The export sees ``forward(input_ids, attention_mask) -> last_hidden_state`` (``use_cache=False``)
with symbolic ``batch`` and ``sequence`` dimensions, both inputs INT64. The script prints build and
export wall and CPU seconds and its peak RSS (``ru_maxrss``). Measured on the 2-core, 24 GB
development machine under a load average of 7-9 (two runs, identical output files): build 13.5 /
31.4 s (10.4 s CPU), export 244 / 175 s (64 s CPU), peak RSS 4.62 / 4.69 GB (the FP32 weights are
4.14 GB; torch 2.13's exporter adds about 0.5 GB); 1,606 nodes, 224 initializers (200 external).
``bench/plain_ort_run.py`` is the plain ONNX Runtime baseline for the exported file.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaModel

CONFIG = dict(
    hidden_size=2048,
    intermediate_size=5632,
    num_hidden_layers=22,
    num_attention_heads=32,
    num_key_value_heads=4,
    vocab_size=32000,
    max_position_embeddings=2048,
    rms_norm_eps=1e-5,
    tie_word_embeddings=False,
)


class LastHiddenState(torch.nn.Module):
    """``forward(input_ids, attention_mask) -> last_hidden_state``, no KV cache.

    transformers 5's ``forward`` no longer takes ``attention_mask`` positionally, so the exporter
    gets a wrapper with exactly the two inputs the ONNX model should have.
    """

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).last_hidden_state


def _cpu_s() -> float:
    # user + system CPU seconds of this process: on a shared machine wall time also counts waiting.
    t = os.times()
    return t.user + t.system


def _peak_rss_gb() -> float:
    # ru_maxrss is in KiB on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("out_dir", type=Path, help="directory to write llama1b.onnx and llama1b.onnx.data into")
    parser.add_argument("--name", default="llama1b.onnx", help="file name of the graph (default llama1b.onnx)")
    args = parser.parse_args(argv)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    path = args.out_dir / args.name

    torch.manual_seed(0)
    c0, t0 = _cpu_s(), time.perf_counter()
    config = LlamaConfig(**CONFIG, attn_implementation="sdpa")
    # low_cpu_mem_usage has no meaning for from_config: the weights are created once, in FP32.
    model = LastHiddenState(LlamaModel(config)).eval()
    n_params = sum(p.numel() for p in model.parameters())
    t_build, c_build = time.perf_counter() - t0, _cpu_s() - c0
    print(f"built LlamaModel: {n_params:,} parameters in {t_build:.1f} s, peak RSS {_peak_rss_gb():.2f} GB",
          flush=True)

    input_ids = torch.randint(0, CONFIG["vocab_size"], (1, 16), dtype=torch.int64)
    attention_mask = torch.ones(1, 16, dtype=torch.int64)
    dims = {0: "batch", 1: "sequence"}
    c1, t1 = _cpu_s(), time.perf_counter()
    with torch.no_grad():
        torch.onnx.export(
            model,
            (input_ids, attention_mask),
            str(path),
            dynamo=True,
            external_data=True,
            opset_version=18,
            input_names=["input_ids", "attention_mask"],
            output_names=["last_hidden_state"],
            dynamic_shapes={"input_ids": dims, "attention_mask": dims},
        )
    t_export, c_export = time.perf_counter() - t1, _cpu_s() - c1
    data = path.with_name(path.name + ".data")
    result = {
        "parameters": n_params,
        "build_s": round(t_build, 1),
        "export_s": round(t_export, 1),
        "build_cpu_s": round(c_build, 1),
        "export_cpu_s": round(c_export, 1),
        "load_average_1min": os.getloadavg()[0],
        "peak_rss_gb": round(_peak_rss_gb(), 2),
        "onnx_bytes": path.stat().st_size,
        "data_bytes": data.stat().st_size if data.exists() else None,
        "torch": torch.__version__,
        "transformers": __import__("transformers").__version__,
        "onnx": __import__("onnx").__version__,
        "onnxscript": __import__("onnxscript").__version__,
    }
    print(json.dumps(result, indent=1), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
