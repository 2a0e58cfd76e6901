"""``pytest-trt ... | head``: a reader that closes the pipe early is no internal error (review1 defect 4).

Before: ``pytest-trt plan MODEL --fp16 --json | head -c 100`` printed a ``BrokenPipeError`` traceback and
"internal error (exit 3)", so a CI step under ``set -o pipefail`` failed as if pytest-trt had a bug.
Now the rest of the output is dropped quietly and the exit status is 141 (128 + SIGPIPE, what a
shell reports for a command SIGPIPE killed).
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest

if not hasattr(fcntl, "F_SETPIPE_SZ"):  # pragma: no cover (Linux only)
    pytest.skip("F_SETPIPE_SZ (Linux) sizes the pipe these tests break", allow_module_level=True)

LLAMA = Path(__file__).resolve().parents[1] / "data" / "exports" / "llama_dynamo_opset18.onnx"


def _with_reader(args, read: int):
    """Run the console script with stdout on a one-page pipe whose reader takes ``read`` bytes, then
    closes it. The output (57 kB) does not fit the pipe, so the command is still writing when the
    reader goes: the write breaks, whatever the timing (``head -c 100`` broke it only sometimes)."""
    r, w = os.pipe()
    fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, 4096)
    proc = subprocess.Popen([sys.executable, "-m", "pytest_trt.cli", *args], stdout=w, stderr=subprocess.PIPE)
    os.close(w)
    with os.fdopen(r, "rb") as reader:
        head = reader.read(read) if read else b""
    _, err = proc.communicate(timeout=300)
    return proc.returncode, head, err.decode()


@pytest.mark.parametrize("read", [100, 0])
def test_a_closed_stdout_exits_141_without_a_traceback(read):
    code, head, err = _with_reader(["plan", str(LLAMA), "--fp16", "--json"], read)
    assert code == 141, err
    assert err == "", err  # no traceback, no "internal error", no "Exception ignored ... BrokenPipeError"
    assert len(head) == read and head.startswith(b"{"[:read])


def test_a_pipe_closed_before_anything_was_written_exits_141():
    """The reader is gone before the command starts (a descriptor with no reader: deterministic)."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run([sys.executable, "-m", "pytest_trt.cli", "plan", str(LLAMA), "--fp16"],
                              stdout=write, stderr=subprocess.PIPE, timeout=300)
    finally:
        os.close(write)
    assert proc.returncode == 141, proc.stderr.decode()
    assert proc.stderr == b""


def test_the_exit_status_is_documented_in_the_help():
    proc = subprocess.run([sys.executable, "-m", "pytest_trt.cli", "--help"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0
    assert "141 standard output closed by its reader" in " ".join(proc.stdout.split())
