"""What a *trt test* is: the one definition, used by the plugin and the pytest glue.

A tiny module with no imports, so the plugin can import it while inert (before any trt test
is collected). ``report/outcomes.py`` no longer re-exports it: a pipeline stage does not
import the pytest glue (the layers contract in ``pyproject.toml``).
"""

from __future__ import annotations


def is_trt_item(item) -> bool:
    """A test with the ``trt`` marker or a fixture whose name starts with ``trt`` (a *trt test*)."""
    if item.get_closest_marker("trt") is not None:
        return True
    return any(name.startswith("trt") for name in getattr(item, "fixturenames", ()) or ())


__all__ = ["is_trt_item"]
