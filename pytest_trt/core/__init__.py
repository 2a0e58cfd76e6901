"""Foundations every stage uses: dtypes, JSON-safe values, lazy imports, run-wide state, the
environment (library versions, GPUs) and the records that tests hand to the reports.

Kept light: the plugin's load path imports modules of this package, so nothing here (and
nothing this file imports) may import numpy, onnx or another heavy library at module level.
"""
