"""What changed inside: nodes whose realized precision changed, and nodes whose error grew most.

Realized precision comes from the layer report of each engine a session used (recorded while runs
are saved or compared: the JSON report's ``realized`` maps, one per engine, and each test's list of
the engines it used). Two runs' engines are paired per test and model; their nodes are matched by
name (:func:`~pytest_trt.history.names.node_key`, the one place that names nodes) and the
changes summarised per module: the largest module all of whose matched nodes made the same change
is named once (``24 nodes fp16 -> bf16 under /encoder/*``), so a whole-model precision change is one
line and a LayerNorm that fell to FP16 after a TensorRT upgrade is its own. Nodes present in one
run only (an exporter that renamed them) are summarised the same way.

Where both runs recorded a layerwise comparison (``trt.locate()``, ``--trt-locate-on-failure``),
the tensors whose relative error grew most are listed.

Standard library only.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from .names import module_pattern, node_key

__all__ = ["layerwise_growth", "precision_change_lines", "precision_changes"]

#: at most this many precision-change entries and layerwise rows are kept per comparison
MAX_ENTRIES = 500
TOP_LAYERWISE = 5


def _engines_by_test(report: Mapping[str, Any]) -> dict[str, list[str]]:
    return {str(t.get("nodeid")): list(t.get("realized") or ()) for t in report.get("tests") or ()}


def _segments(module: str) -> tuple[str, ...]:
    return tuple(s for s in module.strip("/").split("/") if s)


def _prefix(segments: tuple[str, ...]) -> str:
    return "/" + "".join(s + "/" for s in segments)


def _summarise(items: list[tuple[str, tuple[str, ...], tuple | None]], depth: int, out: list) -> None:
    """``items``: (node, module segments, transition or None). Emit (prefix, transition, nodes) for the
    largest prefixes whose nodes all made one transition."""
    transitions = {t for _, _, t in items}
    if not transitions - {None}:
        return
    here = items[0][1][:depth] if items else ()
    if len(transitions) == 1:  # named by the deepest module holding them all
        common = list(items[0][1])
        for _, segs, _ in items[1:]:
            while segs[:len(common)] != tuple(common):
                common.pop()
        out.append((_prefix(tuple(common)), next(iter(transitions)), [n for n, _, _ in items]))
        return
    children: dict[str, list] = defaultdict(list)
    own: dict[tuple, list[str]] = defaultdict(list)
    for node, segs, t in items:
        if len(segs) > depth:
            children[segs[depth]].append((node, segs, t))
        elif t is not None:
            own[t].append(node)
    for t, nodes in own.items():
        out.append((_prefix(here), t, nodes))
    for _, child in sorted(children.items()):
        _summarise(child, depth + 1, out)


def _diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[tuple[str, tuple, list[str]]]:
    keyed_old = {node_key(n)[0]: (node_key(n)[1], p) for n, p in (old.get("nodes") or {}).items()}
    keyed_new = {node_key(n)[0]: (node_key(n)[1], p) for n, p in (new.get("nodes") or {}).items()}
    items = []
    for name in list(keyed_new) + [n for n in keyed_old if n not in keyed_new]:
        module = (keyed_new.get(name) or keyed_old[name])[0]
        a = keyed_old[name][1] if name in keyed_old else "absent"
        b = keyed_new[name][1] if name in keyed_new else "absent"
        t = None if a == b else (a or "unknown", b or "unknown")
        items.append((name, _segments(module), t))
    out: list = []
    _summarise(items, 0, out)
    return out


def precision_changes(old_report: Mapping[str, Any], new_report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per pair of engines (the same test and model in both runs): the summarised changes, as
    ``{"model", "module", "pattern", "old", "new", "nodes", "examples", "tests"}`` ("absent": the node
    is not in that run's model). Empty when either run carries no layer reports."""
    old_maps, new_maps = old_report.get("realized") or {}, new_report.get("realized") or {}
    if not old_maps or not new_maps:
        return []
    old_tests, new_tests = _engines_by_test(old_report), _engines_by_test(new_report)
    pairs: dict[tuple[str, str], list[str]] = {}
    for nodeid, new_engines in new_tests.items():
        for new_key in new_engines:
            new_model = (new_maps.get(new_key) or {}).get("model")
            old_key = next((k for k in old_tests.get(nodeid, ()) if (old_maps.get(k) or {}).get("model") == new_model),
                           None)
            if old_key is not None and old_key in old_maps and new_key in new_maps:
                pairs.setdefault((old_key, new_key), []).append(nodeid)
    found: dict[tuple, dict[str, Any]] = {}
    for (old_key, new_key), tests in pairs.items():
        old_map, new_map = old_maps[old_key], new_maps[new_key]
        for prefix, (a, b), nodes in _diff(old_map, new_map):
            key = (new_map.get("model"), prefix, a, b)
            entry = found.setdefault(key, {"model": new_map.get("model"), "module": prefix,
                                           "pattern": module_pattern(prefix), "old": a, "new": b, "nodes": 0,
                                           "examples": [], "tests": []})
            entry["nodes"] = max(entry["nodes"], len(nodes))
            entry["examples"] = entry["examples"] or sorted(nodes)[:3]
            entry["tests"] += [t for t in tests if t not in entry["tests"]]
    ordered = sorted(found.values(), key=lambda e: (-e["nodes"], e["module"]))
    return ordered[:MAX_ENTRIES]


def precision_change_lines(changes: list[dict[str, Any]], limit: int = 10, modules: int = 4) -> list[str]:
    """One line per model and change, its modules largest first: ``72 node(s) fp16 -> bf16 in
    encoder.onnx under /encoder/layer.0/attention/self/* (11), /encoder/layer.0/intermediate/* (7), ...``."""
    grouped: dict[tuple, list[dict[str, Any]]] = {}
    for e in changes:
        grouped.setdefault((e["model"], e["old"], e["new"]), []).append(e)
    lines = []
    for (model, old, new), entries in sorted(grouped.items(), key=lambda kv: -sum(e["nodes"] for e in kv[1])):
        total = sum(e["nodes"] for e in entries)
        what = (f"{total} node(s) only in this run" if old == "absent" else
                f"{total} node(s) only in the stored run" if new == "absent" else f"{total} node(s) {old} -> {new}")
        where = ", ".join(f"{e['pattern']} ({e['nodes']})" for e in entries[:modules])
        more = f", and {len(entries) - modules} more module(s)" if len(entries) > modules else ""
        example = f": {', '.join(entries[0]['examples'])}" if len(entries) == 1 and entries[0]["nodes"] <= 3 else ""
        lines.append(f"{what} in {model} under {where}{more}{example}")
    if len(lines) > limit:
        lines = lines[:limit] + [f"... and {len(lines) - limit} more (the JSON report's history.drift.precision_changes)"]
    return lines


def _rel(row: Mapping[str, Any]) -> float | None:
    value = row.get("rel")
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


def layerwise_growth(old_report: Mapping[str, Any], new_report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The tensors whose relative error grew most between the runs' layerwise comparisons of the same
    test: ``{"nodeid", "tensor", "node", "old_rel", "new_rel", "growth"}``, largest growth first."""
    def rows(report):
        found: dict[tuple[str, str], Mapping[str, Any]] = {}
        for test in report.get("tests") or ():
            for rec in test.get("layerwise") or ():
                for row in rec.get("tensors") or ():
                    found[(str(test.get("nodeid")), str(row.get("tensor")))] = row
        return found

    old_rows, new_rows = rows(old_report), rows(new_report)
    grown = []
    for key, new in new_rows.items():
        old = old_rows.get(key)
        a, b = (_rel(old) if old else None), _rel(new)
        if a is None or b is None or math.isnan(b) or not b > a:
            continue
        growth = math.inf if a == 0 else b / a
        grown.append({"nodeid": key[0], "tensor": key[1], "node": node_key(new)[0],
                      "old_rel": a, "new_rel": b, "growth": growth})
    grown.sort(key=lambda g: (-(g["growth"] if math.isfinite(g["growth"]) else 1e300), g["tensor"]))
    return grown[:TOP_LAYERWISE]
