"""User feeds and named feed sets: :func:`check_feeds`, :class:`FeedSet`, :func:`input_sets`, :func:`param_sets`.

Where feeds come from the user (arrays, ``.npz`` files, real data), :func:`check_feeds`
checks them against the model before they reach an engine and lists every problem in
one :class:`~pytest_trt.errors.InputError`. Feed sets name several feeds (generated or
loaded) for parametrized tests, the set name being the test id.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.formatting import fmt_shape
from ..core.lazy import lazy_import
from ..errors import InputError, UsageError
from ..model.load import Model
from .declarations import did_you_mean, inputs_listing
from .files import load_feeds
from .generation import MAKE_FEEDS_KEYS, make_feeds
from .shapes import DimKey, ShapeSolver
from .specs import InputSpec, ModelSource, as_model, dtype_kind, index_table_rows, input_specs

if TYPE_CHECKING:
    import pytest
else:  # only param_sets needs it: the console script checks feeds without importing pytest
    pytest = lazy_import("pytest")

__all__ = ["FeedSet", "check_feeds", "input_sets", "param_sets"]


def check_feeds(model: ModelSource, feeds: Any, *, shapes: Any = None, dims: Any = None,
                allow_nonfinite: bool = False) -> None:
    """Check that ``feeds`` fit the model; raise one :class:`InputError` listing every problem.

    Checks: missing and extra input names (listing the model's inputs), arrays only,
    dtype (expected vs got, and the cast to write), rank, static dims, declared
    ``shapes``/``dims``, one size per symbolic dim across inputs, no NaN/Inf in
    float feeds unless ``allow_nonfinite=True``, and integer feeds that index a table
    (token ids into an embedding) inside its rows.
    """
    m = as_model(model)
    specs = input_specs(m)
    if not isinstance(feeds, Mapping):
        raise InputError(f"feeds must be a dict {{input name: numpy array}}, got {type(feeds).__name__}")
    solver = ShapeSolver(m, specs, shapes, dims)
    names = [s.name for s in specs]
    missing = [n for n in names if n not in feeds]
    extra = [n for n in feeds if n not in names]
    problems = [f"input {n!r} is missing" for n in missing]
    problems += [f"{n!r} is not an input of the model{did_you_mean(str(n), names)}" for n in extra]
    seen: dict[DimKey, tuple[int, str]] = {}  # symbolic dim -> (size, first input using it)
    for s in specs:
        if s.name in feeds:
            problems += _feed_problems(s, feeds[s.name], solver, seen, allow_nonfinite)
            problems += _index_problems(m, s, feeds[s.name])
    if problems:
        tail = f"\n{inputs_listing(specs)}" if (missing or extra) else ""
        raise InputError(f"feeds do not fit {m.label}:\n  - " + "\n  - ".join(problems) + tail)


def _feed_problems(s: InputSpec, arr: Any, solver: ShapeSolver, seen: dict[DimKey, tuple[int, str]],
                   allow_nonfinite: bool) -> list[str]:
    """What is wrong with one input's feed: type, dtype, zero-size dims, shape, NaN/Inf."""
    if not isinstance(arr, np.ndarray):
        return [
            f"input {s.name!r} is a {type(arr).__name__}, not a numpy array: pass "
            f"np.asarray(value, dtype=np.{s.dtype_name})"
        ]
    problems = []
    if arr.dtype != s.dtype:
        problems.append(
            f"input {s.name!r} expects {s.dtype_name}, got {arr.dtype.name}: cast it with "
            f"feeds[{s.name!r}] = feeds[{s.name!r}].astype(np.{s.dtype_name})"
        )
    if 0 in arr.shape:
        problems.append(f"input {s.name!r} has a zero-size dim (shape {fmt_shape(arr.shape)}): zero-size "
                        f"dims are not supported (an empty tensor compares nothing)")
        return problems
    problems += _shape_problems(s, arr, solver, seen)
    if not allow_nonfinite:
        problems += _nonfinite_problems(s, arr)
    return problems


def _shape_problems(s: InputSpec, arr: np.ndarray, solver: ShapeSolver,
                    seen: dict[DimKey, tuple[int, str]]) -> list[str]:
    """Rank, static dims, declared sizes and one size per symbolic dim (recorded in ``seen``)."""
    entries = solver.layout[s.name]
    if entries is None:
        return []
    if arr.ndim != len(entries):
        return [f"input {s.name!r} expects rank {len(entries)} ({s.describe()}), got shape {fmt_shape(arr.shape)}"]
    problems = []
    for i, (e, v) in enumerate(zip(entries, arr.shape, strict=True)):
        if isinstance(e, int):
            if e != v:
                problems.append(
                    f"input {s.name!r} dim {i} must be {e} ({s.describe()}), got shape "
                    f"{fmt_shape(arr.shape)}"
                )
            continue
        var = solver.vars[e]
        if var.point is not None and var.point != v:
            problems.append(
                f"input {s.name!r} dim {i} ({var.label}) is {v}, but {var.point_src} declares "
                f"{var.point}; got shape {fmt_shape(arr.shape)}"
            )
        elif e[0] == "sym":
            if e in seen and seen[e][0] != v:
                problems.append(
                    f"input {s.name!r} dim {i} ({var.label}) is {v}, but it is {seen[e][0]} in "
                    f"input {seen[e][1]!r}; a symbolic dim has one size in all inputs"
                )
            seen.setdefault(e, (v, s.name))
    return problems


def _index_problems(m, s: InputSpec, arr: Any) -> list[str]:
    """Ids of an integer feed outside the rows of the table it indexes (``Gather`` accepts ``[-rows, rows-1]``)."""
    if s.kind != "int" or not isinstance(arr, np.ndarray) or arr.dtype.kind not in "iu" or not arr.size:
        return []
    table = index_table_rows(m, s.name)
    if table is None:
        return []
    rows = table[1]
    bad = (arr < -rows) | (arr > rows - 1)
    if not bad.any():
        return []
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    return [f"input {s.name!r} holds {int(bad.sum())} id(s) outside the {rows} rows of {table[0]!r}, the table it "
            f"indexes (ids {int(arr.min())} to {int(arr.max())}; first at index {first}, {int(arr[first])}; "
            f"valid: 0 to {rows - 1})"]


def _nonfinite_problems(s: InputSpec, arr: np.ndarray) -> list[str]:
    """NaN and Inf values in a float feed, counted, with the index of the first."""
    if dtype_kind(arr.dtype) != "float" or not arr.size:
        return []
    as_float = arr.astype(np.float64) if arr.dtype.kind != "f" else arr
    bad = ~np.isfinite(as_float)
    if not bad.any():
        return []
    n_nan = int(np.isnan(as_float).sum())
    n_inf = int(bad.sum()) - n_nan
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    return [
        f"input {s.name!r} holds {n_nan} NaN and {n_inf} Inf value(s) (first at index {first}); "
        f"pass allow_nonfinite=True if that is intended"
    ]


@dataclass(frozen=True, eq=False)
class FeedSet:
    """Named feeds: ``name`` (the test id), ``feeds``, the ``seed`` that generated them
    (None for loaded data) and ``source`` (a file path or a generation summary)."""

    name: str
    feeds: dict[str, np.ndarray] = field(repr=False)
    seed: int | None = None
    source: str | None = None

    def describe(self) -> str:
        """``outlier: seed=3 from make_feeds(...) x(2, 8)``: name, origin and shapes."""
        shapes = ", ".join(f"{k}{fmt_shape(v.shape)}" for k, v in self.feeds.items())
        origin = f" seed={self.seed}" if self.seed is not None else ""
        origin += f" from {self.source}" if self.source else ""
        return f"{self.name}:{origin} {shapes}".strip()


def _feedset_from(name: str, spec: Any, model: Model | None, common: dict[str, Any], check: bool) -> FeedSet:
    """One named set from its spec: a FeedSet, an .npz path, a dict of arrays or make_feeds arguments."""
    if isinstance(spec, FeedSet):
        fs = FeedSet(name, spec.feeds, spec.seed, spec.source)
        loaded = True
    elif isinstance(spec, (str, os.PathLike)):
        fs = FeedSet(name, load_feeds(spec), None, str(spec))
        loaded = True
    elif isinstance(spec, Mapping) and spec and all(isinstance(v, np.ndarray) for v in spec.values()):
        fs = FeedSet(name, dict(spec), None, "given arrays")
        loaded = True
    elif isinstance(spec, Mapping) and all(k in MAKE_FEEDS_KEYS for k in spec):
        if model is None:
            raise UsageError(f"input set {name!r} is generated ({dict(spec)!r}): pass the model to generate it")
        kwargs = {**common, **spec}
        fs = FeedSet(name, make_feeds(model, **kwargs), kwargs.get("seed", 0),
                     "make_feeds(" + ", ".join(f"{k}={v!r}" for k, v in spec.items()) + ")")
        loaded = False
    else:
        raise InputError(
            f"input set {name!r}: expected make_feeds keyword arguments (keys among "
            f"{', '.join(MAKE_FEEDS_KEYS)}), a dict of numpy arrays, an .npz path or a FeedSet; got {spec!r}"
        )
    if check and loaded and model is not None:
        try:
            check_feeds(model, fs.feeds)
        except InputError as exc:
            raise InputError(f"input set {name!r}" + (f" ({fs.source})" if fs.source else "") + f": {exc}") from exc
    return fs


def _set_items(sets: Any) -> list[tuple[str, Any]]:
    """``(name, spec)`` of every set: a dict's items, a directory's ``*.npz`` files, FeedSets."""
    items: list[tuple[str, Any]]
    if isinstance(sets, (str, os.PathLike)):
        p = Path(sets)
        if p.is_dir():
            files = sorted(p.glob("*.npz"))
            if not files:
                raise InputError(f"no .npz files in {p}: write feeds with save_feeds(path, feeds)")
            items = [(f.stem, f) for f in files]
        elif p.exists():
            items = [(p.stem, p)]
        else:
            raise InputError(f"input sets directory not found: {p}")
    elif isinstance(sets, Mapping):
        items = list(sets.items())
    elif isinstance(sets, Iterable):
        items = []
        for fs in sets:
            if not isinstance(fs, FeedSet):
                raise InputError(f"input sets: expected FeedSet objects, got {type(fs).__name__}")
            items.append((fs.name, fs))
    else:
        raise InputError(f"input sets must be a dict, a directory or FeedSets, got {type(sets).__name__}")
    return items


def input_sets(sets: Any, model: ModelSource = None, *, shapes: Any = None, dims: Any = None, val_range: Any = None,
               seed: int = 0, check: bool = True) -> list[FeedSet]:
    """Build named feed sets.

    ``sets`` is one of:

    * a dict ``{name: spec}``; a spec is make_feeds keyword overrides
      (``{}``, ``{"seed": 3}``, ``{"outliers": {"x": {"count": 1}}}``; the keyword
      arguments here are the common defaults, so sets differ only where they say so),
      a dict of arrays, an ``.npz`` path or a :class:`FeedSet`;
    * a directory: one set per ``*.npz`` file, named by the file stem, sorted;
    * an iterable of :class:`FeedSet`.

    Loaded sets are checked against ``model`` when given (without ``shapes``/``dims``:
    real data may come in several sizes).
    """
    common = {"shapes": shapes, "dims": dims, "val_range": val_range, "seed": seed}
    items = _set_items(sets)
    if not items:
        raise InputError("input sets: no sets given")
    m = as_model(model) if model is not None else None
    out: list[FeedSet] = []
    seen: set[str] = set()
    for name, spec in items:
        if not isinstance(name, str) or not name:
            raise InputError(f"input set names must be non-empty strings, got {name!r}")
        if name in seen:
            raise InputError(f"input set name {name!r} is used twice")
        seen.add(name)
        out.append(_feedset_from(name, spec, m, common, check))
    return out


def param_sets(sets: Any, model: ModelSource = None, *, marks: Any = (), as_feedset: bool = False,
               **kwargs: Any) -> list[Any]:
    """``pytest.param`` objects, one per input set, with the set name as the test id.

    ::

        @pytest.mark.parametrize("feeds", param_sets(
            {"normal": {}, "offset": {"offset": 1000.0, "val_range": (-0.05, 0.05)},
             "outlier": {"outliers": {"*": {"count": 1, "magnitude": 400.0}}}},
            "encoder.onnx", dims={"batch": 2, "seq": 16}))
        def test_fp16(trt, feeds): ...

    The value is the feeds dict (``as_feedset=True``: the :class:`FeedSet`, which
    also carries the seed). ``sets`` and ``kwargs`` as in :func:`input_sets`.
    """
    return [
        pytest.param(fs if as_feedset else fs.feeds, id=fs.name, marks=marks)
        for fs in input_sets(sets, model, **kwargs)
    ]
