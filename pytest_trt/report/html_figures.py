"""Figures of the HTML report drawn without matplotlib: CSS bars and cells, inline SVG.

The error histogram and the max-pooled error grid of a failing output
(:func:`~pytest_trt.report.plots.error_figures`) and a layerwise error curve, as HTML
that needs nothing but a browser; ``html_report`` uses them where matplotlib (the ``plots``
extra) is not installed. Also the escaping every HTML part of the report shares.
"""

from __future__ import annotations

import html
import math
from typing import Any

from ..core.formatting import as_float, fmt_cell_err
from ..core.records import LayerwiseRecord
from .plots import NONFINITE_COLOR, heat_range, layerwise_points, mismatch_marks

# light (small error) -> dark (large error), magma-like
_RAMP = ((252, 253, 191), (254, 176, 120), (241, 96, 93), (183, 55, 121), (114, 31, 129), (44, 17, 95))


def value_text(value: Any) -> str:
    """A number of a record (``"inf"`` strings too) with 6 significant digits; ``-`` for none."""
    x = as_float(value)
    return "-" if x is None else f"{x:.6g}"


def esc(value: Any) -> str:
    """HTML-escaped text (``None`` -> empty), safe in element text and attribute values."""
    return html.escape("" if value is None else str(value), quote=True)


def _ramp(t: float) -> str:
    t = min(1.0, max(0.0, t))
    x = t * (len(_RAMP) - 1)
    i = min(int(x), len(_RAMP) - 2)
    f = x - i
    c = [round(a + (b - a) * f) for a, b in zip(_RAMP[i], _RAMP[i + 1], strict=True)]
    return f"#{c[0]:02x}{c[1]:02x}{c[2]:02x}"


# --------------------------------------------------------------------------------------
# CSS / SVG renderings (no matplotlib)
# --------------------------------------------------------------------------------------
def css_histogram(figures: dict) -> str:
    """Bars of the error histogram (height ~ log of the count); bins at or above atol in red."""
    hist = figures.get("histogram") or {}
    counts, edges = hist.get("counts") or [], hist.get("log10_edges") or []
    if not counts:
        return '<p class="note">no nonzero finite errors</p>'
    top = math.log1p(max(counts)) or 1.0
    atol_log = hist.get("atol_log10")
    bars = []
    for i, n in enumerate(counts):
        over = atol_log is not None and edges[i] >= atol_log
        height = 0 if n == 0 else max(2.0, 100.0 * math.log1p(n) / top)
        bars.append(f'<div class="{"over" if over else ""}" style="height:{height:.1f}%" '
                    f'title="10^{edges[i]:.2f} .. 10^{edges[i + 1]:.2f}: {n} element(s)"></div>')
    extra = []
    if hist.get("zero"):
        extra.append(f"{hist['zero']} exact")
    if hist.get("nonfinite"):
        extra.append(f"{hist['nonfinite']} NaN/Inf")
    mid = f"atol = 1e{atol_log:.2g}" if atol_log is not None else ""
    return (f'<div class="hist css-hist">{"".join(bars)}</div>'
            f'<div class="axis"><span>1e{edges[0]:g}</span><span>{esc(mid)}</span><span>1e{edges[-1]:g}</span></div>'
            f'<div class="caption">log10 |actual - expected| (bar height ~ log count; red: at or above atol)'
            f'{"; " + ", ".join(extra) if extra else ""}</div>')


def _cell_color(v: float | None, lo: float, span: float) -> str:
    """A heatmap cell's colour: log scale from ``lo`` over ``span`` decades; cyan for NaN/Inf."""
    if v is None or not math.isfinite(v):
        return NONFINITE_COLOR
    if v <= 0:
        return _ramp(0.0)
    return _ramp((math.log10(v) - lo) / span)


def css_heatmap(figures: dict) -> str:
    """The max-pooled error grid as coloured cells (log scale; cyan = NaN/Inf; blue outline = mismatches)."""
    grid = figures.get("grid") or {}
    if not grid.get("rows"):
        return ""
    values = [[as_float(v) for v in row] for row in grid["max_abs"]]
    positive = [v for row in values for v in row if v is not None and math.isfinite(v) and v > 0]
    lo, hi = heat_range(positive)
    counts = grid.get("mismatched")
    marks = set(mismatch_marks(grid) or ())
    cells = []
    for i, row in enumerate(values):
        for j, v in enumerate(row):
            tip = f"cell ({i},{j}): max |err| {fmt_cell_err(v)}" + (f", {counts[i][j]} mismatched" if counts else "")
            cells.append(f'<div{" class=x" if (i, j) in marks else ""} style="background:{_cell_color(v, lo, hi - lo)}" '
                         f'title="{esc(tip)}"></div>')
    rdims = "x".join(str(d) for d in grid.get("row_dims") or []) or "1"
    return (f'<div class="heat css-heat" style="grid-template-columns:repeat({grid["cols"]},9px)">{"".join(cells)}</div>'
            f'<div class="caption">where the error sits: rows = {esc(rdims)} ({grid["row_block"]} per cell), '
            f'columns = last dim {grid.get("col_dim")} ({grid["col_block"]} per cell); colour = log10 max |error| '
            f'from 1e{lo:.1f} (light) to 1e{hi:.1f} (dark); cyan = NaN/Inf'
            f'{"; outlined = cell holds mismatches" if marks else ""}</div>')


def svg_curve(record: LayerwiseRecord) -> str:
    """Layerwise curve as inline SVG (log y), threshold dashed, first divergent tensor marked."""
    tensors, ys, what, threshold, first = layerwise_points(record)
    finite = [y for y in ys if y is not None and math.isfinite(y) and y > 0]
    if not finite:
        return '<p class="note">no nonzero errors</p>'
    lo, hi = math.log10(min(finite)), math.log10(max(finite))
    span = (hi - lo) or 1.0
    w, h, pad = 640, 180, 6
    n = max(1, len(tensors) - 1)

    def ypos(v):
        return pad + (h - 2 * pad) * (1 - (v - lo) / span)

    segments: list[list[str]] = []
    current: list[str] = []
    dots: list[str] = []
    for i, y in enumerate(ys):
        if y is None:  # not exposed by the engine: a gap
            if current:
                segments.append(current)
            current = []
            continue
        v = hi if not math.isfinite(y) else (lo if y <= 0 else math.log10(y))
        x, yy = pad + (w - 2 * pad) * i / n, ypos(v)
        current.append(f"{x:.1f},{yy:.1f}")
        if math.isfinite(y):
            dots.append(f'<circle cx="{x:.1f}" cy="{yy:.1f}" r="1.8" fill="#5b7db1"/>')
        else:
            dots.append(f'<path d="M{x - 4:.1f},{yy + 3:.1f} L{x + 4:.1f},{yy + 3:.1f} L{x:.1f},{yy - 4:.1f} Z" '
                        f'fill="#c0392b"><title>NaN/Inf</title></path>')
    if current:
        segments.append(current)
    lines = "".join(f'<polyline fill="none" stroke="#5b7db1" stroke-width="1.5" points="{" ".join(s)}"/>'
                    for s in segments) + "".join(dots)
    marks = []
    if threshold and threshold > 0 and lo <= math.log10(threshold) <= hi:
        y = ypos(math.log10(threshold))
        marks.append(f'<line x1="0" x2="{w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#000" stroke-dasharray="4 3"/>')
    if first is not None:
        x = pad + (w - 2 * pad) * first / n
        node = tensors[first].get("node") or tensors[first].get("tensor")
        marks.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{h}" stroke="#c0392b"/>'
                     f'<text x="{min(x + 3, w - 200):.1f}" y="12" font-size="10" fill="#c0392b">{esc(node)}</text>')
    return (f'<svg class="svg-curve" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
            f'style="background:#fff;border:1px solid #ccc">{lines}{"".join(marks)}</svg>'
            f'<div class="caption">{esc(what)} per tensor in topological order, log scale from 1e{lo:.1f} to '
            f'1e{hi:.1f}; dashed: threshold; red line: first divergent node; red triangles: NaN/Inf</div>')




__all__ = ["css_heatmap", "css_histogram", "esc", "svg_curve", "value_text"]
