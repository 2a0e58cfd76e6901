"""Multi-gigabyte models: what one ``trt`` test costs next to plain ONNX Runtime, time and peak memory.

Run: ``python bench/big_model.py [--sizes 1.6 2.7] [--scratch DIR] [--source DIR] [--repeat 1]``

For each size (GB of FP32 weights) a decoder-shaped model is generated with
:func:`pytest_trt.model.big_models.write_decoder` (weights as external data, streamed; reused when
already there), then, each in a fresh subprocess whose wall time and peak RSS (``os.wait4``'s
``ru_maxrss`` of that child) are measured:

* ``plain``: a hand-written ONNX Runtime script: ``InferenceSession(path)`` (CPU, default
  options) and one run on random inputs, before and after the others; the faster time (and the
  larger peak) is the yardstick of every budget;
* ``cold``: ``pytest`` on one test, ``@pytest.mark.trt(model=...)`` + ``trt.check()``, with
  ``--trt-fp16`` and an empty ``--trt-cache-dir``: identity, FP32 baseline, FP16 emulation
  build, run, compare;
* ``warm``: the same command again (everything cached; the weight set's digest memo was recorded
  less than 2 s after the set was written, so this run re-reads it once: git's racy-clean rule);
* ``warm2``: once more (the memo now vouches for the unchanged weight set);
* ``policy2``: a second FP16 policy (``keep_fp32=['*/input_layernorm/*']``) on the warm
  cache; ``bytes added`` is what the cache directory grew by;
* ``bf16``: the first BF16 realization (``--trt-bf16``) on that cache;
* ``plan``: ``pytest-trt plan MODEL --fp16`` (the console script).

``--source DIR`` runs another checkout's ``pytest_trt`` (e.g. ``git archive main | tar -x -C
DIR``) for before/after figures in one run. Budgets (issue 29): cold <= 4x plain time and peak
RSS <= 2x the weight bytes; warm <= 1.5x plain time and <= 1.3x the weight bytes; a second
policy adds <= 1% of the weight bytes; the first FP16/BF16 realization adds at most the weights
in that dtype (half the FP32 bytes).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _machine import machine  # noqa: E402
from _peak import run_measured  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pytest_trt.model.big_models import write_decoder  # noqa: E402

#: run pytest (or the CLI) with another checkout's pytest_trt: drop the editable install's finder first
RUNNER = """
import sys
source, what = sys.argv[1], sys.argv[2]
if source:
    sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in (getattr(f, "__module__", "") or "")
                        and "__editable__" not in (getattr(f, "__name__", "") or "")]
    sys.path.insert(0, source)
import pytest_trt
assert not source or pytest_trt.__file__.startswith(source), pytest_trt.__file__
if what == "pytest":
    import pytest
    sys.exit(pytest.main(sys.argv[3:]))
from pytest_trt.cli import main
sys.exit(main(sys.argv[3:]))
"""

PLAIN = """
import sys
import numpy as np
import onnxruntime as ort
session = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
feeds = {i.name: np.random.default_rng(0).uniform(-1, 1, i.shape).astype(np.float32) for i in session.get_inputs()}
outputs = session.run(None, feeds)
print("plain:", [o.shape for o in outputs])
"""

TEST = """
import os
import pytest

KEEP = [p for p in os.environ.get("BIG_KEEP", "").split(",") if p]


@pytest.mark.trt(model=os.environ["BIG_MODEL"], keep_fp32=KEEP)
def test_big(trt):
    trt.check()
"""


def measure(cmd: list[str], env: dict | None = None, cwd: Path | None = None) -> dict:
    """Wall seconds, peak RSS (bytes) and exit code of one subprocess, started from a fresh launcher
    (``_peak.run_measured``: a child forked straight from this process would inherit our own peak)."""
    m = run_measured(cmd, env=env, cwd=cwd)
    text = m.output
    return {"seconds": round(m.seconds, 2), "peak_rss": m.peak_rss, "rc": m.rc,
            "tail": text.strip().splitlines()[-3:] if text.strip() else []}


def _env(**more: str) -> dict:
    """This environment with bytecode caching on: every run (plain ONNX Runtime too) imports compiled modules,
    as a user's second run does (this machine sets ``PYTHONDONTWRITEBYTECODE=1``, which would make every
    pytest run compile pytest, pytest-trt and Hypothesis again: about 1.5 s)."""
    env = dict(os.environ, **more)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def tree_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def scenario(name: str, args: list[str], model: Path, cache: Path, work: Path, source: str, keep: str = "") -> dict:
    env = _env(BIG_MODEL=str(model), BIG_KEEP=keep)
    before = tree_bytes(cache)
    what = "cli" if args and args[0] == "plan" else "pytest"
    if what == "pytest":
        args = [str(work / "test_big.py"), "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                f"--trt-cache-dir={cache}", *args]
    result = measure([sys.executable, "-c", RUNNER, source, what, *args], env=env, cwd=work)
    result["bytes_added"] = tree_bytes(cache) - before
    result["scenario"] = name
    return result


def run_size(gb: float, scratch: Path, source: str, label: str) -> dict:
    model_dir = scratch / f"decoder-{gb:g}GB"
    model = model_dir / "decoder.onnx"
    info_file = model_dir / "info.json"
    if not info_file.exists():
        info = write_decoder(model, target_bytes=int(gb * 1e9))
        info_file.write_text(json.dumps({"weight_bytes": info.weight_bytes, "layers": info.layers,
                                         "parameters": info.parameters, "nodes": info.nodes}))
    info = json.loads(info_file.read_text())
    work = scratch / f"work-{abs(hash(label)) % 10**6}-{gb:g}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "test_big.py").write_text(TEST)
    cache = work / "cache"
    # compile once what every run imports (see _env), then measure
    measure([sys.executable, "-c", RUNNER, source, "pytest", str(work / "test_big.py"), "--co", "-q",
             "-p", "no:cacheprovider"], env=_env(BIG_MODEL=str(model)), cwd=work)
    plain = [measure([sys.executable, "-c", PLAIN, str(model)], env=_env())]
    rows = [scenario("cold", ["--trt-fp16"], model, cache, work, source),
            scenario("warm", ["--trt-fp16"], model, cache, work, source),
            scenario("warm2", ["--trt-fp16"], model, cache, work, source),
            scenario("policy2", ["--trt-fp16"], model, cache, work, source, keep="*/input_layernorm/*"),
            scenario("bf16", ["--trt-bf16"], model, cache, work, source),
            scenario("plan", ["plan", str(model), "--fp16"], model, cache, work, source)]
    plain.append(measure([sys.executable, "-c", PLAIN, str(model)], env=_env()))
    best = min(plain, key=lambda r: r["seconds"])  # the yardstick: the faster of two runs, before and after
    best = dict(best, scenario=f"plain (best of {plain[0]['seconds']:.1f}, {plain[1]['seconds']:.1f} s)",
                peak_rss=max(r["peak_rss"] for r in plain))
    rows.insert(0, best)
    shutil.rmtree(work, ignore_errors=True)
    return {"gb": gb, "label": label, **info, "rows": rows}


def table(result: dict) -> str:
    w = result["weight_bytes"]
    plain = result["rows"][0]
    lines = [f"### {result['gb']:g} GB decoder ({result['layers']} layers, {result['parameters'] / 1e6:.0f}M parameters, "
             f"{w / 1e9:.2f} GB of weights), pytest_trt: {result['label']}", "",
             "| run | exit | time s | x plain | peak RSS GB | x weights | cache bytes added | x weights |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result["rows"]:
        added = r.get("bytes_added")
        lines.append(f"| {r['scenario']} | {r['rc']} | {r['seconds']:.1f} | {r['seconds'] / plain['seconds']:.2f} | "
                     f"{r['peak_rss'] / 1e9:.2f} | {r['peak_rss'] / w:.2f} | "
                     + (f"{added / 1e6:.1f} MB | {added / w:.4f} |" if added is not None else "- | - |"))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1.6, 2.7], help="GB of FP32 weights (default 1.6 2.7)")
    parser.add_argument("--scratch", type=Path, default=Path("/work/scratch/big/bench"),
                        help="where models and caches go (several GB)")
    parser.add_argument("--source", action="append", default=[],
                        help="another checkout's pytest_trt (repeatable; '' = this one); default: this checkout only")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    sources = args.source or [""]
    print(machine())
    results = []
    for gb in args.sizes:
        for source in sources:
            label = source or "this checkout"
            result = run_size(gb, args.scratch, source, label)
            results.append(result)
            print(table(result), flush=True)
            for r in result["rows"]:
                if r["rc"] != 0:
                    print(f"  {r['scenario']} exit {r['rc']}: {' | '.join(r['tail'])}")
            print()
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
