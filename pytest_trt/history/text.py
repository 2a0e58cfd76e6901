"""The drift as text: the terminal summary's section and ``pytest-trt runs diff``'s output.

Numbers are written by :mod:`pytest_trt.core.formatting` (through :func:`~pytest_trt.history.gate.figure_text`).
"""

from __future__ import annotations

from ..core.formatting import fmt_ratio
from .changes import precision_change_lines
from .drift import SHOWN, DriftReport, OutputDrift, failure_line, missing_text, unmatched_parts
from .gate import figure_text

__all__ = ["drift_lines"]

#: at most this many rows of the drift table in the terminal (the JSON report has every row)
MAX_ROWS = 20


def _cell(row: OutputDrift, metric: str) -> str:
    j = row.judgements[metric]
    if j.status == "not compared":
        return "n/a"
    change = "" if j.status == "unchanged" else f" {j.change}"
    return f"{j.figures()}{change}"


def _status(row: OutputDrift, gated: bool) -> str:
    if row.status == "regressed":
        return "REGRESSED"
    if row.status == "improved":
        return "improved"
    if row.status == "unchanged":
        return "same"
    return "within" if gated else "changed"


def _table_lines(drift: DriftReport, max_rows: int) -> list[str]:
    if not drift.rows:
        return []
    header = ["status"] + [m.replace("_", " ") for m in SHOWN] + ["test[output]"]
    table = [header] + [[_status(r, drift.gated)] + [_cell(r, m) for m in SHOWN] + [r.label]
                        for r in drift.rows[:max_rows]]
    widths = [max(len(row[i]) for row in table) for i in range(len(header) - 1)]
    lines = ["  " + "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=False)) + "  " + cells[-1]
             for cells in table]
    if len(drift.rows) > max_rows:
        lines.append(f"  ... {len(drift.rows) - max_rows} more output(s) (the JSON report's history.drift)")
    return lines


def _unmatched_line(drift: DriftReport) -> list[str]:
    extra = unmatched_parts(drift)
    return ["  " + "; ".join(extra)] if extra else []


def _inside_lines(drift: DriftReport) -> list[str]:
    """Precision changes and layerwise growth."""
    lines = []
    if drift.precision:
        lines.append("  precision changes (realized, per module):")
        lines += [f"    {line}" for line in precision_change_lines(drift.precision)]
    if drift.layerwise:
        lines.append("  layerwise: relative error grew most at")
        for g in drift.layerwise:
            growth = "from 0" if g["growth"] == float("inf") else f"x{fmt_ratio(g['growth'])}"
            lines.append(f"    {g['tensor']} (node {g['node']}) {figure_text('max_rel', g['old_rel'])} -> "
                         f"{figure_text('max_rel', g['new_rel'])} {growth} "
                         f"in {g['nodeid']}")
    return lines


def drift_lines(drift: DriftReport, *, title: str = "pytest-trt drift", max_rows: int = MAX_ROWS,
                failure: bool = True, flag: str = "--trt-compare-fail", save: str = "--trt-save NAME") -> list[str]:
    """The drift table (worst first), the cause line, precision changes, layerwise growth; last,
    when the gate failed and ``failure``, :func:`~pytest_trt.history.drift.failure_line` (``flag``, ``save``:
    its spelling of the gate's option and of saving a baseline)."""
    name = f" ({drift.against_name})" if drift.against_name else ""
    gate = (f"gate {','.join(str(t) for t in drift.thresholds)}: {len(drift.regressed)} regressed, "
            f"{len(drift.improved)} improved" if drift.gated else f"no gate ({flag} not given)")
    lines = [f"{title} against run {drift.against}{name}: {len(drift.rows)} output(s) compared"
             f"{missing_text(drift)}; {gate}",
             f"  cause: {drift.cause}"]
    lines += _unmatched_line(drift) + _table_lines(drift, max_rows)
    lines += [f"  note: {row.label} {j.metric}: {j.note}" for row in drift.regressed[:max_rows]
              for j in row.regressed if j.note]
    lines += _inside_lines(drift)
    if drift.improved:
        lines.append(f"  {len(drift.improved)} output(s) improved beyond the gate (reported, never failed)")
    if failure and drift.gated and not drift.passed:
        lines.append(failure_line(drift, flag=flag, save=save))
    return lines
