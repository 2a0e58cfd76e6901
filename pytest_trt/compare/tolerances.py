"""Default tolerances of the comparison, per precision, and the element rule in words.

The figures that decide a verdict when the caller gives none: ``(rtol, atol)`` and the
whole-output cosine floor of ``fp32``, ``fp16`` and ``bf16`` (the package docstring of
:mod:`pytest_trt.compare` says why these values), and ``SEMANTICS``, the sentence every
failure message and JSON record states.
"""

from __future__ import annotations

from ..core.dtypes import BF16, FP16, FP32, normalize_precision

__all__ = ["DEFAULT_MIN_COSINE", "DEFAULT_TOLERANCES", "SEMANTICS", "default_min_cosine", "default_tolerances"]

DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    FP32: (1e-5, 1e-5),
    FP16: (2e-2, 1e-2),  # calibrated: bench/calibration.py (issue 15 item 6)
    BF16: (1e-1, 5e-2),
}

#: Whole-output cosine floor checked beside the element rule (None: no floor). Calibrated
#: with the tolerances above; see the package docstring for when it applies.
DEFAULT_MIN_COSINE: dict[str, float | None] = {
    FP32: None,
    FP16: 0.9999,
    BF16: 0.999,
}

SEMANTICS = (
    "an element fails when |actual - expected| > atol and > rtol * |expected| "
    "(expected is the reference)"
)


def default_tolerances(precision: str = FP32) -> tuple[float, float]:
    """``(rtol, atol)`` for ``fp32``, ``fp16`` or ``bf16`` (see the package docstring for why).

    >>> default_tolerances("fp16")
    (0.02, 0.01)
    """
    return DEFAULT_TOLERANCES[normalize_precision(precision)]


def default_min_cosine(precision: str = FP32) -> float | None:
    """The default whole-output cosine floor of ``precision`` (None for fp32).

    >>> default_min_cosine("bf16")
    0.999
    """
    return DEFAULT_MIN_COSINE[normalize_precision(precision)]
