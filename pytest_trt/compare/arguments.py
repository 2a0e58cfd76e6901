"""What the caller asked to compare: outputs paired by name.

Turns the arrays given to :func:`~pytest_trt.compare.compare_outputs` into the work of the
verdict: ``(name, actual, expected)`` triples in the order to compare (:func:`pair_up`) and
arrays of a comparable dtype (:func:`as_array`). Invalid arguments are
:class:`~pytest_trt.errors.UsageError`\\ s that name the output and what was given. The
settings per output (tolerances, floors) are the criterion's (:mod:`pytest_trt.compare.criterion`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ..errors import UsageError
from .scan import category

__all__ = ["Pair", "as_array", "pair_up"]

#: ``(name, actual, expected)``: None on the side that lacks the output.
Pair = tuple[str, np.ndarray | None, np.ndarray | None]


def pair_up(actual: Any, expected: Any, names: Any) -> list[Pair]:
    """The outputs to compare, in order: two arrays (named ``names`` or ``"output"``) or two
    mappings of output name to array (``names`` restricts and orders them; outputs of
    ``actual`` that ``expected`` lacks come last)."""
    a_map = isinstance(actual, Mapping)
    e_map = isinstance(expected, Mapping)
    if a_map != e_map:
        raise UsageError(
            "actual and expected must both be arrays or both be dicts of named outputs; got "
            f"{type(actual).__name__} and {type(expected).__name__}"
        )
    if not a_map:
        name = _single_name(names)
        return [(name, as_array(actual, "actual", name), as_array(expected, "expected", name))]
    for side, mp in (("actual", actual), ("expected", expected)):
        bad = [k for k in mp if not isinstance(k, str)]
        if bad:
            raise UsageError(f"output names must be strings; {side} has {bad[:3]!r}")
    if names is not None:
        order = _wanted(names, expected)
        extras: list[str] = []
    else:
        if not expected:
            raise UsageError("expected has no outputs: nothing to compare")
        order = list(expected)
        extras = [n for n in actual if n not in expected]
    pairs: list[Pair] = []
    for n in order:
        a = as_array(actual[n], "actual", n) if n in actual else None
        pairs.append((n, a, as_array(expected[n], "expected", n)))
    for n in extras:
        pairs.append((n, as_array(actual[n], "actual", n), None))
    return pairs


def _single_name(names: Any) -> str:
    """The name of the output when two arrays are compared."""
    if names is None:
        return "output"
    if isinstance(names, str):
        return names
    seq = list(names)
    if len(seq) != 1 or not isinstance(seq[0], str):
        raise UsageError(f"names must be one output name when comparing two arrays, got {names!r}")
    return seq[0]


def _wanted(names: Any, expected: Mapping[str, Any]) -> list[str]:
    """``names`` as a list, checked against the outputs of ``expected``."""
    wanted = [names] if isinstance(names, str) else list(names)
    unknown = [n for n in wanted if n not in expected]
    if unknown:
        raise UsageError(
            f"names lists {_names(unknown)} that expected does not have; expected has {_names(list(expected))}"
        )
    if len(set(wanted)) != len(wanted):
        raise UsageError(f"names lists an output twice: {wanted!r}")
    if not wanted:
        raise UsageError("names is empty: nothing to compare")
    return wanted


def as_array(x: Any, side: str, name: str) -> np.ndarray:
    """``x`` as a numpy array of a comparable dtype (float incl. bfloat16, integer, bool)."""
    if isinstance(x, np.ndarray):
        arr = x
    else:
        try:
            arr = np.asarray(x)
        except Exception as exc:  # e.g. a CUDA tensor
            raise UsageError(
                f"{side} output {name!r} ({type(x).__name__}) cannot be read as a numpy array: {exc}"
            ) from exc
    if category(arr.dtype) is None:
        raise UsageError(
            f"{side} output {name!r} has dtype {arr.dtype}, which cannot be compared: "
            "only float (incl. bfloat16), integer and bool outputs are supported"
        )
    return arr


def _names(names: Iterable[str]) -> str:
    return ", ".join(repr(n) for n in names) or "(none)"
