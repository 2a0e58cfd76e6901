"""What a *trt test* is: the one definition, used by the plugin and the pytest glue.

A test whose fixture closure (``item.fixturenames``, which pytest computes transitively: a
project fixture that requests ``trt_session`` counts) holds one of the plugin's own fixtures,
:data:`PLUGIN_FIXTURES`. A project fixture whose name merely starts with ``trt``
(``trtable_rows``, a TensorRT-LLM suite's ``trtllm_model``) does not make a trt test: it used
to, and switched the plugin on.

The ``trt`` marker alone does not make one: only the ``trt`` fixture reads it, so a marked test
that requests no plugin fixture checks nothing its marker declares (a missing model, a typo'd
pattern) and used to pass, counted as a trt test that ran (review1 defect 1). A marker applied
to the test itself (``@pytest.mark.trt`` on the function, ``pytest.param(marks=...)``) without a
plugin fixture is a usage error at collection (:func:`unread_marker_message`); a marker the
test inherits from its class or module (``pytestmark``) configures the trt tests among them and
leaves the others plain tests.

A tiny module with no imports, so the plugin can import it while inert (before any trt test
is collected). ``report/outcomes.py`` no longer re-exports it: a pipeline stage does not
import the pytest glue (the layers contract in ``pyproject.toml``).
"""

from __future__ import annotations

#: the fixtures :mod:`pytest_trt.glue.fixtures` defines (tests/unit/test_public_api.py checks they agree)
PLUGIN_FIXTURES = frozenset({"trt", "trt_engine", "trt_build", "trt_baseline", "trt_session"})

#: the module whose fixtures are the plugin's
FIXTURES_MODULE = "pytest_trt.glue.fixtures"


def is_trt_item(item) -> bool:
    """A test with one of the plugin's fixtures in its closure (a *trt test*); the marker alone is not enough."""
    names = [name for name in getattr(item, "fixturenames", ()) or () if name in PLUGIN_FIXTURES]
    return any(_is_plugin_fixture(item, name) for name in names)


def _is_plugin_fixture(item, name: str) -> bool:
    """Whether ``name`` resolves to the plugin's fixture of that name (directly, or through overrides
    that request it: ``def trt(trt): ...``).

    A project may define a fixture of the same name that has nothing to do with the plugin
    (a ``trt_session`` of its own): the fixture definitions pytest found for the name say
    whose it is. pytest keeps them on ``item._fixtureinfo`` (no public accessor); where that
    is missing, the name decides.
    """
    info = getattr(item, "_fixtureinfo", None)
    defs = getattr(info, "name2fixturedefs", None)
    if not isinstance(defs, dict) or name not in defs:
        return True
    for fixturedef in reversed(defs[name]):  # the closest definition last
        if getattr(getattr(fixturedef, "func", None), "__module__", None) == FIXTURES_MODULE:
            return True
        if name not in (getattr(fixturedef, "argnames", None) or ()):
            return False  # a project's own fixture of that name, which does not request the plugin's
    return False


def unread_marker_message(item) -> str | None:
    """The usage error of a ``trt`` marker applied to the test itself (its own markers: the
    decorator, ``pytest.param(marks=...)``) on a test that requests none of the plugin's fixtures,
    so nothing would read it; None for any other test (an inherited marker is no error)."""
    if not any(getattr(mark, "name", None) == "trt" for mark in getattr(item, "own_markers", ()) or ()):
        return None
    if is_trt_item(item):
        return None
    return (f"{item.nodeid}: @pytest.mark.trt on a test that requests no pytest-trt fixture: only the `trt` "
            f"fixture reads the marker, so its model, patterns and tolerances would never be checked and the "
            f"test would pass without testing anything. Request the `trt` fixture (def {item.name.split('[')[0]}"
            f"(trt): ... trt.check()), or remove the marker")


__all__ = ["FIXTURES_MODULE", "PLUGIN_FIXTURES", "is_trt_item", "unread_marker_message"]
