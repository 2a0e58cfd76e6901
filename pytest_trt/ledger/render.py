"""The ledger as text: the headline, the roll-ups, the top units by time, the full table.

Everything here reads the ledger's JSON form (:meth:`~pytest_trt.ledger.model.Ledger.to_json`),
the form the reports receive from pytest-xdist workers, so the console script, the terminal
summary and ``Ledger.table()`` print the same words. With time, the rows that matter are the
units that took the most of it, each with its declared and realized precision; without time
(``emulate``, a CPU), they are the rows whose precision is in question (mismatch,
unverifiable) and the FP32 islands, and the time column says why it is empty.
"""

from __future__ import annotations

from typing import Any

from ..core.formatting import fmt_ms, fmt_share

__all__ = ["TOP", "headline", "island_scopes", "ledger_text", "rollup_line", "summary_lines", "top_units"]

#: units shown by default (terminal summary, ``pytest-trt layers --ledger`` without ``--all``)
TOP = 10
_CPU_PROVIDER = "CPUExecutionProvider"
_ORIGINS = {"realization": "inserted by the realization", "runtime": "inserted by ONNX Runtime",
            "engine": "carrying no node of the model"}


def _cut(text: Any, width: int) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= width else "..." + text[-(width - 3):]


def headline(data: dict) -> str:
    """``ledger of M [policy] on backend: N ONNX nodes; time: <source> | none (<why>)``."""
    rows = [r for r in data.get("rows", ()) if r.get("origin") == "model"]
    consts = data.get("constants") or 0
    nodes = f"{len(rows):,} ONNX nodes" + (f" (+{consts} Constant nodes: data, no rows)" if consts else "")
    if data.get("time_source"):
        timing = data.get("timing") or {}
        when = f"{timing.get('iterations')} iterations after {timing.get('warmup')} warm-ups"
        device = f" on {timing['device']}" if timing.get("device") else ""
        time = f"time: {data.get('time_label')}, per {data.get('unit')}, median of {when}{device}"
    else:
        time = f"time: none ({data.get('time_reason') or 'not measured'})"
    return (f"ledger of {data.get('model')} [{data.get('policy')}] on {data.get('backend')} "
            f"({data.get('layer_source')}, typing {data.get('typing')}): {nodes}; {time}")


def rollup_line(data: dict, key: str = "precisions") -> str:
    """``by declared precision: fp32 (FP32 islands) 35.0% (9 nodes), fp16 60.0% (3 nodes), ...``."""
    parts = []
    low = data.get("low_precision")
    for bucket, entry in (data.get(key) or {}).items():
        name = "fp32 (FP32 islands)" if bucket == "fp32" and low and key == "precisions" else bucket
        what = f"{entry.get('nodes', 0)} nodes" if bucket != "other" else f"{entry.get('units', 0)} units"
        parts.append(f"{name} {fmt_share(entry.get('share'))} ({what})" if data.get("time_source")
                     else f"{name} {what}")
    label = "by declared precision" if key == "precisions" else "by realized precision"
    return f"{label}: " + (", ".join(parts) or "-")


def top_units(data: dict, n: int = TOP) -> list[dict]:
    """The ``n`` units that took the most time (empty without time)."""
    units = [u for u in data.get("units", ()) if isinstance(u.get("time_ms"), (int, float))]
    return sorted(units, key=lambda u: -u["time_ms"])[:n]


def _realized_of(data: dict, unit: dict) -> str:
    """``fp16 (inferred)``: the unit's realized bucket and how its nodes' precision is known."""
    rows = {r["node"]: r for r in data.get("rows", ()) if r.get("node")}
    evidence = sorted({str(rows[n].get("evidence")) for n in unit.get("nodes", ()) if n in rows and
                       rows[n].get("evidence")})
    bucket = unit.get("realized_bucket") or "-"
    return f"{bucket} ({', '.join(evidence)})" if evidence else bucket


def _unit_line(data: dict, unit: dict, total: float | None) -> str:
    share = unit["time_ms"] / total if total else None
    spread = (unit.get("stats") or {}).get("spread")
    nodes = unit.get("nodes") or []
    if len(nodes) > 1:
        what = f"{len(nodes)} ONNX nodes in {unit.get('scope')}"
    elif nodes:
        what = f"{unit.get('layer_type') or ''}".strip() or "1 ONNX node"
    else:
        what = f"{unit.get('layer_type') or 'layer'} {_ORIGINS.get(str(unit.get('origin')), 'carrying no node of the model')}"
    flag = " [CPU provider]" if unit.get("provider") == _CPU_PROVIDER else ""
    flag += " [not in the inspector's layers]" if unit.get("unmatched") else ""
    return (f"    {fmt_share(share):>6}  {fmt_ms(unit['time_ms']):>9}  {'+-' + fmt_share(spread) if spread is not None else '':>8}  "
            f"{unit.get('bucket', '-'):<6}  {_cut(_realized_of(data, unit), 22):<22}  {_cut(unit['name'], 70)}  "
            f"({_cut(what, 60)}){flag}")


def _matter_rows(data: dict, n: int) -> list[str]:
    """Without time: the rows whose precision is in question, then the FP32 islands by scope."""
    lines = []
    doubtful = [r for r in data.get("rows", ()) if r.get("status") in ("mismatch", "unverifiable")]
    for r in doubtful[:n]:
        lines.append(f"    {r.get('status'):<12}  declared {r.get('declared') or '-'}, realized "
                     f"{r.get('realized') or '-'} ({r.get('evidence') or '-'})  {_cut(r.get('path'), 80)}  "
                     f"[{r.get('op_type')}]")
    if len(doubtful) > n:
        lines.append(f"    ... {len(doubtful) - n} more mismatch/unverifiable rows")
    if data.get("low_precision"):
        islands = island_scopes(data)
        if islands:
            shown = ", ".join(islands[:6])
            more = f", ... ({len(islands)} scopes)" if len(islands) > 6 else ""
            lines.append(f"    FP32 islands: {shown}{more}")
    return lines


def island_scopes(data: dict) -> list[str]:
    """The FP32 islands of a low-precision plan, per scope in graph order, by *declared* precision (so they
    add up to the ``fp32 (FP32 islands)`` roll-up): a scope all FP32 as ``scope (9)``, a scope with some
    nodes FP32 as ``scope (1 of 28 nodes: op:Softmax)``, with the rules that kept them. A scope's own
    ``precision`` (what ran there) is ``mixed`` for the latter, which left an ``op:Softmax`` island out
    of this list (review1)."""
    rules: dict[str, list[str]] = {}
    for r in data.get("rows", ()):
        if r.get("declared") == "fp32" and r.get("origin") == "model":
            rule = str(r.get("rule") or "?").removesuffix("=fp32")
            if rule not in rules.setdefault(str(r.get("scope")), []):
                rules[str(r.get("scope"))].append(rule)
    out = []
    for s in data.get("scopes", ()):
        declared = s.get("declared") or {}
        fp32 = declared.get("fp32", 0)
        if not fp32:
            continue
        if fp32 == sum(n for k, n in declared.items() if k != "fixed"):
            out.append(f"{s['scope']} ({fp32})")
        else:
            out.append(f"{s['scope']} ({fp32} of {s['nodes']} nodes: {', '.join(rules.get(s['scope'], ['?']))})")
    return out


def summary_lines(data: dict, top: int = TOP) -> list[str]:
    """The ledger in a few lines: headline, collapse, roll-ups, the top units or the rows that matter."""
    lines = [headline(data)]
    if data.get("timing"):
        notes = [n for n in data.get("notes", ()) if n.startswith("sum of ")]
        lines += [f"  {n}" for n in notes[:1]]
    lines += [f"  COLLAPSED: {c}" for c in data.get("collapse", ())]
    lines.append("  " + rollup_line(data, "precisions"))
    if data.get("time_source"):
        lines.append("  " + rollup_line(data, "realized_precisions"))
        total = data.get("total_ms")
        units = top_units(data, top)
        if units:
            lines.append(f"  top {len(units)} {data.get('unit')}s by time: share, median ms, spread (IQR/median), "
                         f"declared, realized (evidence), {data.get('unit')} (what it carries)")
            lines += [_unit_line(data, u, total) for u in units]
    else:
        matter = _matter_rows(data, top)
        if matter:
            lines.append("  rows that matter:")
            lines += matter
    return lines


_COLUMNS = ("node", "op", "declared", "rule", "realized", "evidence", "layer / provider", "shared by", "ms", "share")


def _row_cells(r: dict, node_units: bool) -> tuple[str, ...]:
    unit = r["units"][0] if r.get("units") else "-"
    if len(r.get("units") or ()) > 1:
        unit += f" (+{len(r['units']) - 1})"
    if node_units:  # the unit is the node itself: say where it ran instead
        unit = (r.get("provider") or "-").replace("ExecutionProvider", "")
    shared = str(r["unit_nodes"]) if r.get("shared") else ""
    path = r.get("path") or "-"
    if r.get("origin") != "model":
        path = f"({r.get('origin')}) {path}"
    return (_cut(path, 70), r.get("op_type") or "-", r.get("declared") or "-", _cut(r.get("rule"), 28),
            r.get("realized") or "-", r.get("evidence") or "-", _cut(unit, 60), shared, fmt_ms(r.get("time_ms")),
            fmt_share(r.get("share")))


def ledger_text(data: dict, *, top: int | None = None) -> str:
    """The summary, then every row (``top``: only the rows of the ``top`` units by time, or of the
    rows that matter when there is no time)."""
    lines = summary_lines(data, top or TOP)
    rows = list(data.get("rows", ()))
    if top:
        if data.get("time_source"):
            keep = {u["name"] for u in top_units(data, top)}
            rows = [r for r in rows if keep & set(r.get("units") or ())]
        else:
            rows = [r for r in rows if r.get("status") in ("mismatch", "unverifiable")][:top]
    if rows:
        body = [_row_cells(r, data.get("unit") == "ONNX node") for r in rows]
        widths = [max(len(str(c[i])) for c in [_COLUMNS, *body]) for i in range(len(_COLUMNS))]
        fmt = "  ".join(f"{{:<{w}}}" for w in widths)
        lines += ["", fmt.format(*_COLUMNS), fmt.format(*("-" * w for w in widths))]
        lines += [fmt.format(*c).rstrip() for c in body]
    notes = [n for n in data.get("notes", ()) if not n.startswith("sum of ")]
    lines += [f"note: {n}" for n in notes]
    return "\n".join(lines)
