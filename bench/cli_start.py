"""Start-up of the console script: ``pytest-trt`` against ``polygraphy``, side by side.

Run: ``python bench/cli_start.py [--rounds 9] [--source DIR] [--no-bytecode-run]``

Pairs, each run ``--rounds`` times in turns (ours, theirs, ours, ...), wall time of the whole
process:

* ``pytest-trt --help`` vs ``polygraphy --help``;
* ``pytest-trt compare --help`` vs ``polygraphy run --help``;
* a usage error, ``pytest-trt compare`` without MODEL (exit 2; ours only);
* ``pytest-trt compare MODEL --backend emulate`` on a warm ``--cache-dir`` vs
  ``polygraphy run MODEL --onnxrt --onnxrt`` on the same model with the same input shapes
  and value ranges (BERT-tiny of tests/data: both build two ONNX Runtime sessions, or one
  and a cached FP32 baseline, run them and compare).

Reported: the median of each command and the median of the per-pair ratios ours/theirs.
Two settings: this environment as it is (here ``PYTHONDONTWRITEBYTECODE=1`` and an editable
install: every pytest_trt module is compiled at every start, while Polygraphy and the
libraries were byte-compiled when pip installed them), and with a bytecode cache for
pytest_trt too (``compileall`` into the package's ``__pycache__`` folders; the folders this
script created are removed afterwards). ``--source DIR`` runs the pytest_trt package under
DIR instead (``PYTHONPATH``), e.g. an older checkout for a before/after.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BERT = ROOT / "tests" / "data" / "bert_tiny_opset14.onnx"
INPUTS = ["--input-shapes", "input_ids:[2,8]", "attention_mask:[2,8]",
          "--val-range", "input_ids:[0,100]", "attention_mask:[1,1]"]


def script(name: str) -> list[str]:
    path = Path(sysconfig.get_path("scripts")) / name
    if not path.is_file():
        sys.exit(f"{name} is not installed next to {sys.executable}")
    return [str(path)]


def wall(argv: list[str], env: dict[str, str], expect: int | None = 0) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    took = time.perf_counter() - t0
    if expect is not None and proc.returncode != expect:
        sys.exit(f"{' '.join(argv)}: exit {proc.returncode}, expected {expect}\n{proc.stderr.decode()[-2000:]}")
    return took


def measure(pairs, rounds: int, env: dict[str, str]) -> None:
    for label, ours, theirs, expect in pairs:
        wall(ours, env, expect)  # warm the OS caches (and, for compare, the artifact cache)
        if theirs:
            wall(theirs, env, None)
        mine, other = [], []
        for _ in range(rounds):
            mine.append(wall(ours, env, expect))
            if theirs:
                other.append(wall(theirs, env, None))
        line = f"  {label:<44} ours {statistics.median(mine):6.3f} s"
        if theirs:
            ratio = statistics.median([m / o for m, o in zip(mine, other, strict=True)])
            line += f"   theirs {statistics.median(other):6.3f} s   ours/theirs {ratio:5.2f}x"
        print(line, flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=9, help="runs of each command, in turns (default 9)")
    ap.add_argument("--source", type=Path, default=None, help="run the pytest_trt package under DIR instead")
    ap.add_argument("--no-bytecode-run", action="store_true", help="skip the run with a bytecode cache")
    args = ap.parse_args(argv)

    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    package = ROOT / "pytest_trt"
    if args.source is not None:
        env["PYTHONPATH"] = str(args.source.resolve())
        package = args.source.resolve() / "pytest_trt"
    ours, poly = script("pytest-trt"), script("polygraphy")
    cache = Path(tempfile.mkdtemp(prefix="cli-start-cache-"))
    pairs = [
        ("--help", ours + ["--help"], poly + ["--help"], 0),
        ("compare --help / run --help", ours + ["compare", "--help"], poly + ["run", "--help"], 0),
        ("usage error (compare without MODEL)", ours + ["compare"], None, 2),
        ("compare BERT-tiny, warm cache / run --onnxrt x2",
         ours + ["compare", str(BERT), "--backend", "emulate", "--cache-dir", str(cache), *INPUTS],
         poly + ["run", str(BERT), "--onnxrt", "--onnxrt", *INPUTS], 0),
    ]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; pytest_trt from {package.parent}; "
          f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', 'unset')}; "
          f"median of {args.rounds} runs in turns; load average {os.getloadavg()[0]:.2f}")
    try:
        print("as is:")
        measure(pairs, args.rounds, env)
        if not args.no_bytecode_run:
            before = {p for p in package.rglob("__pycache__")}
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True,
                           env={**env, "PYTHONDONTWRITEBYTECODE": ""})
            try:
                print("with a bytecode cache for pytest_trt:")
                measure(pairs, args.rounds, env)
            finally:
                for made in set(package.rglob("__pycache__")) - before:
                    shutil.rmtree(made)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
