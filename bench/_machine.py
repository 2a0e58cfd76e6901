"""The machine line every benchmark prints first: CPUs, memory, library versions, load."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def machine(load: bool = True) -> str:
    """``"2 CPUs (<model>), 24 GiB; python ..., pytest ..., numpy ..., onnx ..., onnxruntime ...; load average ..."``."""
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem = next(ln for ln in Path("/proc/meminfo").read_text().splitlines() if ln.startswith("MemTotal"))
        mem_gib = int(mem.split()[1]) / 2**20
    except (OSError, StopIteration):
        mem_gib = float("nan")
    import numpy as np
    import onnx
    import onnxruntime as ort
    import pytest

    text = (f"{os.cpu_count()} CPUs ({cpu}), {mem_gib:.0f} GiB; python {platform.python_version()}, "
            f"pytest {pytest.__version__}, numpy {np.__version__}, onnx {onnx.__version__}, "
            f"onnxruntime {ort.__version__}")
    return text + (f"; load average {os.getloadavg()[0]:.2f} at start" if load else "")
