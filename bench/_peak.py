"""Wall time and peak resident memory of one command, measured in a process of its own.

A child's ``ru_maxrss`` (``os.wait4``) is at least its parent's high-water mark at the moment it
forked: Linux carries the old address space's peak across ``exec``. Measured straight from a test
process that had once held 0.28 GB, ``pytest-trt plan`` read 0.28 GB although it held 58 MB. So the
command is started from a fresh, small interpreter (about 12 MB) that waits for it and writes its
exit status, wall seconds and ``ru_maxrss`` to a file: what that child inherits is the launcher's
peak, not ours. Used by ``bench/big_model.py`` and the ``big_model`` test tier.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

_LAUNCHER = """\
import os, subprocess, sys, time
start = time.perf_counter()
child = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(child.pid, 0)
seconds = time.perf_counter() - start
with open(sys.argv[1], "w") as out:
    out.write(f"{os.waitstatus_to_exitcode(status)} {seconds} {usage.ru_maxrss * 1024}")
"""


@dataclass(frozen=True)
class Measured:
    """One command's exit status (negative: killed by that signal), output, wall seconds and peak RSS."""

    rc: int
    output: str
    seconds: float
    peak_rss: int


def run_measured(cmd: list[str], env: dict | None = None, cwd: Path | None = None) -> Measured:
    """Run ``cmd`` (stdout and stderr together) from a fresh launcher; see the module docstring."""
    with tempfile.TemporaryDirectory(prefix="pytest-trt-peak-") as scratch:
        result = Path(scratch) / "result"
        proc = subprocess.run([sys.executable, "-c", _LAUNCHER, str(result), *cmd], env=env, cwd=cwd,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
        output = proc.stdout.decode(errors="replace")
        if proc.returncode != 0 or not result.exists():
            raise RuntimeError(f"the measuring launcher failed (exit {proc.returncode}): {output[-2000:]}")
        rc, seconds, peak = result.read_text().split()
    return Measured(rc=int(rc), output=output, seconds=float(seconds), peak_rss=int(peak))


if __name__ == "__main__":  # pragma: no cover - a check by hand: python bench/_peak.py CMD...
    m = run_measured(sys.argv[1:])
    print(f"exit {m.rc}, {m.seconds:.2f} s, peak {m.peak_rss / 2**20:.0f} MiB", file=sys.stderr)
