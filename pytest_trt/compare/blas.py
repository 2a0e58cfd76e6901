"""Dot products of the blocked scans, on one thread.

The metric sums of a block are three dot products of float64 vectors of 32K elements.
A BLAS library runs such a dot on all cores (OpenBLAS from 10,000 elements on): on a
2-core machine shared with other processes, the threads' hand-offs cost up to 55x the
single-threaded dot (measured in issue 33). :func:`single_threaded_dot` gives the scan a
dot function that never fans out:

* ``numpy.dot`` with the BLAS library held to one thread by threadpoolctl (a dependency)
  for the length of the scan: the first scan in the process sets the limit, the last one
  to finish restores the library's own setting (scans in several threads share one limit);
* ``numpy.einsum`` (numpy's own loop, single-threaded, about twice as slow) for blocks too
  small to matter, or where threadpoolctl is missing or does not know numpy's BLAS.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import runstate
from ..core.lazy import is_importable, lazy_import

if TYPE_CHECKING:
    import threadpoolctl
else:
    threadpoolctl = lazy_import("threadpoolctl")

__all__ = ["SMALL_BLOCK", "einsum_dot", "single_threaded_dot"]

#: Blocks of at most this many elements use :func:`einsum_dot`: no BLAS, no thread limit to
#: set (a few microseconds per output), and no BLAS library threads dots this short.
SMALL_BLOCK = 8192

_TABLE = "compare.blas"


def einsum_dot(x: np.ndarray, y: np.ndarray) -> float:
    """``sum(x * y)`` by numpy's own loop (no BLAS, one thread)."""
    return float(np.einsum("i,i->", x, y))


def _controller(state: dict[str, Any]) -> Any:
    """threadpoolctl's controller of the BLAS libraries loaded now (None: none it can limit)."""
    if "controller" not in state:
        controller = None
        if is_importable("threadpoolctl"):
            found = threadpoolctl.ThreadpoolController().select(user_api="blas")
            controller = found if found.lib_controllers else None
        state["controller"] = controller
        state["users"] = 0
        state["limiter"] = None
    return state["controller"]


@contextlib.contextmanager
def single_threaded_dot(block: int) -> Iterator[Callable[[np.ndarray, np.ndarray], float]]:
    """A dot function for vectors of up to ``block`` elements that runs on one thread."""
    if block <= SMALL_BLOCK:
        yield einsum_dot
        return
    run = runstate.current()
    with run.lock():
        state: dict[str, Any] = run.table(_TABLE)
        controller = _controller(state)
        if controller is not None:
            if state["users"] == 0:
                state["limiter"] = controller.limit(limits=1)
            state["users"] += 1
    if controller is None:
        yield einsum_dot
        return
    try:
        yield np.dot
    finally:
        with run.lock():
            state["users"] -= 1
            if state["users"] == 0:
                state["limiter"].restore_original_limits()
                state["limiter"] = None
