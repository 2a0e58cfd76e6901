"""How numbers, shapes and tolerances are written for a person: the one owner of these formats.

Three places write error figures, each in the width it has room for, and each keeps its own
format (a reader learns it once per view):

* failure messages (:mod:`pytest_trt.compare.messages`): :func:`fmt_err`, 3 significant
  digits, ``n/a`` for a figure not computed; :func:`fmt_up` rounds a needed tolerance *up*;
* the report tables (terminal summary, HTML): :func:`fmt_cell_err` (``1.23e-02``),
  :func:`fmt_cell_tol`, :func:`fmt_ratio`, ``-`` for an empty cell;
* the layerwise and FP32-island search tables: :func:`fmt_error` (``1.2e-03``), ``-`` when empty;
* ledgers (terminal and HTML): :func:`fmt_ms` (a time in ms, 4 significant digits) and
  :func:`fmt_share` (a fraction as a percentage, one decimal), ``-`` when unknown.

Figures read back from a report's JSON (where non-finite numbers are the strings ``"inf"``,
``"-inf"``, ``"nan"``: :func:`pytest_trt.core.jsonsafe.json_number`) become floats again with
:func:`as_float`. Nothing here imports numpy: the plugin's load path may import this module.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import Any

__all__ = [
    "as_float",
    "fmt_cell_err",
    "fmt_cell_tol",
    "fmt_cos",
    "fmt_db",
    "fmt_err",
    "fmt_error",
    "fmt_index",
    "fmt_ms",
    "fmt_pct",
    "fmt_ratio",
    "fmt_shape",
    "fmt_share",
    "fmt_tol",
    "fmt_up",
]


# --------------------------------------------------------------------------------------
# Shapes
# --------------------------------------------------------------------------------------
def fmt_shape(shape: Iterable[Any]) -> str:
    """A shape as Python writes a tuple: ``(2, 128)``, ``(4,)``, ``()``; a symbolic dim as its name.

    >>> fmt_shape((2, 128)), fmt_shape([4]), fmt_shape(()), fmt_shape(("batch", 8))
    ('(2, 128)', '(4,)', '()', '(batch, 8)')
    """
    dims = tuple(shape)
    text = ", ".join(str(int(d)) if isinstance(d, numbers.Integral) else str(d) for d in dims)
    return "(" + text + ("," if len(dims) == 1 else "") + ")"


def fmt_index(index: Iterable[Any]) -> str:
    """An element's index, written like a shape."""
    return fmt_shape(index)


# --------------------------------------------------------------------------------------
# Failure messages
# --------------------------------------------------------------------------------------
def fmt_pct(p: float) -> str:
    """A percentage to 3 significant digits."""
    return f"{p:.3g}%"


def fmt_tol(x: float) -> str:
    """A tolerance or a floor as the user would write it (``0.01``, ``1e-05``, ``inf``): ``%g``, or the
    shortest exact form where ``%g``'s 6 digits would change it (a floor ``0.99999999`` is not ``1``).

    >>> fmt_tol(0.01), fmt_tol(1e-5), fmt_tol(0.99999999), fmt_tol(float("inf"))
    ('0.01', '1e-05', '0.99999999', 'inf')
    """
    short = f"{x:g}"
    return short if not math.isfinite(x) or float(short) == x else repr(float(x))


def fmt_err(x: Any) -> str:
    """An error to 3 significant digits (``n/a`` for None, ``nan``, ``inf``)."""
    if x is None:
        return "n/a"
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.3g}"


def fmt_up(x: float) -> str:
    """3 significant digits, rounded up: a tolerance that surely suffices."""
    if x == 0 or not math.isfinite(x):
        return fmt_err(x)
    q = 10.0 ** (math.floor(math.log10(x)) - 2)
    if q == 0.0:  # x is subnormal (5e-324): the rounding step underflows; repr is exact
        return repr(x)
    for digits in (3, 4, 6, 9, 17):
        txt = f"{math.ceil(x / q) * q:.{digits}g}"
        if float(txt) >= x:
            return txt
    return repr(x)


def fmt_cos(x: float | None) -> str:
    """A cosine similarity to 8 significant digits."""
    if x is None or math.isnan(x):
        return "nan"
    return f"{x:.8g}"


def fmt_db(x: float | None) -> str:
    """A signal-to-noise ratio in dB to one decimal."""
    if x is None or math.isnan(x):
        return "nan dB"
    if math.isinf(x):
        return ("inf" if x > 0 else "-inf") + " dB"
    return f"{x:.1f} dB"


# --------------------------------------------------------------------------------------
# Report tables (terminal summary, HTML)
# --------------------------------------------------------------------------------------
def _figure(x: float | None, spec: str) -> str:
    """``x`` in ``spec``; ``-`` for None, ``nan``, and ``inf`` for either infinity (an error's size)."""
    if x is None:
        return "-"
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf"
    return format(x, spec)


def fmt_cell_err(x: float | None) -> str:
    """An error in a report table: ``1.23e-02``, ``nan``, ``inf``, ``-`` when empty."""
    return _figure(x, ".2e")


def fmt_cell_tol(x: float | None) -> str:
    """A tolerance in a report table (3 significant digits, ``-`` when empty)."""
    return "-" if x is None else f"{x:.3g}"


def fmt_ratio(x: float | None) -> str:
    """An ``x tol`` figure (3 significant digits, ``inf``, ``-`` when unknown)."""
    return _figure(x, ".3g")


# --------------------------------------------------------------------------------------
# Layerwise and search tables
# --------------------------------------------------------------------------------------
def fmt_error(x: float | None) -> str:
    """An error figure as the layerwise and search messages write it: ``1.2e-03``, ``inf``, ``nan``, ``-`` for None."""
    return _figure(x, ".1e")


# --------------------------------------------------------------------------------------
# Ledgers
# --------------------------------------------------------------------------------------
def fmt_ms(x: Any) -> str:
    """A time in milliseconds to 4 significant digits (``-`` when not a number)."""
    return "-" if not isinstance(x, (int, float)) else f"{x:.4g}"


def fmt_share(x: Any) -> str:
    """A fraction as a percentage with one decimal (``0.25`` -> ``25.0%``; ``-`` when not a number)."""
    return "-" if not isinstance(x, (int, float)) else f"{100.0 * x:.1f}%"


# --------------------------------------------------------------------------------------
# Figures read back from JSON
# --------------------------------------------------------------------------------------
def as_float(x: Any) -> float | None:
    """A figure of a report's JSON as a float: ``"inf"`` -> inf, numbers -> float, None (and a
    string that is no number) -> None. The inverse of :func:`~pytest_trt.core.jsonsafe.json_number`."""
    if x is None:
        return None
    if isinstance(x, str):
        try:
            return float(x)
        except ValueError:
            return None
    return float(x)
