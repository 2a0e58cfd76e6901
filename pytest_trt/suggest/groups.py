"""Candidate FP32 islands: groups of low-precision compute nodes named by one pattern.

The search space of :mod:`pytest_trt.suggest`: a plan's low-precision compute nodes
grouped by name scope, exact node, generalised scope across layers, block and op type
(:func:`candidate_groups`), the preferences among the kinds, and the two moves on a chosen
set that need no build: naming a repeated module by its generalised group
(:func:`promote_group`) and naming a complete set by one candidate (:func:`compress_groups`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core.dtypes import LOW_PRECISIONS
from ..locate.scopes import escape_glob, scope_of
from ..plan.rules import Rule

__all__ = [
    "GRADUAL_KIND_ORDER",
    "KIND_ORDER",
    "Group",
    "candidate_groups",
    "compress_groups",
    "last_component",
    "promote_group",
]

#: Preference among groups of equal contribution (lower first).
KIND_ORDER = {"scope": 0, "node": 0, "general": 1, "block": 2, "op": 3}
#: Preference when no node diverges (gradual error): coarse first.
GRADUAL_KIND_ORDER = {"general": 0, "block": 1, "scope": 2, "node": 3, "op": 4}


@dataclass(frozen=True)
class Group:
    """A candidate FP32 island: a pattern and the low-precision compute nodes it selects."""

    pattern: str
    kind: str  # "scope" | "node" | "general" | "block" | "op"
    nodes: frozenset
    scopes: tuple = ()  # for "general": the scope patterns it spans

    def to_json(self) -> dict[str, Any]:
        """``{"pattern", "kind", "nodes": count}`` (and ``"scopes"`` of a general group)."""
        data: dict[str, Any] = {"pattern": self.pattern, "kind": self.kind, "nodes": len(self.nodes)}
        if self.scopes:
            data["scopes"] = list(self.scopes)
        return data


def candidate_groups(plan: Any) -> list[Group]:
    """Candidate groups of a plan's low-precision compute nodes (see the package docstring)."""
    low = [d for d in plan.nodes.values() if d.kind == "compute" and d.precision in LOW_PRECISIONS]
    all_scopes = {s for s in (scope_of(d.name) for d in plan.nodes.values()) if s is not None}
    parents = {s[: s.rstrip("/").rfind("/") + 1] for s in all_scopes}  # scopes with sub-scopes
    by_nodes: dict[frozenset, Group] = {}
    for pattern, (kind, spanned) in _candidate_specs(low, parents).items():
        rule = Rule(pattern, "fp32")
        nodes = frozenset(d.name for d in low if rule.matches(d))
        if not nodes:
            continue
        group = Group(pattern, kind, nodes, spanned)
        old = by_nodes.get(nodes)
        if old is None or (KIND_ORDER[kind], pattern) < (KIND_ORDER[old.kind], old.pattern):
            by_nodes[nodes] = group
    order = {d.name: i for i, d in enumerate(plan.nodes.values())}
    return sorted(by_nodes.values(), key=lambda g: (min(order[n] for n in g.nodes), KIND_ORDER[g.kind], g.pattern))


def _candidate_specs(low: list[Any], parents: set[str]) -> dict[str, tuple[str, tuple]]:
    """``{pattern: (kind, spanned scopes)}`` of every candidate, in first-seen order."""
    specs: dict[str, tuple[str, tuple]] = {}
    scopes_of_last: dict[str, set[str]] = {}
    for d in low:
        scope = scope_of(d.name)
        if scope is None or scope in parents:
            # At the root, or directly in a block that has sub-scopes (a layer's residual Add):
            # the node itself is the narrowest module-shaped group.
            specs.setdefault(escape_glob(d.name), ("node", ()))
        if scope is not None:
            specs.setdefault(escape_glob(scope) + "*", ("block" if scope in parents else "scope", ()))
            last = scope.rstrip("/").rpartition("/")[2]
            scopes_of_last.setdefault(last, set()).add(scope)
        specs.setdefault(f"op:{d.op_type}", ("op", ()))
    for last, scopes in scopes_of_last.items():
        if len(scopes) > 1 and last:
            pattern = "*/" + escape_glob(last) + "/*"
            specs.setdefault(pattern, ("general", tuple(sorted(escape_glob(s) + "*" for s in scopes))))
    return specs


def last_component(group: Group) -> str | None:
    """``LayerNorm`` for the scope group ``/encoder/layer.0/attention/output/LayerNorm/*`` (escaped form)."""
    if group.kind != "scope":
        return None
    return group.pattern[:-1].rstrip("/").rpartition("/")[2] or None


def compress_groups(chosen: list[Group], candidates: Iterable[Group]) -> list[Group]:
    """Replace chosen groups by one candidate selecting exactly their nodes (same plan: no build).

    E.g. the four LayerNorm scopes of a 2-layer encoder -> ``*/LayerNorm/*``, or every Softmax
    node of a model without scopes -> ``op:Softmax``.
    """
    ranked = sorted(candidates, key=lambda g: (KIND_ORDER[g.kind], -len(g.nodes), g.pattern))
    changed = True
    while changed and len(chosen) > 1:
        changed = False
        for cand in ranked:
            inside = [c for c in chosen if c.nodes <= cand.nodes]
            if len(inside) < 2 or cand in chosen:
                continue
            if frozenset().union(*(c.nodes for c in inside)) == cand.nodes:
                chosen = [c for c in chosen if c not in inside] + [cand]
                changed = True
                break
    return chosen


def promote_group(group: Group, chosen: list[Group], by_pattern: Mapping[str, Group]) -> list[Group]:
    """``chosen`` plus ``group``; a scope repeating a chosen scope's module (same last name component,
    e.g. a second ``LayerNorm``) is added as the generalised group ``*/LayerNorm/*`` instead."""
    last = last_component(group)
    general = by_pattern.get("*/" + last + "/*") if last else None
    if general is not None and general.kind == "general" and group.nodes <= general.nodes:
        repeats = [c for c in chosen if c.kind == "scope" and last_component(c) == last
                   and c.nodes <= general.nodes]
        if repeats:
            return [c for c in chosen if not c.nodes <= general.nodes] + [general]
    return chosen + [group]
