"""The environment fingerprint of a run, and what changed between two runs' fingerprints.

A saved run records what could change its figures. Once per session (``session.fingerprint`` in
the JSON report): the backend and its library version, TensorRT and TensorRT-RTX versions, the
GPU model, compute capability and driver, the CUDA version (null where the run computes on no
GPU: an emulate backend with the CPU baseline), ONNX Runtime, onnx and numpy
versions, the pytest-trt version, the session's default precision, typing, baseline provider and
seed, and the git commit of the repository the tests run in (the model repository; ``dirty``
when tracked files differ from it). Per accuracy check (``fingerprint`` of each accuracy entry):
the model's content hash, the plan's fingerprint (policy resolved against the model) and the
hash of the feeds, beside its seed and its ``criterion`` (``Criterion.to_json()``: per output every
tolerance and floor with its level and source; :mod:`pytest_trt.compare.criterion`).

:func:`cause_line` says in one line what differs, the most likely cause of a drift first:
``TensorRT 10.13.3 -> 11.4.0; model unchanged``.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .._version import __version__
from ..core import environment

__all__ = ["FIELDS", "cause_line", "environment_changes", "git_commit", "session_fingerprint"]

#: fingerprint key -> how a change of it is worded, in the order a cause line lists them
FIELDS: dict[str, str] = {
    "backend": "backend",
    "tensorrt": "TensorRT",
    "tensorrt-rtx": "TensorRT-RTX",
    "gpu": "GPU",
    "compute_capability": "compute capability",
    "driver": "driver",
    "cuda": "CUDA",
    "onnxruntime": "ONNX Runtime",
    "onnx": "onnx",
    "numpy": "numpy",
    "pytest_trt": "pytest-trt",
    "precision": "default precision",
    "typing": "typing",
    "baseline_provider": "baseline provider",
    "seed": "seed",
    "git_commit": "git commit",
}


def git_commit(directory: Path) -> dict[str, Any] | None:
    """``{"commit", "dirty"}`` of the git work tree holding ``directory``; None outside one (or without git)."""
    exe = shutil.which("git")
    if exe is None:
        return None
    try:
        head = subprocess.run([exe, "-C", str(directory), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=False)
        if head.returncode != 0:
            return None
        status = subprocess.run([exe, "-C", str(directory), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": head.stdout.strip(), "dirty": bool(status.stdout.strip()) if status.returncode == 0 else None}


def session_fingerprint(session: Any, ort_version: str | None = None) -> dict[str, Any]:
    """The session's part of a run's fingerprint (every value a plain JSON value).

    ``ort_version``: the running ONNX Runtime's version (:func:`pytest_trt.reference.baseline.onnxruntime_version`),
    passed in by the caller that has imported it.
    """
    s = session.settings
    backend = session.backend
    versions = dict(environment.library_versions())
    device: dict[str, Any] = {}
    # The GPU only where the run computes on one: the backend's engines (Backend.uses_gpu) or a CUDA
    # baseline. An emulate run on a machine that happens to hold a GPU recorded it, and a later run
    # on another machine read as "GPU A -> B" although no figure came from either.
    on_gpu = bool(getattr(backend, "uses_gpu", False)) or str(getattr(s, "baseline_provider", "cpu")) != "cpu"
    try:
        device = dict(backend.device() or {}) if on_gpu else {}
    except Exception:  # a plugin backend's device() is a courtesy here
        device = {}
    if on_gpu and not device.get("gpu"):
        found = environment.gpus()
        if found:
            device = {"gpu": found[0].name, "compute_capability": found[0].compute_capability,
                      "driver": found[0].driver, "cuda": device.get("cuda")}
    git = git_commit(Path(s.rootdir))
    return {
        "backend": backend.name,
        "backend_versions": {str(k): str(v) for k, v in (backend.versions() or {}).items()},
        "tensorrt": versions.get("tensorrt"),
        "tensorrt-rtx": versions.get("tensorrt-rtx"),
        "gpu": device.get("gpu"),
        "compute_capability": device.get("compute_capability"),
        "driver": device.get("driver"),
        "cuda": device.get("cuda"),
        "onnxruntime": ort_version or versions.get("onnxruntime"),
        "onnx": versions.get("onnx"),
        "numpy": versions.get("numpy"),
        "pytest_trt": __version__,
        "precision": "as-is" if s.as_is else s.precision,
        "typing": s.typing,
        "baseline_provider": s.baseline_provider,
        "seed": s.seed,
        "git_commit": (git["commit"][:12] + ("+dirty" if git.get("dirty") else "")) if git else None,
    }


def environment_changes(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[tuple[str, Any, Any]]:
    """``[(field, old, new)]`` of the session fingerprints' differences, in :data:`FIELDS` order."""
    old, new = old or {}, new or {}
    return [(key, old.get(key), new.get(key)) for key in FIELDS if old.get(key) != new.get(key)]


def _plain(value: Any) -> str:
    return "none" if value is None else str(value)


def cause_line(env: Iterable[tuple[str, Any, Any]], checks: Mapping[str, int]) -> str:
    """One line: the environment's changes, then the model, plan, inputs and criterion verdicts.

    ``checks``: how many matched checks changed ``model`` / ``plan`` / ``policy`` / ``inputs`` /
    ``criterion`` (and ``matched``: how many were compared). ``TensorRT 10.13.3 -> 11.4.0; model
    unchanged`` or ``policy changed in 2 of 5 checks (fp16; ... -> bf16; ...); model unchanged``.
    """
    parts = [f"{FIELDS.get(key, key)} {_plain(a)} -> {_plain(b)}" for key, a, b in env
             if key not in ("git_commit",)]
    matched = checks.get("matched", 0)
    for what in ("policy", "plan", "inputs", "criterion"):
        n = checks.get(what, 0)
        if n and not (what == "plan" and checks.get("policy")):  # a policy change changes the plan: say it once
            detail = checks.get(f"{what}_example")
            parts.append(f"{what} changed in {n} of {matched} check(s)" + (f" ({detail})" if detail else ""))
    model = checks.get("model", 0)
    parts.append(f"model changed in {model} of {matched} check(s)" if model else "model unchanged")
    git = next(((a, b) for key, a, b in env if key == "git_commit"), None)
    if git is not None:
        parts.append(f"git commit {_plain(git[0])} -> {_plain(git[1])}")
    return "; ".join(parts)
