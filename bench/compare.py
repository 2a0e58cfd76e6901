"""Benchmark of pytest_trt.compare's passing path against numpy's comparisons.

Run: ``python bench/compare.py [--sizes 1e6 1e7 5e7 1e8] [--repeat 9] [--cpu-time] [--source DIR]``

``--source DIR`` measures the pytest_trt package under DIR (e.g. an older checkout from
``git archive``) instead of this one, for a before/after.

For each size n, on the same two float32 arrays (expected ~ N(0, 1), actual = expected *
(1 + 1e-4 * noise), which passes the fp16 defaults ``default_tolerances("fp16")`` and the
fp16 cosine floor):

* floor: reading both arrays once (``np.add.reduce`` over each), the least any
  comparison must cost;
* ours: ``compare_outputs(actual, expected, precision="fp16")`` (the passing path with the
  precision's defaults: the element rule and the cosine floor, its sums and the SNR's);
* elem: ``compare_outputs(actual, expected, rtol=rtol, atol=atol)`` (fp32: no floor, the
  element rule alone);
* assert_allclose: ``numpy.testing.assert_allclose(actual, expected, rtol, atol)``;
* np.allclose: ``np.allclose(actual, expected, rtol, atol)``.

Times are the best of N runs of ``time.perf_counter`` (floor, ours and elem in turns, so
that they see the same load on a shared machine). Nothing here sets thread counts:
numpy's element-wise ufuncs are single-threaded, and ``compare_outputs`` holds numpy's BLAS
to one thread itself while its dot products run, so the numbers are what a plain process
gets. ``--cpu-time`` is steadier on a loaded machine. (numpy's checks use ``|a-e| <= atol + rtol*|e|``, ours Polygraphy's "fails iff
> atol and > rtol*|e|"; on this data all of them pass, and all read every element.)
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

_source = sys.argv[sys.argv.index("--source") + 1] if "--source" in sys.argv[:-1] else None
sys.path.insert(0, str(Path(_source).resolve() if _source else Path(__file__).resolve().parent.parent))

from pytest_trt.compare import compare_outputs, default_tolerances  # noqa: E402

CLOCK = time.perf_counter


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = CLOCK()
        fn()
        times.append(CLOCK() - t0)
    return min(times)


def best_of_interleaved(fns, repeat: int) -> list[float]:
    """Best of N for each function, run in turns: on a shared machine both see the same load."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = CLOCK()
            fn()
            best[i] = min(best[i], CLOCK() - t0)
    return best


def _loadavg() -> list[str]:
    try:
        return Path("/proc/loadavg").read_text().split()[:3]
    except OSError:
        return ["n/a"]


def make_arrays(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    expected = rng.standard_normal(n, dtype=np.float32)
    actual = rng.standard_normal(n, dtype=np.float32)  # noise, turned into actual in place
    actual *= np.float32(1e-4)
    actual += np.float32(1.0)
    actual *= expected
    return actual, expected


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", nargs="+", type=float, default=[1e6, 1e7, 5e7, 1e8],
                    help="element counts (default: 1e6 1e7 5e7 1e8)")
    ap.add_argument("--repeat", type=int, default=9,
                    help="best of N for floor and ours (default 9; numpy's checks: 3, 2 from 5e7 on)")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time with time.process_time (CPU time of this process) instead of "
                         "time.perf_counter: steadier when other processes share the CPUs")
    ap.add_argument("--source", metavar="DIR", help="measure the pytest_trt package under DIR")
    args = ap.parse_args(argv)
    global CLOCK
    CLOCK = time.process_time if args.cpu_time else time.perf_counter

    rtol, atol = default_tolerances("fp16")
    threads = {k: os.environ[k] for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
               if k in os.environ}
    import pytest_trt

    print(f"numpy {np.__version__}, python {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"thread env: {threads or 'unset'}; pytest_trt from {Path(pytest_trt.__file__).parent.parent}")
    print(f"float32, rtol={rtol:g} atol={atol:g}; best of N with time.{CLOCK.__name__}; ms; "
          f"load average {' '.join(_loadavg())}\n")
    header = (f"{'n':>8} {'floor':>9} {'ours':>9} {'elem':>9} {'allclose':>9} {'assert_ac':>10} "
              f"{'ours/floor':>11} {'elem/floor':>11} {'assert_ac/ours':>15} {'allclose/ours':>14}")
    print(header)
    print("-" * len(header))
    t_start = time.perf_counter()
    for size in args.sizes:
        n = int(size)
        actual, expected = make_arrays(n)
        rep = args.repeat
        slow_rep = 2 if n >= 5e7 else 3  # numpy's checks take seconds at these sizes

        res = compare_outputs(actual, expected, precision="fp16")
        assert res.passed and res.outputs["output"].cosine is not None, res.message()  # the floor was checked
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)

        a, e = actual, expected
        floor, ours, elem = best_of_interleaved(
            [lambda a=a, e=e: (np.add.reduce(a), np.add.reduce(e)),
             lambda a=a, e=e: compare_outputs(a, e, precision="fp16"),
             lambda a=a, e=e: compare_outputs(a, e, rtol=rtol, atol=atol)], rep)
        allc = best_of(lambda a=a, e=e: np.allclose(a, e, rtol=rtol, atol=atol), slow_rep)
        aac = best_of(lambda a=a, e=e: np.testing.assert_allclose(a, e, rtol=rtol, atol=atol), slow_rep)
        del a, e
        print(f"{size:>8.0e} {floor * 1e3:>9.1f} {ours * 1e3:>9.1f} {elem * 1e3:>9.1f} {allc * 1e3:>9.1f} "
              f"{aac * 1e3:>10.1f} {ours / floor:>10.2f}x {elem / floor:>10.2f}x {aac / ours:>14.1f}x "
              f"{allc / ours:>13.1f}x", flush=True)
        del actual, expected
    print(f"\ntotal {time.perf_counter() - t_start:.0f} s; load average {' '.join(_loadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
