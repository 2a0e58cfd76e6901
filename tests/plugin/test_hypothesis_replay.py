"""Issue 7: a Hypothesis property test finds a planted FP16 failure, shrinks it, and the
saved .npz replays the failure through `pytest-trt compare --load-inputs`."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

import numpy as np
import onnx

from pytest_trt.model import testing_models as tm

TEST_FILE = """
import pytest
from hypothesis import HealthCheck, given, settings
from pytest_trt import strategies

MODEL = {model!r}
OUTLIERS = {{"hidden_states": {{"count": (0, 2), "magnitude": (10.0, 1000.0)}}}}

@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(feeds=strategies.feeds(MODEL, outliers=OUTLIERS))
@pytest.mark.trt(model=MODEL, precision="fp16")   # planted: the LayerNorm is left in FP16
def test_fp16_layernorm_for_all_inputs(trt, feeds):
    trt.check(feeds, atol=1e-2)
"""


def test_property_test_finds_shrinks_saves_and_replays(pytester):
    model_path = pytester.path / "layernorm.onnx"
    onnx.save(tm.decomposed_layernorm_block(hidden=64, seq=8), model_path)
    pytester.makepyfile(test_planted_property=TEST_FILE.format(model=str(model_path)))

    result = pytester.runpytest("--trt-cache-dir=" + str(pytester.path / "cache"))
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "Falsifying example" in out or "Failing test case" in out  # Hypothesis reports the shrunk example
    result.stdout.fnmatch_lines(["*inputs: given by the test, saved to *.npz", "*replay: pytest-trt compare *"])

    [saved] = list((pytester.path / "trt-artifacts").glob("*.npz"))
    script = saved.with_suffix(".sh")
    command = script.read_text().strip().splitlines()[-1]
    assert "--fp16" in command and "--load-inputs" in command and "--backend emulate" in command

    # Shrunk: the minimal failing example has one outlier just past the FP16 overflow of Pow
    # (|x - mean| > 255.9), everything else Hypothesis's simplest value.
    with np.load(saved) as data:
        x = data["hidden_states"]
    big = np.abs(x) > 100
    assert big.sum() == 1, f"expected one outlier after shrinking, got {big.sum()}"
    assert 255 < np.abs(x[big]).max() < 1000

    # The saved example replays the failure outside pytest (exit 1 = accuracy failure) ...
    argv = shlex.split(command)
    assert argv[0] == "pytest-trt"
    cli = [sys.executable, "-m", "pytest_trt.cli", *argv[1:], "--cache-dir", str(pytester.path / "cache")]
    replay = subprocess.run(cli, capture_output=True, text=True, cwd=pytester.path)
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert "last_hidden_state" in replay.stdout or "output" in replay.stdout
    # ... and passes once the LayerNorm is kept FP32 (exit 0).
    fixed = subprocess.run([*cli, "--keep-fp32", "*/LayerNorm/*"], capture_output=True, text=True, cwd=pytester.path)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr


#: a test whose own feeds fail (atol=rtol=0 in FP16), so the plugin saves them with a replay script
OWN_FEEDS_TEST = """
import numpy as np
import pytest

@pytest.mark.trt(model={model!r}, precision="fp16")
def test_own_feeds(trt):
    x = np.linspace(-3, 3, 8 * 64, dtype=np.float32).reshape(1, 8, 64)
    trt.check({{"hidden_states": x}}, atol=0.0, rtol=0.0)
"""


def test_replay_script_comment_escapes_a_newline_in_the_test_file_name(pytester):
    """Audit F11: the ``.sh`` replay script wrote the raw node id in a ``#`` comment; a test file
    named ``test_nl<newline>touch PWNED<newline>#.py`` put ``touch PWNED`` on a line of its own,
    which ran on replay. The node id is written escaped, on one line."""
    model_path = pytester.path / "layernorm.onnx"
    onnx.save(tm.decomposed_layernorm_block(hidden=64, seq=8), model_path)
    name = "test_nl\ntouch PWNED_file\n#.py"
    (pytester.path / name).write_text(OWN_FEEDS_TEST.format(model=str(model_path)))
    result = pytester.runpytest(name, "--trt-cache-dir=" + str(pytester.path / "cache"), "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    [script] = list((pytester.path / "trt-artifacts").glob("*.sh"))
    lines = script.read_text().splitlines()
    assert lines[0] == "#!/bin/sh"
    assert all(line.startswith("#") for line in lines[:-1]), lines  # only the command is not a comment
    assert lines[-1].startswith("pytest-trt compare ")
    assert "'test_nl\\ntouch PWNED_file\\n#.py::test_own_feeds'" in lines[1]
    # run with a pytest-trt that only prints its arguments: nothing else runs
    fake = pytester.path / "fakebin"
    fake.mkdir()
    (fake / "pytest-trt").write_text("#!/bin/sh\nexit 0\n")
    (fake / "pytest-trt").chmod(0o755)
    ran = subprocess.run(["sh", str(script)], capture_output=True, text=True, cwd=pytester.path,
                         env={"PATH": f"{fake}:/usr/bin:/bin"})
    assert ran.returncode == 0, ran.stderr
    assert not list(pytester.path.rglob("PWNED*"))


def test_save_falsifying_example_escapes_the_inputs_comment(tmp_path):
    """The same for ``save_falsifying_example``'s ``# Inputs:`` line (a path is the caller's)."""
    from pytest_trt.strategies import save_falsifying_example

    saved = save_falsifying_example({"x": np.zeros(2, np.float32)}, tmp_path / "ex\ntouch PWNED\n#",
                                    command="pytest-trt compare m.onnx --load-inputs {path}")
    text = saved.command_path.read_text()
    assert text.endswith("\n" + saved.command + "\n")  # the command quotes the path: its newlines are safe
    comments = text[: -len(saved.command) - 1].splitlines()
    assert all(line.startswith("#") for line in comments), comments
    assert "# Inputs: 'ex\\ntouch PWNED\\n#.npz'" in comments
    fake = tmp_path / "fakebin"
    fake.mkdir()
    (fake / "pytest-trt").write_text("#!/bin/sh\nexit 0\n")
    (fake / "pytest-trt").chmod(0o755)
    ran = subprocess.run(["sh", str(saved.command_path)], capture_output=True, text=True, cwd=tmp_path,
                         env={"PATH": f"{fake}:/usr/bin:/bin"})
    assert ran.returncode == 0, ran.stderr
    assert not list(tmp_path.rglob("PWNED*"))


#: a property whose failure is only its criterion: a per-output tolerance (the marker's, on "a") and a
#: cosine floor (trt.check()'s), both tighter than the FP16 defaults, under which every example passes
CRITERION_TEST = """
import pytest
from hypothesis import HealthCheck, given, settings
from pytest_trt import strategies

MODEL = {model!r}

@settings(max_examples=20, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(feeds=strategies.feeds(MODEL))
@pytest.mark.trt(model=MODEL, precision="fp16", atol={{"a": 1e-6}}, rtol={{"a": 1e-6}})
def test_two_outputs_under_a_tight_criterion(trt, feeds):
    trt.check(feeds, min_cosine=0.99999999)
"""


def _two_outputs(path):
    from onnx import TensorProto, helper

    rng = np.random.default_rng(0)
    weights = [(f"w{k}", (rng.standard_normal((64, 64)) / 8).astype(np.float32)) for k in (1, 2)]
    onnx.save(tm.graph_model([helper.make_node("MatMul", ["x", "w1"], ["a"], name="/a/MatMul"),
                              helper.make_node("MatMul", ["x", "w2"], ["b"], name="/b/MatMul")],
                             [("x", TensorProto.FLOAT, [1, 8, 64])],
                             [("a", TensorProto.FLOAT, [1, 8, 64]), ("b", TensorProto.FLOAT, [1, 8, 64])], weights),
              path)


def test_a_replayed_example_is_judged_by_the_tests_whole_criterion(pytester):
    """The replay command written beside a failing example carries the test's criterion (per-output
    tolerances and the metric floors, with their sources) in ``<stem>.criterion.json``. Before, it
    carried ``--atol``/``--rtol`` only when every output had the same, and never a floor: this
    example, failing only its per-output tolerance and its cosine floor, replayed as a pass (exit 0)."""
    model_path = pytester.path / "two_outputs.onnx"
    _two_outputs(model_path)
    pytester.makepyfile(test_criterion_property=CRITERION_TEST.format(model=str(model_path)))
    cache = str(pytester.path / "cache")
    result = pytester.runpytest("--trt-cache-dir=" + cache)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*replay: pytest-trt compare * --criterion *.criterion.json *"])

    [saved] = list((pytester.path / "trt-artifacts").glob("*.npz"))
    criterion = json.loads(saved.with_suffix(".criterion.json").read_text())
    a, b = criterion["outputs"]["a"], criterion["outputs"]["b"]
    assert a["atol"] == {"value": 1e-6, "level": "marker", "source": "marker"}
    assert b["atol"] == {"value": 0.01, "level": "default", "source": "fp16 default"}
    assert a["min_cosine"] == b["min_cosine"] == {"value": 0.99999999, "level": "argument", "source": "trt.check()"}

    command = saved.with_suffix(".sh").read_text().strip().splitlines()[-1]
    cli = [sys.executable, "-m", "pytest_trt.cli", *shlex.split(command)[1:], "--cache-dir", cache]
    replay = subprocess.run(cli, capture_output=True, text=True, cwd=pytester.path)
    assert replay.returncode == 1, replay.stdout + replay.stderr
    # each value says where it came from; the floor is written as given (not rounded to 1)
    assert "min_cosine=0.99999999 (trt.check(), from " in replay.stdout
    assert "atol per output: 'a' 1e-06 (marker, from " in replay.stdout
    assert replay.stdout.count("< min_cosine 0.99999999") == 2
    # the same inputs under the FP16 defaults pass: the criterion alone makes them fail
    at_defaults = [c for c in cli if c not in ("--criterion", str(saved.with_suffix(".criterion.json")))]
    assert subprocess.run(at_defaults, capture_output=True, text=True, cwd=pytester.path).returncode == 0
