"""Node names as the history compares them: the one function that reads a node's name and module.

Two runs' nodes are matched by their canonical names (issue 30, ``Model.names``:
``/model/layers.0/input_layernorm/node_rsqrt``), which the realized-precision records hold (written
through ``Model.names.canonical`` when a test records them, :meth:`pytest_trt.glue.case.TrtCase.engine`),
and changes are summarised per module: the canonical name's scope, up to its last ``/``
(a node without a module keeps its raw name and belongs to ``/``). :func:`node_key` is the only
place the history package decides this; a row that carries ``canonical`` and ``scope`` (a
precision check's node) is read as recorded.

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
