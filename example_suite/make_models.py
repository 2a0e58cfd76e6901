"""Generate the ONNX models used by the example suite (``example_suite/models/``).

Regenerate (the outputs are checked in; you only need this to change them)::

    python3 -m venv /tmp/export && . /tmp/export/bin/activate
    pip install torch==2.13.0 onnx==1.23.2 onnxruntime numpy transformers
    python example_suite/make_models.py

torch and transformers are NOT runtime dependencies of pytest-trt, nor of the example suite:
they are only needed to run this script. Everything is seeded, so re-running it with the same
versions (torch 2.13.0, transformers 5.23.0, onnx 1.23.2) reproduces the same weights and graphs.
No pretrained weights are downloaded: transformers builds the encoder from a config.

Models written:

``encoder_opset14.onnx``
    Two BERT encoder layers (transformers ``BertEncoder``, hidden 64, 2 heads, intermediate 256,
    eager attention) wrapped in a module whose attribute is ``encoder``, exported with
    ``torch.onnx.export(dynamo=False, opset_version=14)``. Below opset 17 PyTorch decomposes
    LayerNorm into ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add, named like
    ``/encoder/layer.0/attention/output/LayerNorm/Pow``. Attention is MatMul + Softmax, GELU is
    Erf-based. Input ``hidden_states`` FLOAT [batch, sequence, 64] (symbolic dims), output
    ``last_hidden_state`` FLOAT [batch, sequence, 64].
``encoder_opset17.onnx``
    The same module (same weights) at opset 17: one ``LayerNormalization`` node per LayerNorm,
    named like ``/encoder/layer.0/attention/output/LayerNorm/LayerNormalization``.
``convnet.onnx``
    A small CNN: Conv (BatchNorm folded into it on export, eval mode), Relu, MaxPool, Resize
    (nearest, x2), Conv, Relu, GlobalAveragePool, Flatten, Gemm. Input ``image`` FLOAT
    [batch, 3, 32, 32], output ``logits`` FLOAT [batch, 10].
``mixed_autocast.onnx``
    Hand-built (onnx.helper) in the pattern autocast exporters emit: FP32 graph input ``x``
    [batch, 64] -> Cast to FP16 -> FP16 body (FP16 initializers; MatMul, Add, Relu in FP16) ->
    an RMS-norm island kept in FP32 by Casts (Cast fp16->fp32, Pow, ReduceSum, Div, Add, Sqrt,
    Div, Cast fp32->fp16) -> FP16 MatMul/Add -> Cast to FP32 -> graph output ``y`` FP32
    [batch, 64]. FP32 in and out is what torch autocast exports look like when the caller
    feeds FP32; the island is there because Pow(x, 2) overflows FP16 once |x| > 255.9.
``qdq_linear.onnx``
    An explicitly quantized (INT8, per-tensor, symmetric: zero point 0) two-layer MLP, opset 13.
    Activations: QuantizeLinear -> DequantizeLinear before each MatMul. Weights: layer 1 keeps an
    FP32 initializer behind QuantizeLinear -> DequantizeLinear (the pytorch-quantization /
    ModelOpt export pattern), layer 2 stores an INT8 initializer behind DequantizeLinear only.
    Input ``x`` FLOAT [batch, 64], output ``y`` FLOAT [batch, 16].

The script also checks every file (``onnx.checker.check_model(full_check=True)``, an ONNX Runtime
CPU run against torch) and measures the "outlier regime" of the encoder for the record: with an
input element >= 300 (or all inputs of magnitude ~400) the decomposed LayerNorm overflows FP16
(Pow of |x - mean| > 255.9 exceeds 65504) while FP32 is fine. The measurement emulates FP16 the
way the plugin's ``emulate`` backend does: every low-precision node output (and initializer) is
rounded to FP16 with a Cast pair while the arithmetic runs in FP32 on ONNX Runtime CPU.
Measured (opset 14, batch 2 x 16 tokens): N(0,1) inputs, FP16 everywhere: max error 6.5e-3;
two outlier elements (400, -300): FP16 everywhere 7.77 (first inf: the first LayerNorm's Pow),
``*/LayerNorm/*`` kept FP32: 5.0e-3. With *all* inputs of magnitude ~400 (400*N(0,1)) or with
1000 + 0.05*N(0,1), the attention scores (``/encoder/layer.0/attention/self/MatMul``) overflow
FP16 first, so keeping LayerNorm FP32 alone does not help there: that regime needs the
attention MatMul in FP32 too. At opset 17 the emulation cannot show the LayerNorm overflow
(it rounds only node outputs, and LayerNormalization is one node).
"""

from __future__ import annotations

import fnmatch
import io
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent
OUT_DIR = HERE / "models"
SEED = 0
HIDDEN = 64
MAX_BYTES = 1_500_000


# ---------------------------------------------------------------------------------------------
# torch exports
# ---------------------------------------------------------------------------------------------


def _bert_config():
    from transformers import BertConfig

    return BertConfig(
        vocab_size=128,  # unused: the encoder takes hidden states, not token ids
        hidden_size=HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=4 * HIDDEN,
        hidden_act="gelu",  # exact (Erf-based) GELU
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        layer_norm_eps=1e-12,  # BERT's value; note it rounds to 0 in FP16
        attn_implementation="eager",  # explicit MatMul + Softmax
    )


class EncoderBlock(torch.nn.Module):
    """Wrapper so exported node names start with ``/encoder/layer.N/...`` like a BertModel's."""

    def __init__(self, config):
        super().__init__()
        from transformers.models.bert.modeling_bert import BertEncoder

        self.encoder = BertEncoder(config)

    def forward(self, hidden_states):
        return self.encoder(hidden_states).last_hidden_state


def _trained_looking_(module: torch.nn.Module) -> None:
    """Give the randomly initialised encoder weights that look trained rather than fresh.

    A fresh BERT init has LayerNorm gamma = 1, beta = 0 and zero biases; the exporter then
    deduplicates identical initializers into Identity nodes. Trained models have distinct,
    non-trivial values, so perturb them (deterministically: the caller seeds torch).
    """
    with torch.no_grad():
        for name, p in module.named_parameters():
            if "LayerNorm.weight" in name:
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            elif "LayerNorm.bias" in name:
                p.copy_(0.05 * torch.randn_like(p))
            elif name.endswith(".bias"):
                p.copy_(0.02 * torch.randn_like(p))
            elif name.endswith(".weight"):
                # std 0.06 ~ 0.5/sqrt(64): attention is not uniform for N(0,1) inputs, and nothing
                # is large enough to trouble FP16 in the realistic regime.
                p.copy_(0.06 * torch.randn_like(p))


def _export(model, args, path, opset, input_names, output_names, dynamic_axes):
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
        do_constant_folding=True,
    )
    proto = onnx.load_from_string(buf.getvalue())
    onnx.save_model(proto, str(path), save_as_external_data=False)
    return proto


def make_encoders() -> EncoderBlock:
    torch.manual_seed(SEED)
    model = EncoderBlock(_bert_config()).eval()
    _trained_looking_(model)
    x = torch.randn(2, 16, HIDDEN)
    axes = {"hidden_states": {0: "batch", 1: "sequence"}, "last_hidden_state": {0: "batch", 1: "sequence"}}
    for opset in (14, 17):
        _export(
            model, (x,), OUT_DIR / f"encoder_opset{opset}.onnx", opset,
            ["hidden_states"], ["last_hidden_state"], axes,
        )
    return model


class ConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 3, padding=1, bias=False),
            torch.nn.BatchNorm2d(16),
            torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),  # 32 -> 16
        )
        self.up = torch.nn.Upsample(scale_factor=2, mode="nearest")  # 16 -> 32, exported as Resize
        self.body = torch.nn.Sequential(
            torch.nn.Conv2d(16, 32, 3, stride=2, padding=1, bias=False),  # 32 -> 16
            torch.nn.BatchNorm2d(32),
            torch.nn.ReLU(),
        )
        self.pool = torch.nn.AdaptiveAvgPool2d(1)  # GlobalAveragePool
        self.head = torch.nn.Linear(32, 10)  # Gemm

    def forward(self, image):
        x = self.stem(image)
        x = self.up(x)
        x = self.body(x)
        x = self.pool(x).flatten(1)
        return self.head(x)


def make_convnet() -> ConvNet:
    torch.manual_seed(SEED)
    model = ConvNet()
    with torch.no_grad():  # non-trivial BatchNorm statistics, as after training
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.copy_(0.1 * torch.randn_like(m.running_mean))
                m.running_var.copy_(0.5 + torch.rand_like(m.running_var))
                m.weight.copy_(1.0 + 0.1 * torch.randn_like(m.weight))
                m.bias.copy_(0.1 * torch.randn_like(m.bias))
    model.eval()
    x = torch.rand(2, 3, 32, 32)
    _export(
        model, (x,), OUT_DIR / "convnet.onnx", 17, ["image"], ["logits"],
        {"image": {0: "batch"}, "logits": {0: "batch"}},
    )
    return model


# ---------------------------------------------------------------------------------------------
# hand-built models
# ---------------------------------------------------------------------------------------------


def _init(name, array):
    return numpy_helper.from_array(np.ascontiguousarray(array), name)


def make_mixed_autocast() -> None:
    rng = np.random.default_rng(SEED)
    h = HIDDEN
    w1 = (rng.standard_normal((h, h)) / np.sqrt(h)).astype(np.float16)
    b1 = (0.02 * rng.standard_normal(h)).astype(np.float16)
    g = (1.0 + 0.1 * rng.standard_normal(h)).astype(np.float16)
    w2 = (rng.standard_normal((h, h)) / np.sqrt(h)).astype(np.float16)
    b2 = (0.02 * rng.standard_normal(h)).astype(np.float16)
    inits = [
        _init("fc1.weight", w1), _init("fc1.bias", b1),
        _init("norm.weight", g),
        _init("fc2.weight", w2), _init("fc2.bias", b2),
        _init("norm.two", np.array(2.0, np.float32)),
        _init("norm.axes", np.array([-1], np.int64)),
        _init("norm.hidden", np.array(float(h), np.float32)),
        _init("norm.eps", np.array(1e-6, np.float32)),
    ]
    F16, F32 = TensorProto.FLOAT16, TensorProto.FLOAT
    n = helper.make_node
    nodes = [
        n("Cast", ["x"], ["/Cast_output_0"], name="/Cast", to=F16),
        n("MatMul", ["/Cast_output_0", "fc1.weight"], ["/fc1/MatMul_output_0"], name="/fc1/MatMul"),
        n("Add", ["/fc1/MatMul_output_0", "fc1.bias"], ["/fc1/Add_output_0"], name="/fc1/Add"),
        n("Relu", ["/fc1/Add_output_0"], ["/act/Relu_output_0"], name="/act/Relu"),
        # FP32 island: RMS norm (Pow, ReduceSum, Div, Add, Sqrt, Div)
        n("Cast", ["/act/Relu_output_0"], ["/norm/Cast_output_0"], name="/norm/Cast", to=F32),
        n("Pow", ["/norm/Cast_output_0", "norm.two"], ["/norm/Pow_output_0"], name="/norm/Pow"),
        n("ReduceSum", ["/norm/Pow_output_0", "norm.axes"], ["/norm/ReduceSum_output_0"],
          name="/norm/ReduceSum", keepdims=1),
        n("Div", ["/norm/ReduceSum_output_0", "norm.hidden"], ["/norm/Div_output_0"], name="/norm/Div"),
        n("Add", ["/norm/Div_output_0", "norm.eps"], ["/norm/Add_output_0"], name="/norm/Add"),
        n("Sqrt", ["/norm/Add_output_0"], ["/norm/Sqrt_output_0"], name="/norm/Sqrt"),
        n("Div", ["/norm/Cast_output_0", "/norm/Sqrt_output_0"], ["/norm/Div_1_output_0"], name="/norm/Div_1"),
        n("Cast", ["/norm/Div_1_output_0"], ["/norm/Cast_1_output_0"], name="/norm/Cast_1", to=F16),
        # back in FP16
        n("Mul", ["/norm/Cast_1_output_0", "norm.weight"], ["/norm/Mul_output_0"], name="/norm/Mul"),
        n("MatMul", ["/norm/Mul_output_0", "fc2.weight"], ["/fc2/MatMul_output_0"], name="/fc2/MatMul"),
        n("Add", ["/fc2/MatMul_output_0", "fc2.bias"], ["/fc2/Add_output_0"], name="/fc2/Add"),
        n("Cast", ["/fc2/Add_output_0"], ["y"], name="/Cast_1", to=F32),
    ]
    graph = helper.make_graph(
        nodes, "mixed_autocast",
        [helper.make_tensor_value_info("x", F32, ["batch", h])],
        [helper.make_tensor_value_info("y", F32, ["batch", h])],
        initializer=inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="pytest-trt/make_models.py"
    )
    model.ir_version = 8
    onnx.save_model(model, str(OUT_DIR / "mixed_autocast.onnx"))


def _quant(w, scale):
    return np.clip(np.round(w / scale), -127, 127).astype(np.int8)


def make_qdq_linear() -> None:
    rng = np.random.default_rng(SEED + 1)
    d_in, d_hid, d_out = HIDDEN, HIDDEN, 16
    w1 = (rng.standard_normal((d_in, d_hid)) / np.sqrt(d_in)).astype(np.float32)
    b1 = (0.02 * rng.standard_normal(d_hid)).astype(np.float32)
    w2 = (rng.standard_normal((d_hid, d_out)) / np.sqrt(d_hid)).astype(np.float32)
    b2 = (0.02 * rng.standard_normal(d_out)).astype(np.float32)
    s_w1 = np.float32(np.abs(w1).max() / 127)
    s_w2 = np.float32(np.abs(w2).max() / 127)
    s_x = np.float32(4.0 / 127)  # calibrated for inputs in [-4, 4]
    s_h = np.float32(6.0 / 127)  # calibrated for hidden activations in [0, 6]
    inits = [
        _init("fc1.weight", w1), _init("fc1.bias", b1),
        _init("fc2.weight_quantized", _quant(w2, s_w2)), _init("fc2.bias", b2),
        _init("fc1.input_scale", np.array(s_x)), _init("fc1.weight_scale", np.array(s_w1)),
        _init("fc2.input_scale", np.array(s_h)), _init("fc2.weight_scale", np.array(s_w2)),
        _init("zero_point", np.array(0, np.int8)),
    ]
    n = helper.make_node
    nodes = [
        n("QuantizeLinear", ["x", "fc1.input_scale", "zero_point"], ["/fc1/input_quantizer/QuantizeLinear_output_0"],
          name="/fc1/input_quantizer/QuantizeLinear"),
        n("DequantizeLinear", ["/fc1/input_quantizer/QuantizeLinear_output_0", "fc1.input_scale", "zero_point"],
          ["/fc1/input_quantizer/DequantizeLinear_output_0"], name="/fc1/input_quantizer/DequantizeLinear"),
        n("QuantizeLinear", ["fc1.weight", "fc1.weight_scale", "zero_point"], ["/fc1/weight_quantizer/QuantizeLinear_output_0"],
          name="/fc1/weight_quantizer/QuantizeLinear"),
        n("DequantizeLinear", ["/fc1/weight_quantizer/QuantizeLinear_output_0", "fc1.weight_scale", "zero_point"],
          ["/fc1/weight_quantizer/DequantizeLinear_output_0"], name="/fc1/weight_quantizer/DequantizeLinear"),
        n("MatMul", ["/fc1/input_quantizer/DequantizeLinear_output_0", "/fc1/weight_quantizer/DequantizeLinear_output_0"],
          ["/fc1/MatMul_output_0"], name="/fc1/MatMul"),
        n("Add", ["/fc1/MatMul_output_0", "fc1.bias"], ["/fc1/Add_output_0"], name="/fc1/Add"),
        n("Relu", ["/fc1/Add_output_0"], ["/act/Relu_output_0"], name="/act/Relu"),
        n("QuantizeLinear", ["/act/Relu_output_0", "fc2.input_scale", "zero_point"], ["/fc2/input_quantizer/QuantizeLinear_output_0"],
          name="/fc2/input_quantizer/QuantizeLinear"),
        n("DequantizeLinear", ["/fc2/input_quantizer/QuantizeLinear_output_0", "fc2.input_scale", "zero_point"],
          ["/fc2/input_quantizer/DequantizeLinear_output_0"], name="/fc2/input_quantizer/DequantizeLinear"),
        n("DequantizeLinear", ["fc2.weight_quantized", "fc2.weight_scale", "zero_point"],
          ["/fc2/weight_quantizer/DequantizeLinear_output_0"], name="/fc2/weight_quantizer/DequantizeLinear"),
        n("MatMul", ["/fc2/input_quantizer/DequantizeLinear_output_0", "/fc2/weight_quantizer/DequantizeLinear_output_0"],
          ["/fc2/MatMul_output_0"], name="/fc2/MatMul"),
        n("Add", ["/fc2/MatMul_output_0", "fc2.bias"], ["y"], name="/fc2/Add"),
    ]
    graph = helper.make_graph(
        nodes, "qdq_linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", d_in])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", d_out])],
        initializer=inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="pytest-trt/make_models.py"
    )
    model.ir_version = 7
    onnx.save_model(model, str(OUT_DIR / "qdq_linear.onnx"))


def _inits(name):
    model = onnx.load(str(OUT_DIR / name))
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def mixed_autocast_numpy(x):
    """Independent numpy reference for mixed_autocast.onnx (FP16 body, FP32 RMS-norm island).

    FP16 MatMuls accumulate in FP32 and round the result to FP16, as ONNX Runtime CPU does.
    """
    w = _inits("mixed_autocast.onnx")
    f16, f32 = np.float16, np.float32
    mm = lambda a, b: (a.astype(f32) @ b.astype(f32)).astype(f16)
    h = np.maximum(mm(x.astype(f16), w["fc1.weight"]) + w["fc1.bias"], f16(0))
    h32 = h.astype(f32)
    rms = np.sqrt((h32**2).sum(-1, keepdims=True) / f32(HIDDEN) + f32(1e-6))
    n = (h32 / rms).astype(f16) * w["norm.weight"]
    return (mm(n, w["fc2.weight"]) + w["fc2.bias"]).astype(f32)


def qdq_linear_numpy(x):
    """Independent numpy reference for qdq_linear.onnx (round half to even, saturate to int8)."""
    w = _inits("qdq_linear.onnx")
    fq = lambda t, s: np.clip(np.rint(t / s), -128, 127) * s
    h = fq(x, w["fc1.input_scale"]) @ fq(w["fc1.weight"], w["fc1.weight_scale"]) + w["fc1.bias"]
    h = np.maximum(h, 0)
    w2 = w["fc2.weight_quantized"].astype(np.float32) * w["fc2.weight_scale"]
    return (fq(h, w["fc2.input_scale"]) @ w2 + w["fc2.bias"]).astype(np.float32)


# ---------------------------------------------------------------------------------------------
# checks and the outlier-regime measurement
# ---------------------------------------------------------------------------------------------


def _session(model_or_path, optimize=True):
    so = ort.SessionOptions()
    if not optimize:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    data = model_or_path.SerializeToString() if isinstance(model_or_path, onnx.ModelProto) else str(model_or_path)
    return ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])


def _run(model_or_path, feeds, optimize=True):
    return _session(model_or_path, optimize).run(None, feeds)


def emulate_fp16(model: onnx.ModelProto, keep_fp32=()) -> onnx.ModelProto:
    """FP32 graph whose low-precision tensors are rounded to FP16, as the emulate backend does.

    Every float output of a node not matched by ``keep_fp32`` (shell globs over node names) gets
    a Cast(fp32->fp16)->Cast(fp16->fp32) pair; float initializers read only by such nodes are
    rounded to FP16 values. Arithmetic stays FP32 (ORT CPU), like TensorRT kernels that store FP16
    and accumulate in FP32. Kernel-internal math (e.g. inside LayerNormalization) is not modelled.
    """
    m = onnx.shape_inference.infer_shapes(model)
    dtypes = {vi.name: vi.type.tensor_type.elem_type for vi in list(m.graph.value_info) + list(m.graph.output)}
    kept = lambda node: any(fnmatch.fnmatchcase(node.name, p) for p in keep_fp32)
    consumers = {}
    for node in m.graph.node:
        for i in node.input:
            consumers.setdefault(i, []).append(node)
    for init in m.graph.initializer:
        users = consumers.get(init.name, [])
        if init.data_type == TensorProto.FLOAT and users and not any(kept(u) for u in users):
            arr = numpy_helper.to_array(init).astype(np.float16).astype(np.float32)
            init.CopyFrom(numpy_helper.from_array(arr, init.name))
    new_nodes = []
    for node in m.graph.node:
        new_nodes.append(node)
        if kept(node):
            continue
        for k, out in enumerate(node.output):
            if dtypes.get(out) != TensorProto.FLOAT:
                continue
            raw = out + "__fp32"
            node.output[k] = raw
            new_nodes.append(helper.make_node("Cast", [raw], [out + "__fp16"], to=TensorProto.FLOAT16))
            new_nodes.append(helper.make_node("Cast", [out + "__fp16"], [out], to=TensorProto.FLOAT))
    del m.graph.node[:]
    m.graph.node.extend(new_nodes)
    return m


def _first_nonfinite(model: onnx.ModelProto, feeds) -> str:
    """Name of the first (topological order) node whose FP16-rounded output is inf/NaN, or '-'."""
    names = [o for node in model.graph.node for o in node.output if o.endswith("__fp16")]
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    probe.graph.output.extend(helper.make_tensor_value_info(nm, TensorProto.FLOAT16, None) for nm in names)
    outs = _run(probe, feeds, optimize=False)[len(model.graph.output):]
    for nm, value in zip(names, outs):
        if not np.isfinite(value).all():
            return nm[: -len("__fp16")]
    return "-"


def _err(a, b):
    d = np.abs(a.astype(np.float64) - b.astype(np.float64))
    return float(np.nanmax(d)) if np.isfinite(d).any() else float("nan"), int(np.isnan(a).sum())


def layernorm_numpy(x, gamma, beta, eps, dtype):
    """Decomposed LayerNorm exactly as the opset-14 export computes it, every step in ``dtype``."""
    x = x.astype(dtype)
    mean = x.mean(-1, keepdims=True, dtype=dtype)
    d = x - mean
    var = np.power(d, dtype(2)).mean(-1, keepdims=True, dtype=dtype)
    return (d / np.sqrt(var + dtype(eps))) * gamma.astype(dtype) + beta.astype(dtype)


def outlier_regime(encoder: EncoderBlock) -> None:
    print("\n== outlier regime (encoder, FP32 ORT vs FP16-rounding emulation on ORT CPU) ==")
    rng = np.random.default_rng(SEED)
    normal = rng.standard_normal((2, 16, HIDDEN)).astype(np.float32)
    outlier = normal.copy()
    outlier[0, 3, 5] = 400.0
    outlier[1, 7, 11] = -300.0
    large = (400.0 * rng.standard_normal((2, 16, HIDDEN))).astype(np.float32)
    offset = (1000.0 + 0.05 * rng.standard_normal((2, 16, HIDDEN))).astype(np.float32)
    probes = {
        "N(0,1)": normal,
        "N(0,1) + 2 outliers (400, -300)": outlier,
        "400*N(0,1)": large,
        "1000 + 0.05*N(0,1)": offset,
    }
    for opset in (14, 17):
        path = OUT_DIR / f"encoder_opset{opset}.onnx"
        fp32 = onnx.load(str(path))
        fp16_all = emulate_fp16(fp32)
        fp16_ln = emulate_fp16(fp32, keep_fp32=["*/LayerNorm/*"])
        print(f"-- encoder_opset{opset}.onnx: max |err| vs FP32 (NaN count)")
        for label, x in probes.items():
            ref = _run(fp32, {"hidden_states": x})[0]
            with torch.no_grad():
                torch_ref = encoder(torch.from_numpy(x)).numpy()
            e_all = _err(_run(fp16_all, {"hidden_states": x})[0], ref)
            e_ln = _err(_run(fp16_ln, {"hidden_states": x})[0], ref)
            print(
                f"   {label:34s} |out|max={np.abs(ref).max():7.3f}  ort-vs-torch={_err(ref, torch_ref)[0]:.2e}  "
                f"fp16 everywhere={e_all[0]:.3e} (NaN {e_all[1]})  fp16, */LayerNorm/* fp32={e_ln[0]:.3e} (NaN {e_ln[1]})"
            )
            for tag, m in (("fp16 everywhere", fp16_all), ("*/LayerNorm/* fp32", fp16_ln)):
                first = _first_nonfinite(m, {"hidden_states": x})
                if first != "-":
                    print(f"   {'':34s}   {tag}: first inf/NaN tensor = {first}")
    # The first LayerNorm alone, in numpy: what the probe does to the node pattern itself.
    ln = encoder.encoder.layer[0].attention.output.LayerNorm
    gamma, beta = ln.weight.detach().numpy(), ln.bias.detach().numpy()
    print("-- numpy, decomposed LayerNorm of the first layer, every step FP16 vs FP32")
    for label, x in probes.items():
        with np.errstate(all="ignore"):
            y32 = layernorm_numpy(x, gamma, beta, ln.eps, np.float32)
            y16 = layernorm_numpy(x, gamma, beta, ln.eps, np.float16).astype(np.float32)
            d = x.astype(np.float16) - x.astype(np.float16).mean(-1, keepdims=True, dtype=np.float16)
            pow_inf = int(np.isinf(np.power(d, np.float16(2))).sum())
        e = _err(y16, y32)
        print(f"   {label:34s} max|err|={e[0]:.3e}  NaN={e[1]}  inf elements of Pow in FP16={pow_inf}")


def check_and_summarize(references) -> None:
    print("\n== checks and summary ==")
    print(f"{'file':24s} {'opset':>5s} {'nodes':>5s} {'bytes':>8s}  inputs -> outputs")
    for path in sorted(OUT_DIR.glob("*.onnx")):
        model = onnx.load(str(path))
        onnx.checker.check_model(model, full_check=True)
        assert not any(
            t.data_location == TensorProto.EXTERNAL for t in model.graph.initializer
        ), f"{path.name} has external data"
        size = path.stat().st_size
        assert size < MAX_BYTES, f"{path.name} is {size} bytes"
        opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))

        def fmt(vi):
            tt = vi.type.tensor_type
            dims = [d.dim_param or d.dim_value for d in tt.shape.dim]
            return f"{vi.name}:{TensorProto.DataType.Name(tt.elem_type)}{dims}"

        feeds = references.get(path.name, {}).get("feeds")
        if feeds is None:
            feeds = {}
            for vi in model.graph.input:
                dims = [d.dim_value or 2 for d in vi.type.tensor_type.shape.dim]
                feeds[vi.name] = np.random.default_rng(SEED).standard_normal(dims).astype(np.float32)
        outs = _run(path, feeds)
        assert all(np.isfinite(o).all() for o in outs), path.name
        extra = ""
        expect = references.get(path.name, {}).get("expect")
        if expect is not None:
            extra = f"  max|ort - reference|={np.abs(outs[0] - expect).max():.2e}"
        counts = Counter(node.op_type for node in model.graph.node)
        print(
            f"{path.name:24s} {opset:5d} {len(model.graph.node):5d} {size:8d}  "
            f"{', '.join(fmt(v) for v in model.graph.input)} -> {', '.join(fmt(v) for v in model.graph.output)}{extra}"
        )
        print("    ops: " + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())))


def mixed_autocast_island() -> None:
    """For the record: why the RMS-norm island of mixed_autocast.onnx is kept in FP32."""
    print("\n== mixed_autocast.onnx: the FP32 island under large activations ==")
    w = _inits("mixed_autocast.onnx")
    x = np.random.default_rng(SEED).standard_normal((4, HIDDEN)).astype(np.float32)
    for scale in (1.0, 100.0):
        xs = x * np.float32(scale)
        y = _run(OUT_DIR / "mixed_autocast.onnx", {"x": xs})[0]
        h = np.maximum(xs.astype(np.float16) @ w["fc1.weight"] + w["fc1.bias"], np.float16(0))
        with np.errstate(all="ignore"):
            ss16 = (h * h).sum(-1, keepdims=True, dtype=np.float16)  # the island, had it been FP16
        print(
            f"   x*{scale:<5g} max|relu out|={float(np.abs(h).max()):8.2f}  ORT output finite={bool(np.isfinite(y).all())}  "
            f"sum of squares in FP16: inf in {int(np.isinf(ss16).sum())}/{ss16.size} rows"
        )


def main() -> int:
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    torch.use_deterministic_algorithms(True)
    encoder = make_encoders()
    convnet = make_convnet()
    make_mixed_autocast()
    make_qdq_linear()

    enc14 = onnx.load(str(OUT_DIR / "encoder_opset14.onnx"))
    print("== example node names (encoder_opset14.onnx) ==")
    for node in enc14.graph.node:
        if node.name.startswith("/encoder/layer.0/attention/output/LayerNorm/") or node.op_type in ("Softmax", "Erf"):
            print(f"   {node.op_type:12s} {node.name}")

    rng = np.random.default_rng(SEED)
    x_enc = rng.standard_normal((3, 7, HIDDEN)).astype(np.float32)  # dims differ from export: dynamic axes
    x_img = rng.random((3, 3, 32, 32), dtype=np.float32)
    x_mlp = rng.standard_normal((5, HIDDEN)).astype(np.float32)
    with torch.no_grad():
        refs = {
            "encoder_opset14.onnx": {"feeds": {"hidden_states": x_enc}, "expect": encoder(torch.from_numpy(x_enc)).numpy()},
            "encoder_opset17.onnx": {"feeds": {"hidden_states": x_enc}, "expect": encoder(torch.from_numpy(x_enc)).numpy()},
            "convnet.onnx": {"feeds": {"image": x_img}, "expect": convnet(torch.from_numpy(x_img)).numpy()},
            "mixed_autocast.onnx": {"feeds": {"x": x_mlp}, "expect": mixed_autocast_numpy(x_mlp)},
            "qdq_linear.onnx": {"feeds": {"x": x_mlp}, "expect": qdq_linear_numpy(x_mlp)},
        }
    check_and_summarize(refs)
    mixed_autocast_island()
    outlier_regime(encoder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
