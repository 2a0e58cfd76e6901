"""The values some options accept, shared by the pytest options, the console script and the
modules that act on them.

Nothing is imported here: the console script's ``--help`` and the plugin's option table read
these without importing the backends or the parser check.
"""

from __future__ import annotations

__all__ = ["BACKEND_CHOICES", "MAX_RECHECK_SEEDS", "MIN_RECHECK_SEEDS", "PARSER_CHECK_CHOICES", "PARSER_CHECK_LIBRARY",
           "TIMING_CHOICES", "TYPING_CHOICES"]

#: ``--trt-backend`` / ``--backend``: the built-in backends (plugins add more).
BACKEND_CHOICES = ("auto", "tensorrt", "tensorrt-rtx", "emulate")
#: ``--trt-typing`` / ``--typing``: how the TensorRT network is typed.
TYPING_CHOICES = ("auto", "strong", "weak")
#: ``--trt-parser-check`` / ``--parser-check``.
PARSER_CHECK_CHOICES = ("off", "tensorrt-rtx")
#: the library ``trt.check_parser()`` uses when none is named (the one parser check there is)
PARSER_CHECK_LIBRARY = PARSER_CHECK_CHOICES[1]
#: ``--trt-ledger-timing`` / ``--timing`` / ``timing=``: the ledger's timing sources (:mod:`pytest_trt.ledger.timing`).
TIMING_CHOICES = ("auto", "engine", "onnxruntime-cuda", "off")
#: ``suggest --recheck-seeds`` / ``recheck_seeds=``: re-check seeds per answer, besides the user's feeds
#: (at least this many; at most that many: each seed's feeds are held in memory and every answer runs on each).
MIN_RECHECK_SEEDS = 3
MAX_RECHECK_SEEDS = 100
