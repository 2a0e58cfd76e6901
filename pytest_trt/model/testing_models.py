"""Small, deterministic ONNX models for tests across the project.

Each builder returns an ``onnx.ModelProto`` that passes
``onnx.checker.check_model(full_check=True)``, with PyTorch-style node names (as
``torch.onnx.export`` writes them) so patterns such as ``*/LayerNorm/*`` behave as on
real exports. Weights are drawn from ``numpy.random.default_rng(seed)``: the same
arguments give the same bytes. Default opset is 14 unless stated.

==============================  =====================================================
builder                         what it exercises
==============================  =====================================================
decomposed_layernorm_block      dense MatMul+Add, LayerNorm decomposed into 9 nodes
                                (ReduceMean, Sub, Pow, ..., Add_1) fed by float
                                Constants, a following MatMul. The dense weight is
                                near identity, so input magnitudes reach the LayerNorm
                                (a probe of ~400 overflows an FP16 Pow).
layernorm17_block               the same with one ``LayerNormalization`` node (opset 17)
attention_block                 embedding Gather on int64 ids, Q/K/V MatMuls, Reshape by
                                an int64 shape initializer, Transpose, Softmax, an int64
                                attention mask Cast to float and scaled by float32 min,
                                and shape math (Shape -> Gather -> Concat -> Reshape)
shared_initializer_model        one weight read by Gather, MatMul and (torch's tied-weight
                                pattern) an Identity
resize_model                    Resize with a ``scales`` initializer (``tensor(float)``
                                by schema, whatever the data precision)
if_model                        an If whose branches read an outer-scope tensor
==============================  =====================================================

:func:`sample_feeds` makes inputs for any of them; :func:`graph_model` assembles one-off
graphs for tests.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ..errors import UsageError

FLOAT, INT64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
VOCAB_KEY = "pytest_trt.testing.vocab_size"


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------
def _ir_version(opset: int) -> int:
    # ONNX Runtime refuses IR versions newer than it knows; pick the one torch uses for the opset.
    return 8 if opset <= 18 else 9 if opset <= 20 else 10


def _model(graph: onnx.GraphProto, opset: int, **metadata) -> onnx.ModelProto:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="pytest_trt.testing_models")
    model.ir_version = _ir_version(opset)
    for key, value in metadata.items():
        prop = model.metadata_props.add()
        prop.key, prop.value = key, str(value)
    onnx.checker.check_model(model, full_check=True)
    return model


def _init(name: str, values) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values), name)


def _const(name: str, value, dtype=np.float32) -> onnx.NodeProto:
    """A Constant node named like torch's (``<scope>/Constant``) with output ``<name>_output_0``."""
    tensor = numpy_helper.from_array(np.asarray(value, dtype=dtype), f"{name}_value")
    return helper.make_node("Constant", [], [f"{name}_output_0"], name=name, value=tensor)


def _node(op: str, name: str, inputs: list[str], n_outputs: int = 1, **attrs) -> onnx.NodeProto:
    """A node whose outputs are named ``<name>_output_<i>`` (torch.onnx.export's convention)."""
    outputs = [f"{name}_output_{i}" for i in range(n_outputs)]
    return helper.make_node(op, inputs, outputs, name=name, **attrs)


def _out(node: onnx.NodeProto, index: int = 0) -> str:
    return node.output[index]


def _reduce_mean(name: str, x: str, opset: int) -> list[onnx.NodeProto]:
    """ReduceMean over the last axis: ``axes`` is an attribute before opset 18, an input from 18 on."""
    if opset < 18:
        return [_node("ReduceMean", name, [x], axes=[-1], keepdims=1)]
    axes = _const(f"{name}_axes", [-1], np.int64)
    return [axes, _node("ReduceMean", name, [x, _out(axes)], keepdims=1)]


def _dense(nodes: list, inits: list, scope: str, param: str, x: str, weight, bias) -> str:
    """MatMul + Add (bias first, as torch exports Linear), returns the output name."""
    inits += [_init(f"{param}.weight", weight), _init(f"{param}.bias", bias)]
    matmul = _node("MatMul", f"{scope}/MatMul", [x, f"{param}.weight"])
    add = _node("Add", f"{scope}/Add", [f"{param}.bias", _out(matmul)])
    nodes += [matmul, add]
    return _out(add)


# --------------------------------------------------------------------------------------
# builders
# --------------------------------------------------------------------------------------
def decomposed_layernorm_block(hidden: int = 64, opset: int = 14, *, seq: int = 8, batch: int = 1,
                               layer: str = "/encoder/layer.0", eps: float = 1e-12,
                               seed: int = 0) -> onnx.ModelProto:
    """BERT's ``attention/output`` block as torch.onnx exports it at opset < 17.

    Graph: ``hidden_states [batch, seq, hidden]`` -> dense (MatMul, Add) -> LayerNorm
    decomposed into ``{layer}/attention/output/LayerNorm/{ReduceMean, Sub, Pow,
    ReduceMean_1, Add, Sqrt, Div, Mul, Add_1}`` (Pow's exponent and eps come from
    Constant nodes ``.../LayerNorm/Constant`` and ``Constant_1``) -> MatMul
    ``{layer}/intermediate/dense/MatMul`` -> ``output [batch, seq, 2*hidden]``.

    The dense weight is identity plus 0.02 noise, so the LayerNorm sees the input's
    magnitude: inputs of ~400 make ``(x - mean)**2`` overflow FP16 (> 65504).
    """
    def decomposed(nodes: list, x: str, ln: str, ln_param: str) -> str:
        nodes += _reduce_mean(f"{ln}/ReduceMean", x, opset)
        mean = nodes[-1].output[0]
        sub = _node("Sub", f"{ln}/Sub", [x, mean])
        two = _const(f"{ln}/Constant", 2.0)
        pow_ = _node("Pow", f"{ln}/Pow", [_out(sub), _out(two)])
        nodes += [sub, two, pow_]
        nodes += _reduce_mean(f"{ln}/ReduceMean_1", _out(pow_), opset)
        var = nodes[-1].output[0]
        epsilon = _const(f"{ln}/Constant_1", eps)
        add = _node("Add", f"{ln}/Add", [var, _out(epsilon)])
        sqrt = _node("Sqrt", f"{ln}/Sqrt", [_out(add)])
        div = _node("Div", f"{ln}/Div", [_out(sub), _out(sqrt)])
        mul = _node("Mul", f"{ln}/Mul", [_out(div), f"{ln_param}.weight"])
        add1 = _node("Add", f"{ln}/Add_1", [_out(mul), f"{ln_param}.bias"])
        nodes += [epsilon, add, sqrt, div, mul, add1]
        return _out(add1)

    return _layernorm_block("decomposed_layernorm_block", decomposed, hidden=hidden, opset=opset, seq=seq,
                            batch=batch, layer=layer, seed=seed)


def layernorm17_block(hidden: int = 64, opset: int = 17, *, seq: int = 8, batch: int = 1,
                      layer: str = "/encoder/layer.0", eps: float = 1e-12, seed: int = 0) -> onnx.ModelProto:
    """:func:`decomposed_layernorm_block` with one ``LayerNormalization`` node (opset >= 17).

    The LayerNorm node is ``{layer}/attention/output/LayerNorm/LayerNormalization``, as
    torch.onnx exports it at opset 17; same weights for the same seed.
    """
    if opset < 17:
        raise UsageError(f"LayerNormalization needs opset >= 17, got {opset}")
    def fused(nodes: list, x: str, ln: str, ln_param: str) -> str:
        norm = _node("LayerNormalization", f"{ln}/LayerNormalization", [x, f"{ln_param}.weight", f"{ln_param}.bias"],
                     axis=-1, epsilon=eps)
        nodes.append(norm)
        return _out(norm)

    return _layernorm_block("layernorm17_block", fused, hidden=hidden, opset=opset, seq=seq, batch=batch,
                            layer=layer, seed=seed)


def _layernorm_block(graph_name: str, normalize, *, hidden: int, opset: int, seq: int, batch: int, layer: str,
                     seed: int) -> onnx.ModelProto:
    """The BERT attention-output block around a LayerNorm that ``normalize(nodes, x, ln, ln_param)``
    appends to ``nodes`` (returning its output): dense -> LayerNorm -> intermediate MatMul. The
    weights are drawn in one order, so both LayerNorm forms get the same weights for a seed."""
    rng = np.random.default_rng(seed)
    param = layer.strip("/")
    ln = f"{layer}/attention/output/LayerNorm"
    ln_param = f"{param}.attention.output.LayerNorm"
    nodes: list = []
    inits: list = []
    x = _dense(nodes, inits, f"{layer}/attention/output/dense", f"{param}.attention.output.dense", "hidden_states",
               (np.eye(hidden) + 0.02 * rng.standard_normal((hidden, hidden))).astype(np.float32),
               (0.01 * rng.standard_normal(hidden)).astype(np.float32))
    inits += [
        _init(f"{ln_param}.weight", (1.0 + 0.1 * rng.standard_normal(hidden)).astype(np.float32)),
        _init(f"{ln_param}.bias", (0.1 * rng.standard_normal(hidden)).astype(np.float32)),
    ]
    normalized = normalize(nodes, x, ln, ln_param)
    inits.append(_init(f"{param}.intermediate.dense.weight",
                       (rng.standard_normal((hidden, 2 * hidden)) / math.sqrt(hidden)).astype(np.float32)))
    nodes.append(helper.make_node("MatMul", [normalized, f"{param}.intermediate.dense.weight"], ["output"],
                                  name=f"{layer}/intermediate/dense/MatMul"))
    graph = helper.make_graph(
        nodes, graph_name,
        [helper.make_tensor_value_info("hidden_states", FLOAT, [batch, seq, hidden])],
        [helper.make_tensor_value_info("output", FLOAT, [batch, seq, 2 * hidden])],
        inits,
    )
    return _model(graph, opset)


def attention_block(hidden: int = 32, heads: int = 2, seq: int = 8, vocab: int = 64, opset: int = 14, *,
                    seed: int = 0) -> onnx.ModelProto:
    """Embedding lookup plus one self-attention block, BERT-style names.

    Inputs ``input_ids`` and ``attention_mask`` (int64 ``[1, seq]``), output
    ``output [1, seq, hidden]``. Contains fixed nodes (Shape, Gather on int64, Concat,
    Unsqueeze on the mask) and compute nodes (Gather on the embedding table, MatMul,
    Add, Reshape, Transpose, Div, Softmax, the mask's Cast int64 -> float, Sub, Mul).
    The mask is scaled by ``float32`` min as transformers does, so FP16 realizations
    clamp that constant to -65504.
    """
    if hidden % heads:
        raise UsageError(f"hidden ({hidden}) must be a multiple of heads ({heads})")
    rng = np.random.default_rng(seed)
    head_dim = hidden // heads
    att = "/attention/self"
    nodes: list = []
    inits: list = [
        _init("embeddings.word_embeddings.weight", rng.standard_normal((vocab, hidden)).astype(np.float32)),
        _init("attention.self.heads_shape", np.array([1, seq, heads, head_dim], np.int64)),
    ]
    emb = _node("Gather", "/embeddings/word_embeddings/Gather", ["embeddings.word_embeddings.weight", "input_ids"])
    nodes.append(emb)

    def weight():
        return (rng.standard_normal((hidden, hidden)) / math.sqrt(hidden)).astype(np.float32)

    def bias():
        return (0.02 * rng.standard_normal(hidden)).astype(np.float32)

    heads_out = {}
    for i, name in enumerate(("query", "key", "value")):
        h = _dense(nodes, inits, f"{att}/{name}", f"attention.self.{name}", _out(emb), weight(), bias())
        suffix = f"_{i}" if i else ""
        reshape = _node("Reshape", f"{att}/Reshape{suffix}", [h, "attention.self.heads_shape"])
        perm = [0, 2, 3, 1] if name == "key" else [0, 2, 1, 3]
        transpose = _node("Transpose", f"{att}/Transpose{suffix}", [_out(reshape)], perm=perm)
        nodes += [reshape, transpose]
        heads_out[name] = _out(transpose)

    scores = _node("MatMul", f"{att}/MatMul", [heads_out["query"], heads_out["key"]])
    scale = _const(f"{att}/Constant", math.sqrt(head_dim))
    scaled = _node("Div", f"{att}/Div", [_out(scores), _out(scale)])
    axes = _const("/attention/Constant", [1, 2], np.int64)
    unsq = _node("Unsqueeze", "/attention/Unsqueeze", ["attention_mask", _out(axes)])
    cast = _node("Cast", "/attention/Cast", [_out(unsq)], to=FLOAT)
    one = _const("/attention/Constant_1", 1.0)
    inverted = _node("Sub", "/attention/Sub", [_out(one), _out(cast)])
    fmin = _const("/attention/Constant_2", np.finfo(np.float32).min)
    mask = _node("Mul", "/attention/Mul", [_out(inverted), _out(fmin)])
    masked = _node("Add", f"{att}/Add", [_out(scaled), _out(mask)])
    probs = _node("Softmax", f"{att}/Softmax", [_out(masked)], axis=-1)
    context = _node("MatMul", f"{att}/MatMul_1", [_out(probs), heads_out["value"]])
    merged = _node("Transpose", f"{att}/Transpose_3", [_out(context)], perm=[0, 2, 1, 3])
    nodes += [scores, scale, scaled, axes, unsq, cast, one, inverted, fmin, mask, masked, probs, context, merged]

    # Shape math as torch exports view(*x.shape[:2], hidden): fixed int64 nodes.
    shape = _node("Shape", f"{att}/Shape", [_out(merged)])
    first_two = _const(f"{att}/Constant_1", [0, 1], np.int64)
    dims = _node("Gather", f"{att}/Gather", [_out(shape), _out(first_two)], axis=0)
    width = _const(f"{att}/Constant_2", [hidden], np.int64)
    new_shape = _node("Concat", f"{att}/Concat", [_out(dims), _out(width)], axis=0)
    flat = _node("Reshape", f"{att}/Reshape_3", [_out(merged), _out(new_shape)])
    nodes += [shape, first_two, dims, width, new_shape, flat]

    inits += [_init("attention.output.dense.weight", weight()), _init("attention.output.dense.bias", bias())]
    out_mm = _node("MatMul", "/attention/output/dense/MatMul", [_out(flat), "attention.output.dense.weight"])
    nodes += [out_mm, helper.make_node("Add", ["attention.output.dense.bias", _out(out_mm)], ["output"],
                                       name="/attention/output/dense/Add")]
    graph = helper.make_graph(
        nodes, "attention_block",
        [helper.make_tensor_value_info("input_ids", INT64, [1, seq]),
         helper.make_tensor_value_info("attention_mask", INT64, [1, seq])],
        [helper.make_tensor_value_info("output", FLOAT, [1, seq, hidden])],
        inits,
    )
    return _model(graph, opset, **{VOCAB_KEY: vocab})


def shared_initializer_model(vocab: int = 32, hidden: int = 16, seq: int = 4, opset: int = 14, *,
                             seed: int = 0) -> onnx.ModelProto:
    """One weight ``transformer.wte.weight [vocab, hidden]`` read three ways (GPT-2's tied weights).

    ``/transformer/wte/Gather`` looks up ``input_ids``; ``/lookup/MatMul`` multiplies
    soft token probabilities by the same weight; ``/tied/Identity`` aliases it (how
    torch.onnx exports tied parameters) for ``/tied/MatMul``. Keeping the Gather in FP32
    while the MatMuls run FP16 needs the weight twice: ``W`` and ``W__fp16``.
    Output ``output [1, seq, hidden]``.
    """
    rng = np.random.default_rng(seed)
    w = "transformer.wte.weight"
    inits = [
        _init(w, rng.standard_normal((vocab, hidden)).astype(np.float32)),
        _init("mix.weight", (rng.standard_normal((hidden, vocab)) / math.sqrt(hidden)).astype(np.float32)),
    ]
    gather = _node("Gather", "/transformer/wte/Gather", [w, "input_ids"])
    tanh = _node("Tanh", "/transformer/Tanh", [_out(gather)])
    mix = _node("MatMul", "/mix/MatMul", [_out(tanh), "mix.weight"])
    probs = _node("Softmax", "/mix/Softmax", [_out(mix)], axis=-1)
    lookup = _node("MatMul", "/lookup/MatMul", [_out(probs), w])
    alias = helper.make_node("Identity", [w], ["lm_head.weight"], name="/tied/Identity")
    tied = _node("MatMul", "/tied/MatMul", [_out(probs), "lm_head.weight"])
    total = helper.make_node("Add", [_out(lookup), _out(tied)], ["output"], name="/Add")
    graph = helper.make_graph(
        [gather, tanh, mix, probs, lookup, alias, tied, total], "shared_initializer_model",
        [helper.make_tensor_value_info("input_ids", INT64, [1, seq])],
        [helper.make_tensor_value_info("output", FLOAT, [1, seq, hidden])],
        inits,
    )
    return _model(graph, opset, **{VOCAB_KEY: vocab})


def resize_model(opset: int = 14, *, channels: int = 2, size: int = 4, seed: int = 0) -> onnx.ModelProto:
    """``x [1, C, S, S]`` -> Mul -> Resize(scales=[1, 1, 2, 2], nearest) -> Add -> ``output [1, C, 2S, 2S]``.

    Resize's ``scales`` input is ``tensor(float)`` by schema: a realization must keep it
    FP32 even when the Resize runs in FP16. ``roi`` is omitted (``""``) as torch exports it.
    """
    rng = np.random.default_rng(seed)
    inits = [
        _init("pre.weight", (1.0 + 0.1 * rng.standard_normal((1, channels, 1, 1))).astype(np.float32)),
        _init("up.scales", np.array([1.0, 1.0, 2.0, 2.0], np.float32)),
        _init("post.bias", (0.1 * rng.standard_normal((1, channels, 1, 1))).astype(np.float32)),
    ]
    mul = _node("Mul", "/pre/Mul", ["x", "pre.weight"])
    resize = _node("Resize", "/up/Resize", [_out(mul), "", "up.scales"], mode="nearest")
    add = helper.make_node("Add", [_out(resize), "post.bias"], ["output"], name="/post/Add")
    graph = helper.make_graph(
        [mul, resize, add], "resize_model",
        [helper.make_tensor_value_info("x", FLOAT, [1, channels, size, size])],
        [helper.make_tensor_value_info("output", FLOAT, [1, channels, 2 * size, 2 * size])],
        inits,
    )
    return _model(graph, opset)


def if_model(opset: int = 14, *, seed: int = 0) -> onnx.ModelProto:
    """``x [2, 3]`` -> Mul -> If(sum > 0: h + 1, else: h - 1) -> Relu -> ``output [2, 3]``.

    Both branches read the outer-scope tensor ``/pre/Mul_output_0`` directly (no If
    input carries it), so a realization that stores it in FP16 must hand the kept-as-
    written (FP32) subgraphs a cast copy.
    """
    rng = np.random.default_rng(seed)
    h = "/pre/Mul_output_0"
    inits = [_init("pre.weight", (1.0 + 0.1 * rng.standard_normal((2, 3))).astype(np.float32)),
             _init("zero", np.array(0.0, np.float32))]
    mul = _node("Mul", "/pre/Mul", ["x", "pre.weight"])
    total = _node("ReduceSum", "/cond/ReduceSum", [h], keepdims=0)
    cond = _node("Greater", "/cond/Greater", [_out(total), "zero"])

    def branch(name: str, op: str, value: float) -> onnx.GraphProto:
        const = numpy_helper.from_array(np.array(value, np.float32), f"{name}.value")
        node = helper.make_node(op, [h, f"{name}.value"], [f"{name}_out"], name=f"/{name}/{op}")
        return helper.make_graph([node], name, [], [helper.make_tensor_value_info(f"{name}_out", FLOAT, [2, 3])],
                                 [const])

    branch_if = _node("If", "/branch/If", [_out(cond)], then_branch=branch("then", "Add", 1.0),
                      else_branch=branch("else", "Sub", 1.0))
    relu = helper.make_node("Relu", [_out(branch_if)], ["output"], name="/post/Relu")
    graph = helper.make_graph(
        [mul, total, cond, branch_if, relu], "if_model",
        [helper.make_tensor_value_info("x", FLOAT, [2, 3])],
        [helper.make_tensor_value_info("output", FLOAT, [2, 3])],
        inits,
    )
    return _model(graph, opset)


def graph_model(nodes, inputs, outputs, initializers=(), *, opset: int = 14, value_info=(),
                name: str = "graph_model", check: bool = True) -> onnx.ModelProto:
    """A model from parts, for one-off test graphs.

    ``inputs``/``outputs``/``value_info`` are ``(name, elem_type, shape)`` triples (or
    ValueInfoProtos); ``initializers`` are TensorProtos or ``(name, numpy array)`` pairs.
    With ``check=False`` the model is returned without running the checker (for
    models meant to be rejected).
    """

    def info(item):
        return item if isinstance(item, onnx.ValueInfoProto) else helper.make_tensor_value_info(*item)

    inits = [i if isinstance(i, onnx.TensorProto) else _init(i[0], i[1]) for i in initializers]
    graph = helper.make_graph(list(nodes), name, [info(i) for i in inputs], [info(o) for o in outputs], inits,
                              value_info=[info(v) for v in value_info])
    if not check:
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = _ir_version(opset)
        return model
    return _model(graph, opset)


#: name -> zero-argument builder, for parametrized tests.
BUILDERS: dict[str, Callable[[], onnx.ModelProto]] = {
    "decomposed_layernorm_block": decomposed_layernorm_block,
    "decomposed_layernorm_block_op18": lambda: decomposed_layernorm_block(opset=18),
    "layernorm17_block": layernorm17_block,
    "attention_block": attention_block,
    "shared_initializer_model": shared_initializer_model,
    "resize_model": resize_model,
    "if_model": if_model,
}


def sample_feeds(model: onnx.ModelProto, *, seed: int = 0, scale: float = 1.0) -> dict[str, np.ndarray]:
    """Deterministic inputs for a model from this module (static shapes).

    Float inputs: ``scale * standard_normal``. int64 inputs named ``*mask*``: ones with
    the last position 0 (so masking matters); other int64 inputs: token ids below the
    model's vocabulary size (metadata ``pytest_trt.testing.vocab_size``, else 2).
    """
    rng = np.random.default_rng(seed)
    meta = {p.key: p.value for p in model.metadata_props}
    vocab = int(meta.get(VOCAB_KEY, 2))
    inits = {i.name for i in model.graph.initializer}
    feeds: dict[str, np.ndarray] = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        shape = tuple(d.dim_value or 1 for d in vi.type.tensor_type.shape.dim)
        elem = vi.type.tensor_type.elem_type
        if elem == FLOAT:
            feeds[vi.name] = (scale * rng.standard_normal(shape)).astype(np.float32)
        elif elem == INT64 and "mask" in vi.name:
            mask = np.ones(shape, np.int64)
            mask[..., -1] = 0
            feeds[vi.name] = mask
        elif elem == INT64:
            feeds[vi.name] = rng.integers(0, vocab, size=shape, dtype=np.int64)
        else:
            raise UsageError(f"sample_feeds: input {vi.name!r} has element type {elem}; give feeds yourself")
    return feeds


def export_feeds(model, *, seed: int = 0) -> dict[str, np.ndarray]:
    """Deterministic inputs for the real exports in tests/data (symbolic dims: ``*seq*`` -> 8,
    others -> 2). Float inputs standard normal; int64 ``*mask*`` inputs all ones; other
    int64 inputs token ids below 100 (the tiny exports' vocabularies are larger).

    ``model`` is a :class:`pytest_trt.model.load.Model`.
    """
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in model.proto.graph.input:
        tensor = vi.type.tensor_type
        shape = [d.dim_value or (8 if "seq" in d.dim_param else 2) for d in tensor.shape.dim]
        if tensor.elem_type == FLOAT:
            feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
        elif "mask" in vi.name:
            feeds[vi.name] = np.ones(shape, np.int64)
        else:
            feeds[vi.name] = rng.integers(0, 100, shape).astype(np.int64)
    return feeds
