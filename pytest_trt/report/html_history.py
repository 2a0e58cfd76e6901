"""The HTML report's view of saved runs: the drift column of the tests table and the "changed since
RUN" section (the drift table worst first, the cause line, precision changes, layerwise growth)."""

from __future__ import annotations

from typing import Any

from ..history.changes import precision_change_lines
from ..history.drift import SHOWN, DriftReport, OutputDrift, failure_line, unmatched_parts
from ..history.gate import figure_text
from .html_figures import esc

__all__ = ["drift_cell", "drift_by_output", "drift_section"]


def drift_by_output(drift: DriftReport | None) -> dict[tuple[str, str], OutputDrift]:
    """``{(nodeid, output): the first check's drift}`` (the tests table shows one row per test and output)."""
    found: dict[tuple[str, str], OutputDrift] = {}
    for row in (drift.rows if drift is not None else ()):
        found.setdefault((row.nodeid, row.output), row)
    return found


def _headline(row: OutputDrift, gated: bool) -> tuple[str, str]:
    """(status word, the change that decided it)."""
    if row.regressed:
        return "REGRESSED", "; ".join(f"{j.metric} {j.change}" for j in row.regressed)
    if row.improved:
        return "improved", "; ".join(f"{j.metric} {j.change}" for j in row.improved)
    xtol = row.judgements["x_tol"]
    word = "same" if row.status == "unchanged" else ("within" if gated else "changed")
    return word, ("" if xtol.status in ("unchanged", "not compared") else f"x tol {xtol.change}")


def drift_cell(row: OutputDrift | None, gated: bool) -> str:
    """The tests table's drift cell of one output ("new" when the stored run lacks it)."""
    if row is None:
        return '<td class="drift note">new</td>'
    word, change = _headline(row, gated)
    cls = {"REGRESSED": "drift-bad", "improved": "drift-good"}.get(word, "")
    return (f'<td class="drift {cls}"><b>{esc(word)}</b>'
            + (f'<br><span class="note">{esc(change)}</span>' if change else "") + "</td>")


def _cell(row: OutputDrift, metric: str) -> str:
    j = row.judgements[metric]
    if j.status == "not compared":
        return '<td class="num">n/a</td>'
    change = "" if j.status == "unchanged" else f'<br><span class="note">{esc(j.change)}</span>'
    return f'<td class="num">{esc(figure_text(metric, j.old))} &rarr; {esc(figure_text(metric, j.new))}{change}</td>'


def drift_section(history: Any) -> str:
    """``<section id="drift">``: changed since the stored run; empty when nothing was compared."""
    drift = getattr(history, "drift", None) if history is not None else None
    if drift is None:
        return ""
    name = f" ({esc(drift.against_name)})" if drift.against_name else ""
    gate = (f"gate <code>{esc(','.join(str(t) for t in drift.thresholds))}</code>: "
            f"<b>{len(drift.regressed)} regressed</b>, {len(drift.improved)} improved (improvements are reported, never "
            f"failed)" if drift.gated else "no gate (<code>--trt-compare-fail</code> not given)")
    out = [f'<section id="drift"><h2>Changed since run <span class="mono">{esc(drift.against)}</span>{name}</h2>',
           f'<p class="note">{len(drift.rows)} output(s) compared; {gate}.</p>',
           f'<p><b>cause:</b> {esc(drift.cause)}</p>']
    if drift.gated and not drift.passed:
        out.append(f'<pre class="msg drift-bad">{esc(failure_line(drift))}</pre>')
    if drift.rows:
        out.append('<table class="drift"><thead><tr><th>status</th>'
                   + "".join(f"<th>{esc(m.replace('_', ' '))}</th>" for m in SHOWN)
                   + "<th>test [output]</th></tr></thead><tbody>")
        for row in drift.rows:
            word, _ = _headline(row, drift.gated)
            cls = {"REGRESSED": "drift-bad", "improved": "drift-good"}.get(word, "")
            out.append(f'<tr><td class="nw {cls}"><b>{esc(word)}</b></td>' + "".join(_cell(row, m) for m in SHOWN)
                       + f'<td class="mono name">{esc(row.label)}</td></tr>')
        out.append("</tbody></table>")
    extra = unmatched_parts(drift)
    if extra:
        out.append(f'<p class="note">{esc("; ".join(extra))}</p>')
    if drift.precision:
        out.append("<h3>Precision changes (realized, per module)</h3><ul>"
                   + "".join(f'<li class="mono">{esc(line)}</li>' for line in precision_change_lines(drift.precision, 50))
                   + "</ul>")
    if drift.layerwise:
        out.append("<h3>Layerwise: relative error grew most at</h3><ul>"
                   + "".join(f'<li class="mono">{esc(g["tensor"])} (node {esc(g["node"])}) {esc(figure_text("max_rel", g["old_rel"]))} '
                             f'&rarr; {esc(figure_text("max_rel", g["new_rel"]))} in {esc(g["nodeid"])}</li>' for g in drift.layerwise)
                   + "</ul>")
    out.append("</section>")
    return "".join(out)
