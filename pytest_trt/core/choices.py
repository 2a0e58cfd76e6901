"""The values some options accept, shared by the pytest options, the console script and the
modules that act on them.

Nothing is imported here: the console script's ``--help`` and the plugin's option table read
these without importing the backends or the parser check.
"""

from __future__ import annotations

__all__ = ["BACKEND_CHOICES", "PARSER_CHECK_CHOICES", "TYPING_CHOICES"]

#: ``--trt-backend`` / ``--backend``: the built-in backends (plugins add more).
BACKEND_CHOICES = ("auto", "tensorrt", "tensorrt-rtx", "emulate")
#: ``--trt-typing`` / ``--typing``: how the TensorRT network is typed.
TYPING_CHOICES = ("auto", "strong", "weak")
#: ``--trt-parser-check`` / ``--parser-check``.
PARSER_CHECK_CHOICES = ("off", "tensorrt-rtx")
