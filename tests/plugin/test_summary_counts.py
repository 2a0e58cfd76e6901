"""The terminal summary's counts of a green run (review1 defect 5).

Before: a green run with a caught negative control printed "precision checks: 1 passed, 0 failed
(1 more by negative controls, as expected: xfail); constrained nodes: 36 fail, ...": the nodes of
the caught control counted as failures, while the check counts (and the JSON's ``*_caught``) set it
apart.
"""

from __future__ import annotations

import pytest
from encoder_suite import ENCODER_PREAMBLE

SUITE = f"""
import pytest
from pytest_trt import PrecisionError

{ENCODER_PREAMBLE}
@pytest.mark.trt(model=ENCODER, precision="fp16", keep_fp32=["*/LayerNorm/*"], dims=DIMS, val_range=NORMAL)
def test_layernorm_stays_fp32(trt):
    trt.assert_precision("*/LayerNorm/*", "fp32")

@pytest.mark.xfail(raises=PrecisionError, strict=True, reason="negative control: LayerNorm lowered")
@pytest.mark.trt(model=ENCODER, precision="fp16", dims=DIMS, val_range=NORMAL)
def test_negative_control(trt):
    trt.assert_precision("*/LayerNorm/*", "fp32")
"""


def test_a_caught_negative_controls_nodes_are_counted_apart(pytester):
    pytester.makepyfile(SUITE)
    result = pytester.runpytest(f"--trt-cache-dir={pytester.path / 'cache'}", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1, xfailed=1)
    line = next(ln for ln in result.outlines if ln.startswith("precision checks:"))
    own, _, controls = line.partition("; in negative controls (caught, as expected): ")
    assert own.startswith("precision checks: 1 passed, 0 failed (1 more by negative controls, as expected: xfail); "
                          "constrained nodes: "), line
    assert "fail" not in own.split("constrained nodes: ")[1], line  # a green run shows no failed node
    assert controls == "36 fail, 8 not_applicable", line


ACCURACY = f"""
import pytest
{ENCODER_PREAMBLE}
@pytest.mark.trt(model=ENCODER, precision="fp16", keep_fp32=["*/LayerNorm/*"], dims=DIMS, val_range=NORMAL)
def test_accuracy(trt):
    trt.check()
"""


def test_the_cache_size_limit_is_enforced_when_the_session_opens_the_cache_and_said(pytester):
    """Review1 defect 7: ``--trt-cache-max-size=1K`` on a run of cache hits evicted nothing and said
    nothing; evictions happened only after a new entry was stored, and only events.jsonl knew."""
    pytester.makepyfile(ACCURACY)
    cache = pytester.path / "cache"
    first = pytester.runpytest(f"--trt-cache-dir={cache}", "-p", "no:cacheprovider")
    first.assert_outcomes(passed=1)
    entries = [p for p in cache.iterdir() if p.is_dir() and not p.name.startswith((".", "locks"))]
    stored = sum(1 for kind in entries for _ in kind.iterdir())
    assert stored >= 2  # an engine (emulation graph) and a baseline at least
    second = pytester.runpytest(f"--trt-cache-dir={cache}", "--trt-cache-max-size=1K", "-p", "no:cacheprovider")
    second.assert_outcomes(passed=1)
    line = next(ln for ln in second.outlines if ln.startswith("cache entries:"))
    assert "0 local hit(s)" in line, line  # the over-size cache was emptied when the session opened it
    evicted = int(line.split("; ")[-1].split(" evicted")[0])
    assert evicted >= stored, line
    assert line.endswith("to stay under 1.0 kB (--trt-cache-max-size)"), line


def test_opening_a_cache_over_its_limit_shrinks_it(tmp_path):
    from pytest_trt.cache import ArtifactCache

    cache = ArtifactCache(tmp_path / "c")
    for i in range(3):
        cache.get_or_build("engine", {"model": f"m{i}"}, lambda d, i=i: (d / "engine.plan").write_bytes(b"x" * 2000))
    limited = ArtifactCache(tmp_path / "c", max_bytes=5000)
    assert limited.stats.evictions == 1 and limited.stats.evicted_bytes > 2000
    assert limited.size_bytes() <= 5000 and len(limited.entries()) == 2
