"""The one place the ledger gets a node's label: its module path, scope and module class.

Issue 30 ("today's exports") gives every node ONE canonical scoped name and module class
(``Model.names``, ``pytest_trt/model/names.py``, e.g. ``/model/layers.0/input_layernorm/node_rsqrt``
with ``LlamaRMSNorm``). Until that lands, :func:`node_label` returns the node's raw name and no
module class, and :func:`scope_of_path` cuts the raw name at its last ``/`` (TorchScript
exports write ``/model/layers.0/input_layernorm/Pow``; dynamo exports' ``node_pow_1`` then
has no scope). Switching to ``model.names`` is a change of this module only: nothing else in
the ledger invents a node label (shared/CONVENTIONS.md, "Names").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["NodeLabel", "ROOT_SCOPE", "common_scope", "node_label", "scope_of_path"]

#: the scope of a name without one (and of layers spanning the whole network)
ROOT_SCOPE = "/"


@dataclass(frozen=True)
class NodeLabel:
    """How reports name one node: ``path`` (the module path), ``scope`` (its module), the module's
    class when the export recorded it (None until ``model.names`` exists)."""

    path: str
    scope: str
    module_class: str | None = None


def scope_of_path(path: str) -> str:
    """``/encoder/layer.0/attention/Softmax`` -> ``/encoder/layer.0/attention``; a name without a
    ``/`` scope belongs to :data:`ROOT_SCOPE`."""
    head, sep, _ = str(path).rpartition("/")
    return head if sep and head.strip("/") else ROOT_SCOPE


def node_label(model: Any, raw_name: str) -> NodeLabel:
    """The label of the node named ``raw_name`` in ``model`` (a :class:`~pytest_trt.model.Model`).

    Today: the raw ONNX node name and no module class (see the module docstring); a node the
    model does not have (a Cast inserted by the strongly typed realization) is labelled the same way.
    """
    del model  # (model.names, issue 30, will answer here)
    return NodeLabel(path=str(raw_name), scope=scope_of_path(str(raw_name)))


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
