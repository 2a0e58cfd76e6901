"""JSON both ways, safely: numbers written for every report, and untrusted JSON read with bounds.

Strict JSON has no NaN or Infinity, and a report must survive ``json.loads`` in any
language; ``"inf"``, ``"-inf"`` and ``"nan"`` keep the information (:func:`json_number`).

JSON the plugin reads back from disk or from a remote cache (manifests) may have been written by
someone else: :func:`loads_bounded` refuses a document nested deeper than a manifest can be
before it is parsed, so neither the parser nor anything that walks the result can hit
``RecursionError``.
"""

from __future__ import annotations

import json
import math
import numbers
import re
from typing import Any

#: Nesting deeper than this is refused before parsing (a cache manifest is at most 4 levels
#: deep; the key parts it holds are small JSON objects of their own).
MAX_JSON_DEPTH = 64
# a JSON string, escapes included, or an unterminated one up to the end (the closing quote is
# optional so that a match never fails once started: linear time, no retry from every quote)
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_OBJECTS_AS_ARRAYS = bytes.maketrans(b"{}", b"[]")


def json_number(x, digits: int | None = None):
    """``None`` stays ``None``; bools and integers stay; floats become ``float`` (rounded to
    ``digits`` significant digits when given) or ``"inf"``/``"-inf"``/``"nan"``.

    >>> json_number(float("inf")), json_number(3.14159, digits=3), json_number(True)
    ('inf', 3.14, True)
    """
    if x is None:
        return None
    if isinstance(x, bool) or type(x).__name__ == "bool_":
        return bool(x)
    if isinstance(x, numbers.Integral):
        return int(x)
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return float(f"{x:.{digits}g}") if digits else x


def nesting_problem(data: bytes, limit: int = MAX_JSON_DEPTH) -> str | None:
    """Why the JSON text ``data`` cannot be parsed safely, found without parsing it, else None:
    it nests arrays and objects more than ``limit`` deep, or its brackets do not balance.

    Strings are cut out and the brackets kept; innermost pairs are then removed ``limit``
    times (C-speed passes, each shorter than the last). A valid document ends up empty; one
    that can still be reduced is deeper than ``limit``; one that cannot is not JSON.
    """
    if data.count(b"[") + data.count(b"{") <= limit:  # (the common case: no deeper nesting is possible)
        return None
    brackets = _STRING.sub(b"", data).translate(_OBJECTS_AS_ARRAYS, _NOT_BRACKETS)
    if b"[" * (limit + 1) in brackets:  # (a run of openings: found at memchr speed, where the passes are slow)
        return f"nested more than {limit} levels deep"
    for _ in range(limit):
        reduced = brackets.replace(b"[]", b"")
        if reduced == brackets:
            break
        brackets = reduced
    if b"[]" in brackets:
        return f"nested more than {limit} levels deep"
    return "its brackets do not balance (truncated, or not JSON)" if brackets else None


def loads_bounded(data: bytes, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse untrusted UTF-8 JSON ``data`` nested at most ``max_depth`` deep.

    Raises ValueError (a :class:`json.JSONDecodeError`, :class:`UnicodeDecodeError`, or one
    saying why) for anything else. The nesting is checked first, by a scan of the brackets
    outside strings (:func:`nesting_problem`), so a document like 200,000 ``[`` never reaches
    the parser; a ``RecursionError`` from the parser itself (a deep call stack) is a ValueError too.
    """
    problem = nesting_problem(data, max_depth)
    if problem is not None:
        raise ValueError(problem)
    try:
        return json.loads(data.decode("utf-8"))
    except RecursionError:
        raise ValueError("nested too deeply for the parser") from None
