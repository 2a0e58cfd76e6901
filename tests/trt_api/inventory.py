"""Static inventory (AST) of every TensorRT member pytest-trt's adapter can touch.

Read from the source of :data:`ADAPTER_FILES`, not listed by hand. An access is recorded as
``Class.member`` (``"module.Name"`` for a name of the module itself) with the call's positional
count and keyword names when it is called. What counts as a TensorRT object:

* the module: a name ``trt`` or any expression ending in ``.trt`` (``self.trt``, ``compat.trt``);
* ``<module>.Class`` is the class; calling it gives an instance of it;
* a call of a method whose real signature returns a TensorRT class gives an instance of it
  (return types come from the real bindings' docstrings, ``dump_surface.py``);
* a parameter or local without a known type, and not annotated with a non-TensorRT type, is
  typed by its name (:data:`RECEIVER_NAMES`: ``network``, ``layer``, ``builder`` ...; also the
  last component of ``self._engine``-style attributes), the naming the adapter keeps to;
* ``getattr(obj, "name", ...)``, ``hasattr(obj, "name")`` and the adapter's own lookups by
  name (:data:`NAME_LOOKUPS`: ``enum_member(enum, "FP16")``, ``self.set_flag(config, "TF32")``)
  count as accesses of ``name``; names the adapter builds at run time from tables
  (``trt_dtype``'s ``_PRECISION_TO_TRT``) are listed by :data:`TABLE_LOOKUPS`.

The dynamic twin is the access record of the fake while the glue tests run
(``tests/unit/fake_tensorrt.py``, ``PYTEST_TRT_FAKE_RECORD``): the tier reports a member in
one list and not the other.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
#: the TensorRT glue: the adapter and its version facts and logger, the backend with its build, network and
#: runner steps, and the domain's readers of the inspector JSON
ADAPTER_FILES = ("pytest_trt/backends/tensorrt/compat.py", "pytest_trt/backends/tensorrt/versions.py",
                 "pytest_trt/backends/tensorrt/logger.py", "pytest_trt/backends/tensorrt/backend.py",
                 "pytest_trt/backends/tensorrt/build.py", "pytest_trt/backends/tensorrt/network.py",
                 "pytest_trt/backends/tensorrt/runner.py", "pytest_trt/layers/inspector.py", "pytest_trt/layers/report.py")

#: variable name -> TensorRT class, for parameters and locals whose type the AST cannot follow
RECEIVER_NAMES = {
    "network": "INetworkDefinition", "builder": "Builder", "cfg": "IBuilderConfig", "layer": "ILayer",
    "engine": "ICudaEngine", "context": "IExecutionContext", "parser": "OnnxParser", "runtime": "Runtime",
    "inspector": "EngineInspector", "profile": "IOptimizationProfile", "err": "ParserError",
    "network_cls": "INetworkDefinition", "ctx": "IExecutionContext",
}
#: files where RECEIVER_NAMES apply (layers/report.py reads the inspector's JSON: its ``layer`` is ours)
NAME_TYPED_FILES = ("pytest_trt/backends/tensorrt/compat.py", "pytest_trt/backends/tensorrt/versions.py",
                    "pytest_trt/backends/tensorrt/logger.py", "pytest_trt/backends/tensorrt/backend.py",
                    "pytest_trt/backends/tensorrt/build.py", "pytest_trt/backends/tensorrt/network.py",
                    "pytest_trt/backends/tensorrt/runner.py")
#: parameter names typed as TensorRT objects only inside the named functions (elsewhere they are ours)
SCOPED_RECEIVERS = {
    ("configure", "config"): "IBuilderConfig", ("set_flag", "config"): "IBuilderConfig",
    ("_add_profiles", "config"): "IBuilderConfig", ("set_debug_state", "context"): "IExecutionContext",
    ("set_layer_precision", "layer"): "ILayer", ("set_output_type", "layer"): "ILayer",
    ("mark_unfused_debug", "network"): "INetworkDefinition",
}
#: adapter helpers that look a member up by a string argument: name -> (argument index of the
#: receiver or a fixed class name, argument index of the member name)
NAME_LOOKUPS = {"enum_member": (0, 1), "set_flag": ("BuilderFlag", 1), "getattr": (0, 1), "hasattr": (0, 1),
                "call": ("ParserError", 0)}
#: members reached through a table at run time: (class, table expression in the adapter)
TABLE_LOOKUPS = {"DataType": ("pytest_trt/backends/tensorrt/versions.py", "_PRECISION_TO_TRT")}
#: class names the module may hold (enough to type ``trt.X``); anything else starting with I or a capital
_NOT_TRT = {"BuildConfig", "Path", "LayerReport", "TrtCompat", "BuildInfo"}


@dataclass
class Access:
    where: str
    calls: list[tuple[int, tuple[str, ...]]] = field(default_factory=list)
    #: assigned to (``context.unfused_tensors_debug_state = True``): must be a settable property
    written: bool = False


@dataclass
class Inventory:
    accesses: dict[str, Access] = field(default_factory=dict)

    def add(self, member: str, where: str, call: tuple[int, tuple[str, ...]] | None = None,
            written: bool = False) -> None:
        acc = self.accesses.setdefault(member, Access(where))
        if call is not None:
            acc.calls.append(call)
        acc.written = acc.written or written

    @property
    def members(self) -> set[str]:
        return set(self.accesses)


def _returns(surfaces) -> dict[tuple[str, str], str]:
    """(class, method) -> returned TensorRT class, from every real surface given."""
    out = {}
    for s in surfaces:
        classes = s["classes"]
        for cname, c in classes.items():
            for mname, m in c["members"].items():
                for r in m.get("returns", []):
                    r = r.strip("'\"")
                    if r in classes:
                        out[(cname, mname)] = r
        for fname, f in s.get("functions", {}).items():
            for r in f.get("returns", []):
                if r in classes:
                    out[("module", fname)] = r
    return out


class _Visitor(ast.NodeVisitor):
    def __init__(self, inv: Inventory, path: str, returns: dict, classes: set[str]):
        self.inv, self.path, self.returns, self.classes = inv, path, returns, classes
        self.names = RECEIVER_NAMES if path in NAME_TYPED_FILES else {}
        self.scoped = SCOPED_RECEIVERS if path in NAME_TYPED_FILES else {}
        self.scopes: list[dict[str, str | None]] = [{}]
        self.func: list[str] = []

    # -- typing -------------------------------------------------------------------------
    def type_of(self, node) -> str | None:
        """"module", a TensorRT class name ("class:X" for the class itself), or None."""
        if isinstance(node, ast.Name):
            if node.id == "trt":
                return "module"
            for scope in reversed(self.scopes):
                if node.id in scope:
                    return scope[node.id]
            if self.func and (self.func[-1], node.id) in self.scoped:
                return self.scoped[(self.func[-1], node.id)]
            return self.names.get(node.id)
        if isinstance(node, ast.Attribute):
            if node.attr == "trt":
                return "module"
            base = self.type_of(node.value)
            if base == "module":
                return f"class:{node.attr}"
            if base is None and isinstance(node.value, ast.Name) and node.value.id == "self":
                return self.names.get(node.attr.lstrip("_"))
            return None
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            elt = self.type_of(node.elt)
            return f"list:{elt}" if elt and ":" not in elt and elt != "module" else None
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute):
                base = self.type_of(f.value)
                if base and base.startswith("class:") and f.attr == "__init__":
                    return None
                if base and not base.startswith("class:") and base != "module":
                    return self.returns.get((base, f.attr))
                if base == "module":
                    return self.returns.get(("module", f.attr))
            ftype = self.type_of(f)
            if ftype and ftype.startswith("class:"):
                return ftype[len("class:"):]
        return None

    # -- recording ----------------------------------------------------------------------
    def record(self, base: str, attr: str, node, call=None, written=False):
        if attr.startswith("__") and attr != "__init__":
            return
        if base == "module":
            member = f"module.{attr}"
        elif base.startswith("class:"):
            member = f"{base[len('class:'):]}.{attr}"
        else:
            member = f"{base}.{attr}"
        self.inv.add(member, f"{self.path}:{node.lineno}", call, written)

    def visit_FunctionDef(self, node):
        scope: dict[str, str | None] = {}
        for arg in node.args.args + node.args.kwonlyargs:
            ann = arg.annotation
            if ann is not None:
                text = ast.unparse(ann)
                if not any(c in text for c in self.classes):
                    scope[arg.arg] = None  # ours (BuildConfig, Path, ...): not a TensorRT object
        self.scopes.append(scope)
        self.func.append(node.name)
        self.generic_visit(node)
        self.func.pop()
        self.scopes.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Assign(self, node):
        self.visit(node.value)
        t = self.type_of(node.value)
        for target in node.targets:
            if isinstance(target, ast.Name):
                if t is not None:  # else: the name keeps its annotation or RECEIVER_NAMES type
                    self.scopes[-1][target.id] = t
            else:
                self.visit(target)

    def visit_For(self, node):
        t = self.type_of(node.iter)
        if isinstance(node.target, ast.Name) and t and t.startswith("list:"):
            self.scopes[-1][node.target.id] = t[len("list:"):]
        self.generic_visit(node)

    def _comprehension(self, node):
        for gen in node.generators:
            t = self.type_of(gen.iter)
            if isinstance(gen.target, ast.Name) and t and t.startswith("list:"):
                self.scopes[-1][gen.target.id] = t[len("list:"):]
        self.generic_visit(node)

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def visit_Attribute(self, node):
        base = self.type_of(node.value)
        if base is not None:
            self.record(base, node.attr, node, written=isinstance(node.ctx, ast.Store))
        self.generic_visit(node)

    def visit_Call(self, node):
        f = node.func
        call = (len(node.args), tuple(k.arg for k in node.keywords if k.arg))
        if isinstance(f, ast.Attribute):
            base = self.type_of(f.value)
            if base is not None:
                if base.startswith("class:") and f.attr == "__init__":
                    call = (call[0] - 1, call[1])  # trt.ILogger.__init__(self): self is explicit
                self.record(base, f.attr, f, call)
                self.visit(f.value)
                for a in list(node.args) + [k.value for k in node.keywords]:
                    self.visit(a)
                return
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
        if name in NAME_LOOKUPS and node.args:
            recv, idx = NAME_LOOKUPS[name]
            if len(node.args) > idx and isinstance(node.args[idx], ast.Constant) and isinstance(
                    node.args[idx].value, str):
                base = f"class:{recv}" if isinstance(recv, str) else self.type_of(node.args[recv])
                if base is not None:
                    self.record(base, node.args[idx].value, node)
        self.generic_visit(node)


def static_inventory(surfaces, files=ADAPTER_FILES, root: Path = REPO) -> Inventory:
    """The inventory of ``files`` (paths relative to ``root``)."""
    classes = set()
    for s in surfaces:
        classes |= set(s["classes"])
    classes -= _NOT_TRT
    returns = _returns(surfaces)
    inv = Inventory()
    for rel in files:
        path = Path(root) / rel
        tree = ast.parse(path.read_text(), filename=str(path))
        _Visitor(inv, rel, returns, classes).visit(tree)
        for cls, (table_file, table) in TABLE_LOOKUPS.items():
            if Path(rel) != Path(table_file):
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == table for t in node.targets):
                    for v in ast.literal_eval(node.value).values():
                        inv.add(f"{cls}.{v}", f"{rel}:{node.lineno}")
    return inv
