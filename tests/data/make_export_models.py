"""Export tiny real-architecture models with BOTH torch exporters into ``tests/data/exports/``.

The test data of the "today's exports" issue: the same randomly initialised model exported by the
TorchScript exporter (``torch.onnx.export(..., dynamo=False, opset_version=17)``, node names
``/model/layers.0/input_layernorm/Pow``) and by the dynamo exporter (``dynamo=True``,
``opset_version=18``, torch's default since 2.9: node names ``node_pow_1`` and the module path in
each node's ``metadata_props``: ``pkg.torch.onnx.name_scopes``, ``pkg.torch.onnx.class_hierarchy``,
``namespace``). Nothing in the files is edited after export: the metadata is the exporter's own.

Regenerate (the outputs are checked in; tests never import torch)::

    python3 -m venv torchenv && . torchenv/bin/activate
    pip install torch==2.13.0 transformers onnx onnxscript onnxruntime
    python tests/data/make_export_models.py            # all models
    python tests/data/make_export_models.py llama bert # some of them

torch, transformers and onnxscript are NOT runtime or test dependencies of pytest-trt. The files
were made with torch 2.13.0+cpu, transformers 5.24.0, onnx 1.23.2, onnxscript 0.7.2 (ONNX Runtime
1.32.0 for the check), Python 3.11; ``exports/VERSIONS.json`` records the versions and, per file,
exporter, opset, node count, size and sha256. No pretrained weights are downloaded: each model is
built from a tiny config (hidden 32, 2 layers, vocab 256) with transformers' default
initialisation under ``torch.manual_seed(0)``, plus small seeded noise on the parameters that
default initialisation leaves constant (see ``build``). The dynamo exporter writes each node's Python stack
trace (``pkg.torch.onnx.stack_trace``, with absolute file paths) into the model, so the files are
byte-reproducible only from the same paths; the graphs and weights are reproducible anywhere.

Each model is wrapped so that the export sees exactly the inputs a user's export has:
``forward(input_ids, attention_mask) -> last_hidden_state`` (``use_cache=False``; transformers 5's
``forward`` no longer takes ``attention_mask`` positionally) for the decoders and BERT,
``forward(pixel_values)`` for vision, ``forward(input_values)`` for speech. The wrapped model is the
wrapper's attribute ``model``, so module paths read ``model.layers.0.input_layernorm`` (dynamo
scopes) and ``/model/layers.0/input_layernorm/...`` (TorchScript names), as in a
``*ForCausalLM`` export.

Every file is checked: ``onnx.checker.check_model(full_check=True)``, no external data, and ONNX
Runtime CPU against torch (max abs difference <= 1e-4) at the export shape (one padded row) and at
a second shape through the symbolic dims. The script fails if all files together exceed 5 MB.

``exports/functions/``: one decoder exported by the TorchScript exporter with
``export_modules_as_functions={<its RMSNorm class>, <its MLP class>}``, so the graph calls ONNX
local functions (``model.functions``) instead of holding those modules' nodes: test data for
"models with ONNX local functions". The dynamo exporter has no such option in torch 2.13.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch

OUT_DIR = Path(__file__).resolve().parent / "exports"
FUNC_DIR = OUT_DIR / "functions"
SEED = 0
MAX_TOTAL_BYTES = 5_000_000
EXPORTERS = {"torchscript": 17, "dynamo": 18}
SEQ_DIMS = {0: "batch", 1: "sequence"}


class TextModel(torch.nn.Module):
    """``forward(input_ids, attention_mask) -> last_hidden_state`` without a KV cache."""

    def __init__(self, model: torch.nn.Module, takes_use_cache: bool = True) -> None:
        super().__init__()
        self.model = model
        self.takes_use_cache = takes_use_cache  # BERT and the DecoderStack have no cache argument

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        kwargs = {"use_cache": False} if self.takes_use_cache else {}
        return self.model(input_ids=input_ids, attention_mask=attention_mask, **kwargs).last_hidden_state


class VisionModel(torch.nn.Module):
    """``forward(pixel_values) -> last_hidden_state``."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.model(pixel_values=pixel_values).last_hidden_state


class SpeechModel(torch.nn.Module):
    """``forward(input_values) -> last_hidden_state``."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_values: torch.Tensor) -> torch.Tensor:
        return self.model(input_values=input_values).last_hidden_state


class DecoderStack(torch.nn.Module):
    """A decoder model's own submodules under a plain ``nn.Module``, same forward as the model's.

    For ``export_modules_as_functions`` only: the TorchScript exporter records the type-annotated
    attributes of *every* module when that option is on, and a ``PreTrainedModel`` annotates
    class attributes (``config``, ``_tp_plan`` dicts, ...) that its C++ pass cannot take
    (``_jit_pass_onnx_track_scope_attributes(): incompatible function arguments``). This stack
    holds the same ``embed_tokens``, ``layers``, ``norm`` and ``rotary_emb`` modules and computes
    what ``LlamaModel.forward`` computes without a cache (checked against it in
    ``export_functions``), so module paths stay ``model.layers.0.input_layernorm``.
    """

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.embed_tokens = model.embed_tokens
        self.layers = model.layers
        self.norm = model.norm
        self.rotary_emb = model.rotary_emb
        self.config = model.config  # an instance attribute: not in the class's annotations

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor):
        from transformers.masking_utils import create_causal_mask
        from transformers.modeling_outputs import BaseModelOutput

        hidden = self.embed_tokens(input_ids)
        position_ids = torch.arange(hidden.shape[1], device=hidden.device).unsqueeze(0)
        mask = create_causal_mask(config=self.config, inputs_embeds=hidden, attention_mask=attention_mask,
                                  cache=None, position_ids=position_ids)
        position_embeddings = self.rotary_emb(hidden, position_ids=position_ids)
        for layer in self.layers:
            hidden = layer(hidden, attention_mask=mask, position_embeddings=position_embeddings,
                           position_ids=position_ids)
        return BaseModelOutput(last_hidden_state=self.norm(hidden))


@dataclass
class Spec:
    """One model: how to build it, its example inputs, and a second input shape for the check."""

    name: str
    family: str  # decoder | encoder | vision | speech
    arch: str  # the transformers class
    build: Callable[[], torch.nn.Module]
    inputs: Callable[[int, int], dict[str, torch.Tensor]]  # (batch, length) -> named inputs
    shape: tuple[int, int]  # export shape
    other_shape: tuple[int, int]  # second shape, through the symbolic dims
    dims: dict[str, dict[int, str]]
    config: dict = field(default_factory=dict)


def _text_inputs(vocab: int) -> Callable[[int, int], dict[str, torch.Tensor]]:
    def make(batch: int, length: int) -> dict[str, torch.Tensor]:
        gen = torch.Generator().manual_seed(SEED)
        ids = torch.randint(0, vocab, (batch, length), generator=gen)
        mask = torch.ones(batch, length, dtype=torch.int64)
        if batch > 1:
            mask[-1, length - 2:] = 0  # one right-padded row: the mask path is real, not all-ones
        return {"input_ids": ids, "attention_mask": mask}

    return make


def _decoder(name: str, config_cls: str, model_cls: str, **cfg) -> Spec:
    import transformers

    def build() -> torch.nn.Module:
        config = getattr(transformers, config_cls)(**cfg)
        return TextModel(getattr(transformers, model_cls)(config))

    dims = {"input_ids": SEQ_DIMS, "attention_mask": SEQ_DIMS}
    return Spec(name, "decoder", model_cls, build, _text_inputs(cfg["vocab_size"]), (2, 8), (3, 5), dims, cfg)


# Decoder LLMs: RMSNorm, rotary embeddings, grouped-query attention (4 query heads, 2 KV heads).
_DECODER = dict(
    hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, head_dim=8, vocab_size=256, max_position_embeddings=128,
    tie_word_embeddings=False,
)


def specs() -> list[Spec]:
    import transformers

    out = [
        _decoder("llama", "LlamaConfig", "LlamaModel", **_DECODER),
        # Qwen3 adds per-head RMSNorms on q and k inside attention (q_norm, k_norm).
        _decoder("qwen3", "Qwen3Config", "Qwen3Model", **_DECODER),
        _decoder("mistral", "MistralConfig", "MistralModel", **_DECODER),
        # Gemma: RMSNorm computed in float32 with weight (1 + w), scaled embeddings, GeGLU MLP.
        _decoder("gemma", "GemmaConfig", "GemmaModel", **_DECODER),
    ]

    bert_cfg = dict(
        vocab_size=256, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=64, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    out.append(Spec(
        "bert", "encoder", "BertModel",
        lambda: TextModel(transformers.BertModel(transformers.BertConfig(**bert_cfg), add_pooling_layer=False),
                          takes_use_cache=False),
        _text_inputs(256), (2, 8), (3, 5), {"input_ids": SEQ_DIMS, "attention_mask": SEQ_DIMS}, bert_cfg,
    ))

    vit_cfg = dict(
        image_size=32, patch_size=8, num_channels=3, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=2, intermediate_size=64, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )

    def pixels(batch: int, _: int) -> dict[str, torch.Tensor]:
        gen = torch.Generator().manual_seed(SEED)
        return {"pixel_values": torch.rand(batch, 3, 32, 32, generator=gen)}

    out.append(Spec(
        "vit", "vision", "ViTModel",
        lambda: VisionModel(transformers.ViTModel(transformers.ViTConfig(**vit_cfg), add_pooling_layer=False)),
        pixels, (2, 0), (3, 0), {"pixel_values": {0: "batch"}}, vit_cfg,
    ))

    # Wav2Vec2 with a small convolutional feature encoder (3 convs, total stride 20) and a
    # 2-layer transformer: LayerNorm and GroupNorm, a weight-normed positional convolution.
    w2v_cfg = dict(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        conv_dim=(32, 32, 32), conv_stride=(5, 2, 2), conv_kernel=(10, 3, 3),
        num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4, vocab_size=32,
        hidden_dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, feat_proj_dropout=0.0,
        layerdrop=0.0, mask_time_prob=0.0, do_stable_layer_norm=False,
    )

    def audio(batch: int, length: int) -> dict[str, torch.Tensor]:
        gen = torch.Generator().manual_seed(SEED)
        return {"input_values": torch.randn(batch, length, generator=gen)}

    out.append(Spec(
        "wav2vec2", "speech", "Wav2Vec2Model",
        lambda: SpeechModel(transformers.Wav2Vec2Model(transformers.Wav2Vec2Config(**w2v_cfg))),
        audio, (2, 400), (3, 320), {"input_values": {0: "batch", 1: "samples"}}, w2v_cfg,
    ))
    return out


def build(spec: Spec) -> torch.nn.Module:
    """The model under ``torch.manual_seed(SEED)``, no parameter constant, in eval mode.

    transformers' default initialisation leaves every norm weight at 1 (Gemma's at 0) and every
    bias at 0, so all of them are identical, and both exporters then merge identical initializers:
    the TorchScript exporter into ``Identity`` nodes outside every module scope, the dynamo
    exporter's optimizer into ONE initializer named after its first user
    (``model.layers.0.input_layernorm.weight`` read by every RMSNorm). Trained models never have
    that, so each constant parameter gets small seeded noise (N(0, 0.02)) added: random weights,
    one initializer per parameter.
    """
    torch.manual_seed(SEED)
    model = spec.build().eval()
    with torch.no_grad():
        for param in model.parameters():
            if param.numel() > 1 and bool((param == param.flatten()[0]).all()):
                param.add_(torch.randn_like(param) * 0.02)
    return model


def _names(spec: Spec) -> tuple[list[str], list[str]]:
    return list(spec.dims), ["last_hidden_state"]


def export_torchscript(spec: Spec, model: torch.nn.Module, args: tuple, path: Path, functions=False) -> None:
    inputs, outputs = _names(spec)
    axes = dict(spec.dims)
    axes["last_hidden_state"] = {0: "batch"} if spec.family == "vision" else dict(SEQ_DIMS)
    if spec.family == "speech":
        axes["last_hidden_state"] = {0: "batch", 1: "frames"}
    torch.onnx.export(
        model, args, str(path), dynamo=False, opset_version=EXPORTERS["torchscript"],
        input_names=inputs, output_names=outputs, dynamic_axes=axes,
        export_modules_as_functions=functions,
    )


def export_dynamo(spec: Spec, model: torch.nn.Module, args: tuple, path: Path) -> None:
    inputs, outputs = _names(spec)
    torch.onnx.export(
        model, args, str(path), dynamo=True, opset_version=EXPORTERS["dynamo"],
        input_names=inputs, output_names=outputs, dynamic_shapes=spec.dims, external_data=False,
    )


def check(path: Path, model: torch.nn.Module, spec: Spec) -> dict:
    """Checker, no external data, ORT vs torch at both shapes; return the file's record."""
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    assert not any(t.data_location == onnx.TensorProto.EXTERNAL for t in proto.graph.initializer), path
    assert not path.with_name(path.name + ".data").exists(), f"{path} has external data"
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    errors = []
    for shape in (spec.shape, spec.other_shape):
        feeds = spec.inputs(*shape)
        with torch.no_grad():
            expected = model(*feeds.values()).numpy()
        (got,) = sess.run(None, {k: v.numpy() for k, v in feeds.items()})
        assert got.shape == expected.shape, (path.name, shape, got.shape, expected.shape)
        errors.append(float(np.abs(got - expected).max()))
    assert max(errors) <= 1e-4, (path.name, errors)
    data = path.read_bytes()
    return {
        "model": spec.arch,
        "family": spec.family,
        "nodes": len(proto.graph.node),
        "functions": len(proto.functions),
        "function_nodes": sum(len(f.node) for f in proto.functions),
        "initializers": len(proto.graph.initializer),
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "max_abs_diff_vs_torch": max(errors),
    }


def export_one(spec: Spec, exporter: str, records: dict, failures: dict) -> None:
    model = build(spec)
    args = tuple(spec.inputs(*spec.shape).values())
    opset = EXPORTERS[exporter]
    path = OUT_DIR / f"{spec.name}_{exporter}_opset{opset}.onnx"
    try:
        if exporter == "torchscript":
            export_torchscript(spec, model, args, path)
        else:
            export_dynamo(spec, model, args, path)
        record = check(path, model, spec)
    except Exception as exc:  # record and go on: an architecture may fail under one exporter
        path.unlink(missing_ok=True)
        failures[path.name] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:500]
        print(f"FAILED {path.name}: {failures[path.name]}", flush=True)
        return
    record.update(exporter=exporter, opset=opset, config=spec.config)
    records[path.relative_to(OUT_DIR).as_posix()] = record
    print(f"{path.name}: {record['nodes']} nodes, {record['bytes']:,} bytes, "
          f"max |ort - torch| {record['max_abs_diff_vs_torch']:.2e}", flush=True)


def export_functions(spec: Spec, records: dict, failures: dict) -> None:
    """TorchScript export with ``export_modules_as_functions``: the graph calls local functions."""
    full = build(spec)
    model = TextModel(DecoderStack(full.model), takes_use_cache=False).eval()
    args = tuple(spec.inputs(*spec.shape).values())
    with torch.no_grad():
        same = [float((model(*spec.inputs(*s).values()) - full(*spec.inputs(*s).values())).abs().max())
                for s in (spec.shape, spec.other_shape)]
    assert max(same) == 0.0, f"DecoderStack differs from {spec.arch}: {same}"
    layer = model.model.layers[0]
    classes = {type(layer.input_layernorm), type(layer.mlp)}
    FUNC_DIR.mkdir(exist_ok=True)
    path = FUNC_DIR / f"{spec.name}_torchscript_opset17_functions.onnx"
    try:
        export_torchscript(spec, model, args, path, functions=classes)
        record = check(path, model, spec)
        assert record["functions"] > 0, f"{path.name} has no local functions"
    except Exception as exc:
        path.unlink(missing_ok=True)
        failures[path.relative_to(OUT_DIR).as_posix()] = f"{type(exc).__name__}: {exc}"[:500]
        print(f"FAILED {path.name}: {exc}", flush=True)
        return
    record.update(exporter="torchscript", opset=EXPORTERS["torchscript"], config=spec.config,
                  export_modules_as_functions=sorted(f"{c.__module__}.{c.__qualname__}" for c in classes))
    records[path.relative_to(OUT_DIR).as_posix()] = record
    print(f"{path.name}: {record['nodes']} nodes, {record['functions']} functions "
          f"({record['function_nodes']} nodes inside), {record['bytes']:,} bytes", flush=True)


def main(argv: list[str]) -> int:
    import onnxscript
    import transformers

    OUT_DIR.mkdir(parents=True, exist_ok=True)
    wanted = set(argv)
    versions_path = OUT_DIR / "VERSIONS.json"
    old = json.loads(versions_path.read_text()) if versions_path.exists() and wanted else {}
    records: dict = dict(old.get("files", {}))
    failures: dict = dict(old.get("failures", {}))
    for spec in specs():
        if wanted and spec.name not in wanted:
            continue
        for exporter in EXPORTERS:
            failures.pop(f"{spec.name}_{exporter}_opset{EXPORTERS[exporter]}.onnx", None)
            export_one(spec, exporter, records, failures)
        if spec.name == "llama":
            failures.pop("functions/llama_torchscript_opset17_functions.onnx", None)
            export_functions(spec, records, failures)
    total = sum(p.stat().st_size for p in OUT_DIR.rglob("*.onnx"))
    versions = {
        "made_by": "tests/data/make_export_models.py",
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "onnx": onnx.__version__,
        "onnxscript": onnxscript.__version__,
        "onnxruntime": ort.__version__,
        "seed": SEED,
        "exporters": {
            "torchscript": "torch.onnx.export(..., dynamo=False, opset_version=17, dynamic_axes=...)",
            "dynamo": "torch.onnx.export(..., dynamo=True, opset_version=18, dynamic_shapes=..., "
                      "external_data=False) (optimize=True, the default)",
        },
        "total_bytes": total,
        "files": dict(sorted(records.items())),
        "failures": dict(sorted(failures.items())),
    }
    versions_path.write_text(json.dumps(versions, indent=1) + "\n")
    print(f"total {total:,} bytes in {OUT_DIR}")
    if total > MAX_TOTAL_BYTES:
        print(f"error: the exports total {total:,} bytes, over the {MAX_TOTAL_BYTES:,} budget", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
