"""Session-wide precision patterns (``--trt-keep-fp32``, ini ``trt_keep_fp32``): which of them matched.

A session pattern applies to every trt test; one that matches nothing in a test's model is
skipped for that model (it is meant for other models). A pattern that matched no node in
*any* model of the trt tests that ran is a typo (``*/LayerNrom/*``) that would otherwise
leave the run green while testing something else: the plugin fails the session with the
pattern, where it came from and the closest names of those models
(:func:`unmatched_message`).

:class:`SessionPatterns` collects, per pattern, whether it matched and the closest names of
every model it did not match. Each xdist worker collects its own and sends it to the
controller in ``workeroutput`` (:meth:`SessionPatterns.to_json` / :meth:`merge`), which judges
the whole run. Light: imports no onnx or numpy (nodes are anything with ``.name`` and
``.op_type``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..model.names import short_class
from ..plan.rules import CLASS_PREFIX, OP_PREFIX, closest, closest_classes, closest_names

#: closest names kept per model and pattern, and shown per pattern
CLOSEST = 3


@dataclass
class SessionPatterns:
    """Per session pattern: matched somewhere, or the closest names of each model it missed."""

    #: pattern -> True once it matched a node of some model
    matched: dict[str, bool] = field(default_factory=dict)
    #: pattern -> {model label: closest node names (or ``op:TYPE``s)} of the models it did not match
    closest: dict[str, dict[str, list[str]]] = field(default_factory=dict)

    def note(self, pattern: str, model: str, matched: bool, nodes: Iterable[Any], names: Any = None) -> None:
        """Record that ``pattern`` was applied to ``model`` (its ``nodes``, and its ``Model.names``
        for canonical names and classes) and whether it matched."""
        self.matched[pattern] = self.matched.get(pattern, False) or matched
        if matched or model in self.closest.get(pattern, {}):
            return
        nodes = list(nodes)
        if pattern.startswith(OP_PREFIX):
            near = nearest(pattern, sorted({OP_PREFIX + str(n.op_type) for n in nodes}))
        elif pattern.startswith(CLASS_PREFIX):
            classes = names.classes() if names is not None else []
            near = nearest(pattern, list(dict.fromkeys(CLASS_PREFIX + short_class(c) for c in classes)))
        else:
            near = nearest(pattern, [names.canonical(n.name) if names is not None else str(n.name) for n in nodes])
        self.closest.setdefault(pattern, {})[model] = near

    def to_json(self) -> dict[str, Any]:
        return {"matched": dict(self.matched), "closest": {p: dict(m) for p, m in self.closest.items()}}

    def merge(self, data: dict[str, Any]) -> None:
        """Add a worker's :meth:`to_json`."""
        for pattern, matched in (data.get("matched") or {}).items():
            self.matched[pattern] = self.matched.get(pattern, False) or bool(matched)
        for pattern, models in (data.get("closest") or {}).items():
            for model, names in models.items():
                self.closest.setdefault(pattern, {}).setdefault(model, list(names))

    def unmatched(self) -> list[str]:
        """Patterns applied to at least one model and matched in none, in the order first applied."""
        return [p for p, matched in self.matched.items() if not matched]


def nearest(pattern: str, candidates: list[str], n: int = CLOSEST) -> list[str]:
    """The ``n`` candidates (node names; ``op:TYPE``s for an ``op:`` pattern; ``class:Name``s for a ``class:``
    pattern, ranked as the per-model PatternError ranks them) closest to ``pattern``."""
    if pattern.startswith(OP_PREFIX):
        ops = [c[len(OP_PREFIX):] for c in candidates if c.startswith(OP_PREFIX)]
        return [OP_PREFIX + op for op in closest(pattern[len(OP_PREFIX):], ops, n=n)]
    if pattern.startswith(CLASS_PREFIX):  # the per-model PatternError's ranking of class names, not node names
        classes = [c[len(CLASS_PREFIX):] for c in candidates if c.startswith(CLASS_PREFIX)]
        return [CLASS_PREFIX + c for c in closest_classes(pattern[len(CLASS_PREFIX):], classes, n=n)]
    return closest_names(pattern, candidates, n=n)


def unmatched_message(patterns: SessionPatterns, source: str) -> list[str]:
    """The lines that fail the session, one paragraph per unmatched pattern (none when all matched).
    ``source``: where the patterns came from (``--trt-keep-fp32 on the command line``)."""
    lines = []
    for pattern in patterns.unmatched():
        models = patterns.closest.get(pattern, {})
        union: list[str] = []
        for names in models.values():
            union += [n for n in names if n not in union]
        near = nearest(pattern, union, n=2 * CLOSEST)  # the closest of every model's closest
        lines.append(
            f"pytest-trt: session pattern {pattern!r} ({source}) matched no node in any model of the trt tests that ran "
            f"({', '.join(sorted(models)) or 'none'}); closest: {', '.join(near[:2 * CLOSEST]) or 'none'}. "
            f"A session pattern is skipped for the models it does not match, so a typo would test something "
            f"else; fix or remove it (`pytest-trt plan MODEL` lists the node names)")
    return lines


__all__ = ["SessionPatterns", "nearest", "unmatched_message"]
