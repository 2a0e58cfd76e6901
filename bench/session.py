"""Cold vs warm session: ``pytest example_suite --trt-fp16`` with a fresh vs a populated cache.

Run: ``python bench/session.py [--rounds 5]``

Every number is the wall time of a subprocess, best of ``--rounds``; the kinds are
interleaved round by round, so they see the same machine load. Rows:

* ``python -c pass``: interpreter start;
* ``import numpy, onnx, onnxruntime``: the libraries any ONNX test pays for;
* ``pytest --collect-only``: pytest + pytest-trt + collecting the example suite (no test runs);
* ``cold``: the example suite on an empty ``--trt-cache-dir`` (every engine and baseline built);
* ``warm``: the same on the cache the cold run filled (every engine and baseline a hit).

Each row is measured twice: with this environment's Python settings as they are, and with a
bytecode cache (``PYTHONPYCACHEPREFIX`` set, ``PYTHONDONTWRITEBYTECODE`` unset; warmed first),
which is what a developer machine or a CI runner normally has. The example suite's outcome
(pass/fail counts) is printed as is: the benchmark times the session, whatever its verdicts.

The builds of the cold run come from the cache's ``events.jsonl``; with them the script
projects what the ratio would be with TensorRT, whose builds take seconds to minutes per
engine instead of milliseconds: ``cold_trt = cold - emulate build time + engines x T_build``
and ``warm_trt = warm + engines x T_load``, for a few assumed ``T_build`` (an estimate, not a
measurement: no TensorRT here).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _machine import machine  # noqa: E402  (bench/ is run as scripts)

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "example_suite"
#: Assumed TensorRT build and engine-load seconds per engine for the projection.
T_BUILDS = (5.0, 30.0, 120.0)
T_LOAD = 0.2


def timed(cmd: list[str], env: dict) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    return seconds, proc.stdout + proc.stderr


def outcome(out: str) -> str:
    lines = [ln for ln in out.splitlines() if re.search(r"\d+ (passed|failed)", ln)]
    return lines[-1].strip("= ") if lines else "?"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="best of N (default 5)")
    args = ap.parse_args(argv)

    print(machine())
    with tempfile.TemporaryDirectory(prefix="pytest-trt-session-") as tmp:
        tmp = Path(tmp)
        base_env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
        envs = {"as is": dict(base_env)}
        bytecode = {k: v for k, v in base_env.items() if k != "PYTHONDONTWRITEBYTECODE"}
        bytecode["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
        envs["bytecode cache"] = bytecode
        py = sys.executable
        pytest_cmd = [py, "-m", "pytest", str(SUITE), "--trt-fp16", "-q", "-p", "no:cacheprovider"]
        warm_cache = tmp / "warm-cache"
        rows = {
            "python -c pass": lambda: [py, "-c", "pass"],
            "import numpy, onnx, onnxruntime": lambda: [py, "-c", "import numpy, onnx, onnxruntime"],
            "pytest --collect-only": lambda: [*pytest_cmd, "--collect-only", "--trt-cache-dir=" + str(tmp / "c0")],
            "cold (empty cache)": lambda: [*pytest_cmd, "--trt-cache-dir=" + str(tmp / "cold")],
            "warm (populated cache)": lambda: [*pytest_cmd, "--trt-cache-dir=" + str(warm_cache)],
        }
        # Populate the warm cache, and the bytecode cache.
        _, out = timed(rows["warm (populated cache)"](), envs["bytecode cache"])
        print(f"example suite outcome: {outcome(out)}")
        events = [json.loads(ln) for ln in (warm_cache / "events.jsonl").read_text().splitlines()]
        builds = [e for e in events if e.get("event") == "build"]
        engines = [e for e in builds if e.get("kind") not in ("baseline",)]
        build_seconds = sum(e.get("seconds", 0.0) for e in builds)
        print(f"cold run builds: {len(engines)} engine(s) (kind {sorted({e['kind'] for e in engines})}), "
              f"{len(builds) - len(engines)} baseline(s); {build_seconds:.2f}s building in total\n")

        # What a warm run spends its test time on (pytest's own per-test durations).
        _, out = timed([*pytest_cmd, "--trt-cache-dir=" + str(warm_cache), "--durations=6", "--durations-min=0"],
                       envs["bytecode cache"])
        slowest = [ln for ln in out.splitlines() if re.match(r"^\d+\.\d+s (call|setup|teardown)", ln)]
        print("slowest test phases of a warm run:\n  " + "\n  ".join(slowest) + "\n")

        best = {(env, row): float("inf") for env in envs for row in rows}
        for _ in range(args.rounds):
            for env_name, env in envs.items():
                for row, cmd in rows.items():
                    if row.startswith("cold"):
                        shutil.rmtree(tmp / "cold", ignore_errors=True)
                    seconds, out = timed(cmd(), env)
                    best[env_name, row] = min(best[env_name, row], seconds)
        print(f"seconds, best of {args.rounds}")
        print(f"{'':<34} {'as is':>8} {'bytecode cache':>15}")
        for row in rows:
            print(f"{row:<34} {best['as is', row]:>8.2f} {best['bytecode cache', row]:>15.2f}")
        for env_name in envs:
            cold, warm = best[env_name, "cold (empty cache)"], best[env_name, "warm (populated cache)"]
            collect = best[env_name, "pytest --collect-only"]
            print(f"\n[{env_name}] cold/warm = {cold / warm:.2f}x (target >= 5x); warm run = "
                  f"{collect:.2f}s start+collect + {warm - collect:.2f}s running the tests; "
                  f"cold - warm = {cold - warm:.2f}s")
            for t_build in T_BUILDS:
                cold_trt = cold - build_seconds + len(engines) * t_build
                warm_trt = warm + len(engines) * T_LOAD
                print(f"  projected with TensorRT builds of {t_build:>5.0f}s/engine (load {T_LOAD}s): cold "
                      f"{cold_trt:7.1f}s, warm {warm_trt:5.1f}s, cold/warm {cold_trt / warm_trt:6.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
