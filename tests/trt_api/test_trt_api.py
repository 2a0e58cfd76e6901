"""Tier ``trt_api``: pytest-trt's TensorRT adapter and its fake, against the REAL bindings of every
supported version (imported on CPU against stub libraries; see ``trt_api_support.py``).

``pytest -m trt_api`` (``.ci/run``, ``tox -e trt_api``). Skips only where no C compiler or no package
index is reachable, with that exact reason; in CI (``PYTEST_TRT_CI_NO_SKIP=1``) such a skip fails.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import shutil
import subprocess
import sys

import inventory
import pytest
import trt_api_support as support

pytestmark = pytest.mark.trt_api

REPO = support.REPO
_spec = importlib.util.spec_from_file_location("_pytest_trt_fake_tensorrt", REPO / "tests" / "unit" / "fake_tensorrt.py")
fake_tensorrt = sys.modules.setdefault("_pytest_trt_fake_tensorrt", importlib.util.module_from_spec(_spec))
if not hasattr(fake_tensorrt, "make_fake_tensorrt"):
    _spec.loader.exec_module(fake_tensorrt)

IDS = [r.id for r in support.MATRIX]

#: A TensorRT member the adapter uses that some version lacks -> the capability check
#: (``TrtCompat.<name>()``) that must say False on exactly those versions, so the fallback is taken.
GUARDS = {
    "BuilderFlag.FP16": "has_weak_typing",
    "BuilderFlag.BF16": "has_weak_typing",
    "BuilderFlag.OBEY_PRECISION_CONSTRAINTS": "has_weak_typing",
    "ILayer.precision": "has_weak_typing",
    "ILayer.set_output_type": "has_weak_typing",
    "INetworkDefinition.mark_unfused_tensors_as_debug_tensors": "has_unfused_debug_tensors",
    "IExecutionContext.unfused_tensors_debug_state": "has_unfused_debug_state",
    "ICudaEngine.device_memory_size": "has_device_memory_size",
    "ICudaEngine.device_memory_size_v2": "has_device_memory_size_v2",
    "OnnxParser.load_model_proto": "has_user_initializers",
    "OnnxParser.load_initializer": "has_user_initializers",
    "OnnxParser.parse_model_proto": "has_user_initializers",
}

#: Every API difference between the versions of the matrix among the members the adapter uses
#: (found by this tier; the closing note of issue 17 and docs/VERIFIED.md list them): member ->
#: the versions that LACK it. A new difference fails here until it is looked at and guarded.
DIFFERENCES = {
    "BuilderFlag.BF16": {"11.0.0.114", "11.4.0.106", "1.7.1.116"},
    "BuilderFlag.FP16": {"11.0.0.114", "11.4.0.106", "1.7.1.116"},
    "BuilderFlag.OBEY_PRECISION_CONSTRAINTS": {"11.0.0.114", "11.4.0.106", "1.7.1.116"},
    "ILayer.precision": {"11.0.0.114", "11.4.0.106", "1.7.1.116"},
    "ILayer.set_output_type": {"11.0.0.114", "11.4.0.106", "1.7.1.116"},
    "INetworkDefinition.mark_unfused_tensors_as_debug_tensors": {"10.0.1", "10.8.0.43"},
    "IExecutionContext.unfused_tensors_debug_state": {"10.0.1", "10.8.0.43"},
    "ICudaEngine.device_memory_size": {"11.0.0.114", "11.4.0.106", "1.7.1.116"},
    "ICudaEngine.device_memory_size_v2": {"10.0.1"},
    # user initializers (a big model's weights by pointer): onnx-tensorrt's 10.13 GA release notes
    "OnnxParser.load_model_proto": {"10.0.1", "10.8.0.43", "10.12.0.36"},
    "OnnxParser.load_initializer": {"10.0.1", "10.8.0.43", "10.12.0.36"},
    "OnnxParser.parse_model_proto": {"10.0.1", "10.8.0.43", "10.12.0.36"},
}


# -- fixtures ------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def surfaces() -> dict[str, dict]:
    try:
        return support.all_surfaces()
    except support.Unavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def static(surfaces) -> inventory.Inventory:
    return inventory.static_inventory(surfaces.values())


@pytest.fixture(scope="session")
def recorded(surfaces, tmp_path_factory) -> set[str]:
    """The dynamic inventory: the glue tests and the ledger's TensorRT tests (every matrix version) run
    against the fake, which takes its enums from the real surfaces and records every access made by
    pytest_trt code."""
    out = tmp_path_factory.mktemp("record") / "accesses.json"
    env = dict(os.environ)
    env[fake_tensorrt.RECORD_ENV] = str(out)
    env[fake_tensorrt.SURFACES_ENV] = str(support.cache_dir() / "surfaces")
    env.pop("PYTEST_ADDOPTS", None)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           str(REPO / "tests" / "unit" / "test_tensorrt_glue.py"),
                           str(REPO / "tests" / "unit" / "test_ledger_tensorrt.py")],
                          cwd=REPO, env=env, capture_output=True, text=True, check=False, timeout=900)
    assert proc.returncode == 0, f"glue tests failed against the fake with real enums:\n{proc.stdout[-4000:]}"
    return set(json.loads(out.read_text()))


# -- checks --------------------------------------------------------------------------------
def _lookup(surface: dict, member: str) -> dict | None:
    owner, _, name = member.partition(".")
    if owner == "module":
        if name in surface["classes"]:
            return {"kind": "class", "signatures": [], "required": []}
        return surface["functions"].get(name)
    cls = surface["classes"].get(owner)
    if cls is None:
        return None
    return cls["members"].get(name)


def _call_fits(entry: dict, positional: int, keywords: tuple[str, ...]) -> bool:
    sigs = entry.get("signatures") or []
    if not sigs:  # properties, enum values, classes (constructors are checked through __init__)
        return True
    for params, required in zip(sigs, entry.get("required") or [0] * len(sigs), strict=False):
        if positional + len(keywords) < required or positional > len(params):
            continue
        if all(k in params[positional:] for k in keywords):
            return True
    return False


def problems(members, calls, surface: dict, written=()) -> list[str]:
    """What the adapter uses that ``surface`` lacks (and no capability check guards), calls wrongly,
    or assigns although the real member is not a settable property."""
    caps = surface["capabilities"]
    out = []
    for member in sorted(members):
        entry = _lookup(surface, member)
        if entry is None:
            guard = GUARDS.get(member)
            if guard is None:
                out.append(f"{member}: absent in {surface['version']} and no capability check guards it")
            elif caps.get(guard):
                out.append(f"{member}: absent in {surface['version']} but TrtCompat.{guard}() says True there")
            continue
        if member in written and not (entry.get("kind") == "property" and entry.get("settable")):
            out.append(f"{member}: assigned to, but in {surface['version']} it is a {entry.get('kind')}"
                       + (" without a setter" if entry.get("kind") == "property" else ""))
        for positional, keywords in calls.get(member, ()):
            if not _call_fits(entry, positional, keywords):
                out.append(f"{member}: called with {positional} positional argument(s) and keywords {keywords}, "
                           f"real {surface['version']} signature(s) {entry['signatures']}")
    return out


def _calls(inv: inventory.Inventory) -> dict:
    return {m: a.calls for m, a in inv.accesses.items()}


# -- the tests -----------------------------------------------------------------------------
def test_matrix_is_the_fakes(surfaces):
    assert [("rtx:" if r.rtx else "") + r.version for r in support.MATRIX] == list(fake_tensorrt.MATRIX)


@pytest.mark.parametrize("release", support.MATRIX, ids=IDS)
def test_real_bindings_import(surfaces, release):
    s = surfaces[release.id]
    assert s["version"] == release.version
    assert s["capabilities"]["rtx"] == release.rtx
    assert "IExecutionContext" in s["classes"] and "Builder" in s["classes"]


@pytest.mark.parametrize("release", support.MATRIX, ids=IDS)
def test_adapter_members_exist(surfaces, static, recorded, release):
    """(a) every member the adapter can touch exists with a compatible call, or is guarded."""
    members = static.members | recorded
    written = {m for m, a in static.accesses.items() if a.written}
    assert {"IExecutionContext.unfused_tensors_debug_state", "IBuilderConfig.profiling_verbosity"} <= written
    found = problems(members, _calls(static), surfaces[release.id], written)
    assert not found, "\n".join(found)


def test_inventories_agree(static, recorded):
    """The static (AST) and dynamic (recorded) inventories check each other.

    A member the glue tests touched that the AST did not find means the static inventory is blind
    somewhere (it would miss a misspelling there): a failure. A member the AST found that no glue
    test touched is a path without a glue test: reported, and a failure unless it is listed in
    ``STATIC_ONLY`` with the reason.
    """
    only_recorded = sorted(recorded - static.members)
    only_static = sorted(static.members - recorded - set(STATIC_ONLY))
    lines = []
    if only_recorded:
        lines.append("recorded while the glue tests ran, not in the static inventory: " + ", ".join(only_recorded))
    if only_static:
        lines.append("in the static inventory, never touched by a glue test: "
                     + ", ".join(f"{m} ({static.accesses[m].where})" for m in only_static))
    stale = sorted(set(STATIC_ONLY) - static.members)
    if stale:
        lines.append("STATIC_ONLY lists members the adapter no longer uses: " + ", ".join(stale))
    assert not lines, "\n".join(lines)


#: Members the adapter uses on paths no glue test can reach through the fake, with the reason.
STATIC_ONLY = {
    "Runtime.engine_host_code_allowed": "set under contextlib.suppress for version-compatible engines",
}


@pytest.mark.parametrize("release", support.MATRIX, ids=IDS)
def test_fake_matches_real_surface(surfaces, release, monkeypatch):
    """(b) the fake configured as ``release`` has no class, member, enum value or parameter name the
    real version lacks (its hand-written surface: the real-enum mode is switched off here)."""
    monkeypatch.delenv(fake_tensorrt.SURFACES_ENV, raising=False)
    real = surfaces[release.id]
    fake = fake_tensorrt.make_fake_tensorrt(release.version, rtx=release.rtx)
    found = []
    for name in dir(fake):
        if name.startswith("_") or name == "state":
            continue
        obj = getattr(fake, name)
        if not isinstance(obj, type):
            continue
        rc = real["classes"].get(name)
        if rc is None:
            found.append(f"class {name}: not in the real {release.version}")
            continue
        if hasattr(obj, "__members__"):
            for member in obj.__members__:
                if member not in rc["values"]:
                    found.append(f"{name}.{member}: no such enum value in the real {release.version}")
            continue
        for attr, value in _own_members(obj).items():
            rm = rc["members"].get(attr)
            if rm is None:
                found.append(f"{name}.{attr}: not in the real {release.version}")
                continue
            if callable(value) and rm.get("signatures"):
                params = [p for p in inspect.signature(value).parameters if p != "self"]
                real_names = {p for sig in rm["signatures"] for p in sig}
                wrong = [p for p in params if p not in real_names]
                if wrong:
                    found.append(f"{name}.{attr}({', '.join(params)}): parameter(s) {wrong} not in the real "
                                 f"{release.version} signature(s) {rm['signatures']}")
    assert not found, "\n".join(found)


def _own_members(cls) -> dict:
    out = {}
    for k in reversed(cls.__mro__):
        if "make_fake_tensorrt" not in k.__qualname__:
            continue
        for attr, value in vars(k).items():
            if attr.startswith("_") and attr != "__init__" or attr == "Severity":
                continue
            out[attr] = value.fget if isinstance(value, property) else value
    out.pop("__init__", None)
    return out


def test_a_misspelled_member_fails_the_tier(surfaces, tmp_path):
    """The tier catches a member that exists in no version: a misspelling in the adapter."""
    for rel in inventory.ADAPTER_FILES:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / rel, tmp_path / rel)
    compat = tmp_path / "pytest_trt/backends/tensorrt/compat.py"
    text = compat.read_text()
    assert "context.set_all_tensors_debug_state(" in text
    compat.write_text(text.replace("context.set_all_tensors_debug_state(", "context.set_all_tensor_debug_state("))
    inv = inventory.static_inventory(surfaces.values(), root=tmp_path)
    for release in support.MATRIX:
        found = problems(inv.members, _calls(inv), surfaces[release.id])
        assert any(f.startswith("IExecutionContext.set_all_tensor_debug_state: absent") for f in found), found
    # and a wrong call (one argument too many) is caught as well
    compat.write_text(text.replace("context.set_all_tensors_debug_state(bool(on))",
                                   "context.set_all_tensors_debug_state(bool(on), 0)"))
    inv = inventory.static_inventory(surfaces.values(), root=tmp_path)
    found = problems(inv.members, _calls(inv), surfaces["trt-11.4.0.106"])
    assert any(f.startswith("IExecutionContext.set_all_tensors_debug_state: called with 2") for f in found), found
    # and an assignment to a read-only property
    compat.write_text(text.replace("config.builder_optimization_level = int(", "config.num_optimization_profiles = int("))
    inv = inventory.static_inventory(surfaces.values(), root=tmp_path)
    written = {m for m, a in inv.accesses.items() if a.written}
    found = problems(inv.members, _calls(inv), surfaces["trt-10.13.3.9"], written)
    assert "IBuilderConfig.num_optimization_profiles: assigned to, but in 10.13.3.9 it is a property without a setter" \
        in found, found


def test_api_differences_between_versions(surfaces, static, recorded):
    """Which members the adapter uses are missing in which versions: exactly :data:`DIFFERENCES`."""
    members = static.members | recorded
    seen = {}
    for release in support.MATRIX:
        for m in members:
            if _lookup(surfaces[release.id], m) is None:
                seen.setdefault(m, set()).add(release.version)
    assert seen == DIFFERENCES
    assert set(DIFFERENCES) <= set(GUARDS)


def test_strong_typing_from_10_0(surfaces):
    """Settles the strong-typing minimum: STRONGLY_TYPED is in the real 10.0.1 bindings."""
    from pytest_trt.backends.tensorrt.compat import STRONG_TYPING_MIN

    oldest = surfaces["trt-10.0.1"]
    assert "STRONGLY_TYPED" in oldest["classes"]["NetworkDefinitionCreationFlag"]["values"]
    assert STRONG_TYPING_MIN == (10, 0)
    for s in surfaces.values():
        assert s["capabilities"]["has_strong_typing"] and s["capabilities"]["resolve_typing(auto)"] == "strong"


#: methods the adapter adds to its subclasses of TensorRT classes (not overrides)
OWN_HELPERS = {"ILogger.capture": "the capturing logger's context manager (trt_compat.get_logger)",
               "IOutputAllocator.release": "frees the allocator's buffers after a run"}


def test_implemented_virtuals_match(surfaces):
    """The adapter's overrides of TensorRT's trampoline classes use the real parameter names."""
    import ast

    overrides = {}
    for rel in inventory.ADAPTER_FILES:
        for node in ast.walk(ast.parse((REPO / rel).read_text())):
            if isinstance(node, ast.ClassDef):
                for base in node.bases:
                    if isinstance(base, ast.Attribute) and ast.unparse(base.value).endswith("trt"):
                        for fn in node.body:
                            if isinstance(fn, ast.FunctionDef) and not fn.name.startswith("_"):
                                overrides[f"{base.attr}.{fn.name}"] = [a.arg for a in fn.args.args[1:]]
    assert {"ILogger.log", "IDebugListener.process_debug_tensor", "IOutputAllocator.reallocate_output",
            "IOutputAllocator.notify_shape"} <= set(overrides)
    for own in OWN_HELPERS:
        overrides.pop(own, None)
    found = []
    for release in support.MATRIX:
        for member, params in overrides.items():
            entry = _lookup(surfaces[release.id], member)
            if entry is None or (entry.get("signatures") and params not in entry["signatures"]):
                found.append(f"{member}({', '.join(params)}) vs real {release.version}: "
                             f"{entry and entry.get('signatures')}")
    assert not found, "\n".join(found)


def test_get_tensor_profile_values_labels_its_parameters_the_wrong_way_round(surfaces):
    """Every version labels ``get_tensor_profile_values(name: int, profile_index: str)``: the first
    argument is the profile index, the second the tensor name, whatever the labels say. The runner
    calls it positionally as ``(index, name)`` (``trt_runner.select_profile``); if NVIDIA fixes the
    labels, this fails and the call must be looked at again."""
    for release in support.MATRIX:
        entry = _lookup(surfaces[release.id], "ICudaEngine.get_tensor_profile_values")
        (names,), (types,) = entry["signatures"], entry["types"]
        assert names == ["name", "profile_index"], release.version
        assert "int" in types[0].lower() and types[1] == "str", (release.version, types)
    text = (REPO / "pytest_trt/backends/tensorrt/runner.py").read_text()
    assert "engine.get_tensor_profile_values(index, n)" in text
