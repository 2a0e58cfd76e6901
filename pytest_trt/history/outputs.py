"""``--trt-save-outputs``: an accuracy check's feeds and engine outputs as one ``.npz``, named by its content.

Written by the process that ran the check (an xdist worker included) into the session's staging
folder (created by the controller, removed by it after the run was saved), then stored with the
run under ``outputs/``. The file: ``__index__`` (a JSON string: the feed and output names in
order), ``f0``, ``f1``, ... (feeds) and ``o0``, ``o1``, ... (outputs), so any tensor name is safe.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["load_check_outputs", "save_check_outputs"]


def save_check_outputs(directory: Path, feeds: dict[str, Any], outputs: dict[str, Any]) -> dict[str, Any]:
    """Write feeds and outputs to ``directory/<sha256>.npz``; returns ``{"file", "sha256", "size"}``."""
    directory.mkdir(parents=True, exist_ok=True)
    index = {"feeds": list(feeds), "outputs": list(outputs)}
    arrays = {f"f{i}": np.asarray(v) for i, v in enumerate(feeds.values())}
    arrays.update({f"o{i}": np.asarray(v) for i, v in enumerate(outputs.values())})
    tmp = directory / f".tmp-{os.getpid()}-{secrets.token_hex(6)}.npz"
    try:
        with open(tmp, "xb") as f:
            np.savez(f, __index__=np.array(json.dumps(index)), **arrays)  # type: ignore[arg-type]  # numpy's stub
        h, size = hashlib.sha256(), 0
        with open(tmp, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
                size += len(chunk)
        digest = h.hexdigest()
        final = directory / f"{digest}.npz"
        os.replace(tmp, final)  # content-addressed: the same content under the same name
    finally:
        if tmp.exists():
            tmp.unlink()
    return {"file": final.name, "sha256": digest, "size": size}


def load_check_outputs(path: Path) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """``(feeds, outputs)`` of a file written by :func:`save_check_outputs`."""
    with np.load(path, allow_pickle=False) as data:
        index = json.loads(str(data["__index__"]))
        feeds = {name: data[f"f{i}"] for i, name in enumerate(index["feeds"])}
        outputs = {name: data[f"o{i}"] for i, name in enumerate(index["outputs"])}
    return feeds, outputs
