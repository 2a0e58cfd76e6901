"""Normalise a ``--trt-report`` JSON or ``--trt-html`` file so that two runs can be diffed.

Replaces what changes from run to run without the behaviour changing: timestamps, durations
(``build_seconds`` and every other ``*_seconds``, ``built 0.01s``), absolute paths (the cache
directory, temporary directories, the checkout), pids, and the bytes of embedded images (each
replaced by its sha256, so a changed figure still shows). Prints the normalised text::

    python tools/normalize_report.py before.json > before.norm.json
    python tools/normalize_report.py after.json > after.norm.json
    diff before.norm.json after.norm.json

The kind is taken from the suffix (``.json``; anything else is read as HTML). Cache keys are
content hashes that embed no path, so they are kept (a changed key is a changed behaviour);
``--mask-keys`` replaces them too. Issue 27 used it to show that moving the modules changed
no report.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

#: JSON keys whose values are a moment or a duration
_TIME_KEYS = re.compile(r"^(created|started|finished|timestamp|time|duration|elapsed|.*seconds.*)$")
_PID_KEYS = re.compile(r"^(pid|.*_pid)$")
_KEY_KEYS = re.compile(r"^(key|.*_key)$")

_ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:[+-]\d{2}:\d{2}|Z| UTC)?")
# a duration printed for people: "0.01s", "(0.09s)", "1.2 s"
_DURATION = re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s?s\b")
# an absolute POSIX path: starts after a quote, a space, '(', '=', '>' or the start of the text.
# ONNX node names look the same ("/encoder/layer.0/Add"), so only a path whose first component
# is a directory of this file system ("/work", "/tmp", "/home") is one.
_ABS_PATH = re.compile(r"(?:(?<=^)|(?<=[\s\"'(=>:]))/([\w.+@-]+)(?:/[\w.+@-]*)*", re.MULTILINE)
_DATA_URI = re.compile(r"data:([\w/+.-]+);base64,([A-Za-z0-9+/=]+)")
_SHA256 = re.compile(r"\b[0-9a-f]{64}\b")
_PID_TEXT = re.compile(r"\.\d+\.tmp\b")
#: the top-level directories of this file system (what an absolute path starts with)
_ROOTS = {p.name: True for p in Path("/").iterdir() if p.is_dir()}


def _text(value: str, mask_keys: bool) -> str:
    value = _DATA_URI.sub(
        lambda m: f"data:{m.group(1)};sha256,{hashlib.sha256(m.group(2).encode()).hexdigest()}", value
    )
    value = _ISO_TIME.sub("<TIME>", value)
    value = _ABS_PATH.sub(lambda m: "<PATH>" if _ROOTS.get(m.group(1), False) else m.group(0), value)
    value = _DURATION.sub("<DURATION>", value)
    value = _PID_TEXT.sub(".<PID>.tmp", value)
    if mask_keys:
        value = _SHA256.sub("<KEY>", value)
    return value


def _json(value: Any, mask_keys: bool, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _json(v, mask_keys, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_json(v, mask_keys, key) for v in value]
    if (
        key
        and _TIME_KEYS.match(key)
        and (isinstance(value, (int, float, str)) and not isinstance(value, bool))
    ):
        return "<TIME>" if isinstance(value, str) else "<SECONDS>"
    if key and _PID_KEYS.match(key) and isinstance(value, int) and not isinstance(value, bool):
        return "<PID>"
    if mask_keys and key and _KEY_KEYS.match(key) and isinstance(value, str):
        return "<KEY>"
    if isinstance(value, str):
        return _text(value, mask_keys)
    return value


def normalize(path: Path, mask_keys: bool = False) -> str:
    """The normalised text of a JSON report (``.json``) or an HTML report (any other suffix)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return json.dumps(_json(json.loads(text), mask_keys), indent=1, sort_keys=True) + "\n"
    return _text(text, mask_keys)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="a --trt-report JSON or --trt-html file")
    parser.add_argument("--mask-keys", action="store_true", help="replace cache keys (sha256) too")
    args = parser.parse_args(argv)
    sys.stdout.write(normalize(args.report, args.mask_keys))
    return 0


if __name__ == "__main__":
    sys.exit(main())
