"""Range diagnosis: FP32 activations a plan stores in FP16/BF16 but that do not fit there.

A model whose FP32 activations exceed 65504 (FP16's largest finite value) for the inputs
of a run cannot pass in FP16 however the tolerances are set: the stored value becomes
``inf`` and what follows is ``inf`` or NaN. Such a failure is the inputs' or the plan's
(the tensor must stay FP32), not rounding, and saying so beats a table of NaNs.

:func:`range_overflows` runs the FP32 reference with every low-precision tensor of the
plan as an output and lists those whose largest finite magnitude exceeds the range.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.dtypes import BF16, FP16
from ..reference.baseline import fp32_intermediates, reference_model

if TYPE_CHECKING:  # pragma: no cover
    from ..plan import PrecisionPlan

#: largest finite value of each low precision
RANGE = {FP16: 65504.0, BF16: 3.3895313892515355e38}


@dataclass(frozen=True)
class RangeOverflow:
    """One tensor stored in low precision whose FP32 value does not fit.

    Attributes:
        tensor: the tensor's name.
        node: the node that writes it, and ``op_type`` its op.
        precision: the precision the plan stores it in.
        max_abs: the largest finite magnitude in the FP32 run.
    """

    tensor: str
    node: str
    op_type: str
    precision: str
    max_abs: float

    def line(self) -> str:
        """One line for the range message: the tensor, its node, its FP32 magnitude and the range."""
        return (f"{self.tensor!r} (output of {self.node!r}, {self.op_type}) reaches {self.max_abs:.4g} in FP32, "
                f"beyond the {self.precision} range ({RANGE[self.precision]:.6g})")

    def to_json(self) -> dict[str, Any]:
        """The overflow as a JSON record."""
        return {"tensor": self.tensor, "node": self.node, "op_type": self.op_type,
                "precision": self.precision, "max_abs": self.max_abs}


def range_overflows(plan: PrecisionPlan, feeds: dict) -> list[RangeOverflow]:
    """Low-precision tensors of ``plan`` whose FP32 values for ``feeds`` exceed their range, in graph order.

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
        finite = np.abs(value[np.isfinite(value)].astype(np.float64))
        if finite.size and finite.max() > RANGE[low[name]]:
            node = producers[name]
            found.append(RangeOverflow(name, node.name, node.op_type, low[name], float(finite.max())))
    return found


def range_message(found: list[RangeOverflow], *, keep_flag: str = "--keep-fp32", limit: int = 5) -> str:
    """What to tell the user (empty when nothing overflows)."""
    if not found:
        return ""
    precision = found[0].precision
    lines = [f"range: {len(found)} tensor(s) the plan stores in {precision} exceed its range in the FP32 "
             f"reference for these inputs, so they become inf/NaN in {precision} whatever the tolerance; "
             f"first (graph order):"]
    lines += [f"  {f.line()}" for f in found[:limit]]
    if len(found) > limit:
        lines.append(f"  ... and {len(found) - limit} more")
    lines.append(f"  fix: keep the first one's node FP32 ({keep_flag} {found[0].node!r}) and retry, or feed "
                 f"inputs in the range the model is meant for")
    return "\n".join(lines)
