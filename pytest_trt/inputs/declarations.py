"""Checking what the user declares (input names, dims, shapes, ranges) and naming inputs in messages.

Every step of the inputs pipeline takes user-written declarations (``shapes``, ``dims``,
``profile``, ``val_range``, ``offset``, ``outliers``) keyed by input name. The checks here
turn a wrong declaration into an :class:`~pytest_trt.errors.InputError` that names the
offending key and lists the model's inputs, the same way in every step.
"""

from __future__ import annotations

import difflib
import math
import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..errors import InputError
from .specs import InputSpec

__all__ = [
    "ALL_INPUTS",
    "ALL_INPUT_KEYS",
    "as_dim",
    "as_shape",
    "check_input_names",
    "check_range",
    "did_you_mean",
    "inputs_listing",
    "is_finite_number",
]

#: Key of a value-range dict that applies to every input not listed (Polygraphy's spelling).
ALL_INPUTS = ""
#: The keys accepted for "every input" in a per-input dict (``""`` and ``"*"``).
ALL_INPUT_KEYS = ("", "*")


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest candidate, or ``""`` when none is close."""
    close = difflib.get_close_matches(str(name), list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def inputs_listing(specs: list[InputSpec]) -> str:
    """``the model's inputs: x: float32[batch, 8], ...``: the tail of messages about input names."""
    if not specs:
        return "the model has no inputs"
    return "the model's inputs: " + ", ".join(s.describe() for s in specs)


def check_input_names(given: Iterable[Any], specs: list[InputSpec], what: str, label: str, *,
                      allow_all: bool = False) -> None:
    """Raise :class:`InputError` for a key of ``given`` that names no input of the model.

    ``what`` names the argument in the message (``"val_range"``), ``label`` the model;
    ``allow_all`` accepts the all-inputs keys :data:`ALL_INPUT_KEYS`.
    """
    names = [s.name for s in specs]
    for key in given:
        if allow_all and key in ALL_INPUT_KEYS:
            continue
        if not isinstance(key, str):
            raise InputError(f"{what} keys must be input names (str), got {key!r}")
        if key not in names:
            raise InputError(
                f"{what} names {key!r}, which is not an input of {label}{did_you_mean(key, names)}; "
                f"{inputs_listing(specs)}"
            )


def _is_number(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


def is_finite_number(v: Any) -> bool:
    """A real, non-bool number that is finite as a float."""
    if not _is_number(v):
        return False
    try:
        return math.isfinite(float(v))
    except OverflowError:
        return False


def as_dim(value: Any, what: str) -> int:
    """A declared dim: a positive int (numpy ints accepted, bools and floats not)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise InputError(f"{what} must be a non-negative integer, got {value!r}")
    value = int(value)
    if value < 0:
        raise InputError(
            f"{what} is {value}: dims must be non-negative integers (write the size to use; "
            f"-1 does not mean 'dynamic' here)"
        )
    if value == 0:
        raise InputError(f"{what} is 0: zero-size dims are not supported (an empty tensor compares nothing); "
                         f"give a size >= 1")
    return value


def as_shape(value: Any, what: str) -> tuple[int, ...]:
    """A declared shape: an iterable of dims (each checked by :func:`as_dim`), as a tuple."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InputError(f"{what} must be a tuple of ints like (2, 128), got {value!r}")
    return tuple(as_dim(d, f"{what} dim {i}") for i, d in enumerate(value))


def check_range(lo: Any, hi: Any, what: str) -> tuple[Any, Any]:
    """``(lo, hi)`` if both are finite real numbers (not bools) and ``lo <= hi``; else InputError."""
    for v in (lo, hi):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
            raise InputError(f"{what}: range bounds must be numbers, got {v!r}")
        if not isinstance(v, numbers.Integral) and not math.isfinite(float(v)):
            raise InputError(f"{what}: range bounds must be finite, got {v!r}")
    if lo > hi:
        raise InputError(f"{what}: min {lo} is greater than max {hi}; write [min, max]")
    return (lo, hi)
