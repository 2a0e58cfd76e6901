"""The criterion of an output as a saved run records it, and the one place that reads it.

The project's Criterion object (issue 27: one object per output holding its tolerances and
floors, ``no_check``, and the level each value came from) is not on ``main`` yet. Until it is,
everything the history package needs of an output's criterion goes through :func:`criterion_of`,
which reads the figures every accuracy record already carries (``atol``, ``rtol``,
``min_cosine``, ``min_snr_db`` of the output; ``precision``, ``no_check``, ``equal_nan`` of the
check). When the Criterion lands, this function returns its ``to_json()`` (and
:func:`compare_kwargs` applies it): a one-place change.

Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["compare_kwargs", "criterion_of", "criterion_text"]

#: the keys of a recorded criterion, in the order they are shown
KEYS = ("precision", "atol", "rtol", "min_cosine", "min_snr_db", "no_check", "equal_nan")


def criterion_of(output: Mapping[str, Any], check: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The criterion one output was judged by: ``{"precision", "atol", "rtol", "min_cosine",
    "min_snr_db", "no_check", "equal_nan"}`` (numbers as the report stores them: non-finite as
    ``"inf"``; a floor that did not apply is null).

    ``output``: an output of an accuracy entry (the JSON report's, or ``CompareResult.to_json()``'s);
    ``check``: the accuracy entry or ``CompareResult`` JSON it belongs to (``precision``,
    ``no_check``, ``equal_nan``), when the output does not carry them itself.
    """
    check = check or {}
    if isinstance(output.get("criterion"), Mapping):  # recorded whole (a saved run's own copy)
        return {k: output["criterion"].get(k) for k in KEYS}
    return {
        "precision": output.get("precision", check.get("precision")),
        "atol": output.get("atol"),
        "rtol": output.get("rtol"),
        "min_cosine": output.get("min_cosine"),
        "min_snr_db": output.get("min_snr_db"),
        "no_check": bool(output.get("no_check", check.get("no_check", False))),
        "equal_nan": bool(output.get("equal_nan", check.get("equal_nan", False))),
    }


def _number(value: Any) -> float | None:
    if value is None:
        return None
    return float(value)  # (float("inf") reads the report's "inf")


def compare_kwargs(criteria: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Keyword arguments of :func:`pytest_trt.compare.compare_outputs` that apply the recorded
    criteria ``{output: criterion_of(...)}`` of one check (one precision, one ``no_check``)."""
    first = next(iter(criteria.values()), {})
    return {
        "precision": first.get("precision") or "fp32",
        "no_check": bool(first.get("no_check")),
        "equal_nan": bool(first.get("equal_nan")),
        "atol": {name: _number(c.get("atol")) for name, c in criteria.items()},
        "rtol": {name: _number(c.get("rtol")) for name, c in criteria.items()},
        "min_cosine": {name: _number(c.get("min_cosine")) for name, c in criteria.items()},
        "min_snr_db": {name: _number(c.get("min_snr_db")) for name, c in criteria.items()},
    }


def criterion_text(criterion: Mapping[str, Any]) -> str:
    """``fp16: atol 0.01, rtol 0.02, min_cosine 0.9999`` (the floors only where they applied)."""
    parts = [f"{k} {criterion[k]}" for k in ("atol", "rtol", "min_cosine", "min_snr_db")
             if criterion.get(k) is not None]
    if criterion.get("no_check"):
        parts.append("no_check")
    return f"{criterion.get('precision') or '?'}: " + ", ".join(parts)
