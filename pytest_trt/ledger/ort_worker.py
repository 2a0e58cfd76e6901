"""The process that times one model on ONNX Runtime: ``python -m pytest_trt.ledger.ort_worker DIR``.

Run by :mod:`pytest_trt.ledger.ort_cuda` in a fresh process, with its working directory and
every file it writes in ``DIR`` (a temporary directory, never the caller's current one):
reads ``DIR/job.json`` (``provider``, ``warmup``, ``iterations``, ``profile``), ``DIR/model.onnx``
and ``DIR/feeds.npz``; writes ``DIR/result.json`` (``end_to_end_ms`` per measured run,
``providers`` in use, ``profile``: the path of ONNX Runtime's profile when asked) or, on
failure, exits 1 with the reason on stderr.

A process of its own because the per-node profile is taken with ``CUDA_LAUNCH_BLOCKING=1``
in the environment (every kernel launch waits for its kernel, so a node's profiled host time
covers its GPU time: see :mod:`pytest_trt.layers.ort_profile`), a setting CUDA reads once per
process and that must not slow anything else down.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from ..core.environment import gpus
from ..reference.baseline import make_session, run_session

__all__ = ["main", "run_job"]


def run_job(directory: Path) -> dict:
    """Run the job in ``directory`` and return its result (also written to ``result.json``)."""
    job = json.loads((directory / "job.json").read_text())
    with np.load(directory / "feeds.npz") as data:
        feeds = {name: data[name] for name in data.files}
    session = make_session(str(directory / "model.onnx"), provider=job["provider"], label=job.get("label", "model"),
                           profile_dir=directory if job.get("profile") else None)
    for _ in range(int(job["warmup"])):
        run_session(session, feeds)
    end_to_end = []
    for _ in range(int(job["iterations"])):
        start = time.perf_counter()
        run_session(session, feeds)  # returns host arrays: the run has finished on the device
        end_to_end.append((time.perf_counter() - start) * 1000.0)
    result = {"end_to_end_ms": end_to_end, "providers": session.get_providers(), "profile": None,
              "device": gpus()[0].describe() if job["provider"] == "cuda" and gpus() else ""}
    if job.get("profile"):
        result["profile"] = session.end_profiling()
    (directory / "result.json").write_text(json.dumps(result))
    return result


def main(argv=None) -> int:
    """The worker's entry point: ``DIR`` as the only argument."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m pytest_trt.ledger.ort_worker DIR", file=sys.stderr)
        return 2
    try:
        run_job(Path(args[0]))
    except Exception as exc:  # the parent reports it; a traceback would only bury the reason
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover - run as a module by ort_cuda
    sys.exit(main())
