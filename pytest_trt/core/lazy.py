"""The one idiom for importing heavy or optional libraries: at module level, lazily.

The plugin must import nothing beyond pytest until it is in use, and optional libraries
(ONNX Runtime, TensorRT, TensorRT-RTX, httpx, matplotlib, ...) may be absent. Instead of
importing them inside functions, a module binds them once at the top::

    from typing import TYPE_CHECKING

    from .lazy import lazy_import

    if TYPE_CHECKING:  # the type checker sees the real module
        import onnxruntime as ort
    else:
        ort = lazy_import("onnxruntime", extra="cpu")

The module is imported on the first attribute access (``ort.InferenceSession``). When it
cannot be imported, that access raises :class:`~pytest_trt.errors.MissingDependency` (a
``UsageError`` and an ``ImportError``) naming the package and the pytest-trt extra that
installs it. In the spirit of Polygraphy's ``mod.lazy_import``, without importing Polygraphy.

Modules that the plugin imports when pytest loads it (``plugin``, ``fixtures``, ``settings``,
``items``, ``hookspec``, ``session``, ``xdist_gpus``) use this idiom for ``numpy`` and ``onnx``
too; the pipeline's own modules import ``numpy`` and ``onnx`` (required dependencies) at the
top like any module, since they are only imported once the plugin is in use.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from typing import Any

from ..errors import MissingDependency

__all__ = ["LazyModule", "lazy_attributes", "lazy_import", "is_importable"]

_IMPORT_LOCK = threading.RLock()


class LazyModule(types.ModuleType):
    """A module stand-in that imports the real module on first attribute access."""

    def __init__(self, name: str, extra: str | None = None) -> None:
        super().__init__(name)
        self.__dict__["_lazy_extra"] = extra
        self.__dict__["_lazy_module"] = None

    def _load(self) -> types.ModuleType:
        module = self.__dict__["_lazy_module"]
        if module is not None:
            return module
        with _IMPORT_LOCK:
            module = self.__dict__["_lazy_module"]
            if module is None:
                name = self.__name__
                try:
                    module = importlib.import_module(name)
                except ImportError as exc:
                    raise MissingDependency(name, self.__dict__["_lazy_extra"], exc) from exc
                self.__dict__["_lazy_module"] = module
        return module

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._load(), attr)

    def __dir__(self) -> list[str]:
        return dir(self._load())

    def __repr__(self) -> str:
        state = "imported" if self.__dict__["_lazy_module"] is not None else "not imported yet"
        return f"<lazy module {self.__name__!r} ({state})>"


def lazy_import(name: str, *, extra: str | None = None) -> Any:
    """A stand-in for module ``name``; ``extra`` names the pytest-trt extra that installs it.

    Returns the real module at once if it is already imported (nothing to defer).
    """
    module = sys.modules.get(name)
    if module is not None and not isinstance(module, LazyModule):
        return module
    return LazyModule(name, extra)


def is_importable(name: str) -> bool:
    """Whether ``name`` could be imported, without importing it."""
    if name in sys.modules:
        return sys.modules[name] is not None
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def lazy_attributes(package: str, table: dict[str, str]):
    """A package's PEP 562 ``__getattr__`` for the public names of ``table`` (name -> the module that
    defines it: ``pytest_trt.x.y``, or a submodule name of ``package``). A name is imported on first
    use and bound in the package, so a package's ``__init__`` imports none of its submodules::

        __getattr__ = lazy_attributes(__name__, {"Model": "load", "UsageError": "pytest_trt.errors"})
    """

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module if module.startswith("pytest_trt") else f"{package}.{module}"),
                        name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
