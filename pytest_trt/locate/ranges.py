"""Range diagnosis: FP32 activations a plan stores in FP16/BF16 but that do not fit there.

A model whose FP32 activations exceed 65504 (FP16's largest finite value) for the inputs
of a run cannot pass in FP16 however the tolerances are set: the stored value becomes
``inf`` and what follows is ``inf`` or NaN. Such a failure is the inputs' or the plan's
(the tensor must stay FP32), not rounding, and saying so beats a table of NaNs.

:func:`range_overflows` runs the FP32 reference with every low-precision tensor of the
plan as an output and lists those whose largest finite magnitude exceeds the range. A tensor the
plan stores in FP32 but casts down for a low-precision reader (an FP32 island's output feeding its
FP16 neighbour) is checked too: keeping only ``LayerNorm/Pow`` FP32 moves the overflow into the
Cast in front of ``ReduceMean_1``, which review1 found unreported.

The fix :func:`range_message` prints is the overflowing node's *scope*
(:func:`~pytest_trt.locate.scopes.scope_pattern` of its canonical name, as ``locate`` advises),
where it has one: keeping the one node FP32 only moves the overflow to its reader.
A tensor whose out-of-range values are all *masking values* (an attention mask's
``-FLT_MAX``, see :mod:`pytest_trt.locate.masking`) is listed as ``masking``: it saturates by
design and is never named as the overflow to fix.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.dtypes import LARGEST_FINITE
from ..reference.baseline import fp32_intermediates, reference_model
from .masking import is_masking, sentinels
from .scopes import scope_pattern

if TYPE_CHECKING:  # pragma: no cover
    from ..plan import PrecisionPlan

#: largest finite value of each low precision
RANGE = LARGEST_FINITE


@dataclass(frozen=True)
class RangeOverflow:
    """One tensor stored in low precision whose FP32 value does not fit.

    Attributes:
        tensor: the tensor's name.
        node: the node that writes it, and ``op_type`` its op.
        precision: the precision the plan stores it in.
        max_abs: the largest finite magnitude in the FP32 run.
        masking: every out-of-range value is a masking value (a constant meant to saturate, such
            as an attention mask's -FLT_MAX): harmless by design, not a cause to fix.
    """

    tensor: str
    node: str
    op_type: str
    precision: str
    max_abs: float
    masking: bool = False
    #: the node's canonical scoped name (pytest_trt.model.names): what messages show
    canonical: str = ""
    #: a tensor stored in FP32 and cast to ``precision`` for a reader: the reader's canonical name
    #: (empty for a tensor the plan stores in low precision itself)
    cast_for: str = ""

    @property
    def label(self) -> str:
        """The writing node's canonical name (the tensor's name for a graph input)."""
        return self.canonical or self.node or self.tensor

    @property
    def fix_label(self) -> str:
        """The node to keep FP32: the writer of a tensor stored in low precision, the reader a Cast feeds."""
        return self.cast_for or self.label

    def line(self) -> str:
        """One line for the range message: the tensor, its node, its FP32 magnitude and the range."""
        writer = f"output of {self.label!r}, {self.op_type}" if self.node else "a graph input"
        cast = f"; stored FP32, cast to {self.precision} for {self.cast_for!r}" if self.cast_for else ""
        return (f"{self.tensor!r} ({writer}{cast}) reaches {self.max_abs:.4g} in FP32, "
                f"beyond the {self.precision} range ({RANGE[self.precision]:.6g})")

    def to_json(self) -> dict[str, Any]:
        """The overflow as a JSON record (``cast_for``: the reader a Cast to ``precision`` feeds, or null)."""
        return {"tensor": self.tensor, "node": self.node, "canonical": self.label, "op_type": self.op_type,
                "precision": self.precision, "max_abs": self.max_abs, "masking": self.masking,
                "cast_for": self.cast_for or None}


def range_overflows(plan: PrecisionPlan, feeds: dict) -> list[RangeOverflow]:
    """Low-precision tensors of ``plan`` whose FP32 values for ``feeds`` exceed their range: those that
    matter in graph order, then the masking ones (``masking=True``) in graph order.

    Node outputs and graph inputs are checked: those stored in low precision, and those stored in
    FP32 but cast down for a low-precision reader (``cast_for`` names the first such reader).
    Constants are clamped at realization and say so in its notes.
    """
    graph = plan.model.graph
    low = {t: p for t, p in plan.tensor_precision.items() if p in RANGE and t not in plan.constant_tensors}
    readers = _low_readers(plan, low)
    producers = {out: node for node in graph.node for out in node.output if out}
    candidates = _candidates(graph, low, readers)
    if not candidates:
        return []
    computed = [name for name in candidates if name in producers]
    values = fp32_intermediates(reference_model(plan.model), feeds, names=computed) if computed else {}
    found = []
    for name in candidates:
        precision, reader = (low[name], "") if name in low else readers[name]
        value = np.asarray(values[name] if name in producers else feeds.get(name, ()))
        overflow = _overflow(plan, name, value, precision, producers.get(name), reader)
        if overflow is not None:
            found.append(overflow)
    return sorted(found, key=lambda f: f.masking)  # stable: graph order within each kind


def _candidates(graph, low: dict[str, str], readers: dict[str, tuple[str, str]]) -> list[str]:
    """The tensors to check, in graph order: graph inputs cast down, then node outputs stored low or cast down."""
    inputs = [i.name for i in graph.input if i.name in readers]
    return inputs + [out for node in graph.node for out in node.output if out in low or out in readers]


def _overflow(plan: PrecisionPlan, name: str, value: np.ndarray, precision: str, node, reader: str
              ) -> RangeOverflow | None:
    """``name``'s overflow (its FP32 ``value`` beyond ``precision``'s range), or None when it fits."""
    if value.dtype.kind != "f" or value.size == 0:
        return None
    limit = RANGE[precision]
    finite = np.abs(value[np.isfinite(value)].astype(np.float64))
    if not finite.size or finite.max() <= limit:
        return None
    names = plan.model.names
    masking = bool(np.all(is_masking(finite[finite > limit], sentinels(plan.model, limit))))
    return RangeOverflow(name, node.name if node is not None else "", node.op_type if node is not None else "input",
                         precision, float(finite.max()), masking,
                         names.canonical(node.name) if node is not None else "",
                         names.canonical(reader) if reader else "")


def _low_readers(plan: PrecisionPlan, low: dict[str, str]) -> dict[str, tuple[str, str]]:
    """``{tensor: (precision, first reader)}``: tensors stored in FP32 (not constants) that a Cast
    turns into a low precision for a reader, each with that precision and its first reader (raw name)."""
    cast_down = {t: dst for t, _src, dst in plan.boundaries
                 if dst in RANGE and t not in low and t not in plan.constant_tensors}
    found: dict[str, tuple[str, str]] = {}
    for node in plan.model.graph.node:
        io = plan.node_io.get(node.name)
        if io is None:
            continue
        for name, precision in zip(node.input, io.inputs, strict=True):
            if name in cast_down and precision == cast_down[name]:
                found.setdefault(name, (precision, node.name))
    return found


def range_message(found: list[RangeOverflow], *, keep_flag: str = "--keep-fp32", limit: int = 5) -> str:
    """What to tell the user (empty when nothing overflows). The fix names the first overflow that
    matters; masking tensors are summed up in one line as not the cause."""
    if not found:
        return ""
    real = [f for f in found if not f.masking]
    masks = [f for f in found if f.masking]
    precision = found[0].precision
    lines = []
    if real:
        lines.append(f"range: {len(real)} tensor(s) the plan stores in (or casts to) {precision} exceed its range in the FP32 "
                     f"reference for these inputs, so they become inf/NaN in {precision} whatever the tolerance; "
                     f"first (graph order):")
        lines += [f"  {f.line()}" for f in real[:limit]]
        if len(real) > limit:
            lines.append(f"  ... and {len(real) - limit} more")
    else:
        lines.append(f"range: the only values beyond the {precision} range in the FP32 reference are masking values, "
                     f"so the range is not what fails here:")
    if masks:
        names = ", ".join(repr(f.label) for f in masks[:3]) + (f" and {len(masks) - 3} more" if len(masks) > 3 else "")
        lines.append(f"  not the cause: {len(masks)} tensor(s) exceed it only at masking values (+-{masks[0].max_abs:.4g}, "
                     f"a constant such as an attention mask's -FLT_MAX: {names}); they saturate in {precision} as "
                     f"the model intends, and keeping them FP32 changes nothing")
    if real:
        lines.append(f"  fix: {fix_text(real[0], keep_flag)} and retry, or feed inputs in the range the model is "
                     f"meant for")
    return "\n".join(lines)


def fix_text(overflow: RangeOverflow, keep_flag: str = "--keep-fp32") -> str:
    """What to keep FP32 for ``overflow``: its node's scope where the node has one (a node kept FP32 alone
    writes an FP32 tensor that is cast back to the low precision for its reader, which overflows
    there), else the node itself; the pattern quoted for a shell."""
    target = overflow.fix_label
    pattern = scope_pattern(target)
    if pattern.endswith("/*"):
        return (f"keep the first one's scope FP32 ({keep_flag} {shlex.quote(pattern)}; a node kept FP32 alone "
                f"hands its output to the next node in {overflow.precision}, which overflows there)")
    return f"keep the first one's node FP32 ({keep_flag} {shlex.quote(pattern)})"
