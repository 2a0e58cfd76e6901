"""Tensor names across an ONNX graph and its subgraphs: what is taken, fresh names, and renaming
outer references.

Graph surgery that inserts tensors (the strong and emulation realizations, the FP32
upcast) needs every name already used anywhere in the model (:func:`all_tensor_names`), a
fresh name for each tensor and node it adds (:func:`fresh_name`, the one generator), and,
when it replaces a tensor read by a control-flow node, must point the node's subgraphs at the
replacement too (:func:`rename_outer_refs`).
"""

from __future__ import annotations

from typing import Any

_GRAPH, _GRAPHS = 5, 10  # onnx.AttributeProto.GRAPH / GRAPHS


def all_tensor_names(graph: Any) -> set[str]:
    """Every tensor name ``graph`` uses (inputs, outputs, initializers, value_info, node
    inputs and outputs), its subgraphs' included."""
    names = {i.name for i in graph.input} | {o.name for o in graph.output}
    names |= {i.name for i in graph.initializer} | {v.name for v in graph.value_info}
    for node in graph.node:
        names.update(node.input)
        names.update(node.output)
        for attr in node.attribute:
            for sub in ([attr.g] if attr.type == _GRAPH else list(attr.graphs) if attr.type == _GRAPHS else []):
                names |= all_tensor_names(sub)
    return names


def fresh_name(base: str, taken: set[str]) -> str:
    """``base``, or ``base_2``, ``base_3``, ... : the first not in ``taken``, which it is added to.

    >>> taken = {"x", "x_2"}
    >>> fresh_name("x", taken), fresh_name("y", taken), sorted(taken)
    ('x_3', 'y', ['x', 'x_2', 'x_3', 'y'])
    """
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


def rename_outer_refs(node: Any, renames: dict[str, str]) -> None:
    """Point a control-flow node's subgraphs at cast copies of outer-scope tensors.

    Names a subgraph defines itself shadow outer ones and are left alone.
    """
    for attr in node.attribute:
        if attr.type == _GRAPH:
            _rename_in_graph(attr.g, renames)
        elif attr.type == _GRAPHS:
            for graph in attr.graphs:
                _rename_in_graph(graph, renames)


def _rename_in_graph(graph: Any, renames: dict[str, str]) -> None:
    local = {i.name for i in graph.input} | {i.name for i in graph.initializer}
    for node in graph.node:
        for slot, name in enumerate(node.input):
            if name in renames and name not in local:
                node.input[slot] = renames[name]
        inner = {k: v for k, v in renames.items() if k not in local}
        if inner:
            rename_outer_refs(node, inner)
        local.update(node.output)
    for out in graph.output:
        if out.name in renames and out.name not in local:
            # Subgraph outputs are positional: returning the cast copy keeps the meaning.
            out.name = renames[out.name]


__all__ = ["all_tensor_names", "fresh_name", "rename_outer_refs"]
