"""The verdict of a comparison: one :class:`OutputComparison` per output, a :class:`CompareResult`.

:func:`compare_outputs` pairs the outputs, resolves the tolerances and metric floors of
each, and judges every output: structural problems (missing, extra, dtype kind, shape)
first, then the blocked scan, then the detailed pass when the scan cannot prove a pass
(or details were asked), then the cosine / SNR floors. :func:`assert_close` raises
:class:`~pytest_trt.errors.AccuracyError` with the message of
:mod:`pytest_trt.compare.messages` when an output fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.dtypes import FP32
from ..core.formatting import fmt_cos, fmt_db, fmt_shape, fmt_tol
from ..core.jsonsafe import json_number
from ..errors import AccuracyError, UsageError
from .arguments import pair_up
from .criterion import Criterion, Level, refuse_infinite
from .detail import detail_exact, detail_float
from .figures import Element, OutputFigures
from .messages import output_report, result_message, summary_line, would_pass
from .metrics import MetricSums, exact_metric_sums
from .scan import beyond_atol, category, passes_exact, passes_float, working_dtype
from .tolerances import SEMANTICS

__all__ = ["CompareResult", "OutputComparison", "assert_close", "compare_outputs", "refuse_infinite"]


class OutputComparison(OutputFigures):
    """The comparison of one named output: its figures (:class:`~pytest_trt.compare.figures.OutputFigures`),
    their message and their JSON record.

    ``worst_abs`` / ``worst_rel`` are over *all* elements (their value, index and both
    values are also reachable as ``max_abs``, ``worst_abs_index``, ``worst_abs_values``,
    ...); ``mismatch_worst_abs`` / ``mismatch_worst_rel`` and the ``mismatch_*`` statistics
    are over the mismatched elements only. Figures are ``None`` when not computed: a
    passing output is only scanned for its verdict unless ``details=True`` (or a metric
    threshold) was asked.
    """

    def summary_line(self) -> str:
        """One line: how passing outputs are listed in the message."""
        return summary_line(self)

    def report(self) -> str:
        """The multi-line section of a failing output in the message."""
        return output_report(self)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON types only. Non-finite floats become the strings "inf", "-inf", "nan"."""
        def el(e: Element | None) -> dict[str, Any] | None:
            return None if e is None else e.to_json()

        return {
            "name": self.name,
            "kind": self.kind,
            "shape": None if self.shape is None else list(self.shape),
            "dtype": self.dtype,
            "actual_shape": None if self.actual_shape is None else list(self.actual_shape),
            "actual_dtype": self.actual_dtype,
            "passed": bool(self.passed),
            "problem": self.problem,
            "problem_detail": self.problem_detail,
            "detailed": self.detailed,
            "mismatched": int(self.mismatched),
            "total": int(self.total),
            "mismatched_fraction": json_number(self.mismatched_fraction),
            "atol": json_number(self.atol),
            "rtol": json_number(self.rtol),
            "max_abs": json_number(self.max_abs),
            "worst_abs_index": None if self.worst_abs is None else list(self.worst_abs.index),
            "worst_abs_values": None if self.worst_abs is None else [
                json_number(self.worst_abs.actual), json_number(self.worst_abs.expected)],
            "max_rel": json_number(self.max_rel),
            "worst_rel_index": None if self.worst_rel is None else list(self.worst_rel.index),
            "worst_rel_values": None if self.worst_rel is None else [
                json_number(self.worst_rel.actual), json_number(self.worst_rel.expected)],
            # NaN/Inf mismatches: no tolerance passes, so no "needed" figure (null) and the reason
            "element_ratio": json_number(self.element_ratio),
            "needed_atol": None if self.unfixable else json_number(self.needed_atol),
            "needed_rtol": None if self.unfixable else json_number(self.needed_rtol),
            "needed_reason": (f"no tolerance passes the {self.unfixable} NaN/Inf mismatch(es)"
                              if self.unfixable else None),
            "advice": would_pass(self) if not self.passed and self.mismatched else None,
            "unfixable": int(self.unfixable),
            "nan_actual": self.nan_actual,
            "nan_expected": self.nan_expected,
            "inf_actual": self.inf_actual,
            "inf_expected": self.inf_expected,
            "cosine": json_number(self.cosine),
            "snr_db": json_number(self.snr_db),
            "metric_elements": self.metric_elements,
            "min_cosine": json_number(self.min_cosine),
            "min_snr_db": json_number(self.min_snr_db),
            "metric_failures": list(self.metric_failures),
            "mismatch": None if self.mismatch_mean_abs is None and not self.table else {
                "worst_abs": el(self.mismatch_worst_abs),
                "worst_rel": el(self.mismatch_worst_rel),
                "mean_abs": json_number(self.mismatch_mean_abs),
                "p99_abs": json_number(self.mismatch_p99_abs),
                "first": [el(e) for e in self.table],
            },
        }


@dataclass
class CompareResult:
    """All outputs of one comparison. ``bool(result)`` is ``result.passed``."""

    outputs: dict[str, OutputComparison]
    precision: str = FP32
    equal_nan: bool = False
    #: compared with ``no_check=True``: figures without a tolerance verdict
    no_check: bool = False
    #: the criterion the outputs were judged by (per output: tolerances, floors and their sources)
    criterion: Criterion | None = None

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outputs.values())

    @property
    def failed_outputs(self) -> list[str]:
        """Names of the failing outputs, in order."""
        return [n for n, o in self.outputs.items() if not o.passed]

    def __bool__(self) -> bool:
        return self.passed

    def message(self) -> str:
        """The failure message (or a summary when everything passed)."""
        return result_message(list(self.outputs.values()), self.precision, self.equal_nan, self.no_check,
                              self.criterion)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON types (``json.dumps`` works with ``allow_nan=False``)."""
        return {
            "passed": bool(self.passed),
            "precision": self.precision,
            "equal_nan": bool(self.equal_nan),
            "no_check": bool(self.no_check),
            "semantics": SEMANTICS,
            "outputs_total": len(self.outputs),
            "outputs_failed": len(self.failed_outputs),
            "failed_outputs": self.failed_outputs,
            "outputs": {n: o.to_json() for n, o in self.outputs.items()},
            "criterion": None if self.criterion is None else self.criterion.to_json(),
        }

    def __str__(self) -> str:
        return self.message()


def assert_close(
    actual: Any,
    expected: Any,
    *,
    rtol: Any = None,
    atol: Any = None,
    precision: str = FP32,
    equal_nan: bool = False,
    min_cosine: Any = None,
    min_snr_db: Any = None,
    names: Any = None,
    details: bool = False,
    no_check: bool = False,
    criterion: Criterion | None = None,
) -> CompareResult:
    """Assert that ``actual`` matches the reference ``expected``; return the CompareResult.

    ``actual`` and ``expected`` are two arrays (named ``names`` or ``"output"``) or two
    mappings of output name to array (``names`` then restricts and orders the outputs to
    compare). ``rtol`` / ``atol`` / ``min_cosine`` / ``min_snr_db``: a number, or a dict
    ``{output name: value}`` (outputs not named get the precision defaults / no check).
    ``details=True`` computes the figures (max errors, metrics) of passing outputs too.
    ``no_check=True``: no tolerance verdict; ``criterion``: a resolved criterion instead of these
    (see :func:`compare_outputs`).

    Raises :class:`~pytest_trt.errors.AccuracyError` (an ``AssertionError``) carrying the
    result when any output fails, :class:`~pytest_trt.errors.UsageError` for invalid
    arguments (negative, NaN or, without ``no_check``, infinite tolerances, unknown names,
    unsupported dtypes).
    """
    result = compare_outputs(
        actual, expected, rtol=rtol, atol=atol, precision=precision, equal_nan=equal_nan,
        min_cosine=min_cosine, min_snr_db=min_snr_db, names=names, details=details, no_check=no_check,
        criterion=criterion,
    )
    if not result.passed:
        raise AccuracyError(result.message(), result)
    return result


def compare_outputs(
    actual: Any,
    expected: Any,
    *,
    rtol: Any = None,
    atol: Any = None,
    precision: str = FP32,
    equal_nan: bool = False,
    min_cosine: Any = None,
    min_snr_db: Any = None,
    names: Any = None,
    details: bool = False,
    no_check: bool = False,
    criterion: Criterion | None = None,
) -> CompareResult:
    """Like :func:`assert_close` but never raises on a mismatch: returns the result.

    ``no_check=True`` (the console script's ``--no-check``, the marker's and ``trt.check()``'s
    ``no_check=True``) compares without a tolerance verdict: ``atol`` and ``rtol`` become
    ``inf`` unless given, so every finite element passes and the precision's default cosine
    floor no longer applies; NaN/Inf mismatches, missing outputs and explicit ``min_cosine`` /
    ``min_snr_db`` floors still fail. It is the only way to pass an infinite tolerance: without
    it ``atol=inf`` (or ``rtol=inf``) is a :class:`~pytest_trt.errors.UsageError`, since it
    switches the element check off and would pass a real overflow.

    ``criterion``: a resolved :class:`~pytest_trt.compare.criterion.Criterion` (tolerances, floors,
    ``no_check``, ``equal_nan`` and the precision, with where each came from) instead of the
    keyword arguments, which it excludes. Without it the arguments are resolved into one (level
    ``argument`` over the precision's defaults); either way ``result.criterion`` is the one used.
    """
    pairs = pair_up(actual, expected, names)
    all_names = [p[0] for p in pairs]
    if criterion is None:
        criterion = Criterion.resolve(
            all_names, precision,
            [Level("argument", "argument", {"rtol": rtol, "atol": atol, "min_cosine": min_cosine,
                                            "min_snr_db": min_snr_db})],
            no_check=bool(no_check), no_check_source="argument" if no_check else "default",
            equal_nan=bool(equal_nan))
    else:
        given = [k for k, v in (("rtol", rtol), ("atol", atol), ("min_cosine", min_cosine), ("min_snr_db", min_snr_db),
                                ("equal_nan", equal_nan), ("no_check", no_check)) if v not in (None, False)]
        if given or precision != FP32:
            raise UsageError(f"compare_outputs: pass criterion= or {', '.join(given) or 'precision'}=, not both: "
                             f"the criterion holds them")
    outputs: dict[str, OutputComparison] = {}
    for name, a, e in pairs:
        c = criterion.output(name)
        outputs[name] = _compare_one(
            name, a, e, rtol=float(c.rtol.value), atol=float(c.atol.value),  # type: ignore[arg-type]
            equal_nan=criterion.equal_nan, min_cosine=c.min_cosine.value, min_snr_db=c.min_snr_db.value,
            details=details, default_cosine=c.default_cosine,
        )
    return CompareResult(outputs=outputs, precision=criterion.precision, equal_nan=criterion.equal_nan,
                         no_check=criterion.no_check, criterion=criterion)


def _compare_one(name: str, a: np.ndarray | None, e: np.ndarray | None, *, rtol: float, atol: float,
                 equal_nan: bool, min_cosine: float | None, min_snr_db: float | None, details: bool,
                 default_cosine: bool = False) -> OutputComparison:
    if a is None or e is None:
        return _one_sided(name, a, e, rtol=rtol, atol=atol)
    ka, ke = category(a.dtype), category(e.dtype)
    oc = OutputComparison(
        name=name, shape=tuple(e.shape), dtype=str(e.dtype), passed=True, mismatched=0,
        total=int(e.size), atol=atol, rtol=rtol, kind=ke,
        actual_shape=tuple(a.shape), actual_dtype=str(a.dtype),
        min_cosine=min_cosine, min_snr_db=min_snr_db,
    )
    if _structural_problem(oc, a, e, ka, ke):
        return oc
    if ke != "float":
        oc.atol = oc.rtol = 0.0
        ok = passes_exact(a, e)
        if not ok or details:
            detail_exact(oc, a, e)
        return oc

    _judge_float(oc, a, e, rtol=rtol, atol=atol, equal_nan=equal_nan, min_cosine=min_cosine,
                 min_snr_db=min_snr_db, details=details, default_cosine=default_cosine)
    return oc


def _judge_float(oc: OutputComparison, a: np.ndarray, e: np.ndarray, *, rtol: float, atol: float,
                 equal_nan: bool, min_cosine: float | None, min_snr_db: float | None, details: bool,
                 default_cosine: bool) -> None:
    """A float output: the one-pass scan (verdict and metric sums), the detailed pass when it
    cannot prove a pass (or details were asked), then the floors."""
    W = working_dtype(a, e)
    want_metrics = details or min_cosine is not None or min_snr_db is not None
    sums = MetricSums() if want_metrics and e.size and not details else None
    ok = passes_float(a, e, W, rtol, atol, sums) if e.size else True  # one pass: verdict and metric sums
    settled = None
    if not ok or details:
        detail_float(oc, a, e, W, rtol, atol, equal_nan)
    elif sums is not None:
        settled = sums if sums.settle() else exact_metric_sums(a, e)  # exact when the fast sums are not
        oc.cosine, oc.snr_db, oc.metric_elements = settled.cosine(), settled.snr_db(), settled.n
    if default_cosine and e.size and not _reference_beyond_atol(e, atol, settled):
        # numerically zero at this tolerance: no direction to compare, the element rule judges it
        min_cosine = oc.min_cosine = None
        if settled is not None and min_snr_db is None:  # computed for the default floor only
            oc.cosine = oc.snr_db = oc.metric_elements = None
    _check_metrics(oc, min_cosine, min_snr_db, default_cosine)


def _reference_beyond_atol(e: np.ndarray, atol: float, sums: MetricSums | None) -> bool:
    """Whether some finite element of ``e`` exceeds ``atol``; from the passing scan's sums when
    they say so (a mean square above ``atol**2``), else by a blocked scan of ``e``."""
    if sums is not None and sums.mean_square_e_exceeds(atol):
        return True
    return beyond_atol(e, atol)


def _one_sided(name: str, a: np.ndarray | None, e: np.ndarray | None, *, rtol: float,
               atol: float) -> OutputComparison:
    """An output present on one side only: missing from ``actual``, or extra in it."""
    present = a if a is not None else e
    assert present is not None
    oc = OutputComparison(
        name=name, shape=tuple(present.shape), dtype=str(present.dtype), passed=False,
        mismatched=0, total=int(present.size), atol=atol, rtol=rtol, kind=category(present.dtype),
    )
    if a is None:
        oc.problem = "missing"
        oc.problem_detail = (
            f"missing from actual; expected has it: shape {fmt_shape(present.shape)} {present.dtype}"
        )
    else:
        oc.problem = "extra"
        oc.actual_shape, oc.actual_dtype = oc.shape, oc.dtype
        oc.problem_detail = (
            f"present in actual (shape {fmt_shape(a.shape)} {a.dtype}) but not in expected: "
            "no reference to compare with"
        )
    return oc


def _structural_problem(oc: OutputComparison, a: np.ndarray, e: np.ndarray, ka: str | None,
                        ke: str | None) -> bool:
    """Record a dtype kind or shape mismatch on ``oc`` (a failure); False when there is none."""
    if ka != ke:
        oc.passed = False
        oc.problem = "dtype"
        oc.problem_detail = (
            f"dtype kind mismatch: actual {a.dtype} ({ka}) vs expected {e.dtype} ({ke})"
        )
        return True
    if a.shape != e.shape:
        oc.passed = False
        oc.problem = "shape"
        hint = " (same number of elements: reshape if intended)" if a.size == e.size else ""
        oc.problem_detail = (
            f"shape mismatch: actual {fmt_shape(a.shape)} vs expected {fmt_shape(e.shape)}{hint}"
        )
        return True
    return False


def _check_metrics(oc: OutputComparison, min_cosine: float | None, min_snr_db: float | None,
                   default_cosine: bool) -> None:
    """The cosine / SNR floors, beside the element rule.

    Metric thresholds need something finite to measure; an empty or all-non-finite
    output is left to the element check.
    """
    if oc.metric_elements:
        if min_cosine is not None and not (oc.cosine is not None and oc.cosine >= min_cosine):
            what = " (the precision's default floor)" if default_cosine else ""
            oc.metric_failures.append(f"cosine similarity {fmt_cos(oc.cosine)} < min_cosine {fmt_tol(min_cosine)}{what}")
        if min_snr_db is not None and not (oc.snr_db is not None and oc.snr_db >= min_snr_db):
            oc.metric_failures.append(f"SNR {fmt_db(oc.snr_db)} < min_snr_db {fmt_tol(min_snr_db)} dB")
    if oc.metric_failures:
        oc.passed = False
