"""Assemble the kgen / ForeignNode inspector fixtures of ``bert_tiny_opset14.onnx`` (no GPU, no TensorRT).

``python tests/data/inspector/make_kgen_fixtures.py`` writes, beside this script:

* ``bert_tiny_kgen_trt10.json``: TensorRT 10.x DETAILED schema (``Format/Datatype``, ``Bindings``,
  Metadata entries joined by ``\\x1e``): the strongly typed realization of
  ``fp16; fp32: */LayerNorm/*`` as a Myelin region ``myl0`` split into ``kgen``/``gemm`` kernels;
* ``bert_tiny_kgen_trt11.json``: the same layers in the 11.x schema (``Format`` and ``DataType``
  split, ``I/O Tensors``; Metadata joined by ``\\x1f``);
* ``bert_tiny_foreignnode_names.json``: the same engine at ``LAYER_NAMES_ONLY`` verbosity: one
  ``{ForeignNode[first...last]}`` layer and a reformat, names only.

NOT captured from a real engine: every structural element follows a public source quoted in the
``.SOURCES.md`` file of each fixture; the node names are the real export's, the grouping of nodes
into kernels is this script's (one kernel per module scope, as the sources show Myelin doing:
a dense layer's MatMul+Add in one ``gemm``, the attention core in one ``_gemm_mha_v2`` kernel, a
residual Add with its LayerNorm in one ``kgen``). Shape math (int64 Shape/Gather/Concat ...) is
in no layer's Metadata (TensorRT folds it at build time), which the ledger must survive. Deterministic.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import onnx

from pytest_trt.model.load import load_model
from pytest_trt.plan.policy import PrecisionPolicy
from pytest_trt.realize import realize_strong

HERE = Path(__file__).resolve().parent
MODEL = HERE.parent / "bert_tiny_opset14.onnx"
POLICY = PrecisionPolicy(default="fp16", keep_fp32=("*/LayerNorm/*",))
SHAPES = {"input_ids": [1, 8], "attention_mask": [1, 8]}
#: ONNX element type -> the plain data-type strings of Myelin kernels (trex activations.py "kgen formats")
KGEN_TYPE = {1: "Float", 10: "Half", 16: "BFloat16", 6: "Int32", 7: "Int64", 9: "Bool"}
#: op -> the abbreviation in __myl_ kernel names (#4397: Gath, Mul, Add, Cast, Mean, Sub, Sqrt, Div, Resh, Tran)
ABBREV = {"ReduceMean": "Mean", "Gather": "Gath", "Reshape": "Resh", "Transpose": "Tran", "Softmax": "Soft",
          "Unsqueeze": "Unsq", "Concat": "Conc", "Slice": "Slic", "Where": "Wher", "Equal": "Equa"}
GEMM_TACTIC = "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize32x32x64_stage6_warpsize2x2x1_tensor16x8x16"
MHA_TACTIC = "_gemm_mha_v2_0x957a2fe283f77dcf35c142c1390a3e6a"


def _scope(name: str) -> str:
    head, sep, _ = name.rpartition("/")
    return head if sep else "/"


def _groups(realized: onnx.ModelProto, plan) -> list[list[onnx.NodeProto]]:
    """The realized graph's compute nodes cut into kernels the way the sources show Myelin cutting them:
    a MatMul/Gemm with a weight and its bias Add in one ``gemm``; activation x activation MatMul ...
    Softmax ... MatMul in one ``_gemm_mha_v2`` kernel; every other run of nodes between them in one
    ``kgen`` (pointwise and reductions fused, #4397's ``__myl_GathGathGathMulAdd...``). The
    realization's Casts join the kernel of their producer, else the next one. Identity nodes of
    weights and shape math are folded by the builder: in no kernel."""
    weights = {i.name for i in realized.graph.initializer}
    for n in realized.graph.node:  # a weight seen through Identity/Cast is still a weight
        if n.op_type in ("Identity", "Cast") and n.input and n.input[0] in weights:
            weights.update(n.output)
    groups: list[list[onnx.NodeProto]] = []
    kinds: list[str] = []
    pending: list[onnx.NodeProto] = []

    def start(kind, nodes):
        groups.append(nodes)
        kinds.append(kind)

    for node in realized.graph.node:
        decision = plan.nodes.get(node.name)
        if decision is None:  # a Cast of the realization
            if groups and any(node.input[0] in n.output for n in groups[-1]):
                groups[-1].append(node)
            else:
                pending.append(node)
            continue
        if decision.kind != "compute" or node.op_type in ("Constant", "Identity"):
            continue  # folded by the builder: in no layer's Metadata
        gemm = node.op_type in ("MatMul", "Gemm")
        if gemm and any(i in weights for i in node.input):
            start("gemm", pending + [node])
        elif gemm and kinds and kinds[-1] == "mha" and sum(n.op_type == "MatMul" for n in groups[-1]) == 1:
            groups[-1].extend(pending + [node])
            kinds[-1] = "mha-closed"
        elif gemm:
            start("mha", pending + [node])
        elif kinds and kinds[-1] == "gemm" and node.op_type == "Add" and len(groups[-1]) - len(pending) <= 2 \
                and _scope(node.name) == _scope(groups[-1][-1].name):
            groups[-1].extend(pending + [node])  # the bias Add of the dense layer
            kinds[-1] = "gemm-closed"
        elif kinds and kinds[-1] in ("kgen", "mha"):
            groups[-1].extend(pending + [node])
        else:
            start("kgen", pending + [node])
        pending = []
    if pending:
        groups[-1].extend(pending)
    return groups


def _boundary(group, consumers, graph_outputs, types, shapes):
    names = {n.name for n in group}
    produced = {o for n in group for o in n.output}
    ins, outs = [], []
    for n in group:
        for i in n.input:
            if i and i not in produced and i not in ins and i in types:
                ins.append(i)
        for o in n.output:
            if o in graph_outputs or any(c not in names for c in consumers.get(o, ())):
                outs.append(o)
    return ([(i, types[i], shapes.get(i, [])) for i in ins], [(o, types.get(o, 1), shapes.get(o, [])) for o in outs])


def _layer(i: int, group, ins, outs, io_names: set, renamed: dict) -> dict:
    ops = [n.op_type for n in group]
    compute = [n for n in group if n.op_type != "Cast"]
    kind, tactic = "kgen", None
    if "Softmax" in ops and sum(o == "MatMul" for o in ops) == 2:
        name, kind, tactic = f"_gemm_mha_v2_myl0_{i}", "kgen", MHA_TACTIC
    elif compute and compute[0].op_type in ("MatMul", "Gemm") and len(compute) <= 2 and "Softmax" not in ops:
        name = f"{compute[0].name.replace('.', '_')}_myl0_{i}"
        kind, tactic = "gemm", GEMM_TACTIC
    else:
        abbrev = "".join(ABBREV.get(o, o[:4]) for o in ops[:14])
        name = f"__myl_{abbrev}_myl0_{i}"
    if tactic is None:
        tactic = f"{name.rsplit('_myl0_', 1)[0]}_0x{hashlib.sha256(name.encode()).hexdigest()[:32]}"

    def tensor(t):
        tname, elem, dims = t
        if tname not in io_names:  # Myelin's internal tensor names (#4397: __myln_k_arg__bb1_65, __mye55065)
            tname = renamed.setdefault(tname, f"__myln_k_arg__bb1_{len(renamed) + 1}")
        return {"Name": tname, "Dimensions": dims, "Format/Datatype": KGEN_TYPE.get(elem, "Float")}

    meta = "\x1e".join(f"[ONNX Layer: {n.name}]" for n in group)
    return {"Name": name, "LayerType": kind, "Inputs": [tensor(t) for t in ins], "Outputs": [tensor(t) for t in outs],
            "TacticName": tactic, "StreamId": 0, "Metadata": meta}


def _types_and_shapes(realized: onnx.ModelProto):
    fixed = onnx.ModelProto()
    fixed.CopyFrom(realized)
    for inp in fixed.graph.input:
        if inp.name in SHAPES:
            for d, v in zip(inp.type.tensor_type.shape.dim, SHAPES[inp.name], strict=True):
                d.ClearField("dim_param")
                d.dim_value = v
    inferred = onnx.shape_inference.infer_shapes(fixed)
    types, shapes = {}, {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
        tt = vi.type.tensor_type
        types[vi.name] = tt.elem_type
        shapes[vi.name] = [d.dim_value if d.HasField("dim_value") else -1 for d in tt.shape.dim]
    return types, shapes


def build() -> dict[str, dict]:
    model = load_model(MODEL)
    plan = POLICY.resolve(model)
    realized = realize_strong(plan)
    types, shapes = _types_and_shapes(realized)
    consumers: dict[str, list[str]] = {}
    for n in realized.graph.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n.name)
    graph_outputs = {o.name for o in realized.graph.output}
    io_names = {i.name for i in realized.graph.input} | graph_outputs
    renamed: dict[str, str] = {}
    layers = []
    groups = _groups(realized, plan)
    for i, group in enumerate(groups):
        ins, outs = _boundary(group, consumers, graph_outputs, types, shapes)
        layers.append(_layer(i, group, ins, outs, io_names, renamed))
    # the output reformat of #4397 ("Reformatting CopyNode for Output Tensor 0 to ..."), no Metadata
    last = layers[-1]
    out = last["Outputs"][0]
    reformat_in = {**out, "Name": f"Reformatted Output Tensor 0 to {last['Name']}"}
    last["Outputs"][0] = dict(reformat_in)
    layers.append({"Name": f"Reformatting CopyNode for Output Tensor 0 to {last['Name']}", "LayerType": "Reformat",
                   "Inputs": [reformat_in], "Outputs": [out], "TacticName": "", "StreamId": 0, "Metadata": ""})
    bindings = [i.name for i in realized.graph.input] + [o.name for o in realized.graph.output]
    source = ("Hand-assembled, NOT captured from a real engine: see bert_tiny_kgen_trt10.SOURCES.md. TensorRT 10.x "
              "DETAILED layer information of the strongly typed realization of 'fp16; fp32: */LayerNorm/*' of "
              "tests/data/bert_tiny_opset14.onnx, made by tests/data/inspector/make_kgen_fixtures.py")
    trt10 = {"_source": source, "Layers": layers, "Bindings": bindings}
    trt11 = {"_source": source.replace("10.x", "11.x").replace("trt10.SOURCES", "trt11.SOURCES"),
             "Layers": [_as_11(layer) for layer in layers],
             "I/O Tensors": [{"Name": n, "IOMode": "Input" if n in SHAPES else "Output",
                              "DataType": KGEN_TYPE[types[n]], "Dimensions": shapes[n], "Location": "Device",
                              "IsShapeInferenceIO": False} for n in bindings]}
    in_plan = [n.name for g in groups for n in g if n.name in plan.nodes]
    foreign = f"{{ForeignNode[{in_plan[0]}...{in_plan[-1]}]}}"  # named by its first and last node (#4397, #2308)
    names_only = {"_source": "Hand-assembled, NOT captured from a real engine: see bert_tiny_foreignnode_names."
                             "SOURCES.md. The same engine at ProfilingVerbosity.LAYER_NAMES_ONLY: names only.",
                  "Layers": [foreign, f"Reformatting CopyNode for Output Tensor 0 to {foreign}"], "Bindings": bindings}
    return {"bert_tiny_kgen_trt10.json": trt10, "bert_tiny_kgen_trt11.json": trt11,
            "bert_tiny_foreignnode_names.json": names_only}


def _as_11(layer: dict) -> dict:
    def split(t):
        return {"Name": t["Name"], "Dimensions": t["Dimensions"], "Format": "Row major linear",
                "DataType": t["Format/Datatype"]}

    return {**layer, "Inputs": [split(t) for t in layer["Inputs"]], "Outputs": [split(t) for t in layer["Outputs"]],
            "Metadata": layer["Metadata"].replace("\x1e", "\x1f")}


def main() -> None:
    for name, data in build().items():
        (HERE / name).write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {name}: {len(data['Layers'])} layers")


if __name__ == "__main__":
    main()
