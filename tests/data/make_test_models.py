"""Generate the real-export test models in ``tests/data/`` (see README.md there).

Regenerate (the outputs are checked in; tests never import torch)::

    python3 -m venv /tmp/export && . /tmp/export/bin/activate
    pip install torch==2.13.0 onnx==1.23.2 onnxruntime numpy transformers
    python tests/data/make_test_models.py

torch and transformers are NOT runtime or test dependencies of pytest-trt: they are only needed to
run this script. No pretrained weights are downloaded; every model is built from a tiny config
with transformers' default initialisation, seeded with ``torch.manual_seed``, so re-running with
the same versions (torch 2.13.0, transformers 5.23.0, onnx 1.23.2) reproduces the same files.

The point of these files is their *graph shapes*, which are those of real ``torch.onnx.export``
(TorchScript exporter, ``dynamo=False``) output: decomposed LayerNorm at opset 14,
``LayerNormalization`` at opset 17, int64 token inputs, shape subgraphs (Shape/Gather/Unsqueeze/
Concat), Constant nodes, attention masks built with Where/Cast, and initializers shared by several
consumers (GPT-2's tied embedding; identical initializers that the exporter deduplicates into
Identity nodes). They are what cast insertion must survive.
"""

from __future__ import annotations

import io
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import TensorProto

OUT_DIR = Path(__file__).resolve().parent
SEED = 0
OPSETS = (14, 17)
MAX_BYTES = 1_500_000


def _export(model, args, path, opset, input_names, output_names, dynamic_axes, fold=True):
    buf = io.BytesIO()
    torch.onnx.export(
        model,
        args,
        buf,
        dynamo=False,
        opset_version=opset,
        input_names=input_names,
        output_names=output_names,
        dynamic_axes=dynamic_axes,
        do_constant_folding=fold,
    )
    proto = onnx.load_from_string(buf.getvalue())
    onnx.save_model(proto, str(path), save_as_external_data=False)


def make_bert():
    from transformers import BertConfig, BertModel

    # Subclasses (not wrappers) so the module tree, and so the node names, stay those of the
    # transformers model: /embeddings/..., /encoder/layer.0/attention/output/LayerNorm/...
    class TinyBert(BertModel):
        def forward(self, input_ids, attention_mask):
            out = super().forward(input_ids=input_ids, attention_mask=attention_mask, return_dict=True)
            return out.last_hidden_state, out.pooler_output

    torch.manual_seed(SEED)
    cfg = BertConfig(
        vocab_size=256, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=128, max_position_embeddings=64, type_vocab_size=2,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, attn_implementation="eager",
    )
    bert = TinyBert(cfg).eval()
    torch.manual_seed(SEED)
    ids = torch.randint(0, cfg.vocab_size, (2, 8))
    mask = torch.ones(2, 8, dtype=torch.int64)
    mask[1, 6:] = 0
    feeds = {"input_ids": ids.numpy(), "attention_mask": mask.numpy()}
    axes = {
        "input_ids": {0: "batch", 1: "sequence"},
        "attention_mask": {0: "batch", 1: "sequence"},
        "last_hidden_state": {0: "batch", 1: "sequence"},
        "pooler_output": {0: "batch"},
    }
    for opset in OPSETS:
        _export(bert, (ids, mask), OUT_DIR / f"bert_tiny_opset{opset}.onnx", opset,
                ["input_ids", "attention_mask"], ["last_hidden_state", "pooler_output"], axes)
    with torch.no_grad():
        expected = [t.numpy() for t in bert(ids, mask)]
    return "bert_tiny", feeds, expected


def make_gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    class TinyGpt2(GPT2LMHeadModel):  # node names: /transformer/h.0/ln_1/..., /lm_head/MatMul
        def forward(self, input_ids):
            # An all-ones mask built in the graph: without one, transformers 5 looks for packed
            # sequences with torch.diff, which the TorchScript exporter cannot export.
            mask = torch.ones_like(input_ids)
            return super().forward(input_ids=input_ids, attention_mask=mask, use_cache=False, return_dict=True).logits

    torch.manual_seed(SEED)
    cfg = GPT2Config(
        vocab_size=256, n_positions=64, n_embd=32, n_layer=2, n_head=2,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False,
        tie_word_embeddings=True, attn_implementation="eager",
    )
    lm = TinyGpt2(cfg).eval()
    assert lm.lm_head.weight is lm.transformer.wte.weight, "embeddings are not tied"
    torch.manual_seed(SEED)
    ids = torch.randint(0, cfg.vocab_size, (2, 8))
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "logits": {0: "batch", 1: "sequence"}}
    for opset in OPSETS:
        # Default export: constant folding turns the LM head's Transpose(wte) into a second,
        # transposed copy of the embedding (onnx::MatMul_*), so the tie is gone from the file.
        _export(lm, (ids,), OUT_DIR / f"gpt2_tiny_opset{opset}.onnx", opset,
                ["input_ids"], ["logits"], axes)
        # Without constant folding the tie survives: transformer.wte.weight is read by
        # /transformer/wte/Gather and by /lm_head/Transpose (-> /lm_head/MatMul).
        _export(lm, (ids,), OUT_DIR / f"gpt2_tiny_tied_opset{opset}.onnx", opset,
                ["input_ids"], ["logits"], axes, fold=False)
    with torch.no_grad():
        logits = lm(ids)
    return ("gpt2_tiny", "gpt2_tiny_tied"), {"input_ids": ids.numpy()}, [logits.numpy()]


def make_vit():
    from transformers import ViTConfig, ViTModel

    class TinyVit(ViTModel):  # node names: /embeddings/..., /encoder/layer.0/layernorm_before/...
        def forward(self, pixel_values):
            out = super().forward(pixel_values=pixel_values, return_dict=True)
            return out.last_hidden_state, out.pooler_output

    torch.manual_seed(SEED)
    cfg = ViTConfig(
        image_size=32, patch_size=8, num_channels=3, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=2, intermediate_size=128, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, attn_implementation="eager",
    )
    vit = TinyVit(cfg).eval()
    torch.manual_seed(SEED)
    pixels = torch.rand(2, 3, 32, 32)
    axes = {
        "pixel_values": {0: "batch"},
        "last_hidden_state": {0: "batch"},
        "pooler_output": {0: "batch"},
    }
    for opset in OPSETS:
        _export(vit, (pixels,), OUT_DIR / f"vit_tiny_opset{opset}.onnx", opset,
                ["pixel_values"], ["last_hidden_state", "pooler_output"], axes)
    with torch.no_grad():
        expected = [t.numpy() for t in vit(pixels)]
    return "vit_tiny", {"pixel_values": pixels.numpy()}, expected


def _fmt(vi):
    tt = vi.type.tensor_type
    dims = [d.dim_param or d.dim_value for d in tt.shape.dim]
    return f"{vi.name}:{TensorProto.DataType.Name(tt.elem_type)}{dims}"


def shared_initializers(model: onnx.ModelProto):
    """Initializers read by more than one node input (the tied/shared-weight pattern)."""
    inits = {t.name for t in model.graph.initializer}
    users = defaultdict(list)
    for node in model.graph.node:
        for name in node.input:
            if name in inits:
                users[name].append(f"{node.op_type} {node.name}")
    return {name: u for name, u in users.items() if len(u) > 1}


def identity_of_initializers(model: onnx.ModelProto):
    inits = {t.name for t in model.graph.initializer}
    return [(n.name, n.input[0]) for n in model.graph.node if n.op_type == "Identity" and n.input[0] in inits]


def check(stems, feeds, expected) -> None:
    stems = (stems,) if isinstance(stems, str) else stems
    for stem, opset in ((stem, opset) for stem in stems for opset in OPSETS):
        path = OUT_DIR / f"{stem}_opset{opset}.onnx"
        model = onnx.load(str(path))
        onnx.checker.check_model(model, full_check=True)
        assert not any(t.data_location == TensorProto.EXTERNAL for t in model.graph.initializer)
        size = path.stat().st_size
        assert size < MAX_BYTES, f"{path.name} is {size} bytes"
        sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        outs = sess.run(None, feeds)
        err = max(float(np.abs(o - e).max()) for o, e in zip(outs, expected))
        assert err < 1e-4, (path.name, err)
        # a second shape through the symbolic dims
        other = {}
        for name, value in feeds.items():
            if value.ndim == 2:  # [batch, sequence]
                other[name] = np.resize(value, (3, 5))
            else:  # images: batch only
                other[name] = np.resize(value, (3,) + value.shape[1:])
        sess.run(None, other)
        counts = Counter(n.op_type for n in model.graph.node)
        print(f"\n{path.name}: opset {opset}, {len(model.graph.node)} nodes, {size} bytes, max|ort - torch|={err:.1e}")
        print(f"   inputs:  {', '.join(_fmt(v) for v in model.graph.input)}")
        print(f"   outputs: {', '.join(_fmt(v) for v in model.graph.output)}")
        print("   ops: " + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())))
        ln = [n.name for n in model.graph.node if "LayerNorm" in n.name or "/ln_" in n.name or "layernorm" in n.name]
        print(f"   layernorm nodes ({len(ln)}), e.g.: {ln[:3]}")
        shared = shared_initializers(model)
        print(f"   initializers with several consumers: {len(shared)}")
        for name, users in shared.items():
            print(f"      {name}: {users}")
        ident = identity_of_initializers(model)
        print(f"   Identity nodes fed by an initializer (exporter dedup): {len(ident)}"
              + (f", e.g. {ident[:2]}" if ident else ""))


def main() -> int:
    torch.use_deterministic_algorithms(True)
    for make in (make_bert, make_gpt2, make_vit):
        stem, feeds, expected = make()
        check(stem, feeds, expected)
    return 0


if __name__ == "__main__":
    sys.exit(main())
