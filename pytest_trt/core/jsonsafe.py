"""JSON-safe numbers, one convention for every report: non-finite floats become strings.

Strict JSON has no NaN or Infinity, and a report must survive ``json.loads`` in any
language; ``"inf"``, ``"-inf"`` and ``"nan"`` keep the information.
"""

from __future__ import annotations

import math
import numbers


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
