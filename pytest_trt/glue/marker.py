"""The ``trt`` marker: its keywords, merged closest-first, and checked before a case uses them.

``@pytest.mark.trt(model=..., precision=..., keep_fp32=[...], atol=..., ...)`` declares a trt
test; :func:`marker_kwargs` merges every ``trt`` marker on a test (function over class over
module, per keyword) and :func:`validate_options` turns a keyword of the wrong type into a
usage error naming it, before :class:`~pytest_trt.glue.case.TrtCase` builds anything from it.
"""

from __future__ import annotations

import math
import numbers
from pathlib import PurePath
from typing import Any

from ..backends.base import backend_names
from ..errors import InputError, UsageError
from ..inputs import check_seed

#: every keyword the ``trt`` marker takes
MARKER_KEYS = frozenset({
    "model", "precision", "policy", "keep_fp32", "rules", "atol", "rtol", "shapes", "dims", "profile",
    "val_range", "seed", "inputs", "typing", "as_is", "expect_fp32", "baseline", "requires", "tf32",
    "locate_on_failure", "allow_nonfinite", "no_check",
})


def marker_kwargs(node) -> dict[str, Any]:
    """Merge every ``trt`` marker on ``node``: the closest (function over class over module) wins per key."""
    merged: dict[str, Any] = {}
    for mark in node.iter_markers("trt"):  # closest first
        if mark.args:
            if len(mark.args) > 1 or "model" in mark.kwargs:
                raise UsageError(f"{node.nodeid}: @pytest.mark.trt takes the model as its only positional argument")
            merged.setdefault("model", mark.args[0])
        for key, value in mark.kwargs.items():
            if key not in MARKER_KEYS:
                raise UsageError(
                    f"{node.nodeid}: unknown @pytest.mark.trt argument {key!r}; known: {', '.join(sorted(MARKER_KEYS))}"
                )
            merged.setdefault(key, value)
    return merged


def _patterns(value, key: str, where: str) -> tuple:
    """A pattern list keyword: one string or an iterable of strings."""
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple, set, frozenset)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise UsageError(f"{where}: @pytest.mark.trt({key}=...) takes a pattern or a list of patterns, got {value!r}")


def validate_options(options: dict, where: str) -> None:
    """Marker keywords of the wrong type are usage errors naming the keyword (not TypeErrors later)."""
    for key in ("keep_fp32", "expect_fp32"):
        if options.get(key) is not None:
            options[key] = _patterns(options[key], key, where)
    rules = options.get("rules")
    if rules is not None and not isinstance(rules, (list, tuple, dict)):
        raise UsageError(f"{where}: @pytest.mark.trt(rules=...) takes a list of rules ('PATTERN=fp32', "
                         f"(pattern, precision) pairs) or a dict, got {rules!r}")
    requires = options.get("requires")
    if requires is not None:
        wanted = (requires,) if isinstance(requires, str) else requires
        if not isinstance(wanted, (list, tuple)) or not all(w in backend_names() for w in wanted):
            raise UsageError(f"{where}: @pytest.mark.trt(requires=...) takes a backend name or a list of them "
                             f"({', '.join(backend_names())}; plugins add more), got {requires!r}")
    inputs = options.get("inputs")
    if inputs is not None and not isinstance(inputs, (str, PurePath, dict)):
        raise InputError(f"{where}: @pytest.mark.trt(inputs=...) takes a path to an .npz file or a dict of arrays, "
                         f"got {inputs!r}")
    if options.get("seed") is not None:
        options["seed"] = check_seed(options["seed"])
    for key in ("as_is", "tf32", "locate_on_failure", "allow_nonfinite", "no_check"):
        if options.get(key) is not None and not isinstance(options[key], bool):
            raise UsageError(f"{where}: @pytest.mark.trt({key}=...) takes True or False, got {options[key]!r}")
    for key in ("shapes", "dims", "val_range", "profile"):
        if options.get(key) is not None and not isinstance(options[key], dict):
            raise UsageError(f"{where}: @pytest.mark.trt({key}=...) takes a dict keyed by input or dim name, "
                             f"got {options[key]!r}")
    _refuse_infinite_tolerances(options, where)


def _refuse_infinite_tolerances(options: dict, where: str) -> None:
    """``atol=inf`` / ``rtol=inf`` (anywhere in a per-output or per-precision dict) only with ``no_check=True``."""
    if not options.get("no_check"):
        for key in ("atol", "rtol"):
            if _has_infinity(options.get(key)):
                raise UsageError(
                    f"{where}: @pytest.mark.trt({key}={options[key]!r}): an infinite tolerance switches the "
                    f"accuracy check off (every finite element passes and the precision's default cosine floor "
                    f"no longer applies), so a real overflow passes. Add no_check=True to the marker to compare "
                    f"without a tolerance verdict (NaN/Inf mismatches and missing outputs still fail), or give a "
                    f"finite tolerance")


def _has_infinity(value) -> bool:
    """A tolerance keyword (a number, or a dict per output or per precision, nested) holds an infinity."""
    if isinstance(value, dict):
        return any(_has_infinity(v) for v in value.values())
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isinf(value)


__all__ = ["MARKER_KEYS", "marker_kwargs", "validate_options"]
