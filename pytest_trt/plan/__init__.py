"""Precision plans: a policy resolved against one model.

A :class:`PrecisionPlan` says, for every node of the main graph, whether it computes
("compute") or only moves shapes, indices and constants ("fixed"), which precision a
compute node runs in, and which rule decided it. From the decisions it derives what
each node reads and writes (:attr:`PrecisionPlan.node_io`): the typing every
realization (strong ONNX, emulation graph, weak-typing hints) applies mechanically,
so "what was asked" and "what ran" can be compared node by node.

The package, in pipeline order: :mod:`~pytest_trt.plan.checks` (typing checks ONNX
inference does not make), :mod:`~pytest_trt.plan.decide` (compute or fixed, and which
precision), :mod:`~pytest_trt.plan.node_io` (what each node reads and writes, where Casts
go), :mod:`~pytest_trt.plan.resolve` (the stages end to end) and
:mod:`~pytest_trt.plan.records` (the plan and its records). ONNX type inference and schema
queries are :mod:`pytest_trt.model.onnx_typing`. What is asked, the
:class:`~pytest_trt.plan.policy.PrecisionPolicy`, is :mod:`~pytest_trt.plan.policy`, and its
rule syntax :mod:`~pytest_trt.plan.rules`; both import no onnx, and this package loads its
other modules on first use, so importing the policy stays light (the plugin's load path).

Typing rules (the realizations rely on them; see ``docs/DESIGN.md``):

* A compute node with precision ``p`` writes its float outputs that share the op's
  type variable with the first float output (the *primary* type variable) in ``p``
  and reads its inputs of that type variable in ``p``. Other outputs keep their
  declared types (LayerNormalization ``Mean``/``InvStdDev``).
* An input whose formal type is concrete (Resize ``scales`` is ``tensor(float)``) is
  read in that type.
* An input-only type variable (Pow's exponent ``T1``) is read in ``p`` when the op
  allows it; a type variable that allows every type (Shape, Cast's input) reads the
  tensor as it is stored.
* Fixed nodes read what they are given when the op allows it and inputs of one type
  variable agree (Greater(fp16, fp32) does not: both are read in their original type).
  Control flow, quantization, source and schema-less nodes are kept as written: their
  float inputs (and the outer-scope tensors their subgraphs read) are read in the
  model's original types.
* Graph inputs and outputs keep the model's types.
* Initializers and float ``Constant`` values are stored in the type each consumer
  reads, one copy per type (tied weights read by FP32 and FP16 nodes get two).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.lazy import lazy_attributes

if TYPE_CHECKING:  # the type checker sees the real names; at run time they load on first use
    from .checks import check_as_written
    from .decide import FUNCTION_BODY_GAPS, OPERAND_INPUTS, precision_gap
    from .records import (
        AS_WRITTEN,
        COMPUTE,
        CONTROL_FLOW_OPS,
        FIXED,
        PLAN_FORMAT,
        QUANTIZATION_OPS,
        SOURCE_OPS,
        ExpectationFailure,
        NodeDecision,
        NodeIO,
        PolicyView,
        PrecisionPlan,
        UnsupportedPrecisionError,
    )
    from .resolve import resolve_as_is, resolve_plan

#: public name -> the module of this package that defines it. Imported on first access, so
#: that importing :mod:`~pytest_trt.plan.policy` or :mod:`~pytest_trt.plan.rules` (the
#: plugin's load path, ``pytest_trt.PrecisionPolicy``) does not import onnx.
_LAZY = {
    "AS_WRITTEN": "records",
    "COMPUTE": "records",
    "CONTROL_FLOW_OPS": "records",
    "ExpectationFailure": "records",
    "FIXED": "records",
    "FUNCTION_BODY_GAPS": "decide",
    "NodeDecision": "records",
    "NodeIO": "records",
    "OPERAND_INPUTS": "decide",
    "PLAN_FORMAT": "records",
    "PolicyView": "records",
    "PrecisionPlan": "records",
    "QUANTIZATION_OPS": "records",
    "SOURCE_OPS": "records",
    "UnsupportedPrecisionError": "records",
    "check_as_written": "checks",
    "precision_gap": "decide",
    "resolve_as_is": "resolve",
    "resolve_plan": "resolve",
}

__all__ = [
    "AS_WRITTEN",
    "COMPUTE",
    "CONTROL_FLOW_OPS",
    "ExpectationFailure",
    "FIXED",
    "FUNCTION_BODY_GAPS",
    "NodeDecision",
    "NodeIO",
    "OPERAND_INPUTS",
    "PLAN_FORMAT",
    "PolicyView",
    "PrecisionPlan",
    "QUANTIZATION_OPS",
    "SOURCE_OPS",
    "UnsupportedPrecisionError",
    "check_as_written",
    "precision_gap",
    "resolve_as_is",
    "resolve_plan",
]


__getattr__ = lazy_attributes(__name__, _LAZY)


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
