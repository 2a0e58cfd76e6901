"""The drift gate: ``--trt-compare-fail=EXPR[,EXPR...]`` (console script: ``runs diff --fail``).

An expression is ``METRIC:THRESHOLD``. Each metric has one direction, and only that direction
can fail:

========== ================================= ===========================
metric     figure of an output (JSON key)    fails when it
========== ================================= ===========================
max_abs    worst absolute error (max_abs)    grows
max_rel    worst relative error (max_rel)    grows
mismatch   mismatched fraction               grows
x_tol      tolerance ratio (x tol)           grows
cosine     cosine similarity                 falls
snr_db     signal-to-noise ratio in dB       falls
========== ================================= ===========================

``THRESHOLD`` is relative (``max_abs:+25%``: more than 25 % above the stored value) or absolute
(``cosine:-1e-5``: more than 1e-5 below it). The sign may be left out (``max_abs:25%``); given,
it must be the metric's direction (``cosine:+1e-5`` is a usage error: a cosine fails when it
falls). A relative threshold against a stored value it cannot scale, 0 (an FP32 run's error is
exactly 0) or an infinite SNR (outputs equal), is judged as absolute with threshold 0: any change
in the failing direction is a regression, and the judgement says so. The same threshold the
other way is an *improvement*: reported, never failed.

Standard library only (and :mod:`pytest_trt.core.formatting`, which writes every figure): the
plugin checks the expressions when the session starts.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..core.formatting import as_float, fmt_cos, fmt_db, fmt_err, fmt_pct, fmt_ratio
from ..errors import UsageError

__all__ = ["METRICS", "Judgement", "Threshold", "figure_text", "judge", "parse_gate"]

#: metric -> (JSON key of an output, direction: +1 an error (worse when it grows), -1 a floor
#: (worse when it falls), how it is worded)
METRICS: dict[str, tuple[str, int, str]] = {
    "max_abs": ("max_abs", +1, "max abs error"),
    "max_rel": ("max_rel", +1, "max rel error"),
    "mismatch": ("mismatched_fraction", +1, "mismatched fraction"),
    "x_tol": ("tolerance_ratio", +1, "x tol"),
    "cosine": ("cosine", -1, "cosine similarity"),
    "snr_db": ("snr_db", -1, "SNR (dB)"),
}

#: how each metric's figure is written: the formats of :mod:`pytest_trt.core.formatting` (errors and
#: fractions as in failure messages, x tol as in the report tables, a cosine with the digits that
#: tell 0.99999 from 1)
_FORMATS = {"max_abs": fmt_err, "max_rel": fmt_err, "mismatch": fmt_err, "x_tol": fmt_ratio, "cosine": fmt_cos,
            "snr_db": fmt_db}

_EXPR = re.compile(r"^\s*(?P<metric>[a-z_]+)\s*:\s*(?P<sign>[+-]?)(?P<number>[0-9.eE+-]+?)(?P<pct>%?)\s*$")


@dataclass(frozen=True)
class Threshold:
    """One gate expression: ``metric``, ``amount`` (>= 0; a fraction for relative ones), ``relative``."""

    metric: str
    amount: float
    relative: bool
    text: str

    @property
    def direction(self) -> int:
        return METRICS[self.metric][1]

    def __str__(self) -> str:
        return self.text


def parse_gate(values, flag: str = "--trt-compare-fail") -> tuple[Threshold, ...]:
    """The thresholds of ``values`` (strings, each ``EXPR[,EXPR...]``); UsageError naming ``flag``.

    A metric given twice is a usage error (which one would apply?).
    """
    found: list[Threshold] = []
    for value in values or ():
        for text in str(value).split(","):
            if text.strip():
                found.append(_parse_one(text.strip(), flag))
    seen: set[str] = set()
    for t in found:
        if t.metric in seen:
            raise UsageError(f"{flag}: {t.metric} is given twice; give one threshold per metric")
        seen.add(t.metric)
    return tuple(found)


def _parse_one(text: str, flag: str) -> Threshold:
    example = "max_abs:+25%, cosine:-1e-5"
    m = _EXPR.match(text)
    if not m:
        raise UsageError(f"{flag}={text}: expected METRIC:THRESHOLD, e.g. {example} (metrics: {', '.join(METRICS)})")
    metric = m.group("metric")
    if metric not in METRICS:
        raise UsageError(f"{flag}={text}: unknown metric {metric!r}; choose one of {', '.join(METRICS)}")
    direction = METRICS[metric][1]
    try:
        amount = float(m.group("number"))
    except ValueError:
        raise UsageError(f"{flag}={text}: {m.group('number')!r} is not a number (e.g. {example})") from None
    if not math.isfinite(amount) or amount < 0:
        raise UsageError(f"{flag}={text}: the threshold must be a finite number >= 0")
    sign = m.group("sign")
    if sign and (sign == "+") != (direction > 0):
        way, other = ("grows", "+") if direction > 0 else ("falls", "-")
        raise UsageError(f"{flag}={text}: {metric} fails only when it {way}; write {metric}:{other}"
                         f"{m.group('number')}{m.group('pct')}")
    relative = bool(m.group("pct"))
    shown = f"{metric}:{'+' if direction > 0 else '-'}{m.group('number')}{m.group('pct')}"
    return Threshold(metric, amount / 100 if relative else amount, relative, shown)


@dataclass(frozen=True)
class Judgement:
    """One metric of one output, old against new.

    ``status``: ``regressed`` (beyond the threshold in the failing direction), ``improved``
    (beyond it the other way), ``within`` (changed, inside the threshold), ``unchanged``, or
    ``not compared`` (a figure missing from either run). ``change``: ``+329%`` or ``+8.1e-03``;
    ``note``: why a relative threshold was judged as absolute.
    """

    metric: str
    old: float | None
    new: float | None
    status: str
    change: str
    #: how far beyond its limit, in units of the limit (> 1 regressed): for sorting, worst first
    severity: float
    note: str = ""
    threshold: str = ""

    def figures(self) -> str:
        """``0.0021 -> 0.009``: the old and the new figure (:func:`figure_text`)."""
        return f"{figure_text(self.metric, self.old)} -> {figure_text(self.metric, self.new)}"

    def text(self) -> str:
        """``max_abs 0.0021 -> 0.009 (+329%, limit max_abs:+25%)``."""
        limit = f", limit {self.threshold}" if self.threshold else ""
        note = f"; {self.note}" if self.note else ""
        return f"{self.metric} {self.figures()} ({self.change}{limit}{note})"


def figure_text(metric: str, x: float | None) -> str:
    """A figure of ``metric`` in its :mod:`~pytest_trt.core.formatting` format; ``n/a`` when not recorded."""
    return "n/a" if x is None else _FORMATS.get(metric, fmt_err)(x)


def _figure(value) -> float | None:
    """A figure as a report stores it (a number, ``"inf"``, ``"nan"``, null) as a float; a flag is no figure."""
    return None if isinstance(value, bool) else as_float(value)


def _worst(x: float, direction: int) -> float:
    """NaN counts as the worst value of its metric (an error NaN is infinitely large)."""
    return (math.inf if direction > 0 else -math.inf) if math.isnan(x) else x


def change_text(old: float, new: float) -> str:
    """``+329%`` when ``old`` scales (``x21.9`` from ten times on), else the absolute difference ``+0.0081``."""
    if old == new:
        return "unchanged"
    sign = "+" if new > old else "-"
    if math.isfinite(old) and old != 0 and math.isfinite(new):
        if new / old >= 10:  # a factor reads better than a four-digit percentage
            return "x" + fmt_ratio(new / old)
        return sign + fmt_pct(abs(new - old) / abs(old) * 100)
    if math.isinf(old) or math.isinf(new):
        return "from inf" if math.isinf(old) else "to inf" if new > 0 else "to -inf"
    return sign + fmt_err(abs(new - old))


def judge(metric: str, old_value, new_value, threshold: Threshold | None = None) -> Judgement:
    """Judge one metric of one output; without ``threshold`` only ``unchanged``/``within`` and the change."""
    direction = METRICS[metric][1]
    old, new = _figure(old_value), _figure(new_value)
    limit_text = str(threshold) if threshold else ""
    if old is None or new is None:
        return Judgement(metric, old, new, "not compared", "figure not recorded", 0.0,
                         threshold=limit_text)
    o, n = _worst(old, direction), _worst(new, direction)
    change = change_text(o, n) if not (math.isnan(old) or math.isnan(new)) else ("to nan" if math.isnan(new) else "from nan")
    if o == n:
        return Judgement(metric, old, new, "unchanged", "unchanged", 0.0, threshold=limit_text)
    worse = (n - o) * direction  # > 0: moved the failing way
    if math.isnan(worse):  # inf -> inf of another sign cannot happen for these figures; be safe
        return Judgement(metric, old, new, "unchanged", change, 0.0, threshold=limit_text)
    if threshold is None:
        return Judgement(metric, old, new, "within", change, 0.0)
    note = ""
    if threshold.relative and (o == 0 or math.isinf(o)):
        limit = 0.0
        note = (f"relative threshold judged as absolute: the stored {metric} is {figure_text(metric, old)}, which a percentage "
                f"cannot scale (any change the failing way is a regression)")
    else:
        limit = threshold.amount * abs(o) if threshold.relative else threshold.amount
    severity = math.inf if limit == 0 and worse > 0 else (worse / limit if limit else 0.0)
    if worse > limit:
        status = "regressed"
    elif -worse > limit:
        status = "improved"
    else:
        status = "within"
    return Judgement(metric, old, new, status, change, severity, note, limit_text)
