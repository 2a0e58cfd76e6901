"""Measure the package's structure: the figures issue 21 asks for.

Prints module sizes over a limit, the worst cyclomatic complexities (radon),
import cycles between package modules (grimp, counting function-level
imports too), imports of another module's private names, function-level
imports, and module-level mutable caches.  Run from the repository root:

    python tools/structure_metrics.py [--max-lines 600] [--json] [--check]

``--check`` exits 1 when a rule of docs/DESIGN.md "Structure rules" is broken: an import cycle
between package modules, an import of another module's private name, module-level mutable
state outside ``core.runstate``, a module over ``--max-lines`` (default 600, checked with 10%
slack), a function over complexity 20 without a ``# complexity: <reason>`` comment on
the line above its ``def``, or more than ``MAX_TOP_LEVEL_MODULES`` modules directly in
``pytest_trt/`` (``__init__.py`` included; everything else lives in a package per stage).

Needs the ``lint`` extra's tools: radon and grimp (``tox -e lint`` has them).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

PACKAGE = "pytest_trt"
#: modules directly in pytest_trt/ (``__init__.py`` included): the entry point, the public
#: modules and the deprecated shims; everything else lives in a package per pipeline stage
MAX_TOP_LEVEL_MODULES = 10


def _modules(root: Path) -> dict[str, Path]:
    out = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        rel = path.relative_to(root).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _resolve(module: str, node: ast.ImportFrom, is_pkg: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_pkg:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(modules: dict[str, Path]):
    """Yield (importer, imported module, name or None, at_function_level)."""
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        is_pkg = path.name == "__init__.py"
        func_nodes = set()
        type_only = set()  # under ``if TYPE_CHECKING:``: never executed, so never part of a cycle
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for sub in ast.walk(fn):
                    if sub is not fn:
                        func_nodes.add(id(sub))
            elif isinstance(fn, ast.If) and "TYPE_CHECKING" in ast.unparse(fn.test):
                for stmt in fn.body:
                    type_only.update(id(sub) for sub in ast.walk(stmt))
        for node in ast.walk(tree):
            if id(node) in type_only:
                continue
            local = id(node) in func_nodes
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield module, alias.name, None, local
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(module, node, is_pkg)
                for alias in node.names:
                    yield module, target, alias.name, local


def _private_cross_imports(modules, imports):
    found = []
    for importer, target, name, _local in imports:
        if not target.startswith(PACKAGE) or name is None:
            continue
        if f"{target}.{name}" in modules:  # a submodule, not a name
            continue
        if name.startswith("_") and not name.startswith("__") and target != importer:
            found.append(f"{importer} imports {target}.{name}")
    return found


def _cycles(modules, imports) -> list[list[str]]:
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for importer, target, name, _local in imports:
        if not target.startswith(PACKAGE):
            continue
        dest = f"{target}.{name}" if name and f"{target}.{name}" in modules else target
        if dest in modules and dest != importer:
            graph[importer].add(dest)
    # Tarjan's strongly connected components
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    sccs: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return sccs


def _mutable_globals(modules) -> list[str]:
    """Module-level names that functions mutate: ``global`` rebinding, item
    assignment, or a mutating method call, plus ``functools`` caches."""
    mutators = {"append", "add", "update", "setdefault", "pop", "clear", "extend",
                "insert", "remove", "discard", "popitem", "cache_clear"}
    found = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = set()
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else (
                [node.target] if isinstance(node, ast.AnnAssign) else [])
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        hits = set()
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for dec in fn.decorator_list:
                d = dec.func if isinstance(dec, ast.Call) else dec
                if getattr(d, "attr", getattr(d, "id", "")) in {"lru_cache", "cache"}:
                    hits.add(f"{fn.name} (@{getattr(d, 'attr', getattr(d, 'id', ''))})")
            for sub in ast.walk(fn):
                if isinstance(sub, ast.Global):
                    hits.update(n for n in sub.names if n in names)
                elif isinstance(sub, (ast.Assign, ast.AugAssign, ast.Delete)):
                    tgts = sub.targets if isinstance(sub, (ast.Assign, ast.Delete)) else [sub.target]
                    for t in tgts:
                        if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in names:
                            hits.add(t.value.id)
                elif (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute)
                      and sub.func.attr in mutators and isinstance(sub.func.value, ast.Name)
                      and sub.func.value.id in names):
                    hits.add(sub.func.value.id)
        found.extend(f"{module}.{h}" for h in sorted(hits))
    return found


#: module-level state that is allowed, with the reason
ALLOWED_STATE = {
    "pytest_trt.core.runstate._current": "the one documented home of run-wide state (install/restore/reset)",
    "pytest_trt.backends.tensorrt.logger._LOGGERS": "TensorRT keeps the first logger it is given: one per module per process",
    "pytest_trt.backends.base._FACTORIES": "backend registrations (process configuration; plugin backends are "
                                           "registered per session and removed at pytest_unconfigure)",
}


def _has_reason(path: Path, lineno: int) -> bool:
    lines = path.read_text(encoding="utf-8").splitlines()
    i = lineno - 2  # the line above the def (skipping decorators)
    while i >= 0 and lines[i].lstrip().startswith("@"):
        i -= 1
    return i >= 0 and lines[i].lstrip().startswith("# complexity:")


def _check(result: dict, max_lines: int) -> int:
    problems = []
    problems += [f"import cycle: {' <-> '.join(c)}" for c in result["cycles"]]
    problems += [f"private cross-import: {p}" for p in result["private_cross_imports"]]
    problems += [f"module-level mutable state: {g} (use pytest_trt.core.runstate)"
                 for g in result["module_level_mutable_state"] if g not in ALLOWED_STATE]
    problems += [f"module over {max_lines} lines: {m} ({n})"
                 for m, n in result["over_max_lines"].items() if n > max_lines * 1.1]
    problems += [f"complexity over 20 without a '# complexity: <reason>' comment: {f}"
                 for f in result["complex_without_reason"]]
    top = result["top_level_modules"]
    if len(top) > MAX_TOP_LEVEL_MODULES:
        problems.append(f"{len(top)} modules directly in {PACKAGE}/, more than {MAX_TOP_LEVEL_MODULES} "
                        f"(put a module in the package of its stage): {', '.join(top)}")
    for p in problems:
        print(p)
    print(f"structure check: {len(problems)} problem(s)")
    return 1 if problems else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-lines", type=int, default=600)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--check", action="store_true", help="exit 1 when a structure rule is broken")
    args = ap.parse_args()
    root = Path.cwd()
    modules = _modules(root)
    imports = list(_imports(modules))

    from radon.complexity import cc_rank, cc_visit

    sizes = {m: len(p.read_text(encoding="utf-8").splitlines()) for m, p in modules.items()}
    blocks = []
    unexplained: list[str] = []
    for m, p in modules.items():
        for b in cc_visit(p.read_text(encoding="utf-8")):
            for item in [b, *getattr(b, "methods", [])]:
                if item is b and hasattr(b, "methods"):
                    continue  # a class: its methods are listed
                blocks.append((item.complexity, f"{m}.{getattr(item, 'classname', None) + '.' if getattr(item, 'classname', None) else ''}{item.name}"))
                if item.complexity > 20 and not _has_reason(p, item.lineno):
                    unexplained.append(f"{m}.{item.name} ({item.complexity}, {p.relative_to(root)}:{item.lineno})")
    blocks = sorted(set(blocks), reverse=True)
    result = {
        "modules": len(modules),
        "top_level_modules": sorted(p.name for p in (root / PACKAGE).glob("*.py")),
        "lines": sum(sizes.values()),
        "over_max_lines": {m: n for m, n in sorted(sizes.items(), key=lambda x: -x[1]) if n > args.max_lines},
        "largest": sorted(sizes.items(), key=lambda x: -x[1])[:8],
        "worst_complexity": [(c, n, cc_rank(c)) for c, n in blocks[:10]],
        "functions_rank_D_or_worse": sum(1 for c, _ in blocks if c > 20),
        "cycles": _cycles(modules, imports),
        "private_cross_imports": _private_cross_imports(modules, imports),
        "function_level_imports": sum(1 for i in imports if i[3]),
        "complex_without_reason": sorted(set(unexplained)),
        "module_level_mutable_state": _mutable_globals(modules),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    if args.check:
        return _check(result, args.max_lines)
    print(f"{result['modules']} modules, {result['lines']} lines")
    print(f"modules directly in {PACKAGE}/: {len(result['top_level_modules'])} "
          f"(at most {MAX_TOP_LEVEL_MODULES}): {', '.join(result['top_level_modules'])}")
    print(f"modules over {args.max_lines} lines: {len(result['over_max_lines'])}")
    for m, n in result["over_max_lines"].items():
        print(f"  {n:5d}  {m}")
    print("worst complexity:")
    for c, n, r in result["worst_complexity"]:
        print(f"  {c:3d} {r}  {n}")
    print(f"functions rated D or worse (complexity > 20): {result['functions_rank_D_or_worse']}")
    print(f"import cycles: {len(result['cycles'])}")
    for c in result["cycles"]:
        print("  " + " <-> ".join(c))
    print(f"private cross-imports: {len(result['private_cross_imports'])}")
    for p in result["private_cross_imports"]:
        print("  " + p)
    print(f"function-level imports: {result['function_level_imports']}")
    print(f"module-level mutable state: {len(result['module_level_mutable_state'])}")
    for g in result["module_level_mutable_state"]:
        print("  " + g)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
