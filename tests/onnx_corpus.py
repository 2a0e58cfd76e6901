"""ONNX's own backend conformance corpus, generated from the installed ``onnx`` package.

One generator, shared by every tier that runs over the corpus (``onnx_corpus``: the
strongly typed realization; ``trt_parser``: TensorRT-RTX's parser). Nothing is
downloaded: the node models come from the ``expect`` calls of
``onnx/backend/test/case/node/*.py`` (``collect_testcases``: about 1,900 models, each
with its inputs and expected outputs), the model families from the files the package
ships under ``onnx/backend/test/data`` (``simple``, ``pytorch-converted``,
``pytorch-operator`` with their ``test_data_set_0``; ``light``: 9 real CNNs with an
expected output, whose inputs are made as ONNX's runner makes them). The ``real``
family only points at URLs and is left out.

API (kept stable: other tiers import it)::

    from onnx_corpus import iter_corpus, sample, FAMILIES, ONNX_VERSION

    for case in iter_corpus(families=("simple", "light")):
        case.id, case.family, case.name, case.model, case.inputs, case.outputs, case.has_float

    ids = sample(200, seed=0)              # a deterministic subset of case ids
    for case in iter_corpus(ids=ids): ...

Order is deterministic: families in :data:`FAMILIES` order, names sorted inside each.
"""

from __future__ import annotations

import contextlib
import functools
import io
import random
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

#: the families, in iteration order
FAMILIES = ("node", "simple", "pytorch-converted", "pytorch-operator", "light")
#: version of the onnx package the corpus is generated from (expected counts are keyed by it)
ONNX_VERSION = onnx.__version__
#: where the packaged model families live
DATA_DIR = Path(onnx.__file__).parent / "backend" / "test" / "data"

_FLOAT_TYPES = frozenset({onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16,
                          onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE})


@dataclass
class CorpusCase:
    """One model of the corpus.

    Attributes:
        family: one of :data:`FAMILIES`.
        name: the test name ONNX gives it (``test_abs``, ``test_sequence_model1``,
            ``light_bvlc_alexnet``).
        model: the ``onnx.ModelProto`` (a fresh copy per iteration: mutate freely).
        path: the file it was read from, None for generated node models.
        inputs: ``{graph input name: value}`` for the non-initializer inputs (numpy arrays;
            lists for sequences; None for an empty optional), or None when the corpus has
            no data for the model.
        outputs: ``{graph output name: expected value}`` where the corpus has them, else None.
        has_float: the main graph has a FLOAT/FLOAT16/BFLOAT16/DOUBLE tensor (an input,
            output, initializer, Constant or inferred intermediate, including the element
            type of sequences and optionals).
        rtol, atol: the tolerances ONNX's own runner uses for the case.
    """

    family: str
    name: str
    model: onnx.ModelProto = field(repr=False)
    path: Path | None = None
    inputs: dict[str, Any] | None = field(default=None, repr=False)
    outputs: dict[str, Any] | None = field(default=None, repr=False)
    has_float: bool = False
    rtol: float = 1e-3
    atol: float = 1e-7

    @property
    def id(self) -> str:
        """``family/name``: unique over the corpus (a node model and a file may share a name)."""
        return f"{self.family}/{self.name}"


# --------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------
def iter_corpus(families: Iterable[str] | None = None, *, ids: Iterable[str] | None = None,
                float_only: bool = False) -> Iterator[CorpusCase]:
    """Yield the corpus cases of ``families`` (default: all), in deterministic order.

    ``ids`` (``family/name``) restricts to those cases (unknown ids raise KeyError);
    ``float_only`` to cases with float tensors.
    """
    wanted = _families(families)
    keep = None if ids is None else set(ids)
    if keep is not None:
        unknown = keep - set(case_ids(wanted))
        if unknown:
            raise KeyError(f"not in the onnx {ONNX_VERSION} corpus: {sorted(unknown)[:5]}")
    for family in wanted:
        loader = _node_cases if family == "node" else functools.partial(_file_cases, family)
        for case in loader():
            if keep is not None and case.id not in keep:
                continue
            if float_only and not case.has_float:
                continue
            yield case


def case_ids(families: Iterable[str] | None = None) -> list[str]:
    """The ids (``family/name``) of ``families`` (default: all), in iteration order; cheap
    for the file families, the node family generates its models once per process."""
    ids = []
    for family in _families(families):
        if family == "node":
            ids.extend(f"node/{c.name}" for c in _node_testcases())
        else:
            ids.extend(f"{family}/{d}" for d, _ in _file_entries(family))
    return ids


def sample(n: int, seed: int = 0, families: Iterable[str] | None = None) -> list[str]:
    """``n`` case ids drawn without replacement with ``random.Random(seed)``, returned in
    iteration order: the same subset for the same onnx version, ``n`` and ``seed``."""
    ids = case_ids(families)
    if n >= len(ids):
        return ids
    chosen = set(random.Random(seed).sample(ids, n))
    return [i for i in ids if i in chosen]


def has_float(model: onnx.ModelProto) -> bool:
    """True when the main graph has a float tensor (see :attr:`CorpusCase.has_float`)."""
    graph = model.graph
    if any(t.data_type in _FLOAT_TYPES for t in graph.initializer):
        return True
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR and attr.t.data_type in _FLOAT_TYPES:
                return True
    infos = list(graph.input) + list(graph.output) + list(graph.value_info)
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
        infos += list(inferred.graph.value_info) + list(inferred.graph.output)
    except Exception:  # inference failures are the tiers' business, not the generator's
        pass
    return any(_float_type(vi.type) for vi in infos)


# --------------------------------------------------------------------------------------
# node family: the expect() calls of onnx/backend/test/case/node
# --------------------------------------------------------------------------------------
@functools.cache
def _node_testcases() -> tuple:
    from onnx.backend.test.case.node import collect_testcases

    # the generators print nothing useful and warn about their own overflow demos
    with warnings.catch_warnings(), np.errstate(all="ignore"), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        cases = collect_testcases()
    return tuple(sorted(cases, key=lambda c: c.name))


def _node_cases() -> Iterator[CorpusCase]:
    for tc in _node_testcases():
        model = onnx.ModelProto()
        model.CopyFrom(tc.model)
        inputs, outputs = tc.data_sets[0] if tc.data_sets else (None, None)
        yield CorpusCase(
            family="node", name=tc.name, model=model,
            inputs=_bind(_present(model.graph.input, model), inputs),
            outputs=_bind([o.name for o in model.graph.output], outputs),
            has_float=has_float(model), rtol=tc.rtol, atol=tc.atol,
        )


def _present(value_infos, model) -> list[str]:
    inits = {t.name for t in model.graph.initializer}
    return [vi.name for vi in value_infos if vi.name not in inits]


def _bind(names: list[str], values) -> dict[str, Any] | None:
    if values is None or len(values) != len(names):
        return None
    return {name: _value(v) for name, v in zip(names, values, strict=True)}


def _value(v):
    if isinstance(v, onnx.TensorProto):
        return numpy_helper.to_array(v)
    if isinstance(v, onnx.SequenceProto):
        return numpy_helper.to_list(v)
    if isinstance(v, onnx.OptionalProto):
        return numpy_helper.to_optional(v)
    if isinstance(v, list):
        return [_value(x) for x in v]
    if isinstance(v, np.generic):
        return np.asarray(v)
    return v


# --------------------------------------------------------------------------------------
# file families: onnx/backend/test/data/<family>
# --------------------------------------------------------------------------------------
@functools.cache
def _file_entries(family: str) -> tuple[tuple[str, Path], ...]:
    root = DATA_DIR / family
    if not root.is_dir():
        return ()
    if family == "light":
        return tuple((p.stem, p) for p in sorted(root.glob("*.onnx")))
    return tuple((d.name, d / "model.onnx") for d in sorted(root.iterdir())
                 if (d / "model.onnx").is_file())


def _file_cases(family: str) -> Iterator[CorpusCase]:
    for name, path in _file_entries(family):
        model = onnx.load(str(path))
        if family == "light":
            inputs, outputs = _light_data(model, path)
        else:
            inputs, outputs = _data_set(model, path.parent / "test_data_set_0")
        yield CorpusCase(family=family, name=name, model=model, path=path, inputs=inputs,
                         outputs=outputs, has_float=has_float(model))


def _data_set(model, folder: Path):
    if not folder.is_dir():
        return None, None
    graph = model.graph
    inits = {t.name for t in graph.initializer}
    ins = [vi for vi in graph.input if vi.name not in inits]
    read = [_read_pb(folder / f"input_{i}.pb", vi.type) for i, vi in enumerate(ins)]
    inputs = None if any(r is _MISSING for r in read) else {vi.name: r for vi, r in zip(ins, read, strict=True)}
    got = [_read_pb(folder / f"output_{i}.pb", vi.type) for i, vi in enumerate(graph.output)]
    outputs = None if any(r is _MISSING for r in got) else {
        vi.name: r for vi, r in zip(graph.output, got, strict=True)}
    return inputs, outputs


_MISSING = object()


def _read_pb(path: Path, type_proto):
    if not path.is_file():
        return _MISSING
    data = path.read_bytes()
    kind = type_proto.WhichOneof("value")
    proto = {"sequence_type": onnx.SequenceProto, "optional_type": onnx.OptionalProto}.get(
        kind, onnx.TensorProto)()
    proto.ParseFromString(data)
    return _value(proto)


def _light_data(model, path: Path):
    """Inputs as ONNX's runner makes them for ``light`` models (``arange(n)/n``, reshaped;
    ``Runner.generate_dummy_data(random=False)``), and the shipped expected output."""
    graph = model.graph
    inits = {t.name for t in graph.initializer}
    inputs = {}
    for vi in graph.input:
        if vi.name in inits:
            continue
        if vi.type.tensor_type.elem_type != onnx.TensorProto.FLOAT:
            return None, None
        shape = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in vi.type.tensor_type.shape.dim)
        n = int(np.prod(shape))
        inputs[vi.name] = (np.arange(n).reshape(shape) / n).astype(np.float32)
    outputs = {}
    for i, vi in enumerate(graph.output):
        pb = path.with_name(f"{path.stem}_output_{i}.pb")
        if not pb.is_file():
            return inputs, None
        outputs[vi.name] = _read_pb(pb, vi.type)
    return inputs, outputs


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------
def _families(families: Iterable[str] | None) -> tuple[str, ...]:
    if families is None:
        return FAMILIES
    if isinstance(families, str):
        families = (families,)
    wanted = tuple(families)
    unknown = [f for f in wanted if f not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown corpus families {unknown}; known: {', '.join(FAMILIES)}")
    return tuple(f for f in FAMILIES if f in wanted)


def _float_type(type_proto) -> bool:
    kind = type_proto.WhichOneof("value")
    if kind == "tensor_type":
        return type_proto.tensor_type.elem_type in _FLOAT_TYPES
    if kind == "sparse_tensor_type":
        return type_proto.sparse_tensor_type.elem_type in _FLOAT_TYPES
    if kind == "sequence_type":
        return _float_type(type_proto.sequence_type.elem_type)
    if kind == "optional_type":
        return _float_type(type_proto.optional_type.elem_type)
    if kind == "map_type":
        return _float_type(type_proto.map_type.value_type)
    return False
