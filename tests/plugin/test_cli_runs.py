"""``pytest-trt runs list|show|diff|recheck|prune`` (issue 31) on runs real sessions saved.

Exit codes like the rest of the console script: 0, 1 (``diff --fail`` regression, a failing
re-check), 2 (usage: a missing or damaged run, the wrong model). A few are checked on the real
console script in a subprocess; the rest in-process through ``pytest_trt.cli.main``. ``recheck``
judges a run's saved outputs again from another cache directory and agrees with the verdicts the
session recorded, a failing one included.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from encoder_suite import ENCODER, ENCODER_PREAMBLE

from pytest_trt.backends.emulate import DISCLAIMER as EMULATE_DISCLAIMER
from pytest_trt.cli import main
from pytest_trt.history.store import PREFIX

SUITE = f"""
import pytest
{ENCODER_PREAMBLE}
KEEP = ["*/LayerNorm/*", "op:Softmax"]

@pytest.mark.trt(model=ENCODER, keep_fp32=KEEP, dims=DIMS, val_range=NORMAL, atol={{"fp16": 1e-2, "bf16": 5e-2}})
def test_kept(trt):
    trt.check(trt.feeds(outliers=OUTLIERS))

@pytest.mark.trt(model=ENCODER, precision="fp16", dims=DIMS, val_range=NORMAL)
def test_all_fp16_fails(trt):
    trt.check(trt.feeds(outliers=OUTLIERS), atol=1e-2)
"""


@pytest.fixture(scope="module")
def _sessions(tmp_path_factory) -> Path:
    """Two sessions of the suite, once per module: ``fp16`` (saved with outputs) and ``bf16``."""
    root = tmp_path_factory.mktemp("runs-project")
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "test_suite.py").write_text(SUITE)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_XDIST_", "PYTEST_TRT_", "PYTEST_ADDOPTS"))}
    common = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"--trt-cache-dir={root / 'cache'}",
              "--trt-storage=runs"]
    for args in (["--trt-fp16", "--trt-save=fp16", "--trt-save-outputs"], ["--trt-bf16", "--trt-save=bf16"]):
        proc = subprocess.run([*common, *args], cwd=root, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 1, proc.stdout + proc.stderr  # test_all_fp16_fails fails
    return root / "runs"


@pytest.fixture
def saved(_sessions, tmp_path) -> Path:
    """A copy of the two saved runs (tests may prune or damage it); the storage's path."""
    copy = tmp_path / "runs"
    shutil.copytree(_sessions, copy)
    return copy


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path, monkeypatch):
    """The console script's defaults (the cache, the run storage) follow the current directory: a command
    here without --cache-dir would fill the checkout's .trt-cache (tests/conftest.py fails the session)."""
    monkeypatch.chdir(tmp_path)


def cli(capsys, *args) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_list_and_show(saved, capsys):
    code, out, _ = cli(capsys, "runs", "list", f"--storage={saved}")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"saved runs in {saved}: 2"
    assert lines[1].split()[0] == "1" and lines[1].endswith("emulate fp16  2 test(s), 2 output(s) +outputs")
    # every report shows the disclaimer of a backend that is not TensorRT: the one the run recorded
    assert lines[2] == "      (backend emulate: CPU precision emulation on ONNX Runtime, not TensorRT)"
    assert "exit 1" in lines[1] and lines[3].split()[1].endswith("-bf16")
    code, out, _ = cli(capsys, "runs", "show", "fp16", f"--storage={saved}")
    assert code == 0 and "  backend: emulate" in out and "  precision: fp16" in out
    assert "  (backend emulate: CPU precision emulation on ONNX Runtime, not TensorRT)" in out
    assert "FAIL test_suite.py::test_all_fp16_fails[last_hidden_state]" in out
    # each output's criterion as the run recorded it, every value with where it came from
    assert "[fp16: rtol=0.02, min_cosine=0.9999 (fp16 default); atol=0.01 (marker)]" in out, out
    assert "[fp16: rtol=0.02, min_cosine=0.9999 (fp16 default); atol=0.01 (trt.check())]" in out, out
    code, out, _ = cli(capsys, "runs", "list", f"--storage={saved}", "--json")
    data = json.loads(out)
    assert [r["name"] for r in data["runs"]] == ["fp16", "bf16"] and data["runs"][0]["summary"]["saved_outputs"]
    assert [r["backend_disclaimer"] for r in data["runs"]] == [EMULATE_DISCLAIMER] * 2
    code, out, _ = cli(capsys, "runs", "show", "bf16", f"--storage={saved}", "--json")
    assert json.loads(out)["backend_disclaimer"] == EMULATE_DISCLAIMER


def _forget_disclaimer(storage: Path, name: str, backend: str) -> None:
    """Make a run recorded as an older pytest-trt (or another tool) would: only the backend's name."""
    [run_dir] = list(storage.glob(f"{PREFIX}/*-{name}"))
    manifest = json.loads((run_dir / "manifest.json").read_text())
    summary = manifest["payload"]["summary"]
    summary.pop("backend_disclaimer")
    summary["backend"] = backend
    (run_dir / "manifest.json").write_text(json.dumps(manifest))

    def edit(run):
        run["report"]["session"].pop("backend_disclaimer")
        run["report"]["session"]["backend"] = backend

    _rewrite_run(storage, name, edit)


def test_a_run_that_recorded_only_its_backends_name_gets_the_registrys_disclaimer_or_unknown(saved, capsys):
    _forget_disclaimer(saved, "fp16", "emulate")
    _forget_disclaimer(saved, "bf16", "emu2")  # a plugin backend of the run that saved it, unknown here
    code, out, _ = cli(capsys, "runs", "list", f"--storage={saved}", "--json")
    data = json.loads(out)
    unknown = "backend emu2 is unknown here: whether its results are TensorRT's cannot be told"
    assert [r["backend_disclaimer"] for r in data["runs"]] == [EMULATE_DISCLAIMER, unknown]
    code, out, _ = cli(capsys, "runs", "show", "bf16", f"--storage={saved}")
    assert code == 0 and f"  (backend emu2: {unknown})" in out
    code, out, _ = cli(capsys, "runs", "show", "fp16", f"--storage={saved}")
    assert code == 0 and f"  (backend emulate: {EMULATE_DISCLAIMER})" in out


def test_diff_gates_in_both_directions(saved, capsys):
    code, out, _ = cli(capsys, "runs", "diff", "fp16", "bf16", f"--storage={saved}", "--fail", "max_abs:+25%")
    assert code == 1
    assert "drift gate FAILED" in out and "test_suite.py::test_kept[last_hidden_state] max_abs" in out
    assert "cause: default precision fp16 -> bf16" in out
    code, out, _ = cli(capsys, "runs", "diff", "bf16", "fp16", f"--storage={saved}", "--fail", "max_abs:+25%")
    assert code == 0 and "improved" in out
    code, out, _ = cli(capsys, "runs", "diff", "1", "2", f"--storage={saved}", "--json")  # no gate: never fails
    assert code == 0 and json.loads(out)["gate"] == []


def test_diff_fail_that_compared_no_output_fails(saved, capsys):
    def rename(run):  # the second run's tests live in another file now
        for test in run["report"]["tests"]:
            test["nodeid"] = test["nodeid"].replace("test_suite.py", "test_renamed.py")

    _rewrite_run(saved, "bf16", rename)
    code, out, _ = cli(capsys, "runs", "diff", "fp16", "bf16", f"--storage={saved}", "--fail", "max_abs:+25%")
    assert code == 1
    assert "0 output(s) compared; 2 of the stored run's output(s) NOT in this run" in out
    assert ("drift gate FAILED against run" in out and "no output compared (--fail=max_abs:+25%): 2 output(s) only "
            "in this run, 2 only in the stored run" in out and "save a new baseline with pytest --trt-save NAME" in out)
    code, _, _ = cli(capsys, "runs", "diff", "fp16", "bf16", f"--storage={saved}")  # no gate: shown, never failed
    assert code == 0


def test_recheck_from_another_cache_directory_agrees_with_the_recorded_verdicts(saved, capsys, tmp_path):
    code, out, _ = cli(capsys, "runs", "recheck", "fp16", f"--storage={saved}", "--model", str(ENCODER),
                       f"--cache-dir={tmp_path / 'elsewhere'}", "--json")
    result = json.loads(out)
    verdicts = {c["nodeid"].split("::")[1]: (c["passed"], c["recorded_passed"]) for c in result["checks"]}
    assert verdicts == {"test_kept": (True, True), "test_all_fp16_fails": (False, False)}
    # every verdict agrees with the recorded one (the failing check fails again, as recorded): exit 0
    assert result["agrees"] and code == 0
    assert (tmp_path / "elsewhere").is_dir()  # the baselines were computed here, in this cache
    # a model that is not the one the run tested: a usage error naming the recorded model
    other = Path(__file__).resolve().parents[2] / "example_suite" / "models" / "convnet.onnx"
    code, _, err = cli(capsys, "runs", "recheck", "fp16", f"--storage={saved}", "--model", str(other))
    assert code == 2 and "is not the model of any check saved in run" in err and "encoder_opset14.onnx" in err
    code, _, err = cli(capsys, "runs", "recheck", "bf16", f"--storage={saved}", "--model", str(ENCODER))
    assert code == 2 and "saved without --trt-save-outputs" in err


def _rewrite_run(storage: Path, name: str, edit) -> None:
    """Edit a directory run's run.json and its (unsigned) manifest's record of it, as a real change would."""
    import hashlib

    [run_dir] = list(storage.glob(f"{PREFIX}/*-{name}"))
    run = json.loads((run_dir / "run.json").read_text())
    edit(run)
    body = json.dumps(run).encode()
    (run_dir / "run.json").write_bytes(body)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["payload"]["files"]["run.json"] = {"sha256": hashlib.sha256(body).hexdigest(), "size": len(body)}
    (run_dir / "manifest.json").write_text(json.dumps(manifest))


def test_recheck_exits_1_only_when_a_verdict_disagrees(saved, capsys):
    def flip(run):  # the run now says test_kept failed: re-judged, it passes
        for test in run["report"]["tests"]:
            if test["nodeid"].endswith("test_kept"):
                for check in test["accuracy"]:
                    check["passed"] = False
                    for out in check["outputs"]:
                        out["passed"] = False

    _rewrite_run(saved, "fp16", flip)
    code, out, _ = cli(capsys, "runs", "recheck", "fp16", f"--storage={saved}", "--model", str(ENCODER))
    assert code == 1 and "DISAGREES: recorded failed" in out and "some verdicts DISAGREE" in out


def test_recheck_refuses_saved_outputs_that_were_tampered_with(saved, capsys):
    [npz] = list(saved.glob(f"{PREFIX}/*-fp16/outputs/*.npz"))[:1] or [None]
    assert npz is not None
    data = bytearray(npz.read_bytes())
    data[-100] ^= 1
    npz.write_bytes(bytes(data))
    code, _, err = cli(capsys, "runs", "recheck", "fp16", f"--storage={saved}", "--model", str(ENCODER))
    assert code == 2 and "is damaged" in err and "outputs/" in err


def test_prune(saved, capsys):
    code, out, _ = cli(capsys, "runs", "prune", f"--storage={saved}", "--keep", "1", "--dry-run")
    assert code == 0 and out.startswith("would delete 1 run(s)") and len(list((saved / PREFIX).iterdir())) == 2
    code, out, _ = cli(capsys, "runs", "prune", f"--storage={saved}", "--keep", "1")
    assert code == 0 and [p.name.rsplit("-", 1)[1] for p in (saved / PREFIX).iterdir()] == ["bf16"]
    code, _, err = cli(capsys, "runs", "prune", f"--storage={saved}")
    assert code == 2 and "say what to delete" in err
    code, _, err = cli(capsys, "runs", "prune", f"--storage={saved}", "--older-than", "soon")
    assert code == 2 and "--older-than 'soon'" in err


def _console(*args, cwd) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_TRT")}
    return subprocess.run([sys.executable, "-m", "pytest_trt.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_exit_codes_of_the_console_script(saved):
    assert _console("runs", "list", f"--storage={saved}", cwd=saved.parent).returncode == 0
    gate = _console("runs", "diff", "fp16", "bf16", f"--storage={saved}", "--fail", "max_abs:+25%", cwd=saved.parent)
    assert gate.returncode == 1 and "pytest-trt drift gate FAILED against run" in gate.stdout
    missing = _console("runs", "show", "nope", f"--storage={saved}", cwd=saved.parent)
    assert missing.returncode == 2 and "no saved run 'nope'" in missing.stderr
    bad = _console("runs", "diff", "1", "2", f"--storage={saved}", "--fail", "cosine:+1", cwd=saved.parent)
    assert bad.returncode == 2 and "--fail=cosine:+1: cosine fails only when it falls" in bad.stderr


def test_the_console_script_names_the_ini_settings_it_ignores(saved, capsys, tmp_path, monkeypatch):
    """The console script ignores the ini (README "Configuration"); where the project's ini sets
    trt_storage / trt_cache_dir and the flag is not given, a note on stderr names the ini's value and the
    flag to pass, and the directory is not changed. Before: silence, so `runs list` listed another folder
    and `runs recheck` made a second cache (review3 row 6)."""
    project = tmp_path / "proj"
    (project / "tests").mkdir(parents=True)
    (project / "pytest.ini").write_text("[pytest]\ntrt_storage = .runs-ini\ntrt_cache_dir = .cache-ini\n")
    monkeypatch.chdir(project / "tests")  # the ini's values are relative to the ini's directory
    monkeypatch.delenv("PYTEST_TRT_CACHE_DIR", raising=False)
    code, out, err = cli(capsys, "runs", "list")
    assert code == 0 and f"saved runs in {project / '.trt-runs'}" in out  # unchanged: the ini is not read
    assert err.strip() == (f"pytest-trt: note: {project / 'pytest.ini'} sets trt_storage = .runs-ini, which the "
                           f"console script ignores; it uses {project / '.trt-runs'}. Pass "
                           f"--storage={project / '.runs-ini'} for the one pytest uses")
    code, _, err = cli(capsys, "runs", "recheck", "fp16", f"--storage={saved}", "--model", str(ENCODER))
    assert code == 0 and err.strip() == (
        f"pytest-trt: note: {project / 'pytest.ini'} sets trt_cache_dir = .cache-ini, which the console script "
        f"ignores; it uses {project / '.trt-cache'}. Pass --cache-dir={project / '.cache-ini'} for the one pytest uses")
    assert (project / ".trt-cache").is_dir() and not (project / ".cache-ini").exists()
    # the flag given (or $PYTEST_TRT_CACHE_DIR, above the ini under pytest too): no note
    code, _, err = cli(capsys, "runs", "list", f"--storage={saved}")
    assert code == 0 and err == ""
    monkeypatch.setenv("PYTEST_TRT_CACHE_DIR", str(tmp_path / "envcache"))
    code, _, err = cli(capsys, "cache", "list")
    assert "trt_cache_dir" not in err


def test_the_help_says_the_console_script_ignores_the_ini(capsys):
    for args in (["runs", "list", "--help"], ["compare", "--help"], ["cache", "prune", "--help"], ["runs", "recheck", "--help"]):
        with pytest.raises(SystemExit):
            main(args)
        text = " ".join(capsys.readouterr().out.split())
        assert "the console script ignores the ini" in text and "uses here" not in text


@pytest.mark.parametrize("age", ["3", "1.5", " 14 "])
def test_runs_prune_refuses_an_age_without_a_unit_as_cache_prune_does(saved, capsys, age):
    """One rule for `runs prune --older-than` and `cache prune --max-age`: a unit (s, m, h, d, w) is
    required. Before, runs prune took a bare 3 as 3 days (review3 row 8)."""
    n = age.strip()
    code, _, err = cli(capsys, "runs", "prune", f"--storage={saved}", "--older-than", age)
    assert code == 2 and f"--older-than {n}: give a unit, e.g. {n}d (days) or {n}h (hours); s, m and w " \
                         f"(seconds, minutes, weeks) also work" in err
    assert len(list((saved / PREFIX).iterdir())) == 2
    code, out, _ = cli(capsys, "runs", "prune", f"--storage={saved}", "--older-than", "30m", "--dry-run")
    assert code == 0 and out.startswith("would delete 0 run(s)")
