"""Node names as the history compares them: the one function that reads a node's name and module.

The project's canonical node names (issue 30, ``Model.names``: ``/model/layers.0/input_layernorm/
node_rsqrt`` and the module it belongs to) are not on ``main`` yet. Until they are, precision
changes are matched by the node name a layer report records and summarised per name scope (the
name up to its last ``/``, the TorchScript exporter's module path). :func:`node_key` is the only
place that decides this: when canonical names land it reads ``canonical`` and ``module`` from the
records, and nothing else changes.

Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["module_pattern", "node_key"]


def node_key(node: Mapping[str, Any] | str) -> tuple[str, str]:
    """``(name, module)`` of a node of a layer report (its JSON row, or a bare name).

    ``name`` is what two runs are matched by; ``module`` what changes are summarised under
    (``/encoder/layer.0/attention/output/LayerNorm/``; ``/`` for a node without a scope).
    """
    if isinstance(node, Mapping):
        name = str(node.get("canonical") or node.get("node") or node.get("name") or "")
        module = node.get("scope")
    else:
        name, module = str(node), None
    if not module:
        head, sep, _ = name.rpartition("/")
        module = head + "/" if sep and head else "/"
    return name, str(module)


def module_pattern(module: str) -> str:
    """How a summary names a module: ``/encoder/layer.0/attention/output/LayerNorm/*``."""
    return module + "*" if module.endswith("/") else module + "/*"
