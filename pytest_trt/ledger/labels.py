"""The one place the ledger gets a node's label: its module path, scope and module class.

Every node has ONE canonical scoped name and module class (issue 30: ``Model.names``,
``pytest_trt/model/names.py``): :func:`node_label` returns them, e.g.
``/model/layers.0/input_layernorm/node_rsqrt`` in scope ``/model/layers.0/input_layernorm`` with
class ``transformers.models.llama.modeling_llama.LlamaRMSNorm`` for a dynamo export's
``node_rsqrt``; a TorchScript export's names already are canonical (no class). A node the model
does not have (a Cast the strongly typed realization inserted) keeps its raw name, cut at its
last ``/`` for the scope. Nothing else in the ledger invents a node label (shared/CONVENTIONS.md,
"Names").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["NodeLabel", "ROOT_SCOPE", "common_scope", "node_label", "scope_of_path"]

#: the scope of a name without one (and of layers spanning the whole network)
ROOT_SCOPE = "/"


@dataclass(frozen=True)
class NodeLabel:
    """How reports name one node: ``path`` (its canonical scoped name), ``scope`` (its module's
    scope), the module's class (qualified) when the export recorded it, else None."""

    path: str
    scope: str
    module_class: str | None = None


def scope_of_path(path: str) -> str:
    """``/encoder/layer.0/attention/Softmax`` -> ``/encoder/layer.0/attention``; a name without a
    ``/`` scope belongs to :data:`ROOT_SCOPE`."""
    head, sep, _ = str(path).rpartition("/")
    return head if sep and head.strip("/") else ROOT_SCOPE


def node_label(model: Any, raw_name: str) -> NodeLabel:
    """The label of the node named ``raw_name`` in ``model`` (a :class:`~pytest_trt.model.Model`):
    its canonical name, scope and module class from ``model.names`` (see the module docstring)."""
    names = getattr(model, "names", None)
    entry = names.get(str(raw_name)) if names is not None else None
    if entry is None:
        return NodeLabel(path=str(raw_name), scope=scope_of_path(str(raw_name)))
    return NodeLabel(path=entry.canonical, scope=scope_of_path(entry.canonical), module_class=entry.module_class)


def common_scope(scopes) -> str:
    """The innermost scope containing every scope given (``/a/b`` and ``/a/c`` -> ``/a``)."""
    parts = [[p for p in s.split("/") if p] for s in scopes]
    if not parts:
        return ROOT_SCOPE
    common: list[str] = []
    for level in zip(*parts, strict=False):
        if any(p != level[0] for p in level):
            break
        common.append(level[0])
    return "/" + "/".join(common) if common else ROOT_SCOPE
