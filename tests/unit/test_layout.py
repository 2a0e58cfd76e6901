"""The package layout (issue 27): public paths keep working, moved ones warn once.

Four top-level modules moved into the packages of their stage and keep a deprecated shim for
one minor version (CHANGELOG.md, "Deprecated"): each shim re-exports the very objects of the
new module and warns ``DeprecationWarning`` naming the new path, once, when first imported.
"""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest
from _pytest.assertion import rewrite

import pytest_trt

SHIMS = {
    "pytest_trt.baseline": "pytest_trt.reference.baseline",
    "pytest_trt.upcast": "pytest_trt.reference.upcast",
    "pytest_trt.remote_cache": "pytest_trt.cache.remote",
    "pytest_trt.hookspec": "pytest_trt.glue.hookspec",
}


def _fresh_import(name: str):
    sys.modules.pop(name, None)
    __import__(name)  # an import statement's frame: the warning should point here
    return sys.modules[name]


@pytest.mark.parametrize("old", sorted(SHIMS))
def test_a_deprecated_shim_warns_once_naming_the_new_path(old):
    new = SHIMS[old]
    with pytest.warns(DeprecationWarning, match=rf"{old} is deprecated .*: import from {new}$") as caught:
        _fresh_import(old)
    assert len([w for w in caught if issubclass(w.category, DeprecationWarning)]) == 1
    # The warning points at the importer, not at the shim. Under pytest the importer's frame can
    # be pytest's assertion-rewriting import hook (pytest_trt is a plugin package it rewrites).
    assert caught[0].filename in (__file__, rewrite.__file__), "the warning points at the importing line"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        importlib.import_module(old)  # already imported: no second warning


@pytest.mark.parametrize("old", sorted(SHIMS))
def test_a_deprecated_shim_re_exports_the_same_objects(old):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        shim = _fresh_import(old)
    new = importlib.import_module(SHIMS[old])
    public = set(getattr(new, "__all__", ())) | {
        name for name, value in vars(new).items()
        if not name.startswith("_") and getattr(value, "__module__", None) == new.__name__
    }
    assert public <= set(shim.__all__), f"{old} misses {sorted(public - set(shim.__all__))}"
    for name in shim.__all__:
        assert getattr(shim, name) is getattr(new, name), f"{old}.{name} is not {new.__name__}.{name}"


@pytest.mark.parametrize("name", sorted(pytest_trt.__all__))
def test_every_name_in_all_resolves(name):
    assert getattr(pytest_trt, name) is not None


@pytest.mark.parametrize(("module", "names"), [
    ("pytest_trt.strategies", ["feeds"]),
    ("pytest_trt.compare", ["assert_close", "compare_outputs", "default_tolerances", "CompareResult"]),
    ("pytest_trt.backends", ["Backend", "BuildConfig", "Engine", "get_backend", "select_backend"]),
    ("pytest_trt.backends.base", ["register_backend", "unregister_backend", "BUILTIN_BACKENDS"]),
    ("pytest_trt.cache", ["ArtifactCache", "CacheStats"]),
    ("pytest_trt.model", ["Model", "load_model"]),
    ("pytest_trt.plan", ["PrecisionPlan", "resolve_plan", "check_as_written"]),
    ("pytest_trt.inputs", ["make_feeds", "load_feeds", "input_specs"]),
    ("pytest_trt.realize", ["realize_strong"]),
    ("pytest_trt.report", ["write_reports"]),
    ("pytest_trt.suggest", ["suggest_fp32_islands"]),
])
def test_public_package_paths_keep_working(module, names):
    mod = importlib.import_module(module)
    for name in names:
        assert getattr(mod, name) is not None, f"{module}.{name}"


def test_every_name_of_the_lazy_plan_package_resolves():
    plan = importlib.import_module("pytest_trt.plan")
    assert sorted(plan.__all__) == sorted(plan._LAZY)
    for name in plan.__all__:
        assert getattr(plan, name) is not None


def test_builtin_backends_name_importable_classes():
    from pytest_trt.backends.base import BUILTIN_BACKENDS

    for module, cls in BUILTIN_BACKENDS.values():
        assert isinstance(getattr(importlib.import_module(module), cls), type), f"{module}.{cls}"
