"""What pruning removes: entries that share weight sets go together.

An entry may *use* others (its manifest's ``uses``, e.g. an emulation graph of a big model uses
the model's FP16 weight set, cache kind ``weights``). Pruning treats such entries and what they
use as one *group*: a group is kept or removed whole, so no entry is left pointing at deleted
weights and no weight set is kept for an entry that is gone. A group's last use is its most
recent member's; its size is the sum of its members'. An entry that uses nothing and is used by
nothing is a group of its own (a weight set whose users were all removed earlier, too: it is
removed by age or size like any entry).

:func:`plan_prune` decides; :meth:`~pytest_trt.cache.ArtifactCache.prune` removes under each
entry's lock (an entry in use by another process is skipped, with its whole group).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .entry import CacheEntry
from .key import KEY_RE, KIND_RE

__all__ = ["Group", "groups", "plan_prune", "prunable", "uses_of"]


def uses_of(manifest: Any) -> list[tuple[str, str]]:
    """``(kind, key)`` of the entries a manifest says it uses (malformed records ignored)."""
    records = manifest.get("uses") if isinstance(manifest, dict) else None
    found = []
    for u in records if isinstance(records, list) else []:
        if isinstance(u, dict) and KIND_RE.match(str(u.get("kind", ""))) and KEY_RE.match(str(u.get("key", ""))):
            found.append((str(u["kind"]), str(u["key"])))
    return found


def prunable(entries: Iterable[CacheEntry], *, marked: bool) -> list[CacheEntry]:
    """The entries pruning may remove: those with pytest-trt's own manifest (:attr:`CacheEntry.own`),
    and, where the directory carries the cache's marker (``marked``: pytest-trt created or adopted
    it), the damaged ones (:attr:`CacheEntry.damaged`: a truncated or unreadable manifest). Where the
    directory is not known to be the cache's, a damaged look-alike is never removed; nor is an
    entry-shaped directory without a ``manifest.json`` (a user's file put there)."""
    return [e for e in entries if e.own or (marked and e.damaged)]


@dataclass
class Group:
    """Entries pruned together."""

    members: list[CacheEntry] = field(default_factory=list)

    @property
    def size_bytes(self) -> int:
        return sum(e.size_bytes for e in self.members)

    @property
    def last_used(self) -> float:
        return max((e.last_used for e in self.members), default=0.0)


def groups(entries: Iterable[CacheEntry]) -> list[Group]:
    """The entries joined by ``uses`` into groups (connected components), oldest last use first."""
    entries = list(entries)
    index = {(e.kind, e.key): i for i, e in enumerate(entries)}
    parent = list(range(len(entries)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, e in enumerate(entries):
        for used in uses_of(e.manifest):
            j = index.get(used)
            if j is not None:
                parent[find(i)] = find(j)
    by_root: dict[int, Group] = {}
    for i, e in enumerate(entries):
        by_root.setdefault(find(i), Group()).members.append(e)
    return sorted(by_root.values(), key=lambda g: (g.last_used, [(m.kind, m.key) for m in g.members]))


def plan_prune(entries: Iterable[CacheEntry], *, max_bytes: int | None = None, older_than: float | None = None,
               protect: Iterable[Path | str] = (), marked: bool = False) -> list[Group]:
    """The groups to remove: every group last used before ``older_than`` (a ``time.time()`` value), then
    least recently used groups until the rest totals at most ``max_bytes``. A group holding a protected
    entry path is kept. Only :func:`prunable` entries are considered (``marked``: the directory carries
    the cache's marker, so its damaged entries are the cache's): a directory that merely looks like an
    entry (``<kind>/<64 hex>/``) is never removed."""
    protected = {Path(p) for p in protect}
    all_groups = groups(prunable(entries, marked=marked))
    total = sum(g.size_bytes for g in all_groups)
    chosen: list[Group] = []
    for g in all_groups:
        if any(m.path in protected for m in g.members):
            continue
        old = older_than is not None and g.last_used < older_than
        over = max_bytes is not None and total > max_bytes
        if old or over:
            chosen.append(g)
            total -= g.size_bytes
    return chosen
