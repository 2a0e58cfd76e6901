"""Run in a subprocess by the trt_api tier: import one REAL TensorRT bindings module and print its surface.

``python dump_surface.py <module> <alias>``, with the unzipped bindings wheel on ``PYTHONPATH``
and the stub libraries (``stub_trt.c``) on ``LD_LIBRARY_PATH``. Prints one JSON object:

* ``version``: ``__version__``;
* ``classes``: every public class of the module -> ``{"enum": bool, "values": {member: int} (enums),
  "members": {name: {"kind": "method"|"property"|"value"|"attribute"|"virtual",
  "signatures": [[param, ...], ...] (parameter names without ``self``, one list per pybind
  overload, parsed from the docstring), "required": [n, ...] (parameters without a default)}}}``.
  Trampoline classes (``IDebugListener``, ``IOutputAllocator``, ``ILogger``) document the
  methods an implementation overrides only in their class docstring (``def name(self, ...)``):
  those are listed with kind ``virtual``;
* ``functions``: module-level functions, same shape as members;
* ``capabilities``: what pytest-trt's adapter (``pytest_trt.backends.tensorrt.compat.TrtCompat``)
  concludes about this module, so the tier can check that an absent member is one the
  adapter knows to be absent.

Nothing here constructs a TensorRT object (the stub factories return NULL).
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
import sys
import types

_SIG = re.compile(r"^\s*(?:\d+\.\s*)?(?P<name>\w+)\((?P<params>.*)\)(?:\s*->\s*(?P<ret>.*))?$")
_VIRTUAL = re.compile(r"^\s*def\s+(?P<name>\w+)\((?P<params>[^)]*)\)")


def _split_top(text: str) -> list[str]:
    """Split a parameter list at commas outside brackets."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "[(<{":
            depth += 1
        elif ch in "])>}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur))
    return [p.strip() for p in out]


def _params(text: str, types: list | None = None) -> tuple[list[str], int]:
    names, required = [], 0
    for p in _split_top(text):
        name = p.split(":", 1)[0].split("=", 1)[0].strip().lstrip("*")
        if not name or name == "self":
            continue
        names.append(name)
        if types is not None:
            types.append(p.split(":", 1)[1].split("=", 1)[0].strip() if ":" in p else "")
        if "=" not in p and not p.lstrip().startswith("*"):
            required += 1
    return names, required


def _signatures(name: str, doc: str | None, types_out: list | None = None):
    sigs, req, rets = [], [], []
    for line in (doc or "").splitlines():
        m = _SIG.match(line)
        if m and m.group("name") == name:
            if m.group("params").strip() == "*args, **kwargs":
                continue  # pybind's header line of an overloaded function; the overloads follow
            types: list[str] = []
            names, required = _params(m.group("params"), types)
            sigs.append(names)
            req.append(required)
            if types_out is not None:
                types_out.append(types)
            ret = (m.group("ret") or "").strip()
            rets.append(re.sub(r"^.*\.", "", ret) if re.fullmatch(r"[\w.]+", ret) else ret)
    return sigs, req, rets


def _member(cls, name: str) -> dict:
    static = inspect.getattr_static(cls, name, None)
    if isinstance(static, property):
        ret = re.search(r"->\s*([\w.]+)", static.fget.__doc__ or "") if static.fget is not None else None
        return {"kind": "property", "signatures": [], "required": [], "settable": static.fset is not None,
                "returns": [re.sub(r"^.*\.", "", ret.group(1))] if ret else []}
    value = getattr(cls, name, None)
    if callable(value) and not isinstance(value, (int, float)):
        types: list[list[str]] = []
        sigs, req, rets = _signatures(name, getattr(value, "__doc__", None), types)
        return {"kind": "method", "signatures": sigs, "required": req, "returns": rets, "types": types}
    if isinstance(cls, type) and hasattr(cls, "__members__") and name in cls.__members__:
        return {"kind": "value", "signatures": [], "required": []}
    return {"kind": "attribute", "signatures": [], "required": []}


def dump(module_name: str, alias: str) -> dict:
    mod = importlib.import_module(module_name)
    classes, functions = {}, {}
    for name in dir(mod):
        if name.startswith("_"):
            continue
        obj = getattr(mod, name)
        if isinstance(obj, type):
            is_enum = hasattr(obj, "__members__")
            entry = {"enum": is_enum, "values": {}, "members": {}}
            if is_enum:
                entry["values"] = {k: int(v) for k, v in obj.__members__.items()}
            for attr in dir(obj):
                if attr.startswith("_") and attr != "__init__":
                    continue
                entry["members"][attr] = _member(obj, attr)
            for line in (obj.__doc__ or "").splitlines():
                m = _VIRTUAL.match(line)
                if m and m.group("name") not in entry["members"]:
                    names, required = _params(m.group("params"))
                    entry["members"][m.group("name")] = {"kind": "virtual", "signatures": [names],
                                                         "required": [required]}
            classes[name] = entry
        elif callable(obj) and not isinstance(obj, types.ModuleType):
            sigs, req, rets = _signatures(name, obj.__doc__)
            functions[name] = {"kind": "function", "signatures": sigs, "required": req, "returns": rets}
    return {"module": module_name, "alias": alias, "version": str(getattr(mod, "__version__", "")),
            "classes": classes, "functions": functions, "capabilities": capabilities(mod, alias)}


def capabilities(mod, alias: str) -> dict:
    """The adapter's conclusions about this real module (it is given the module as ``alias``,
    the name the installed package has: ``tensorrt`` or ``tensorrt_rtx``)."""
    from pytest_trt.backends.tensorrt.compat import CAPABILITIES, TrtCompat

    named = types.ModuleType(alias)
    named.__dict__.update({k: v for k, v in vars(mod).items() if not k.startswith("__")})
    named.__version__ = mod.__version__
    compat = TrtCompat(named)
    out = {name: bool(getattr(compat, name)()) for name in CAPABILITIES}
    out["resolve_typing(auto)"] = compat.resolve_typing("auto")
    out["rtx"] = compat.rtx
    return out


if __name__ == "__main__":
    json.dump(dump(sys.argv[1], sys.argv[2]), sys.stdout, sort_keys=True)
