"""Messages of the shared pipeline in the command line's spelling.

The pipeline raises errors in the API's and the plugin's spelling (``keep_fp32=[...]``,
``--trt-cache-dir``); the console script prints them as its own flags (``--keep-fp32 P``,
``--cache-dir``). Light: the console script's entry point imports it before any subcommand runs.
"""

from __future__ import annotations

import ast
import re
import shlex

__all__ = ["cli_spelling"]


#: API/pytest spellings in messages raised by shared code, and how the command line spells them
def _keep_flags(match) -> str:
    try:
        patterns = ast.literal_eval("[" + match.group(1) + "]")
    except (ValueError, SyntaxError):
        return match.group(0)
    return " ".join(f"--keep-fp32 {shlex.quote(str(p))}" for p in patterns)


_CLI_SPELLING = (
    ("keep_fp32", re.compile(r"keep_fp32=\[([^\]]*)\] in the trt marker, or --trt-keep-fp32 '[^']*'"), _keep_flags),
    ("keep_fp32", re.compile(r"keep_fp32=\[([^\]]*)\]"), _keep_flags),
    ("keep_fp32", re.compile(r"--trt-keep-fp32"), "--keep-fp32"),
    ("cache_dir", re.compile(r"--trt-cache-dir=DIR"), "--cache-dir DIR"),
    ("cache_dir", re.compile(r"--trt-cache-dir"), "--cache-dir"),
    ("allow_nonfinite", re.compile(r"pass allow_nonfinite=True"), "pass --allow-nonfinite"),
    ("max_builds", re.compile(r"\(max_builds\)"), "(--max-builds)"),
    ("max_builds", re.compile(r"Raise max_builds"), "Raise --max-builds"),
    ("findings", re.compile(r"\(PrecisionError\.findings\.to_json\(\) lists all\)"), "(--json lists all)"),
    # options the CLI has under another name (check with `pytest-trt compare --help`)
    ("as_is", re.compile(r"as_is=True \(--trt-as-is\)"), "--as-is"),
    ("typing", re.compile(r"--trt-typing(?![\w-])"), "--typing"),
    ("rebuild", re.compile(r"--trt-rebuild(?![\w-])"), "--rebuild"),
    ("backend", re.compile(r"--trt-backend(?![\w-])"), "--backend"),
)


def cli_spelling(text: str, only: frozenset | set | None = None) -> str:
    """A message of the shared pipeline in the command line's spelling (``--keep-fp32 P`` rather than
    ``keep_fp32=[P]``, ``--cache-dir`` rather than ``--trt-cache-dir``, ...); ``only`` limits it to
    some of the spellings (``suggest`` prints the marker and pytest forms on purpose)."""
    for name, pattern, replacement in _CLI_SPELLING:
        if only is None or name in only:
            text = pattern.sub(replacement, text)
    return text
