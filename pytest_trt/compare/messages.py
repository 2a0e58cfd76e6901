"""The failure message of a comparison: how its figures are written for a person.

Values in the shortest form that round-trips in the output's own dtype (:func:`fmt_val`;
every other number, shape and tolerance format is :mod:`pytest_trt.core.formatting`'s),
the multi-line section of a failing output (:func:`output_report`), the one line of a
passing one (:func:`summary_line`), the tolerance that would have passed
(:func:`would_pass`), the mismatch table, and the head of the whole message
(:func:`result_message`). Nothing here decides a verdict.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.formatting import fmt_cos, fmt_db, fmt_err, fmt_index, fmt_pct, fmt_shape, fmt_tol, fmt_up
from .figures import Element, OutputFigures
from .tolerances import DEFAULT_TOLERANCES, SEMANTICS

if TYPE_CHECKING:  # pragma: no cover
    from .criterion import Criterion

__all__ = [
    "fmt_val",
    "output_report",
    "result_message",
    "summary_line",
    "table_rows",
    "would_pass",
]

_IND = "  "


# --------------------------------------------------------------------------------------
# Numbers
# --------------------------------------------------------------------------------------


def fmt_val(value: Any, dtype_name: str | None) -> str:
    """Shortest repr that round-trips in the output's own dtype (float32 shows 1.0000001)."""
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, numbers.Integral):
        return str(int(value))
    v = float(value)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    try:
        dt = np.dtype(dtype_name) if dtype_name else np.dtype(np.float64)
        if dt.kind != "f":
            dt = np.dtype(np.float32)
    except TypeError:
        dt = np.dtype(np.float32)
    x = dt.type(v)
    if v == 0 or 1e-4 <= abs(v) < 1e7:
        return np.format_float_positional(x, unique=True, trim="-")
    return np.format_float_scientific(x, unique=True, trim="-")


# --------------------------------------------------------------------------------------
# One output
# --------------------------------------------------------------------------------------


def _value(oc: OutputFigures, value: Any, actual_side: bool) -> str:
    return fmt_val(value, oc.actual_dtype if actual_side else oc.dtype)


def _both(oc: OutputFigures, el: Element) -> str:
    return f"actual {_value(oc, el.actual, True)}, expected {_value(oc, el.expected, False)}"


def summary_line(oc: OutputFigures) -> str:
    """One line: how passing outputs are listed in the message."""
    head = f"{oc.name!r}"
    if oc.shape is not None:
        head += f" {fmt_shape(oc.shape)} {oc.dtype}"
    if oc.problem is not None:
        return f"{head}: {oc.problem_detail}"
    parts = [f"{oc.mismatched} of {oc.total} mismatched"]
    if oc.worst_abs is not None:
        parts.append(f"max abs err {fmt_err(oc.worst_abs.abs_err)} at {fmt_index(oc.worst_abs.index)}")
    if oc.worst_rel is not None:
        parts.append(f"max rel err {fmt_err(oc.worst_rel.rel_err)}")
    if oc.cosine is not None:
        parts.append(f"cosine {fmt_cos(oc.cosine)}")
    if oc.snr_db is not None:
        parts.append(f"SNR {fmt_db(oc.snr_db)}")
    return f"{head}: " + ", ".join(parts)


def output_report(oc: OutputFigures) -> str:
    """The multi-line section of a failing output in the message."""
    if oc.problem is not None:
        return f"output {oc.name!r}: {oc.problem_detail}"
    lines = _report_head(oc) + _worst_lines(oc)
    over_all = _over_all_line(oc)
    if over_all:
        lines.append(over_all)
    if oc.nan_actual is not None:
        lines.append(
            f"{_IND}NaN: actual {oc.nan_actual}, expected {oc.nan_expected}; "
            f"Inf: actual {oc.inf_actual}, expected {oc.inf_expected}"
        )
    if oc.kind == "float" and oc.detailed:
        lines.append(f"{_IND}{would_pass(oc)}")
    lines += _metric_lines(oc)
    if oc.table:
        shown = len(oc.table)
        what = f"all {shown}" if shown == oc.mismatched else f"first {shown} of {oc.mismatched}"
        lines.append(f"{_IND}mismatches ({what}; NaN/Inf first, then largest abs error first):")
        lines.extend(_IND * 2 + row for row in table_rows(oc))
    return "\n".join(lines)


def _report_head(oc: OutputFigures) -> list[str]:
    dt = oc.dtype if oc.actual_dtype in (None, oc.dtype) else f"{oc.dtype} (actual {oc.actual_dtype})"
    shape = fmt_shape(oc.shape) if oc.shape is not None else fmt_shape(())
    lines = [
        f"output {oc.name!r}: shape {shape} {dt}: {oc.mismatched} of "
        f"{oc.total} elements mismatched ({fmt_pct(100.0 * oc.mismatched_fraction)})"
    ]
    if oc.kind == "float":
        lines.append(f"{_IND}tolerances: rtol={fmt_tol(oc.rtol)}, atol={fmt_tol(oc.atol)}")
    else:
        lines.append(f"{_IND}{oc.kind} output: compared exactly")
    return lines


def _worst_lines(oc: OutputFigures) -> list[str]:
    """The worst abs and rel errors among the mismatched elements, and their statistics."""
    lines = []
    for label, el, first, other in (
        ("worst abs error:", oc.mismatch_worst_abs, "abs_err", "rel"),
        ("worst rel error:", oc.mismatch_worst_rel, "rel_err", "abs"),
    ):
        if el is not None:
            second = el.rel_err if other == "rel" else el.abs_err
            lines.append(
                f"{_IND}{label} {fmt_err(getattr(el, first))} at {fmt_index(el.index)}: "
                f"{_both(oc, el)} ({other} err {fmt_err(second)})"
            )
    if oc.mismatch_mean_abs is not None:
        mm = oc.mismatch_worst_abs
        lines.append(
            f"{_IND}abs error of the mismatched elements: max "
            f"{fmt_err(None if mm is None else mm.abs_err)}, mean {fmt_err(oc.mismatch_mean_abs)}, "
            f"p99 {fmt_err(oc.mismatch_p99_abs)}"
        )
    return lines


def _over_all_line(oc: OutputFigures) -> str:
    """The worst elements over ALL elements, when not shown already.

    They can be ones within tolerance (a large abs error within rtol, a large rel error
    within atol): shown apart, labelled so.
    """
    extra = []
    shown = {el.index for el in oc.table}
    for label, el, mm, err in (
        ("max abs err", oc.worst_abs, oc.mismatch_worst_abs, "abs_err"),
        ("max rel err", oc.worst_rel, oc.mismatch_worst_rel, "rel_err"),
    ):
        if el is not None and el.index not in shown and (mm is None or el.index != mm.index):
            extra.append(f"{label} {fmt_err(getattr(el, err))} at {fmt_index(el.index)} ({_both(oc, el)})")
    if not extra:
        return ""
    return f"{_IND}over all elements, incl. those within tolerance: " + "; ".join(extra)


def _metric_lines(oc: OutputFigures) -> list[str]:
    lines = []
    metrics = []
    if oc.cosine is not None:
        metrics.append(f"cosine similarity {fmt_cos(oc.cosine)}")
    if oc.snr_db is not None:
        metrics.append(f"SNR {fmt_db(oc.snr_db)}")
    if metrics:
        over = ""
        if oc.metric_elements is not None and oc.metric_elements != oc.total:
            over = f" (over the {oc.metric_elements} elements finite on both sides)"
        lines.append(f"{_IND}" + ", ".join(metrics) + over)
    for failure in oc.metric_failures:
        lines.append(f"{_IND}FAILED: {failure}")
    return lines


def would_pass(oc: OutputFigures) -> str:
    """The tolerances with which a failing output would have passed (or why none would)."""
    opts = []
    if oc.needed_atol is not None and math.isfinite(oc.needed_atol):
        opts.append(f"atol >= {fmt_up(oc.needed_atol)} at rtol={fmt_tol(oc.rtol)}")
    if oc.needed_rtol is not None and math.isfinite(oc.needed_rtol):
        opts.append(f"rtol >= {fmt_up(oc.needed_rtol)} at atol={fmt_tol(oc.atol)}")
    elif oc.needed_rtol is not None:
        opts.append(f"(no finite rtol: expected is 0, or the rel error overflows, where abs err > "
                    f"atol={fmt_tol(oc.atol)})")
    txt = "would pass with " + ", or ".join(opts) if opts else "no finite tolerance passes (abs error overflows)"
    if oc.unfixable:
        return (
            f"no tolerance passes the {oc.unfixable} NaN/Inf mismatch(es); "
            + ("the other mismatches " + txt if oc.unfixable < oc.mismatched else "")
        ).rstrip("; ")
    return txt


def table_rows(oc: OutputFigures) -> list[str]:
    """The mismatch table: a header, one right-aligned row per element, and what was left out."""
    header = ("index", "actual", "expected", "abs err", "rel err")
    rows = [
        (
            fmt_index(el.index),
            _value(oc, el.actual, True),
            _value(oc, el.expected, False),
            fmt_err(el.abs_err),
            fmt_err(el.rel_err),
        )
        for el in oc.table
    ]
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) for i in range(5)]
    out = ["  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True))]
    out += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    if oc.mismatched > len(oc.table):
        out.append(f"... {oc.mismatched - len(oc.table)} more mismatched element(s)")
    return out


# --------------------------------------------------------------------------------------
# The whole message
# --------------------------------------------------------------------------------------


def _tolerance_text(outs: Sequence[OutputFigures], precision: str, criterion: Criterion | None) -> str:
    floats = [o.name for o in outs if o.kind == "float" or o.kind is None]
    if criterion is not None:  # every value with where it came from
        return criterion.describe(floats)
    tols = {(o.rtol, o.atol) for o in outs if o.name in floats}
    if len(tols) == 1:
        rtol, atol = next(iter(tols))
        dflt = " (defaults)" if (rtol, atol) == DEFAULT_TOLERANCES[precision] else ""
        return f"rtol={fmt_tol(rtol)}, atol={fmt_tol(atol)}{dflt}"
    if tols:
        return "per-output tolerances (see each output)"
    return "exact comparison"


def result_message(outs: Sequence[OutputFigures], precision: str, equal_nan: bool, no_check: bool = False,
                   criterion: Criterion | None = None) -> str:
    """The failure message of a comparison of ``outs`` (or a summary when everything passed); with the
    ``criterion`` it was judged by, its head names where each tolerance and floor came from."""
    failed = [o for o in outs if not o.passed]
    tol_txt = _tolerance_text(outs, precision, criterion)
    if no_check and any(math.isfinite(o.rtol) and math.isfinite(o.atol) for o in outs):
        # explicit tolerances under no_check are a verdict: say so, or the head contradicts the failure below it
        tol_txt += ("; no_check: only the given atol/rtol and floors apply (tolerances not given are inf; "
                    "NaN/Inf mismatches and missing outputs still fail)")
    elif no_check:
        tol_txt += "; no_check: no tolerance verdict (NaN/Inf mismatches, missing outputs and explicit floors still fail)"
    nan_txt = "NaN equals NaN (equal_nan=True)" if equal_nan else "NaN never equals NaN"
    if failed:
        head = f"{len(failed)} of {len(outs)} output(s) differ from the reference"
    elif no_check:
        head = f"{len(outs)} output(s) compared with the reference, figures only"
    else:
        head = f"all {len(outs)} output(s) match the reference"
    lines = [
        f"{head} [precision {precision}; {tol_txt}]",
        f"{SEMANTICS}; {nan_txt}; +-inf equals only itself",
    ]
    for o in failed:
        lines.append("")
        lines.append(output_report(o))
    passing = [o for o in outs if o.passed]
    if passing:
        lines.append("")
        for o in passing:
            lines.append(f"passed: {summary_line(o)}")
    return "\n".join(lines)
