"""Candidate FP32 islands: groups of low-precision compute nodes named by one pattern.

The search space of :mod:`pytest_trt.suggest`: a plan's low-precision compute nodes
grouped by module scope, exact node, generalised scope across layers, module class, block
and op type (:func:`candidate_groups`), the preferences among the kinds, and the two moves
on a chosen set that need no build: naming a repeated module by its generalised group
(:func:`promote_group`) and naming a complete set by one candidate (:func:`compress_groups`).

Scopes are those of the canonical scoped names (:mod:`pytest_trt.model.names`), so a dynamo
export (``node_pow_1`` in ``model.layers.0.input_layernorm``) gets the same module-shaped
groups as a TorchScript one (``/model/layers.0/input_layernorm/*``). A module class is a
candidate (``class:LlamaRMSNorm``) when it is the innermost class of every node it selects
(a leaf module such as a norm or a Linear, not a container such as a decoder layer):
compressing the chosen islands then prefers ``class:LlamaRMSNorm`` to the list of every
norm's scope when it selects exactly them.
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
KIND_ORDER = {"scope": 0, "node": 0, "general": 1, "class": 2, "block": 3, "op": 4}
#: Preference when no node diverges (gradual error): coarse first.
GRADUAL_KIND_ORDER = {"general": 0, "class": 1, "block": 2, "scope": 3, "node": 4, "op": 5}


@dataclass(frozen=True)
class Group:
    """A candidate FP32 island: a pattern and the low-precision compute nodes it selects."""

    pattern: str
    kind: str  # "scope" | "node" | "general" | "class" | "block" | "op"
    nodes: frozenset
    scopes: tuple = ()  # for "general": the scope patterns it spans
    #: the (short) module classes of its nodes, innermost, in graph order: what the message shows
    classes: tuple = ()

    def to_json(self) -> dict[str, Any]:
        """``{"pattern", "kind", "nodes": count, "classes"}`` (and ``"scopes"`` of a general group)."""
        data: dict[str, Any] = {"pattern": self.pattern, "kind": self.kind, "nodes": len(self.nodes),
                                "classes": list(self.classes)}
        if self.scopes:
            data["scopes"] = list(self.scopes)
        return data


def candidate_groups(plan: Any) -> list[Group]:
    """Candidate groups of a plan's low-precision compute nodes (see the package docstring)."""
    names = plan.model.names
    low = [d for d in plan.nodes.values() if d.kind == "compute" and d.precision in LOW_PRECISIONS]
    all_scopes = {s for s in (scope_of(names.canonical(d.name)) for d in plan.nodes.values()) if s is not None}
    parents = {s[: s.rstrip("/").rfind("/") + 1] for s in all_scopes}  # scopes with sub-scopes
    by_nodes: dict[frozenset, Group] = {}
    for pattern, (kind, spanned) in _candidate_specs(low, parents, names).items():
        rule = Rule(pattern, "fp32")
        nodes = frozenset(d.name for d in low if rule.matches(d, names.get(d.name)))
        if not nodes:
            continue
        classes = tuple(dict.fromkeys(c for c in (names[n].short_class for n in sorted(nodes) if n in names) if c))
        group = Group(pattern, kind, nodes, spanned, classes[:3])
        old = by_nodes.get(nodes)
        if old is None or (KIND_ORDER[kind], pattern) < (KIND_ORDER[old.kind], old.pattern):
            by_nodes[nodes] = group
    order = {d.name: i for i, d in enumerate(plan.nodes.values())}
    return sorted(by_nodes.values(), key=lambda g: (min(order[n] for n in g.nodes), KIND_ORDER[g.kind], g.pattern))


def _leaf_classes(low: list[Any], names: Any) -> list[str]:
    """Module classes that are the innermost class of every low-precision node they select."""
    innermost = {names[d.name].module_class for d in low if d.name in names}
    outer = {c for d in low if d.name in names for c in names[d.name].module_classes[:-1]}
    return [c for c in dict.fromkeys(names[d.name].module_class for d in low if d.name in names)
            if c is not None and c in innermost and c not in outer]


def _candidate_specs(low: list[Any], parents: set[str], names: Any) -> dict[str, tuple[str, tuple]]:
    """``{pattern: (kind, spanned scopes)}`` of every candidate, in first-seen order."""
    specs: dict[str, tuple[str, tuple]] = {}
    scopes_of_last: dict[str, set[str]] = {}
    for d in low:
        canonical = names.canonical(d.name)
        scope = scope_of(canonical)
        if scope is None or scope in parents:
            # At the root, or directly in a block that has sub-scopes (a layer's residual Add):
            # the node itself is the narrowest module-shaped group.
            specs.setdefault(escape_glob(canonical), ("node", ()))
        if scope is not None:
            specs.setdefault(escape_glob(scope) + "*", ("block" if scope in parents else "scope", ()))
            last = scope.rstrip("/").rpartition("/")[2]
            scopes_of_last.setdefault(last, set()).add(scope)
        specs.setdefault(f"op:{d.op_type}", ("op", ()))
    for last, scopes in scopes_of_last.items():
        if len(scopes) > 1 and last:
            pattern = "*/" + escape_glob(last) + "/*"
            specs.setdefault(pattern, ("general", tuple(sorted(escape_glob(s) + "*" for s in scopes))))
    for qualified in _leaf_classes(low, names):
        specs.setdefault(escape_class(names.class_pattern(qualified)), ("class", ()))
    return specs


def escape_class(pattern: str) -> str:
    """A ``class:`` pattern with the glob characters of the class name escaped."""
    head, _, name = pattern.partition(":")
    return f"{head}:{escape_glob(name)}"


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
