"""Decoder-shaped ONNX models of any size, written without ever holding their weights in memory.

Multi-gigabyte exports (LLMs, diffusion UNets) keep their weights as ONNX external data; the
``big_model`` test tier and ``bench/big_model.py`` need such models at 1.6 and 2.7 GB without
downloading anything and without the 2-5x of the weights in memory that building them through
``onnx.numpy_helper`` and ``onnx.save(save_as_external_data=True)`` costs.
:func:`write_decoder` writes the graph (a few hundred kB) with ``onnx``'s own structures and
*streams* the external-data file: each weight is a few random blocks tiled with a per-tensor
shift, generated and written a few MiB at a time. Offsets are aligned to 64 KiB (as
``onnx.save_model`` aligns them) so ONNX Runtime and TensorRT can map the file.

The shape is a Llama-style decoder without attention (what matters here is weight bytes, not
the op mix; hidden 2048 and intermediate 5632 are TinyLlama's, so a layer holds 138 MB and FP16
rounding accumulates over a realistic 12-20 layers): ``inputs_embeds [1, seq, hidden]`` -> per layer an RMSNorm decomposed as the
TorchScript exporter writes it (``Pow, ReduceMean, Add, Sqrt, Div, Mul, Mul_1`` under
``/model/layers.N/input_layernorm/``), an MLP (``gate_proj``, ``act_fn`` = SiLU, ``up_proj``,
``down_proj``: ``MatMul`` nodes) and the residual ``Add`` -> a final ``/model/norm/`` ->
``last_hidden_state``. Weights are scaled so that FP16 and BF16 realizations pass the default
tolerances (the residual stream stays O(1)).

>>> info = write_decoder("big/decoder.onnx", target_bytes=2_300_000_000)   # doctest: +SKIP
>>> info.weight_bytes > 2**31, info.layers                                  # doctest: +SKIP
(True, 17)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper

__all__ = ["ALIGN", "DecoderInfo", "decoder_layers_for", "write_decoder"]

#: alignment of every tensor in the data file (onnx.save_model's allocation granularity)
ALIGN = 65536
_BLOCK = 65521  # elements of the random block: prime, so the tiling does not line up with rows
_CHUNK = 1 << 22  # elements generated and written at a time (16 MiB of float32)


@dataclass(frozen=True)
class DecoderInfo:
    """What :func:`write_decoder` wrote."""

    path: Path
    data_path: Path
    layers: int
    hidden: int
    intermediate: int
    seq: int
    parameters: int
    weight_bytes: int  # bytes of the initializers (the data file is larger by the alignment padding)
    nodes: int


def _layer_bytes(hidden: int, intermediate: int) -> int:
    return 4 * (3 * hidden * intermediate + hidden)


def decoder_layers_for(target_bytes: int, hidden: int = 2048, intermediate: int = 5632) -> int:
    """The number of layers whose weights come closest to ``target_bytes`` (at least 1)."""
    fixed = 4 * hidden  # the final norm
    return max(1, round((target_bytes - fixed) / _layer_bytes(hidden, intermediate)))


class _DataWriter:
    """Appends tensors to the external-data file, aligned, from a tiled random block."""

    def __init__(self, fh, location: str, seed: int):
        self.fh = fh
        self.location = location
        self.offset = 0
        self.count = 0
        block = np.random.default_rng(seed).standard_normal(_BLOCK).astype(np.float32)
        # the block tiled past one chunk: any chunk is then a slice of it (no per-element indexing)
        self.tiled = np.resize(block, _CHUNK + _BLOCK)
        self.scaled: dict[tuple[float, float], np.ndarray] = {}

    def tensor(self, name: str, dims: list[int], scale: float, shift: float = 0.0) -> TensorProto:
        """Stream ``shift + scale * pattern`` (float32) for a tensor of ``dims``; its external TensorProto."""
        pad = -self.offset % ALIGN
        if pad:
            self.fh.write(b"\x00" * pad)
            self.offset += pad
        n = int(np.prod(dims))
        start = (self.count * 7919) % _BLOCK  # a different phase of the block for every tensor
        self.count += 1
        written = 0
        tiled = self.scaled.get((scale, shift))
        if tiled is None:  # a handful of (scale, shift) pairs per model: scale the tiling once each
            tiled = self.scaled[(scale, shift)] = self.tiled * np.float32(scale) + np.float32(shift)
        while written < n:
            k = min(_CHUNK, n - written)
            phase = (start + written) % _BLOCK
            self.fh.write(tiled[phase:phase + k].data)
            written += k
        t = TensorProto()
        t.name = name
        t.data_type = TensorProto.FLOAT
        t.dims.extend(dims)
        t.data_location = TensorProto.EXTERNAL
        for key, value in (("location", self.location), ("offset", str(self.offset)), ("length", str(4 * n))):
            entry = t.external_data.add()
            entry.key, entry.value = key, value
        self.offset += 4 * n
        return t


def _rms_norm(nodes: list, scope: str, x: str, weight: str) -> str:
    """RMSNorm as the TorchScript exporter writes LlamaRMSNorm: x * (1 / sqrt(mean(x^2) + eps)) * w."""
    def node(op: str, suffix: str, inputs: list[str], **attrs) -> str:
        out = f"{scope}/{suffix}_output_0"
        nodes.append(helper.make_node(op, inputs, [out], name=f"{scope}/{suffix}", **attrs))
        return out

    sq = node("Pow", "Pow", [x, "const_two"])
    mean = node("ReduceMean", "ReduceMean", [sq], axes=[-1], keepdims=1)
    var = node("Add", "Add", [mean, "const_eps"])
    root = node("Sqrt", "Sqrt", [var])
    inv = node("Div", "Div", ["const_one", root])
    normed = node("Mul", "Mul", [x, inv])
    return node("Mul", "Mul_1", [weight, normed])


def write_decoder(path: str | os.PathLike, *, target_bytes: int | None = None, layers: int | None = None,
                  hidden: int = 2048, intermediate: int = 5632, seq: int = 16, seed: int = 0) -> DecoderInfo:
    """Write a decoder-shaped model to ``path`` with its weights in ``<name>.data`` beside it.

    Give ``target_bytes`` (the layer count is chosen to come closest) or ``layers``. Memory use
    is a few tens of MiB whatever the size; the data file is written sequentially (about disk
    speed). The same arguments give the same bytes.
    """
    if (target_bytes is None) == (layers is None):
        raise ValueError("give exactly one of target_bytes= and layers=")
    n_layers = layers if layers is not None else decoder_layers_for(int(target_bytes or 0), hidden, intermediate)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data_path = path.with_name(path.name + ".data")
    nodes: list = []
    inits: list[TensorProto] = [
        helper.make_tensor("const_two", TensorProto.FLOAT, [], [2.0]),
        helper.make_tensor("const_eps", TensorProto.FLOAT, [], [1e-6]),
        helper.make_tensor("const_one", TensorProto.FLOAT, [], [1.0]),
    ]
    params = 0
    with open(data_path, "wb") as fh:
        w = _DataWriter(fh, data_path.name, seed)
        x = "inputs_embeds"
        for i in range(n_layers):
            scope = f"/model/layers.{i}"
            prefix = f"model.layers.{i}"
            norm_w = w.tensor(f"{prefix}.input_layernorm.weight", [hidden], 0.05, 1.0)
            gate = w.tensor(f"{prefix}.mlp.gate_proj.weight", [hidden, intermediate], 1.0 / hidden ** 0.5)
            up = w.tensor(f"{prefix}.mlp.up_proj.weight", [hidden, intermediate], 1.0 / hidden ** 0.5)
            down = w.tensor(f"{prefix}.mlp.down_proj.weight", [intermediate, hidden], 0.1 / intermediate ** 0.5)
            inits += [norm_w, gate, up, down]
            params += hidden + 3 * hidden * intermediate
            h = _rms_norm(nodes, f"{scope}/input_layernorm", x, norm_w.name)
            mlp = f"{scope}/mlp"
            g = f"{mlp}/gate_proj/MatMul_output_0"
            nodes.append(helper.make_node("MatMul", [h, gate.name], [g], name=f"{mlp}/gate_proj/MatMul"))
            s = f"{mlp}/act_fn/Sigmoid_output_0"
            nodes.append(helper.make_node("Sigmoid", [g], [s], name=f"{mlp}/act_fn/Sigmoid"))
            a = f"{mlp}/act_fn/Mul_output_0"
            nodes.append(helper.make_node("Mul", [g, s], [a], name=f"{mlp}/act_fn/Mul"))
            u = f"{mlp}/up_proj/MatMul_output_0"
            nodes.append(helper.make_node("MatMul", [h, up.name], [u], name=f"{mlp}/up_proj/MatMul"))
            p = f"{mlp}/Mul_output_0"
            nodes.append(helper.make_node("Mul", [a, u], [p], name=f"{mlp}/Mul"))
            d = f"{mlp}/down_proj/MatMul_output_0"
            nodes.append(helper.make_node("MatMul", [p, down.name], [d], name=f"{mlp}/down_proj/MatMul"))
            r = f"{scope}/Add_output_0"
            nodes.append(helper.make_node("Add", [x, d], [r], name=f"{scope}/Add"))
            x = r
        final = w.tensor("model.norm.weight", [hidden], 0.025, 0.5)  # outputs O(1): BF16 rounds them finely enough
        inits.append(final)
        params += hidden
        out = _rms_norm(nodes, "/model/norm", x, final.name)
        nodes.append(helper.make_node("Identity", [out], ["last_hidden_state"], name="/model/norm/Identity"))
        fh.flush()
        os.fsync(fh.fileno())
    graph = helper.make_graph(
        nodes, "decoder", [helper.make_tensor_value_info("inputs_embeds", TensorProto.FLOAT, [1, seq, hidden])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [1, seq, hidden])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="pytest_trt.model.big_models")
    model.ir_version = 8
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(model.SerializeToString())
    os.replace(tmp, path)
    return DecoderInfo(path, data_path, n_layers, hidden, intermediate, seq, params, 4 * params, len(nodes))
