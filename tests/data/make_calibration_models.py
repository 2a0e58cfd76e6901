"""Generate the tolerance-calibration corpus in ``tests/data/calibration/`` (issue 15, item 6).

Regenerate (the outputs are checked in; tests and benchmarks never import torch)::

    python3 -m venv /tmp/export && . /tmp/export/bin/activate
    pip install torch==2.13.0 onnx==1.23.2 onnxruntime numpy transformers
    python tests/data/make_calibration_models.py

torch and transformers are NOT runtime or test dependencies of pytest-trt. No pretrained weights
are downloaded: every network is built from a tiny transformers config with its default (random)
initialisation, seeded with ``torch.manual_seed``, and exported with ``torch.onnx.export``
(TorchScript exporter, ``dynamo=False``). Re-running with the same versions (torch 2.13.0,
transformers 5.23.0, onnx 1.23.2) reproduces the same files.

What is written
---------------
``calibration/<arch>_opset<N>.onnx``: healthy exports of public architectures.

* ``bert`` (``BertModel``, input ``inputs_embeds`` [batch, sequence, 64], output
  ``last_hidden_state``) and ``gpt2`` (``GPT2Model``, same input, causal attention, ``ln_f`` at
  the end): transformer encoder and decoder. Taking embeddings rather than token ids lets the
  feeds carry activation regimes (outliers, common offsets) straight into the first LayerNorm.
* ``vit`` (``ViTModel``, ``pixel_values`` [batch, 3, 32, 32]).
* ``convnext`` (``ConvNextForImageClassification``: LayerNorm in channels-first and
  channels-last form, depthwise convs, GELU) and ``resnet`` (``ResNetForImageClassification``,
  BatchNorm folded into the convs on export), ``logits`` [batch, 10].

Opset 14 decomposes every LayerNorm (``.../LayerNorm/Pow`` etc.); opset 17 emits one
``LayerNormalization`` node per LayerNorm. ResNet has no LayerNorm: opset 17 only.

``calibration/<arch>_<plant>_opset<N>.onnx``: the same networks with breakage planted in the
weights before export (the planted file differs from the healthy one only in those weights):

* ``outlier`` (FP16): one channel of the patch embedding / stem conv gets a bias of +400, the
  "outlier feature" of real transformers; the next decomposed LayerNorm's Pow of |x - mean| > 255.9
  overflows FP16.
* ``logits`` (FP16): layer 0's query and key projections scaled by 1000, so the attention scores
  (the QK^T MatMul, before the 1/sqrt(d) scale) exceed FP16's 65504.
* ``overflow`` (FP16, CNN): the last stage's BatchNorm scale multiplied by 1e5: activations
  beyond 65504.
* ``offset`` (BF16): every channel of the patch embedding / stem conv gets a bias of +100: a
  large common offset into a lowered LayerNorm. BF16 keeps 8 significant bits (spacing 0.5 at 100),
  so the spread (~0.1) around the offset is lost when the LayerNorm's input is stored.
* ``nandiv`` (any low precision): the output is multiplied by ``d / d`` with
  ``d = y * (1 + 1e-4) - y``: exactly 1 in FP32; in FP16/BF16 ``y * (1 + 1e-4)`` rounds back to
  ``y``, ``d`` is 0 and ``0 / 0`` is NaN (a planted division).

Feed-driven breakage needs no file of its own: ``outliers`` (two elements of magnitude 400 in
``inputs_embeds``: FP16 overflow of the first decomposed LayerNorm) and ``offset`` (``inputs_embeds``
+ 1000: the BF16 precision loss above) on the bert/gpt2 exports.

``calibration/cases.json``: the corpus. One entry per case: model file, architecture, family,
opset, LayerNorm form, precision, ``healthy`` or ``planted`` (with what was planted and why it is
real for that precision), the precision policy (``keep_fp32`` patterns; empty = everything in the
low precision, what ``--trt-fp16`` / ``--trt-bf16`` alone do) and the feeds (arguments of
:func:`pytest_trt.make_feeds`). Healthy cases run every architecture in FP16 and BF16 on three
seeds. ``bench/calibration.py`` runs the corpus on the ``emulate`` backend and prints the
calibration table; the GPU fidelity check (``tests/gpu/``) runs it on ONNX Runtime's CUDA provider.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch

OUT_DIR = Path(__file__).resolve().parent / "calibration"
SEED = 0
HIDDEN = 64
SEQ = 16
BATCH = 2
MAX_BYTES = 600_000
SEEDS = (0, 1, 2)

TOKENS_DIMS = {"batch": BATCH, "sequence": SEQ}
IMAGE_DIMS = {"batch": BATCH}
EMBEDS_RANGE = {"inputs_embeds": [-1.0, 1.0]}
IMAGE_RANGE = {"pixel_values": [0.0, 1.0]}


# --------------------------------------------------------------------------------------
# Networks (tiny configs, random weights)
# --------------------------------------------------------------------------------------

def make_bert():
    from transformers import BertConfig, BertModel

    class Bert(BertModel):  # subclass: node names stay /embeddings/..., /encoder/layer.0/...
        def forward(self, inputs_embeds):
            return super().forward(inputs_embeds=inputs_embeds, return_dict=True).last_hidden_state

    cfg = BertConfig(hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=2, intermediate_size=2 * HIDDEN,
                     vocab_size=16, max_position_embeddings=32, type_vocab_size=1, hidden_dropout_prob=0.0,
                     attention_probs_dropout_prob=0.0, attn_implementation="eager")
    return Bert(cfg).eval()


def make_gpt2():
    from transformers import GPT2Config, GPT2Model

    class Gpt2(GPT2Model):  # node names /h.0/ln_1/..., /ln_f/...
        def forward(self, inputs_embeds):
            # an all-ones mask built in the graph (without one, transformers 5 looks for packed
            # sequences with torch.diff, which the TorchScript exporter cannot export)
            mask = torch.ones(inputs_embeds.shape[:2], dtype=torch.int64)
            return super().forward(inputs_embeds=inputs_embeds, attention_mask=mask, use_cache=False,
                                   return_dict=True).last_hidden_state

    cfg = GPT2Config(n_embd=HIDDEN, n_layer=2, n_head=2, n_inner=2 * HIDDEN, n_positions=32, vocab_size=16, resid_pdrop=0.0,
                     embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False, attn_implementation="eager")
    return Gpt2(cfg).eval()


def make_vit():
    from transformers import ViTConfig, ViTModel

    class Vit(ViTModel):
        def forward(self, pixel_values):
            return super().forward(pixel_values=pixel_values, return_dict=True).last_hidden_state

    cfg = ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=HIDDEN, num_hidden_layers=2,
                    num_attention_heads=2, intermediate_size=2 * HIDDEN, hidden_dropout_prob=0.0,
                    attention_probs_dropout_prob=0.0, attn_implementation="eager")
    return Vit(cfg, add_pooling_layer=False).eval()


def make_convnext():
    from transformers import ConvNextConfig, ConvNextForImageClassification

    class ConvNext(ConvNextForImageClassification):
        def forward(self, pixel_values):
            return super().forward(pixel_values=pixel_values, return_dict=True).logits

    cfg = ConvNextConfig(num_channels=3, patch_size=2, hidden_sizes=[32, 64], depths=[1, 1], num_stages=2,
                         num_labels=10, image_size=32)
    return ConvNext(cfg).eval()


def make_resnet():
    from transformers import ResNetConfig, ResNetForImageClassification

    class ResNet(ResNetForImageClassification):
        def forward(self, pixel_values):
            return super().forward(pixel_values=pixel_values, return_dict=True).logits

    cfg = ResNetConfig(num_channels=3, embedding_size=16, hidden_sizes=[16, 32, 64], depths=[1, 1, 1],
                       layer_type="basic", num_labels=10, downsample_in_first_stage=False)
    return ResNet(cfg).eval()


ARCHS = {
    # arch: (builder, family, input name, output name, opsets)
    "bert": (make_bert, "transformer encoder", "inputs_embeds", "last_hidden_state", (14, 17)),
    "gpt2": (make_gpt2, "transformer decoder", "inputs_embeds", "last_hidden_state", (14, 17)),
    "vit": (make_vit, "vision transformer", "pixel_values", "last_hidden_state", (14, 17)),
    "convnext": (make_convnext, "CNN", "pixel_values", "logits", (14, 17)),
    "resnet": (make_resnet, "CNN", "pixel_values", "logits", (17,)),
}


# --------------------------------------------------------------------------------------
# Planted breakage (in the weights, before export)
# --------------------------------------------------------------------------------------

def _embedding_conv(model):
    """The conv that makes the first LayerNorm's input (ViT patch embedding, ConvNeXt stem)."""
    if hasattr(model, "embeddings") and hasattr(model.embeddings, "patch_embeddings"):
        return model.embeddings.patch_embeddings.projection
    return model.convnext.embeddings.patch_embeddings


def plant_outlier(model):
    with torch.no_grad():
        _embedding_conv(model).bias[3] += 400.0
    return model


def plant_offset(model):
    with torch.no_grad():
        _embedding_conv(model).bias += 100.0
    return model


def plant_logits(model):
    with torch.no_grad():
        if hasattr(model, "h"):  # GPT-2: one Conv1D [hidden, 3 * hidden] for q, k, v
            w, b = model.h[0].attn.c_attn.weight, model.h[0].attn.c_attn.bias
            w[:, : 2 * HIDDEN] *= 1000.0
            b[: 2 * HIDDEN] *= 1000.0
            return model
        if hasattr(model, "layers"):  # ViT (transformers 5): q_proj / k_proj
            attn = model.layers[0].attention
            pair = (attn.q_proj, attn.k_proj)
        else:  # BERT: query / key
            attn = model.encoder.layer[0].attention.self
            pair = (attn.query, attn.key)
        for lin in pair:
            lin.weight *= 1000.0
            lin.bias *= 1000.0
    return model


def plant_overflow(model):
    with torch.no_grad():
        model.resnet.encoder.stages[-1].layers[-1].layer[-1].normalization.weight *= 1e5
    return model


class NanDiv(torch.nn.Module):
    """``y * (d / d)`` with ``d = y * (1 + 1e-4) - y``: 1 in FP32, 0 / 0 in FP16 and BF16."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        y = self.inner(x)
        d = y * (1.0 + 1e-4) - y
        return y * (d / d)


def plant_nandiv(model):
    return NanDiv(model).eval()


PLANTS = {
    # name: (function, precisions it breaks, what it models)
    "outlier": (plant_outlier, ("fp16",), "one embedding channel +400: FP16 overflow of the decomposed LayerNorm's Pow"),
    "logits": (plant_logits, ("fp16",), "layer 0 query/key x1000: attention scores beyond FP16's 65504"),
    "overflow": (plant_overflow, ("fp16",), "last BatchNorm scale x1e5: activations beyond FP16's 65504"),
    "offset": (plant_offset, ("bf16",), "every embedding channel +100: common offset into a lowered LayerNorm, "
                                        "spread lost at BF16's 8 significant bits"),
    "nandiv": (plant_nandiv, ("fp16", "bf16"), "output * (d/d), d = y*(1+1e-4) - y: 0/0 once y*(1+1e-4) rounds to y"),
}

#: (arch, plant, opset) of every planted file.
PLANTED_FILES = [
    ("vit", "outlier", 14),
    ("convnext", "outlier", 14),
    ("bert", "logits", 17),
    ("gpt2", "logits", 17),
    ("vit", "logits", 17),
    ("resnet", "overflow", 17),
    ("vit", "offset", 17),
    ("convnext", "offset", 17),
    ("resnet", "nandiv", 17),
    ("gpt2", "nandiv", 17),
]

#: Feed-driven planted cases: (arch, opset, precision, name, feeds extra, what it models).
FEED_PLANTS = [
    (arch, opset, "fp16", "outliers", {"outliers": {"inputs_embeds": {"count": 2, "magnitude": 400.0}}},
     "two input elements of magnitude 400: FP16 overflow of the first decomposed LayerNorm's Pow")
    for arch in ("bert", "gpt2") for opset in (14,)
] + [
    (arch, opset, "bf16", "offset", {"offset": {"inputs_embeds": 1000.0}},
     "inputs + 1000: common offset into a lowered LayerNorm, spread lost at BF16's 8 significant bits")
    for arch in ("bert", "gpt2") for opset in (14, 17)
]


# --------------------------------------------------------------------------------------
# Export and checks
# --------------------------------------------------------------------------------------

def example_input(arch: str) -> torch.Tensor:
    torch.manual_seed(SEED)
    if ARCHS[arch][2] == "inputs_embeds":
        return torch.rand(BATCH, SEQ, HIDDEN) * 2 - 1
    return torch.rand(BATCH, 3, 32, 32)


def export(model, arch: str, path: Path, opset: int, limit: float = 1e-4) -> None:
    _, _, inp, out, _ = ARCHS[arch]
    axes = {inp: {0: "batch", 1: "sequence"}, out: {0: "batch", 1: "sequence"}} if inp == "inputs_embeds" \
        else {inp: {0: "batch"}, out: {0: "batch"}}
    buf = io.BytesIO()
    torch.onnx.export(model, (example_input(arch),), buf, dynamo=False, opset_version=opset, input_names=[inp],
                      output_names=[out], dynamic_axes=axes, do_constant_folding=True)
    proto = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(proto, full_check=True)
    onnx.save_model(proto, str(path), save_as_external_data=False)
    size = path.stat().st_size
    assert size < MAX_BYTES, f"{path.name} is {size} bytes"
    x = example_input(arch)
    with torch.no_grad():
        expected = model(x).numpy()
    got = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {inp: x.numpy()})[0]
    err = float(np.abs(got - expected).max() / max(1.0, float(np.abs(expected).max())))
    assert err < limit, (path.name, err)
    ln = sum("LayerNorm" in n.name or "layernorm" in n.name or "/ln_" in n.name for n in proto.graph.node)
    print(f"{path.name}: {len(proto.graph.node)} nodes ({ln} LayerNorm nodes), {size} bytes, "
          f"max|ort - torch| / max(1, |y|) = {err:.1e}")


def build(arch: str, plant: str | None = None):
    torch.manual_seed(SEED)
    model = ARCHS[arch][0]()
    return PLANTS[plant][0](model) if plant else model


def layernorm_form(arch: str, opset: int) -> str:
    if arch == "resnet":
        return "none"
    return "decomposed" if opset < 17 else "fused"


def cases() -> list[dict]:
    out = []

    def feeds_for(arch: str, seed: int, **extra) -> dict:
        inp = ARCHS[arch][2]
        base = {"seed": seed, "dims": dict(TOKENS_DIMS if inp == "inputs_embeds" else IMAGE_DIMS),
                "val_range": dict(EMBEDS_RANGE if inp == "inputs_embeds" else IMAGE_RANGE)}
        base.update(extra)
        return base

    def entry(arch, opset, precision, kind, model, feeds, breakage=None, why=None, name=None):
        cid = f"{arch}_opset{opset}_{precision}_{name or kind}"
        if kind == "healthy":
            cid += f"_seed{feeds['seed']}"
        out.append({
            "id": cid, "model": model, "arch": arch, "family": ARCHS[arch][1], "opset": opset,
            "layernorm": layernorm_form(arch, opset), "precision": precision, "kind": kind,
            "breakage": breakage, "why": why, "keep_fp32": [], "feeds": feeds,
        })

    for arch, (_, _, _, _, opsets) in ARCHS.items():
        for opset in opsets:
            for precision in ("fp16", "bf16"):
                for seed in SEEDS:
                    entry(arch, opset, precision, "healthy", f"{arch}_opset{opset}.onnx", feeds_for(arch, seed))
    for arch, plant, opset in PLANTED_FILES:
        _, precisions, why = PLANTS[plant]
        for precision in precisions:
            entry(arch, opset, precision, "planted", f"{arch}_{plant}_opset{opset}.onnx", feeds_for(arch, 0),
                  breakage=plant, why=why, name=plant)
    for arch, opset, precision, name, extra, why in FEED_PLANTS:
        entry(arch, opset, precision, "planted", f"{arch}_opset{opset}.onnx", feeds_for(arch, 0, **extra),
              breakage=name, why=why, name=name)
    return out


def main() -> int:
    torch.use_deterministic_algorithms(True)
    OUT_DIR.mkdir(exist_ok=True)
    for arch, (_, _, _, _, opsets) in ARCHS.items():
        for opset in opsets:
            export(build(arch), arch, OUT_DIR / f"{arch}_opset{opset}.onnx", opset)
    for arch, plant, opset in PLANTED_FILES:
        # the offset plant is ill-conditioned in FP32 too (ORT and torch differ at ~3e-4)
        export(build(arch, plant), arch, OUT_DIR / f"{arch}_{plant}_opset{opset}.onnx", opset,
               limit=1e-3 if plant == "offset" else 1e-4)
    corpus = {
        "generator": "tests/data/make_calibration_models.py",
        "versions": {"torch": torch.__version__.split("+")[0], "onnx": onnx.__version__,
                     "transformers": __import__("transformers").__version__},
        "cases": cases(),
    }
    (OUT_DIR / "cases.json").write_text(json.dumps(corpus, indent=1) + "\n")
    n = len(corpus["cases"])
    planted = sum(c["kind"] == "planted" for c in corpus["cases"])
    print(f"cases.json: {n} cases ({n - planted} healthy, {planted} planted)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
