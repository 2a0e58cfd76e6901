"""What the reports cost on a model owner's suite: `--trt-html`, `--trt-report`, `--junitxml`.

Runs ``pytest bench/model_owner_suite`` (26 tests over BERT, GPT-2 and ViT exports from
tests/data and the example encoder: FP32/FP16/BF16 with LayerNorm kept FP32, precision
assertions, seeds, three strict negative controls, one failing Hypothesis property of 10
examples) on a warm cache, interleaved, best of ``--rounds``:

* ``plain``: no report;
* ``json``: ``--trt-report``;
* ``html``: ``--trt-html``;
* ``all``: ``--trt-report --trt-html --junitxml``.

Prints each variant's best wall time, its ratio to ``plain`` (issue 19's target: ``html``
at most 1.20x) and the report sizes. ``--source DIR`` runs another checkout's ``pytest_trt``
package instead of the installed one (e.g. ``git archive <commit> pytest_trt | tar -x -C DIR``)
to measure before/after.

    python bench/report_overhead.py [--rounds 5] [--source DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _machine import machine  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SUITE = REPO / "bench" / "model_owner_suite"

#: run pytest with another checkout's pytest_trt: drop the editable install's finder first
RUNNER = """
import sys
source = sys.argv[1]
if source:
    sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in (getattr(f, "__module__", "") or "")
                        and "__editable__" not in (getattr(f, "__name__", "") or "")]
    sys.path.insert(0, source)
import pytest
import pytest_trt
assert not source or pytest_trt.__file__.startswith(source), pytest_trt.__file__
sys.exit(pytest.main(sys.argv[2:]))
"""

VARIANTS = {
    "plain": [],
    "json": ["--trt-report={out}/report.json"],
    "html": ["--trt-html={out}/report.html"],
    "all": ["--trt-report={out}/report.json", "--trt-html={out}/report.html", "--junitxml", "{out}/junit.xml"],
}


def run(variant: str, cache: Path, out: Path, source: str) -> tuple[float, int]:
    args = [a.format(out=out) for a in VARIANTS[variant]]
    cmd = [sys.executable, "-c", RUNNER, source, str(SUITE), "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
           f"--trt-cache-dir={cache}", *args]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    seconds = time.perf_counter() - start
    if proc.returncode not in (0, 1):  # 1: the failing property (and nothing else) is expected
        sys.exit(f"{variant}: pytest exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return seconds, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--source", default="", help="directory holding another checkout's pytest_trt package")
    args = parser.parse_args()
    print(machine())
    print(f"suite {SUITE.relative_to(REPO)}; pytest_trt from {args.source or 'the installed package'}")
    work = Path(tempfile.mkdtemp(prefix="report-overhead-"))
    try:
        cache = work / "cache"
        run("plain", cache, work, args.source)  # warm the cache: engines and baselines
        best: dict[str, float] = {}
        for r in range(args.rounds):
            for variant in VARIANTS:
                out = work / f"{variant}-{r}"
                out.mkdir()
                seconds, rc = run(variant, cache, out, args.source)
                best[variant] = min(best.get(variant, float("inf")), seconds)
        sizes = {}
        for name in ("report.json", "report.html", "junit.xml"):
            found = sorted(work.glob(f"all-*/{name}"))
            if found:
                sizes[name] = found[-1].stat().st_size
        print(f"best of {args.rounds} (s), exit {rc}:")
        for variant, seconds in best.items():
            print(f"  {variant:<6} {seconds:7.2f}  {seconds / best['plain']:.2f}x plain")
        print("sizes: " + ", ".join(f"{k} {v / 1e3:,.1f} kB" for k, v in sizes.items()))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
