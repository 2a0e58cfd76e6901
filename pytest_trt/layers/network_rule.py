"""Planned vs parsed network dtypes: the one rule, used by every TensorRT build and the parser check.

A TensorRT network parsed from the plan's strongly typed realization has a dtype on every
layer output before anything is built. For each layer output of a planned compute node
(:func:`pytest_trt.backends.tensorrt.network.check_network_dtypes` finds them), the planned
precision and the parsed one are judged here:

* ``ok``: the same type.
* ``lower``: planned FP32 but parsed FP16/BF16, or planned FP16 but parsed BF16 (or the
  reverse: another 16-bit format, another range). A precision request not honoured: a
  **failure** naming node, planned and parsed type. Under strong typing a build error
  (:class:`~pytest_trt.errors.BuildError`); in the parser check a failed verdict.
* ``higher``: planned FP16/BF16 but parsed FP32: "TensorRT computes this in higher
  precision than planned". Reported per node and counted, **never failed**: it cannot
  make a result less accurate than planned (it can make it slower).

Under weak typing (TensorRT <= 10.x) the parsed network is the untyped original model, so
there is nothing to judge before the build: the same rule is applied to the built engine's
layer report (:func:`weak_typing_failures`), and ``trt.check()`` fails with a
:class:`~pytest_trt.errors.PrecisionError` naming each node planned FP32 that ran lower (a
precision-check failure; the accuracy verdict is given first).
"""

from __future__ import annotations

from collections.abc import Iterable

OK, LOWER, HIGHER = "ok", "lower", "higher"
VERDICTS = (OK, LOWER, HIGHER)

#: what a verdict means, in the words every report uses
MEANING = {
    OK: "parsed as planned",
    LOWER: "parsed in a different or lower precision than planned (a precision request not honoured)",
    HIGHER: "TensorRT computes this in higher precision than planned",
}

_WIDTH = {"fp32": 32, "fp16": 16, "bf16": 16, "fp64": 64}


def judge(planned: str, parsed: str) -> str:
    """``ok``, ``lower`` (a failure) or ``higher`` (reported, never failed) for one tensor.

    >>> judge("fp32", "fp16"), judge("bf16", "fp32"), judge("fp16", "bf16"), judge("fp16", "fp16")
    ('lower', 'higher', 'lower', 'ok')
    """
    if planned == parsed:
        return OK
    if _WIDTH.get(parsed, 0) > _WIDTH.get(planned, 0):
        return HIGHER
    return LOWER


def worst(verdicts: Iterable[str]) -> str:
    """A node with several outputs: any ``lower`` fails it, else any ``higher`` reports it."""
    seen = set(verdicts)
    if LOWER in seen:
        return LOWER
    if HIGHER in seen:
        return HIGHER
    return OK


def weak_typing_failures(report) -> list[str]:
    """Weak typing: the rule on the *engine's* layer report (a :class:`~pytest_trt.layers.report.LayerReport`).

    A node whose layer report status is ``mismatch`` (its own output, or a layer carrying only
    nodes planned like it, has another dtype) and whose observed type is lower than planned:
    one line per node naming it, planned and observed type. Boundary-only and unverifiable
    observations are not judged here (``assert_precision`` says what they are).
    """
    out = []
    for obs in report.nodes.values():
        if obs.status != "mismatch" or obs.planned is None or obs.observed not in _WIDTH:
            continue
        if judge(obs.planned, obs.observed) == LOWER:
            out.append(f"{obs.node} ({obs.op_type}): planned {obs.planned}, the engine ran it in {obs.observed}"
                       + (f" ({obs.detail})" if obs.detail else ""))
    return out


__all__ = ["HIGHER", "LOWER", "MEANING", "OK", "VERDICTS", "judge", "weak_typing_failures", "worst"]
