"""The input sets every answer of the search is re-checked on, and what a check records.

An answer must pass on the user's feeds and on at least ``MIN_RECHECK_SEEDS`` more seeds:
feeds made by ``make_feeds(seed)`` (generated like the user's) or, without it, the user's
own values permuted by the seed (:func:`permuted_feeds`). :func:`input_sets` builds them;
:func:`accuracy_record` is the per-output accuracy an attempt keeps of one comparison.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.choices import MAX_RECHECK_SEEDS, MIN_RECHECK_SEEDS
from ..core.jsonsafe import json_number
from ..errors import UsageError

__all__ = ["MAX_RECHECK_SEEDS", "MIN_RECHECK_SEEDS", "InputSet", "accuracy_record", "input_sets", "permuted_feeds"]



@dataclass
class InputSet:
    """One set of feeds every answer is checked on."""

    label: str
    seed: int | None
    feeds: dict


def permuted_feeds(feeds: dict, seed: int) -> dict:
    """``feeds`` with each array's elements permuted by ``seed``: the same values in other positions."""
    out = {}
    for k, (name, value) in enumerate(feeds.items()):
        arr = np.asarray(value)
        rng = np.random.default_rng([int(seed), k])
        out[name] = rng.permutation(arr.reshape(-1)).reshape(arr.shape).astype(arr.dtype, copy=False)
    return out


def input_sets(feeds: dict, recheck_seeds: Any,
               make_feeds: Callable[[int], Any] | None) -> tuple[list[InputSet], str]:
    """The user's feeds then one set per re-check seed, and how the re-check feeds were made.

    ``recheck_seeds`` None: the feeds' seed (``feeds.seed``, else 0) + 1, + 2, + 3.
    ``make_feeds`` None: ``feeds.remake`` when the feeds remember how they were made, else
    the user's values permuted by seed.
    """
    base = getattr(feeds, "seed", None)
    if recheck_seeds is None:
        start = int(base) if base is not None else 0
        recheck_seeds = tuple(range(start + 1, start + 1 + MIN_RECHECK_SEEDS))
    try:
        # read one past the limit only: range(2**64) must not become a list
        seeds = [int(k) for k in itertools.islice(recheck_seeds, MAX_RECHECK_SEEDS + 1)]
    except (TypeError, ValueError):
        raise UsageError(f"recheck_seeds must be a list of integer seeds, got {recheck_seeds!r}") from None
    if len(seeds) > MAX_RECHECK_SEEDS:
        raise UsageError(f"recheck_seeds: at most {MAX_RECHECK_SEEDS} seeds (each one's feeds are held in memory "
                         f"and every answer runs on each), got more: {recheck_seeds!r}")
    if len(set(seeds)) < MIN_RECHECK_SEEDS:
        raise UsageError(f"recheck_seeds: every answer is re-checked on at least {MIN_RECHECK_SEEDS} distinct seeds "
                         f"besides your feeds, got {recheck_seeds!r}")
    seeds = list(dict.fromkeys(seeds))
    if make_feeds is None:  # feeds that remember how they were made (pytest_trt.glue.case.Feeds)
        make_feeds = getattr(feeds, "remake", None)
    first = InputSet("your inputs" + (f" (seed {base})" if base is not None else ""), base, feeds)
    sets = [first]
    for k in seeds:
        made = make_feeds(k) if make_feeds is not None else permuted_feeds(feeds, k)
        for name, value in feeds.items():
            got = made.get(name) if hasattr(made, "get") else None
            if got is None or tuple(got.shape) != tuple(value.shape):
                raise UsageError(f"make_feeds({k}) must give input {name!r} the shape of your feeds "
                                 f"{tuple(value.shape)}, got {None if got is None else tuple(got.shape)}")
        sets.append(InputSet(f"seed {k}", k, made))
    source = ("generated like your inputs" if make_feeds is not None
              else "your inputs' values, permuted by seed")
    return sets, source


def accuracy_record(result: Any) -> dict:
    """``{output: {"max_abs", "max_rel", "passed", "mismatched", "total", "nan", "inf"}}`` of a
    :class:`~pytest_trt.compare.CompareResult` (JSON-safe numbers)."""
    out = {}
    for name, oc in result.outputs.items():
        out[name] = {"max_abs": json_number(oc.max_abs), "max_rel": json_number(oc.max_rel), "passed": oc.passed,
                     "mismatched": oc.mismatched, "total": oc.total,
                     "nan": oc.nan_actual or 0, "inf": oc.inf_actual or 0}
    return out
