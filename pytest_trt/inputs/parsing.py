"""Parsing Polygraphy-style option strings: ``--val-range`` and ``--input-shapes`` (and the profile's
``--trt-min-shapes``/``--trt-opt-shapes``/``--trt-max-shapes``).

The command line and ini files declare shapes and value ranges as text
(``input_ids:[2,128]``, ``x:[-1,1] [0,5]``); this module turns that text into the dicts
the rest of the inputs pipeline takes. Malformed text is a
:class:`~pytest_trt.errors.UsageError` quoting the offending entry.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import UsageError
from .declarations import ALL_INPUT_KEYS, ALL_INPUTS, check_range

__all__ = ["SHAPES_OPTION", "VAL_RANGE_OPTION", "parse_input_shape", "parse_val_range", "profile_from_shapes"]

#: Option spellings quoted in error messages (the CLI and the plugin use these names).
SHAPES_OPTION = "--input-shapes"
VAL_RANGE_OPTION = "--val-range"


def _split_item(item: str) -> list[str]:
    """One option string's entries: whitespace separates entries outside brackets."""
    entries: list[str] = []
    depth, cur = 0, list[str]()
    for ch in item:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        if ch.isspace() and depth == 0:
            if cur:
                entries.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if cur:
        entries.append("".join(cur))
    return entries


def _split_entries(arg: Any, option: str) -> list[str]:
    """Entries of an option value (a string or a list of them)."""
    if isinstance(arg, str):
        items = [arg]
    elif isinstance(arg, Iterable) and not isinstance(arg, (bytes, Mapping)):
        items = list(arg)
    else:
        raise UsageError(f"{option}: expected a string or a list of strings, got {arg!r}")
    entries: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise UsageError(f"{option}: expected strings, got {item!r}")
        entries.extend(_split_item(item))
    if not entries:
        raise UsageError(f"{option}: empty value")
    return entries


def _parse_number(text: str) -> int | float | None:
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return None


_BRACKETS = re.compile(r"\[([^\[\]]*)\]", re.S)


def parse_val_range(arg: Any, *, option: str = VAL_RANGE_OPTION) -> dict[str, tuple[Any, Any]]:
    """Parse Polygraphy's ``--val-range`` spelling into ``{input: (min, max)}``.

    ``"x:[-1,1]"`` -> ``{"x": (-1, 1)}``; ``"[0,5]"`` -> ``{"": (0, 5)}`` (all inputs,
    key :data:`ALL_INPUTS`). Several entries: a list of strings or one string with
    entries separated by spaces (``"[0,1] input_ids:[0,30521]"``). The name is what
    precedes the last ``:``, so names containing ``:`` work (``input:0:[0,1]``).
    Bounds are int or float literals, inclusive. Unlike Polygraphy (last one wins), an
    input given twice is an error.

    Raises :class:`UsageError` for malformed text and :class:`InputError` for a
    non-finite bound or min > max; messages quote the offending entry.
    """
    entries = _split_entries(arg, option)
    out: dict[str, tuple[Any, Any]] = {}
    for entry in entries:
        name, sep, val = entry.rpartition(":")
        name, val = name.strip(), val.strip()
        key = ALL_INPUTS if name in ALL_INPUT_KEYS else name
        hint = (f"expected NAME:[MIN,MAX] for one input or [MIN,MAX] for all inputs, "
                f"e.g. {option} input_ids:[0,<vocab_size-1>] [-1,1]")
        m = _BRACKETS.fullmatch(val)
        if not m:
            raise UsageError(f"{option} {entry!r}: {hint}")
        parts = m.group(1).split(",")
        if len(parts) != 2:
            raise UsageError(f"{option} {entry!r}: a range has exactly 2 values (min and max), got {len(parts)}; {hint}")
        lo, hi = (_parse_number(p) for p in parts)
        if lo is None or hi is None:
            bad = parts[0] if lo is None else parts[1]
            raise UsageError(f"{option} {entry!r}: {bad.strip()!r} is not a number; {hint}")
        if key in out:
            who = "all inputs" if key == ALL_INPUTS else f"input {key!r}"
            raise UsageError(f"{option} {entry!r}: a range for {who} is given twice")
        out[key] = check_range(lo, hi, f"{option} {entry!r}")
    return out


def _parse_dim(text: str, i: int, where: str, hint: str) -> int:
    """Dim ``i`` of an ``--input-shapes`` entry: a positive integer (the size to generate)."""
    if not re.fullmatch(r"[+-]?\d+", text, re.ASCII):
        raise UsageError(
            f"{where}: dim {i} {text!r} is not an integer; give the size to use "
            f"for every dim; {hint}"
        )
    try:
        value = int(text)
    except ValueError as exc:  # more digits than int() accepts
        raise UsageError(f"{where}: dim {i} is not a usable size") from exc
    if value < 0:
        raise UsageError(
            f"{where}: dim {i} is {value}; give the size to use (-1 does not mean "
            f"'dynamic' here)"
        )
    if value == 0:
        raise UsageError(f"{where}: dim {i} is 0; zero-size dims are not supported (an "
                         f"empty tensor compares nothing): give a size >= 1")
    return value


def parse_input_shape(arg: Any, *, option: str = SHAPES_OPTION) -> dict[str, tuple[int, ...]]:
    """Parse Polygraphy's ``--input-shapes`` spelling into ``{input: shape}``.

    ``"x:[1,3,224,224]"`` -> ``{"x": (1, 3, 224, 224)}``; ``"x:[]"`` is a scalar.
    Several entries: a list of strings or one string separated by spaces. trtexec's
    ``x:1x3x224x224`` is not Polygraphy's spelling and is refused with the bracket form
    to write instead. Dims must be positive integers (the size to generate).

    Raises :class:`UsageError`, quoting the offending entry.
    """
    entries = _split_entries(arg, option)
    out: dict[str, tuple[int, ...]] = {}
    for entry in entries:
        name, sep, val = entry.rpartition(":")
        name, val = name.strip(), val.strip()
        hint = f"expected NAME:[D0,D1,...], e.g. {option} input_ids:[2,128] pixel_values:[2,3,224,224]"
        if not sep or not name:
            raise UsageError(f"{option} {entry!r}: no input name; {hint}")
        if re.fullmatch(r"\d+(?:x\d+)*", val):
            fixed = "[" + ",".join(val.split("x")) + "]"
            raise UsageError(
                f"{option} {entry!r}: write shapes in brackets (Polygraphy's spelling; 1x3x224x224 is "
                f"trtexec's): {name}:{fixed}"
            )
        m = _BRACKETS.fullmatch(val)
        if not m:
            raise UsageError(f"{option} {entry!r}: {hint}")
        inner = m.group(1)
        dims: list[int] = []
        if inner.strip():
            dims = [_parse_dim(part.strip(), i, f"{option} {entry!r}", hint) for i, part in enumerate(inner.split(","))]
        if name in out:
            raise UsageError(f"{option} {entry!r}: input {name!r} is given twice")
        out[name] = tuple(dims)
    return out


def profile_from_shapes(min_shapes: Any, opt_shapes: Any, max_shapes: Any) -> dict[str, dict[str, tuple[int, ...]]]:
    """Combine Polygraphy-style ``--trt-min-shapes/--trt-opt-shapes/--trt-max-shapes``.

    Each argument is a dict or the option string(s), e.g. ``"x:[1,8]"``. Every input
    must appear in all three (:class:`UsageError` otherwise).
    """
    parts = {}
    for key, value, opt in (("min", min_shapes, "--trt-min-shapes"), ("opt", opt_shapes, "--trt-opt-shapes"),
                            ("max", max_shapes, "--trt-max-shapes")):
        if isinstance(value, Mapping):
            parts[key] = dict(value)
        else:
            parts[key] = parse_input_shape(value, option=opt)
    names = list(dict.fromkeys([*parts["min"], *parts["opt"], *parts["max"]]))
    out = {}
    for n in names:
        lacking = [k for k in ("min", "opt", "max") if n not in parts[k]]
        if lacking:
            raise UsageError(
                f"profile for input {n!r} lacks its {'/'.join(lacking)} shape: give min, opt and max "
                f"shapes for every profiled input"
            )
        out[n] = {k: tuple(parts[k][n]) for k in ("min", "opt", "max")}
    return out
