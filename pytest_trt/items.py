"""What a *trt test* is: the one definition, shared by the plugin and the reports.

A tiny module with no imports, so the plugin can import it while inert (before any trt test
is collected), and ``report/outcomes.py`` re-exports it without an import cycle.
"""

from __future__ import annotations


def is_trt_item(item) -> bool:
    """A test with the ``trt`` marker or a fixture whose name starts with ``trt`` (a *trt test*)."""
    if item.get_closest_marker("trt") is not None:
        return True
    return any(name.startswith("trt") for name in getattr(item, "fixturenames", ()) or ())


__all__ = ["is_trt_item"]
