"""Range diagnosis: FP32 activations a plan stores in FP16/BF16 but that do not fit there.

A model whose FP32 activations exceed 65504 (FP16's largest finite value) for the inputs
of a run cannot pass in FP16 however the tolerances are set: the stored value becomes
``inf`` and what follows is ``inf`` or NaN. Such a failure is the inputs' or the plan's
(the tensor must stay FP32), not rounding, and saying so beats a table of NaNs.

:func:`range_overflows` runs the FP32 reference with every low-precision tensor of the
plan as an output and lists those whose largest finite magnitude exceeds the range.
A tensor whose out-of-range values are all *masking values* (an attention mask's
``-FLT_MAX``, see :mod:`pytest_trt.locate.masking`) is listed as ``masking``: it saturates by
design and is never named as the overflow to fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.dtypes import LARGEST_FINITE
from ..reference.baseline import fp32_intermediates, reference_model
from .masking import is_masking, sentinels

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

    @property
    def label(self) -> str:
        return self.canonical or self.node

    def line(self) -> str:
        """One line for the range message: the tensor, its node, its FP32 magnitude and the range."""
        return (f"{self.tensor!r} (output of {self.label!r}, {self.op_type}) reaches {self.max_abs:.4g} in FP32, "
                f"beyond the {self.precision} range ({RANGE[self.precision]:.6g})")

    def to_json(self) -> dict[str, Any]:
        """The overflow as a JSON record."""
        return {"tensor": self.tensor, "node": self.node, "canonical": self.label, "op_type": self.op_type,
                "precision": self.precision, "max_abs": self.max_abs, "masking": self.masking}


def range_overflows(plan: PrecisionPlan, feeds: dict) -> list[RangeOverflow]:
    """Low-precision tensors of ``plan`` whose FP32 values for ``feeds`` exceed their range: those that
    matter in graph order, then the masking ones (``masking=True``) in graph order.

    Only node outputs are checked (constants are clamped at realization and say so in its notes).
    """
    low = {t: p for t, p in plan.tensor_precision.items() if p in RANGE}
    producers = {}
    for node in plan.model.graph.node:
        for out in node.output:
            if out in low and out not in plan.constant_tensors:
                producers[out] = node
    if not producers:
        return []
    names = list(producers)
    values = fp32_intermediates(reference_model(plan.model), feeds, names=names)
    found = []
    for name in names:
        value = np.asarray(values[name])
        if value.dtype.kind != "f" or value.size == 0:
            continue
        limit = RANGE[low[name]]
        finite = np.abs(value[np.isfinite(value)].astype(np.float64))
        if finite.size and finite.max() > limit:
            node = producers[name]
            masking = bool(np.all(is_masking(finite[finite > limit], sentinels(plan.model, limit))))
            found.append(RangeOverflow(name, node.name, node.op_type, low[name], float(finite.max()), masking,
                                       plan.model.names.canonical(node.name)))
    return sorted(found, key=lambda f: f.masking)  # stable: graph order within each kind


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
        lines.append(f"range: {len(real)} tensor(s) the plan stores in {precision} exceed its range in the FP32 "
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
        lines.append(f"  fix: keep the first one's node FP32 ({keep_flag} {real[0].label!r}) and retry, or feed "
                     f"inputs in the range the model is meant for")
    return "\n".join(lines)
