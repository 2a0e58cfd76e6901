"""Error figures of failing outputs, and their rendering as PNG (matplotlib, optional).

Two halves:

* :func:`error_figures` / :func:`failing_output_figures` reduce ``actual`` and
  ``expected`` arrays to small JSON-able data that rides on the test's ``accuracy``
  record (so it survives pytest-xdist and lands in ``--trt-report``): a histogram of
  ``log10 |actual - expected|`` and a max-pooled 2-D grid of where the error sits.
  numpy only; called by :class:`~pytest_trt.glue.case.TrtCase` when an output fails.
* ``*_png`` functions render that data with matplotlib as ``data:image/png;base64,...``
  URIs for the HTML report. matplotlib is the optional extra ``plots``
  (``pip install pytest-trt[plots]``); without it each returns None and the HTML report
  draws the same data with CSS. matplotlib is imported where it is used, after
  :func:`matplotlib_available` said it imports (not bound once at module level: tests hide it,
  and pytester's in-process runs drop and re-import modules, so a kept reference could mix two
  copies of matplotlib); only its object-oriented API is used (no pyplot, no global figure state).

The grid's layout: an output of shape ``(d0, ..., dn-1, dn)`` is viewed as a matrix of
``d0*...*dn-1`` rows (row-major over the leading dims) by ``dn`` columns, e.g. a
``(batch, sequence, hidden)`` output has one row per token and one column per feature,
so a bad feature is a vertical stripe and a bad token a horizontal one. A 1-D output is
one row; a scalar one cell. Cells are blocks of ``row_block x col_block`` elements;
each cell holds the block's maximum absolute error and how many of its elements
mismatched.
"""

from __future__ import annotations

import base64
import io
import math
from typing import Any

import numpy as np

from ..core.formatting import as_float
from ..core.jsonsafe import json_number
from ..core.records import LayerwiseRecord

#: bumped when the layout of :func:`error_figures`' result changes
FIGURES_VERSION = 1
HIST_BINS = 24
#: heatmap cells holding a NaN/Inf error (magma's large-error end is near black, so not black)
NONFINITE_COLOR = "#19c3e6"
GRID_ROWS = 24
GRID_COLS = 48


def error_figures(actual, expected, *, atol: float | None = None, rtol: float | None = None,
                  equal_nan: bool = False, bins: int = HIST_BINS,
                  grid: tuple[int, int] = (GRID_ROWS, GRID_COLS)) -> dict[str, Any]:
    """Histogram and max-pooled error grid of one output; plain JSON types, a few KB at most.

    ``atol``/``rtol`` (the tolerances the output was judged with) let the grid count
    mismatched elements per cell, with compare.py's rule: an element fails iff
    ``|a - e| > atol and |a - e| > rtol * |e|``; NaN fails unless ``equal_nan``, an
    infinity fails unless both sides are the same infinity.

    >>> f = error_figures(np.ones((4, 8)), np.zeros((4, 8)), atol=0.5, rtol=0.0)
    >>> f["grid"]["rows"], f["grid"]["cols"], f["grid"]["max_abs"][0][0], f["grid"]["mismatched"][0][0]
    (4, 8, 1.0, 1)

    Result::

        {"version": 1, "shape": [...], "elements": n, "atol": .., "rtol": ..,
         "histogram": {"log10_edges": [bins+1 floats], "counts": [bins ints],
                       "zero": n (|a-e| == 0), "nonfinite": n (NaN/Inf error), "atol_log10": float|None},
         "grid": {"rows": r, "cols": c, "row_block": br, "col_block": bc,
                  "row_dims": [d0..dn-1], "col_dim": dn,
                  "max_abs": [[float | "inf"]] (r x c; "inf" = the cell has a NaN/Inf error),
                  "mismatched": [[int]] (r x c) or None without tolerances,
                  "max": float (largest finite cell), "worst_cell": [row, col]}}
    """
    a = np.asarray(actual)
    e = np.asarray(expected)
    if a.shape != e.shape:
        raise ValueError(f"actual {a.shape} and expected {e.shape} differ in shape")
    work = np.result_type(a.dtype, e.dtype, np.float32)
    if work.kind != "f":  # complex or object: not ours to draw
        work = np.dtype(np.float64)
    a = a.astype(work, copy=False)
    e = e.astype(work, copy=False)
    with np.errstate(all="ignore"):
        err = np.abs(a - e)
        finite = np.isfinite(err)
        same = a == e  # the same infinity on both sides: no error
        nonfinite_err = ~finite & ~same
        if equal_nan:
            nonfinite_err &= ~(np.isnan(a) & np.isnan(e))
        err = np.where(finite, err, 0).astype(work, copy=False)
        mismatch = None
        if atol is not None and rtol is not None:
            mismatch = ((err > atol) & (err > rtol * np.abs(e))) | nonfinite_err

    hist = _histogram(err, finite, nonfinite_err, bins, atol)
    grid_data = _grid(err, nonfinite_err, mismatch, grid)
    return {
        "version": FIGURES_VERSION,
        "shape": [int(d) for d in a.shape],
        "elements": int(a.size),
        "atol": json_number(atol, digits=3),
        "rtol": json_number(rtol, digits=3),
        "histogram": hist,
        "grid": grid_data,
    }


def _histogram(err, finite, nonfinite_err, bins, atol) -> dict[str, Any]:
    positive = err[finite & (err > 0)]
    zero = int(np.count_nonzero(finite & (err == 0)))
    atol_log = math.log10(atol) if atol else None
    if positive.size:
        logs = np.log10(positive.astype(np.float64))
        lo, hi = float(logs.min()), float(logs.max())
        if atol_log is not None:
            lo, hi = min(lo, atol_log), max(hi, atol_log)
        lo, hi = math.floor(lo), math.ceil(hi)
        if hi <= lo:
            hi = lo + 1
        counts, edges = np.histogram(logs, bins=bins, range=(lo, hi))
        edges_l = [round(float(x), 4) for x in edges]
        counts_l = [int(c) for c in counts]
    else:
        edges_l, counts_l = [], []
    return {
        "log10_edges": edges_l,
        "counts": counts_l,
        "zero": zero,
        "nonfinite": int(np.count_nonzero(nonfinite_err)),
        "atol_log10": None if atol_log is None else round(atol_log, 4),
    }


def _as_matrix(x):
    if x.ndim == 0:
        return x.reshape(1, 1)
    if x.ndim == 1:
        return x.reshape(1, -1)
    return x.reshape(-1, x.shape[-1])


def _pool(m, br, bc, reduce):
    """Block-reduce a 2-D array (padded with zeros to whole blocks)."""
    r, c = m.shape
    rr, cc = -(-r // br), -(-c // bc)
    if (rr * br, cc * bc) != (r, c):
        padded = np.zeros((rr * br, cc * bc), dtype=m.dtype)
        padded[:r, :c] = m
        m = padded
    blocks = m.reshape(rr, br, cc, bc)
    return reduce(blocks, axis=(1, 3))


def _grid(err, nonfinite_err, mismatch, grid) -> dict[str, Any]:
    shape = err.shape
    m = _as_matrix(err)
    r, c = m.shape
    rows_max, cols_max = max(1, int(grid[0])), max(1, int(grid[1]))
    br, bc = max(1, -(-r // rows_max)), max(1, -(-c // cols_max))
    if m.size == 0:
        return {"rows": 0, "cols": 0, "row_block": br, "col_block": bc, "row_dims": list(shape[:-1]),
                "col_dim": int(shape[-1]) if shape else 1, "max_abs": [], "mismatched": None, "max": 0.0,
                "worst_cell": None}
    pooled = _pool(m, br, bc, np.max).astype(np.float64)
    bad = _pool(_as_matrix(nonfinite_err), br, bc, np.any)
    counts = None if mismatch is None else _pool(_as_matrix(mismatch).astype(np.int64), br, bc, np.sum)
    finite_max = float(pooled.max()) if pooled.size else 0.0
    score = np.where(bad, np.inf, pooled)
    worst = np.unravel_index(int(np.argmax(score)), score.shape)
    cells = [["inf" if bad[i, j] else json_number(pooled[i, j], digits=3) for j in range(pooled.shape[1])]
             for i in range(pooled.shape[0])]
    return {
        "rows": int(pooled.shape[0]),
        "cols": int(pooled.shape[1]),
        "row_block": int(br),
        "col_block": int(bc),
        "row_dims": [int(d) for d in shape[:-1]],
        "col_dim": int(shape[-1]) if shape else 1,
        "max_abs": cells,
        "mismatched": None if counts is None else [[int(x) for x in row] for row in counts],
        "max": json_number(finite_max, digits=3),
        "worst_cell": [int(worst[0]), int(worst[1])],
    }


def failing_output_figures(actual: dict, expected: dict, result, *, max_outputs: int = 8) -> dict[str, dict]:
    """``{output name: error_figures(...)}`` for the failing float outputs of a comparison.

    ``result`` is a :class:`~pytest_trt.compare.CompareResult` or its ``to_json()``.
    Outputs with a structural problem (missing, shape or dtype mismatch) and integer
    outputs are skipped; at most ``max_outputs`` outputs, in the result's order.

    This is what :meth:`TrtCase.check` puts on its ``accuracy`` record as ``"figures"``::

        record["figures"] = failing_output_figures(actual, expected, result)
    """
    data = result.to_json() if hasattr(result, "to_json") else result
    figures: dict[str, dict] = {}
    for name, out in (data.get("outputs") or {}).items():
        if len(figures) >= max_outputs:
            break
        if out.get("passed") or out.get("problem") or out.get("kind") not in (None, "float"):
            continue
        if name not in actual or name not in expected:
            continue
        try:
            figures[name] = error_figures(actual[name], expected[name], atol=as_float(out.get("atol")),
                                          rtol=as_float(out.get("rtol")), equal_nan=bool(data.get("equal_nan")))
        except (ValueError, TypeError, MemoryError):  # a figure must never hide the accuracy failure
            continue
    return figures


# --------------------------------------------------------------------------------------
# Rendering (matplotlib, optional)
# --------------------------------------------------------------------------------------
def matplotlib_available() -> bool:
    """True when matplotlib can be imported (checked on every call, so tests can hide it)."""
    try:  # a real import, not lazy: whether it imports here and now is the question
        import matplotlib  # noqa: F401
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: F401
        from matplotlib.figure import Figure  # noqa: F401
    except ImportError:
        return False
    return True


def _figure(width: float, height: float) -> Any:
    # optional extra, imported at use (see the module docstring)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def _to_data_uri(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def histogram_png(figures: dict, *, title: str = "") -> str | None:
    """PNG data URI of the error histogram (log10 |actual - expected|), tolerance marked; None without matplotlib."""
    hist = figures.get("histogram") or {}
    if not hist.get("counts") or not matplotlib_available():
        return None
    edges, counts = hist["log10_edges"], hist["counts"]
    fig = _figure(4.6, 2.6)
    ax = fig.add_subplot(1, 1, 1)
    widths = [edges[i + 1] - edges[i] for i in range(len(counts))]
    colors = ["#c0392b" if hist.get("atol_log10") is not None and edges[i] >= hist["atol_log10"] else "#5b7db1"
              for i in range(len(counts))]
    ax.bar(edges[:-1], counts, width=widths, align="edge", color=colors, edgecolor="white", linewidth=0.4)
    if hist.get("atol_log10") is not None:
        ax.axvline(hist["atol_log10"], color="black", linestyle="--", linewidth=1)
        ax.text(hist["atol_log10"], max(counts) or 1, " atol", va="top", fontsize=8)
    ax.set_yscale("symlog", linthresh=1)
    ax.set_xlabel("log10 |actual - expected|")
    ax.set_ylabel("elements")
    extra = []
    if hist.get("zero"):
        extra.append(f"{hist['zero']} exact")
    if hist.get("nonfinite"):
        extra.append(f"{hist['nonfinite']} NaN/Inf")
    ax.set_title(title + (" (" + ", ".join(extra) + ")" if extra else ""), fontsize=9)
    ax.tick_params(labelsize=8)
    return _to_data_uri(fig)


def heatmap_png(figures: dict, *, title: str = "") -> str | None:
    """PNG data URI of the max-pooled |error| grid (log colour scale; NaN/Inf cells cyan); None without matplotlib."""
    grid = figures.get("grid") or {}
    if not grid.get("rows") or not matplotlib_available():
        return None
    values = np.array([[as_float(v) for v in row] for row in grid["max_abs"]], dtype=np.float64)
    bad = ~np.isfinite(values)
    positive = values[np.isfinite(values) & (values > 0)]
    lo, hi = heat_range([float(x) for x in positive])
    with np.errstate(divide="ignore", invalid="ignore"):
        shown = np.where(bad | (values <= 0), lo, np.log10(np.where(values > 0, values, 1.0)))
    shown = np.ma.masked_array(shown, mask=bad)
    rows, cols = grid["rows"], grid["cols"]
    fig = _figure(min(7.0, 1.6 + 0.12 * cols), min(4.5, 1.2 + 0.14 * rows))
    ax = fig.add_subplot(1, 1, 1)
    from matplotlib import colormaps  # optional extra, imported at use (see the module docstring)

    cmap = colormaps["magma_r"].with_extremes(bad=NONFINITE_COLOR)
    image = ax.imshow(shown, aspect="auto", interpolation="nearest", cmap=cmap, vmin=lo, vmax=hi)
    cbar = fig.colorbar(image, ax=ax)
    cbar.set_label("log10 max |error| in cell", fontsize=8)
    cbar.ax.tick_params(labelsize=7)
    marks = mismatch_marks(grid)
    if marks:  # outline the cells holding mismatches
        ax.scatter([j for _, j in marks], [i for i, _ in marks], s=6, marker="s", facecolors="none",
                   edgecolors="#1f77b4", linewidths=0.6)
    rdims = "x".join(str(d) for d in grid.get("row_dims") or []) or "1"
    ax.set_xlabel(f"last dim ({grid.get('col_dim')}), {grid['col_block']} per cell", fontsize=8)
    ax.set_ylabel(f"rows ({rdims}), {grid['row_block']} per cell", fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.tick_params(labelsize=7)
    return _to_data_uri(fig)


def layerwise_points(record: LayerwiseRecord) -> tuple[list[dict], list[float | None], str, float | None, int | None]:
    """``(tensors, y values, what, threshold, index of the first divergent tensor)`` of a layerwise record.

    ``tensors`` are the record's rows of compute nodes (constants and shape math, rows
    with ``"compute": false``, are left out: they carry no rounding error). The curve is
    the relative error (``rel``: max abs error over max |reference|, what the divergence
    criterion thresholds) when recorded, else ``max_abs`` (then without a threshold); tensors
    the engine did not expose are None (gaps).
    """
    tensors = [t for t in record.tensors or () if t.get("compute", True) is not False]
    key = "rel" if any("rel" in t for t in tensors) else "max_abs"
    ys = [None if t.get("available") is False else as_float(t.get(key)) for t in tensors]
    threshold = as_float(record.threshold) if key == "rel" else None
    first = record.first if isinstance(record.first, dict) else {}
    first_tensor, first_node = first.get("tensor"), first.get("node")
    index = None
    for i, t in enumerate(tensors):
        if (first_tensor and t.get("tensor") == first_tensor) or (not first_tensor and first_node
                                                                   and t.get("node") == first_node):
            index = i
            break
    what = "relative error (max |err| / max |ref|)" if key == "rel" else "max |error|"
    return tensors, ys, what, threshold, index


def heat_range(positive: list[float]) -> tuple[float, float]:
    """``(lo, hi)`` log10 colour range of a heatmap from its positive finite cells; exact
    (zero-error) cells sit at ``lo``. A single distinct value gets a decade below it, so it
    shows as large error rather than as nothing."""
    if not positive:
        return 0.0, 1.0
    lo, hi = math.log10(min(positive)), math.log10(max(positive))
    if hi - lo < 1e-9:
        lo = hi - 1.0
    return lo, hi


def mismatch_marks(grid: dict, limit: int = 400) -> list[tuple[int, int]] | None:
    """``(row, col)`` of the heatmap cells holding mismatches, or None when there are none or more
    than ``limit`` (then outlines would only cover the picture)."""
    counts = grid.get("mismatched")
    if not counts:
        return None
    marks = [(i, j) for i, row in enumerate(counts) for j, n in enumerate(row) if n]
    return marks if 0 < len(marks) <= limit else None


def layerwise_record(divergence: Any, *, seed: int | None = None) -> LayerwiseRecord:
    """The compact :class:`~pytest_trt.core.records.LayerwiseRecord` of a
    :class:`~pytest_trt.locate.divergence.Divergence` (or its ``to_json()``) for the reports.

    Tensor rows ``{"tensor", "node", "canonical", "op_type", "index", "precision", "compute",
    "available", "max_abs", "rel", "jump", "divergent", "nonfinite"}`` in topological order (a
    subset of ``TensorError.to_json()``, to keep the record small on big models); ``first`` also
    keeps the node's ``module`` and ``module_class``.
    """
    data = divergence.to_json() if hasattr(divergence, "to_json") else dict(divergence)
    keep = ("tensor", "node", "canonical", "op_type", "index", "precision", "compute", "available", "max_abs", "rel",
            "jump", "divergent", "nonfinite")

    def row(t, extra=()):
        if t is None:
            return None
        out = {k: t.get(k) for k in (*keep, *extra)}
        out["canonical"] = out.get("canonical") or out.get("node")
        return out

    return LayerwiseRecord(
        model=data.get("model"), backend=data.get("backend"), policy=data.get("policy"), seed=seed,
        note=data.get("note"), threshold=data.get("threshold"), jump=data.get("jump"), found=data.get("found"),
        first=row(data.get("first"), ("module", "module_class")), tensors=[row(t) for t in data.get("tensors") or ()],
    )


def layerwise_png(record: LayerwiseRecord, *, title: str = "") -> str | None:
    """PNG data URI of a layerwise error curve (error per tensor in topological order); None without matplotlib."""
    if not record.tensors or not matplotlib_available():
        return None
    tensors, ys, what, threshold, first = layerwise_points(record)
    finite = [y for y in ys if y is not None and math.isfinite(y) and y > 0]
    floor = min(finite) if finite else 1e-12
    top = max(finite) if finite else 1.0
    plot_y = [math.nan if y is None else (top * 10 if not math.isfinite(y) else max(y, floor)) for y in ys]
    fig = _figure(7.0, 2.8)
    ax = fig.add_subplot(1, 1, 1)
    ax.plot(list(range(len(tensors))), plot_y, color="#5b7db1", linewidth=1.2, marker=".", markersize=3)
    ax.set_yscale("log")
    marked = _mark_layerwise(ax, tensors, ys, plot_y, threshold)
    if first is not None:
        node = str(tensors[first].get("node") or tensors[first].get("tensor"))
        short = "/".join(node.split("/")[-2:]) if node.count("/") > 2 else node
        ax.axvline(first, color="#c0392b", linewidth=1)
        ax.text(first, floor, f" first divergent: {short}", color="#c0392b", fontsize=7, va="bottom", rotation=90)
    ax.set_xlabel("tensor (topological order)", fontsize=8)
    ax.set_ylabel(what, fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.tick_params(labelsize=7)
    if marked:
        ax.legend(fontsize=7, loc="best")
    return _to_data_uri(fig)


def _mark_layerwise(ax: Any, tensors: list[dict], ys: list[float | None], plot_y: list[float],
                    threshold: float | None) -> bool:
    """Low-precision nodes, NaN/Inf points and the threshold on a layerwise curve; whether a
    legend is worth drawing (low-precision nodes or a threshold)."""
    low = [i for i, t in enumerate(tensors) if t.get("precision") in ("fp16", "bf16") and ys[i] is not None]
    if low:
        ax.scatter(low, [plot_y[i] for i in low], s=8, color="#e67e22", zorder=3, label="low-precision node")
    nonfinite = [i for i, y in enumerate(ys) if y is not None and not math.isfinite(y)]
    if nonfinite:
        ax.scatter(nonfinite, [plot_y[i] for i in nonfinite], s=14, marker="^", color="#c0392b", zorder=4,
                   label="NaN/Inf (drawn above the top)")
    if threshold:
        ax.axhline(threshold, color="black", linestyle="--", linewidth=0.8, label="threshold")
    return bool(low or threshold)
