"""What a comparison measured, per output: the figures behind a verdict.

:class:`OutputFigures` holds every figure of one named output (verdict, mismatched count,
worst elements, NaN/Inf counts, needed tolerances, cosine and SNR, the mismatch table) and
the flat accessors of ``docs/DESIGN.md``; :class:`Element` is one element of it. The scans
and the detailed pass fill them in; :mod:`pytest_trt.compare.messages` renders them, and
:class:`~pytest_trt.compare.OutputComparison` adds that rendering and the JSON record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.jsonsafe import json_number

__all__ = ["DETAILS_MAX_ELEMENTS", "TABLE_ROWS", "Element", "OutputFigures"]

#: Rows of the mismatch table in the failure message.
TABLE_ROWS = 10

#: Figures of *passing* outputs (max errors, for the summary and reports) cost an exact
#: second pass; the plugin and the console script compute them up to this many elements
#: per comparison, above it only failing outputs get them.
DETAILS_MAX_ELEMENTS = 1 << 22


@dataclass(frozen=True)
class Element:
    """One element of an output: its index, both values and its errors."""

    index: tuple[int, ...]
    actual: Any
    expected: Any
    abs_err: float
    rel_err: float

    def to_json(self) -> dict[str, Any]:
        """Plain JSON types; non-finite floats become the strings "inf", "-inf", "nan"."""
        return {
            "index": list(self.index),
            "actual": json_number(self.actual),
            "expected": json_number(self.expected),
            "abs_err": json_number(self.abs_err),
            "rel_err": json_number(self.rel_err),
        }


@dataclass
class OutputFigures:
    """The figures of one named output (see :class:`~pytest_trt.compare.OutputComparison`).

    ``worst_abs`` / ``worst_rel`` are over *all* elements (their value, index and both
    values are also reachable as ``max_abs``, ``worst_abs_index``, ``worst_abs_values``,
    ...); ``mismatch_worst_abs`` / ``mismatch_worst_rel`` and the ``mismatch_*`` statistics
    are over the mismatched elements only. Figures are ``None`` when not computed: a
    passing output is only scanned for its verdict unless ``details=True`` (or a metric
    threshold) was asked.
    """

    name: str
    shape: tuple[int, ...] | None  # expected's shape (actual's for an extra output)
    dtype: str | None  # expected's dtype (actual's for an extra output)
    passed: bool
    mismatched: int
    total: int
    atol: float
    rtol: float
    kind: str | None = "float"  # "float" | "int" | "bool"
    actual_shape: tuple[int, ...] | None = None
    actual_dtype: str | None = None
    problem: str | None = None  # None | "missing" | "extra" | "shape" | "dtype"
    problem_detail: str | None = None
    detailed: bool = False
    worst_abs: Element | None = None
    worst_rel: Element | None = None
    needed_atol: float | None = None
    needed_rtol: float | None = None
    #: the largest ``|actual - expected| / max(atol, rtol * |expected|)`` over the elements finite on
    #: both sides: how much of its tolerance the worst element uses (> 1 exactly when one fails)
    element_ratio: float | None = None
    unfixable: int = 0  # NaN / Inf mismatches: no tolerance makes them pass
    nan_actual: int | None = None
    nan_expected: int | None = None
    inf_actual: int | None = None
    inf_expected: int | None = None
    cosine: float | None = None
    snr_db: float | None = None
    metric_elements: int | None = None  # elements the metrics were computed over
    min_cosine: float | None = None
    min_snr_db: float | None = None
    metric_failures: list[str] = field(default_factory=list)
    mismatch_worst_abs: Element | None = None
    mismatch_worst_rel: Element | None = None
    mismatch_mean_abs: float | None = None
    mismatch_p99_abs: float | None = None
    table: list[Element] = field(default_factory=list)

    # --- flat accessors (the names of docs/DESIGN.md) ---------------------------------
    @property
    def max_abs(self) -> float | None:
        return None if self.worst_abs is None else self.worst_abs.abs_err

    @property
    def max_rel(self) -> float | None:
        return None if self.worst_rel is None else self.worst_rel.rel_err

    @property
    def worst_abs_index(self) -> tuple[int, ...] | None:
        return None if self.worst_abs is None else self.worst_abs.index

    @property
    def worst_rel_index(self) -> tuple[int, ...] | None:
        return None if self.worst_rel is None else self.worst_rel.index

    @property
    def worst_abs_values(self) -> tuple[Any, Any] | None:
        return None if self.worst_abs is None else (self.worst_abs.actual, self.worst_abs.expected)

    @property
    def worst_rel_values(self) -> tuple[Any, Any] | None:
        return None if self.worst_rel is None else (self.worst_rel.actual, self.worst_rel.expected)

    @property
    def mismatched_fraction(self) -> float:
        return self.mismatched / self.total if self.total else 0.0

