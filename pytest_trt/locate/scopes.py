"""Node-name scopes written as keep_fp32 patterns.

Exported models name their nodes by module path (``/encoder/layer.0/attention/output/LayerNorm/Pow``).
The FP32-fallback search (:mod:`pytest_trt.suggest`) and the layerwise comparison's advice
(:mod:`pytest_trt.locate.divergence`) both turn such names into patterns a user pastes: a node's
scope (:func:`scope_of`), the glob of that scope (:func:`scope_pattern`), with the name's
own glob characters escaped (:func:`escape_glob`).
"""

from __future__ import annotations

__all__ = ["escape_glob", "scope_of", "scope_pattern"]


def escape_glob(text: str) -> str:
    """``text`` as a shell glob that matches exactly ``text`` (``[`` ``*`` ``?`` escaped)."""
    return "".join(f"[{c}]" if c in "[*?" else c for c in text)


def scope_of(name: str) -> str | None:
    """The name scope of a node (``/a/b/C`` -> ``/a/b/``), None at the root."""
    head, sep, _ = name.rpartition("/")
    if not sep or not head.strip("/"):
        return None
    return head + "/"


def scope_pattern(node: str) -> str:
    """The pattern of a node's name scope (``/a/b/C`` -> ``/a/b/*``), or the node itself at the root."""
    head, sep, _ = node.rpartition("/")
    if sep and head.strip("/"):
        return escape_glob(head + "/") + "*"
    return escape_glob(node)
