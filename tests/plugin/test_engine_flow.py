"""End-to-end through pytester: build, cache, baseline, compare, failure messages, skips."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from encoder_suite import ENCODER_PREAMBLE

HEADER = f"""
import pytest
{ENCODER_PREAMBLE}"""


def events(cache_dir: Path, kind: str | None = None, event: str | None = None) -> list[dict]:
    path = cache_dir / "events.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [r for r in rows if (kind is None or r.get("kind") == kind) and (event is None or r.get("event") == event)]


@pytest.fixture
def cache_dir(pytester):
    return pytester.path / "engine-cache"


def test_fp16_layernorm_failure_message_says_what_and_where(pytester, cache_dir):
    pytester.makepyfile(HEADER + """
@pytest.mark.trt(model=ENCODER, precision="fp16", dims=DIMS, val_range=NORMAL)
def test_everything_fp16(trt):
    trt.check(trt.feeds(outliers=OUTLIERS), atol=1e-2)
""")
    result = pytester.runpytest("--trt-cache-dir=" + str(cache_dir))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*test_fp16_layernorm_failure_message_says_what_and_where.py:*: AccuracyError",
        "encoder_opset14.onnx: emulate engine [[]fp16[]] differs from the FP32 ONNX Runtime baseline",
        "*backend emulate: CPU precision emulation on ONNX Runtime, not TensorRT*",
        "*inputs: generated with seed 0 (replay with --trt-seed 0)*",
        "*last_hidden_state*",
        "*--trt-locate-on-failure*",
    ])
    out = result.stdout.str()
    assert "mismatch" in out and "worst" in out.lower()
    # our own errors come without pytest-trt's internal frames
    assert "pytest_trt/glue/case.py" not in out


def test_keeping_layernorm_fp32_passes_and_second_run_is_all_cache_hits(pytester, cache_dir):
    pytester.makepyfile(HEADER + """
@pytest.mark.trt(model=ENCODER, precision="fp16", keep_fp32=["*/LayerNorm/*"], dims=DIMS, val_range=NORMAL)
def test_kept(trt):
    trt.check(trt.feeds(outliers=OUTLIERS), atol=1e-2)

@pytest.mark.trt(model=ENCODER, precision="fp32", dims=DIMS, val_range=NORMAL)
def test_fp32_matches_to_rounding(trt):
    result = trt.check(rtol=0, atol=0)
    assert all(o.max_abs == 0.0 for o in result.outputs.values())
""")
    first = pytester.runpytest("--trt-cache-dir=" + str(cache_dir))
    first.assert_outcomes(passed=2)
    first.stdout.fnmatch_lines(["*engines: 2 built*0 reused*"])
    builds_after_first = len(events(cache_dir, event="build"))
    # the cache line counts every kind (engines, baselines, emulation graphs), and says so
    first.stdout.fnmatch_lines([f"cache entries: 0 local hit(s), {builds_after_first} built "
                                f"(engines, baselines, emulation graphs)*"])
    assert len(events(cache_dir, kind="emulate", event="build")) == 2
    assert len(events(cache_dir, kind="baseline", event="build")) == 2

    second = pytester.runpytest("--trt-cache-dir=" + str(cache_dir))
    second.assert_outcomes(passed=2)
    second.stdout.fnmatch_lines(["*engines: 0 built*2 reused*"])
    assert len(events(cache_dir, event="build")) == builds_after_first, "second run built something"
    assert len(events(cache_dir, kind="emulate", event="hit")) == 2
    assert len(events(cache_dir, kind="baseline", event="hit")) == 2
    second.stdout.fnmatch_lines([f"cache entries: {len(events(cache_dir, event='hit'))} local hit(s), 0 built (*"])

    third = pytester.runpytest("--trt-cache-dir=" + str(cache_dir), "--trt-rebuild")
    third.assert_outcomes(passed=2)
    assert len(events(cache_dir, kind="emulate", event="build")) == 4


def test_two_xdist_workers_build_a_shared_engine_once(pytester, cache_dir):
    pytest.importorskip("xdist")
    pytester.makepyfile(HEADER + """
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
@pytest.mark.trt(model=ENCODER, precision="fp16", keep_fp32=["*/LayerNorm/*"], dims=DIMS, val_range=NORMAL)
def test_shared(trt, seed):
    trt.check(trt.feeds(seed=seed), atol=1e-2)
""")
    result = pytester.runpytest_subprocess("-n", "2", "--trt-cache-dir=" + str(cache_dir))
    result.assert_outcomes(passed=4)
    builds = events(cache_dir, kind="emulate", event="build")
    assert len(builds) == 1, builds
    pids = {e["pid"] for e in events(cache_dir, kind="emulate")}
    assert len(pids) == 2, "both workers should have asked for the engine"

    # --trt-rebuild rebuilds each key once per run, not once per worker
    again = pytester.runpytest_subprocess("-n", "2", "--trt-cache-dir=" + str(cache_dir), "--trt-rebuild")
    again.assert_outcomes(passed=4)
    assert len(events(cache_dir, kind="emulate", event="build")) == 2


def test_corrupted_cache_entry_warns_and_rebuilds(pytester, cache_dir):
    pytester.makepyfile(HEADER + """
@pytest.mark.trt(model=ENCODER, precision="fp16", keep_fp32=["*/LayerNorm/*"], dims=DIMS, val_range=NORMAL)
def test_kept(trt):
    trt.check(atol=1e-2)
""")
    pytester.runpytest("--trt-cache-dir=" + str(cache_dir)).assert_outcomes(passed=1)
    [entry] = list((cache_dir / "emulate").iterdir())
    model_file = entry / "emulation.onnx"
    model_file.write_bytes(model_file.read_bytes()[: model_file.stat().st_size // 2])  # truncate

    result = pytester.runpytest("--trt-cache-dir=" + str(cache_dir), "-W", "always")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*CacheWarning*emulation.onnx*"])
    assert len(events(cache_dir, kind="emulate", event="corrupt")) == 1
    assert len(events(cache_dir, kind="emulate", event="build")) == 2


def test_tests_needing_tensorrt_skip_with_the_exact_reason(pytester):
    pytester.makepyfile(HEADER + """
@pytest.mark.trt(model=ENCODER, requires="tensorrt", dims=DIMS, val_range=NORMAL)
def test_on_gpu_only(trt_engine):
    pass
""")
    result = pytester.runpytest("-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*SKIPPED*needs tensorrt: TensorRT not installed*"])


def test_pattern_matching_nothing_is_an_error_naming_it(pytester):
    pytester.makepyfile(HEADER + """
@pytest.mark.trt(model=ENCODER, precision="fp16", keep_fp32=["*/LayerNrom/*"], dims=DIMS, val_range=NORMAL)
def test_typo(trt):
    trt.check()
""")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*PatternError*", "*/LayerNrom/*"])
    assert "LayerNorm" in result.stdout.str()  # the closest node names are suggested


def test_missing_model_file_is_named(pytester):
    pytester.makepyfile("""
import pytest
@pytest.mark.trt(model="models/nope.onnx")
def test_missing(trt):
    trt.check()
""")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*ModelError*", "*ONNX model not found:*models/nope.onnx*"])


def test_marker_beats_command_line_beats_default_for_tolerances(pytester):
    pytester.makepyfile(HEADER + """
@pytest.mark.trt(model=ENCODER, precision="fp16", atol=0.5, dims=DIMS, val_range=NORMAL)
def test_marker_wins(trt):
    rtol, atol = trt.tolerances()
    assert atol == {"last_hidden_state": 0.5}
    assert rtol == {"last_hidden_state": 0.25}   # from --trt-rtol

@pytest.mark.trt(model=ENCODER, precision="fp16", dims=DIMS, val_range=NORMAL)
def test_cli_then_default(trt):
    rtol, atol = trt.tolerances()
    assert rtol == {"last_hidden_state": 0.25}
    assert atol == {"last_hidden_state": 1e-2}   # fp16 default
    rtol, atol = trt.tolerances(atol={"last_hidden_state": 7.0})
    assert atol == {"last_hidden_state": 7.0}
""")
    result = pytester.runpytest("--trt-rtol", "0.25")
    result.assert_outcomes(passed=2)


def test_session_precision_applies_unless_the_marker_pins_one(pytester):
    pytester.makepyfile(HEADER + """
@pytest.mark.trt(model=ENCODER, dims=DIMS, val_range=NORMAL)
def test_follows_session(trt):
    assert trt.plan.low_precision == "bf16"

@pytest.mark.trt(model=ENCODER, precision="fp32", dims=DIMS, val_range=NORMAL)
def test_pinned(trt):
    assert trt.plan.low_precision is None
""")
    pytester.runpytest("--trt-bf16").assert_outcomes(passed=2)


def test_backend_found_unable_to_run_at_load_time_skips_with_its_reason(pytester):
    """TensorRT-RTX builds on a GPU it cannot run on and fails only at deserialization
    (seen on an H200): wherever that surfaces, the test is skipped with the reason."""
    pytester.makepyfile(HEADER + """
from pytest_trt.errors import AccuracyError, UnsupportedGpu

REASON = "TensorRT-RTX does not support compute capability 9.0 (NVIDIA H200)"

@pytest.fixture
def unloadable(monkeypatch, trt):
    def refuse(self, *args, **kwargs):
        raise UnsupportedGpu(REASON)
    monkeypatch.setattr(type(trt.engine), "run", refuse)
    monkeypatch.setattr(type(trt.engine), "layers", refuse)

@pytest.mark.trt(model=ENCODER, precision="fp16", dims=DIMS, val_range=NORMAL)
def test_check(trt, unloadable):
    trt.check()

@pytest.mark.trt(model=ENCODER, precision="fp16", keep_fp32=["*/LayerNorm/*"], dims=DIMS, val_range=NORMAL)
def test_assert_precision(trt, unloadable):
    trt.assert_precision("*/LayerNorm/*", "fp32")

@pytest.mark.xfail(raises=AccuracyError, strict=True)
@pytest.mark.trt(model=ENCODER, precision="fp16", dims=DIMS, val_range=NORMAL)
def test_negative_control(trt, unloadable):
    trt.check(trt.feeds(outliers=OUTLIERS), atol=1e-2)
""")
    result = pytester.runpytest("-rs")
    result.assert_outcomes(skipped=3)
    result.stdout.fnmatch_lines(["*SKIPPED*TensorRT-RTX does not support compute capability 9.0*"])


def test_long_builds_show_progress_with_elapsed_time(pytester):
    # (a fixture's monkeypatch, undone after the test: this inner run shares our process)
    pytester.makeconftest("""
import time
import pytest

@pytest.fixture(autouse=True)
def slow_builds_quick_heartbeat(trt_session, monkeypatch):
    # the session's own backend class (pytester's sys.modules snapshot can leave a freshly
    # imported pytest_trt.backends.emulate beside the one whose instance the session holds)
    EmulateBackend = type(trt_session.backend)
    build = EmulateBackend.build

    def slow_build(self, *args, **kwargs):   # stands in for a TensorRT build of minutes
        time.sleep(1.3)
        return build(self, *args, **kwargs)

    monkeypatch.setattr(EmulateBackend, "build", slow_build)
    monkeypatch.setattr(trt_session, "heartbeat_seconds", 0.5)
""")
    pytester.makepyfile(HEADER + """
@pytest.mark.trt(model=ENCODER, precision="fp16", keep_fp32=["*/LayerNorm/*"], dims=DIMS, val_range=NORMAL)
def test_kept(trt):
    trt.check(atol=1e-2)
""")
    result = pytester.runpytest("-p", "no:cacheprovider", "-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        "*pytest-trt: still building encoder_opset14.onnx [[]fp16; fp32: */LayerNorm/*[]] on emulate (*s elapsed)*",
        "*pytest-trt: engine encoder_opset14.onnx [[]fp16; fp32: */LayerNorm/*[]] on emulate: built in *s*",
    ])
