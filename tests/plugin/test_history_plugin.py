"""Saved runs and the drift gate in real sessions (issue 31, "Done when"), on the example suite's encoder
tests (example_suite/test_encoder_fp16.py, copied with its models into a pytester project).

A run saved in FP16, then a BF16 run compared with it under ``--trt-compare-fail=max_abs:+25%``:
exit 1, the regressed outputs and the precision change named, the tests themselves passed; the
reverse exits 0 and reports an improvement; a damaged or missing stored run is a usage error
(exit 4); ``latest`` never picks a run whose gate failed; ``-n 2`` with saved outputs and two
concurrent sessions save without loss.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_trt.history.store import PREFIX

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "example_suite"
GATE = "--trt-compare-fail=max_abs:+25%"


@pytest.fixture
def project(pytester):
    """The example suite's encoder tests and models, a shared cache, runs in ``<rootdir>/.trt-runs``."""
    pytester.makeini("[pytest]\n")
    (pytester.path / "models").mkdir()
    for name in ("encoder_opset14.onnx", "encoder_opset17.onnx"):
        shutil.copy(SUITE / "models" / name, pytester.path / "models" / name)
    shutil.copy(SUITE / "conftest.py", pytester.path / "conftest.py")
    shutil.copy(SUITE / "test_encoder_fp16.py", pytester.path / "test_encoder_fp16.py")
    return pytester


def run(pytester, *args):
    return pytester.runpytest("-p", "no:cacheprovider", f"--trt-cache-dir={pytester.path / 'cache'}", *args)


def runs_of(pytester) -> list[str]:
    root = pytester.path / ".trt-runs" / PREFIX
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def test_bf16_against_a_saved_fp16_run_fails_the_gate_naming_output_and_precision_change(project):
    saved = run(project, "--trt-fp16", "--trt-save=fp16-main")
    assert saved.ret == 0
    saved.stdout.fnmatch_lines(["*pytest-trt: runs in *.trt-runs: saving this run as 'fp16-main'*",
                                "run saved: *-fp16-main in *"])
    [fp16_id] = runs_of(project)

    result = run(project, "--trt-bf16", "--trt-compare-run=fp16-main", GATE, "--trt-report=r.json")
    assert result.ret == 1  # the session fails ...
    result.assert_outcomes(passed=5)  # ... although every test passed: a drift failure, not a test failure
    out = result.stdout.str()
    result.stdout.fnmatch_lines([
        f"pytest-trt drift against run {fp16_id} (fp16-main): 5 output(s) compared; gate max_abs:+25%: "
        f"3 regressed, 0 improved",
        "  cause: default precision fp16 -> bf16; policy changed in 3 of 5 check(s)*; model unchanged",
        "  REGRESSED *test_encoder_fp16.py::test_encoder_accuracy[[]last_hidden_state[]]",
        "  precision changes (realized, per module):",
        "    60 node(s) fp16 -> bf16 in encoder_opset14.onnx under /encoder/layer.*",
        f"pytest-trt drift gate FAILED against run {fp16_id}: 3 regressed output(s) (--trt-compare-fail="
        f"max_abs:+25%): *test_encoder_accuracy*[[]last_hidden_state[]] max_abs *",
    ])
    # the gate's line is the last pytest-trt line, once; nothing calls it a test failure
    assert out.count("drift gate FAILED") == 1 and "FAILED test_" not in out
    report = json.loads((project.path / "r.json").read_text())
    drift = report["history"]["drift"]
    assert report["exitstatus"] == 1 and drift["against"] == fp16_id and drift["regressed"] == 3
    assert {r["nodeid"].split("::")[1] for r in drift["outputs"] if r["status"] == "regressed"} == {
        "test_encoder_accuracy", "test_encoder_accuracy_with_outlier_features", "test_encoder_opset17_accuracy"}
    assert {(c["old"], c["new"]) for c in drift["precision_changes"]} == {("fp16", "bf16")}


def test_fp16_against_a_saved_bf16_run_passes_and_reports_the_improvement(project):
    assert run(project, "--trt-bf16", "--trt-save=bf16").ret == 0
    result = run(project, "--trt-fp16", "--trt-compare-run=bf16", GATE)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*gate max_abs:+25%: 0 regressed, 3 improved",
                                 "  improved *test_encoder_accuracy[[]last_hidden_state[]]",
                                 "  3 output(s) improved beyond the gate (reported, never failed)"])
    assert "drift gate FAILED" not in result.stdout.str()


def test_latest_is_never_a_run_whose_gate_failed(project):
    assert run(project, "--trt-fp16", "--trt-save=fp16").ret == 0
    # a BF16 run that fails its gate, saved anyway: never "latest"
    assert run(project, "--trt-bf16", "--trt-autosave", "--trt-compare-run=fp16", GATE).ret == 1
    fp16_id, failed_id = runs_of(project)
    result = run(project, "--trt-fp16", "--trt-compare-run", GATE, "-k", "opset17")  # bare flag: latest
    assert result.ret == 0
    result.stdout.fnmatch_lines([f"*comparing with run {fp16_id} (#1, exit 0, gate max_abs:+25%)*"])
    assert failed_id not in result.stdout.str()


def test_a_gate_that_compared_no_output_fails_the_session(project):
    assert run(project, "--trt-fp16", "--trt-save=base", "-k", "opset17").ret == 0
    # an ordinary refactor: the test file is renamed, so no test id matches the stored run's
    (project.path / "test_encoder_fp16.py").rename(project.path / "test_renamed.py")
    result = run(project, "--trt-fp16", "--trt-compare-run=base", GATE, "-k", "opset17")
    assert result.ret == 1
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        "*pytest-trt drift against run *-base (base): 0 output(s) compared; 1 of the stored run's output(s) NOT in "
        "this run, not judged (test_encoder_fp16.py::test_encoder_opset17_accuracy[[]last_hidden_state[]]); gate*",
        "*pytest-trt drift gate FAILED against run *-base: no output compared (--trt-compare-fail=max_abs:+25%): "
        "1 output(s) only in this run, 1 only in the stored run; a gate that judged nothing cannot pass. Select the "
        "same tests as the stored run*or save a new baseline with --trt-save NAME*",
    ])
    # everything deselected: the same
    assert run(project, "--trt-fp16", "--trt-compare-run=base", GATE, "-k", "nothing_matches").ret == 1
    # without a gate nothing fails (the drift is only shown)
    assert run(project, "--trt-fp16", "--trt-compare-run=base", "-k", "opset17").ret == 0


def test_outputs_of_the_stored_run_missing_from_a_gated_session_are_named(project):
    assert run(project, "--trt-fp16", "--trt-save=base").ret == 0
    result = run(project, "--trt-fp16", "--trt-compare-run=base", GATE, "-k", "opset17")
    assert result.ret == 0  # one output compared, within the gate: passes, and says what it did not judge
    result.stdout.fnmatch_lines(["*: 1 output(s) compared; 4 of the stored run's output(s) NOT in this run, not "
                                 "judged (*, *, * and 1 more); gate max_abs:+25%: 0 regressed, 0 improved"])


def test_a_damaged_run_is_listed_as_damaged_skipped_by_latest_and_pruned(project, capsys):
    from pytest_trt.cli import main

    assert run(project, "--trt-fp16", "--trt-save=old", "-k", "opset17").ret == 0
    assert run(project, "--trt-fp16", "--trt-save=new", "-k", "opset17").ret == 0
    old_id, new_id = runs_of(project)
    run_json = project.path / ".trt-runs" / PREFIX / new_id / "run.json"
    data = bytearray(run_json.read_bytes())
    data[len(data) // 2] ^= 1  # one byte changed
    run_json.write_bytes(bytes(data))
    storage = f"--storage={project.path / '.trt-runs'}"
    capsys.readouterr()  # (the sessions' output)
    assert main(["runs", "list", storage]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split()[1] == old_id and "exit 0" in out[1]
    assert out[2].startswith("      (backend emulate: ")  # the disclaimer of an ok run's backend; none for a damaged one
    assert out[3].split()[1] == new_id and "DAMAGED: run.json has" in out[3] and "(damaged or tampered)" in out[3]
    assert len(out) == 4
    assert main(["runs", "list", storage, "--json"]) == 0
    assert [r["status"] for r in json.loads(capsys.readouterr().out)["runs"]] == ["ok", "damaged"]
    # latest passes over it, with a warning naming it
    result = run(project, "--trt-fp16", "--trt-compare-run", GATE, "-k", "opset17", "--trt-report=r.json")
    assert result.ret == 0
    result.stdout.fnmatch_lines([f"*comparing with run {old_id} (#1, exit 0*",
                                 f"pytest-trt: WARNING: skipped damaged run(s) for latest: {new_id} (run.json has *"])
    # review3 row 2: also in the summary, which -q (CI logs) keeps, and in the JSON report
    quiet = run(project, "-q", "--trt-fp16", "--trt-compare-run", GATE, "-k", "opset17", "--trt-report=r.json")
    assert quiet.ret == 0
    assert "comparing with run" not in quiet.stdout.str()  # the header is hidden by -q
    quiet.stdout.fnmatch_lines([f"pytest-trt drift: WARNING: newest run {new_id} skipped: damaged (run.json has *); "
                                f"compared with {old_id} (`pytest-trt runs prune --damaged` deletes them)"])
    history = json.loads((project.path / "r.json").read_text())["history"]
    assert history["compared_with"] == old_id
    assert [e["id"] for e in history["skipped_damaged"]] == [new_id]
    assert history["skipped_damaged"][0]["reason"].startswith("run.json has ")
    capsys.readouterr()
    assert main(["runs", "show", "latest", storage]) == 0
    captured = capsys.readouterr()
    assert f"run 1: {old_id}" in captured.out and f"skipped damaged run(s) {new_id}" in captured.err
    assert main(["runs", "prune", storage, "--damaged"]) == 0
    assert "deleted 1 run(s)" in capsys.readouterr().out and runs_of(project) == [old_id]


def test_a_damaged_or_missing_stored_run_is_a_usage_error(project):
    assert run(project, "--trt-fp16", "--trt-save=fp16", "-k", "opset17").ret == 0
    [run_id] = runs_of(project)
    missing = run(project, "--trt-fp16", "--trt-compare-run=fp17", "-k", "opset17")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    missing.stderr.fnmatch_lines(["*--trt-compare-run=fp17: no saved run 'fp17' in *.trt-runs*"])
    run_json = project.path / ".trt-runs" / PREFIX / run_id / "run.json"
    run_json.write_bytes(run_json.read_bytes()[:-20])  # truncated
    damaged = run(project, "--trt-fp16", "--trt-compare-run=fp16", "-k", "opset17")
    assert damaged.ret == pytest.ExitCode.USAGE_ERROR
    damaged.stderr.fnmatch_lines([f"*--trt-compare-run=fp16: run {run_id} in *.trt-runs is damaged: run.json has "
                                  f"* bytes with sha256 *, its manifest says * (damaged or tampered)*"])


@pytest.mark.parametrize("args, says", [
    (["--trt-save-outputs"], "--trt-save-outputs stores outputs with a saved run: add --trt-save=NAME or "
                             "--trt-autosave"),
    ([GATE], "--trt-compare-fail gates the drift against a saved run: add --trt-compare-run=RUN*"),
    (["--trt-compare-run=latest", "--trt-compare-fail=cosine:+1e-5"], "*cosine fails only when it falls; write "
                                                                       "cosine:-1e-5"),
    (["--trt-save=3"], "*--trt-save='3': a number selects the run at that position*"),
    (["--trt-compare-run"], "*no run to compare with in *.trt-runs: no run is stored there. Save one first*"),
    (["--trt-storage", "x"], "*--trt-storage x (the command line): write it --trt-storage=x*"),
])
def test_history_options_that_cannot_be_honoured_are_usage_errors(project, args, says):
    result = run(project, "--trt-fp16", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{says}*"])
    assert runs_of(project) == []


def test_xdist_workers_save_one_run_with_every_output(project):
    pytest.importorskip("xdist")
    result = run(project, "-n", "2", "--trt-fp16", "--trt-save=xd", "--trt-save-outputs")
    assert result.ret == 0, result.stdout.str()
    [run_id] = runs_of(project)
    run_dir = project.path / ".trt-runs" / PREFIX / run_id
    saved = json.loads((run_dir / "run.json").read_text())
    checks = [c for t in saved["report"]["tests"] for c in t["accuracy"]]
    assert len(saved["report"]["tests"]) == 5 and len(checks) == 5
    assert {c["outputs_file"]["file"] for c in checks} == {p.name for p in (run_dir / "outputs").iterdir()}
    assert saved["report"]["realized"], "the workers' layer reports reached the controller"


def test_two_concurrent_sessions_save_without_loss(project):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_XDIST_", "PYTEST_TRT_", "PYTEST_ADDOPTS"))}
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"--trt-cache-dir={project.path / 'cache'}",
           "--trt-fp16", "-k", "opset17"]
    procs = [subprocess.Popen([*cmd, f"--trt-save=s{i}"], cwd=project.path, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for i in range(2)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert sorted(r.rsplit("-", 1)[1] for r in runs_of(project)) == ["s0", "s1"]
    from pytest_trt.history.store import RunStore

    assert [e.status for e in RunStore(str(project.path / ".trt-runs")).entries()] == ["ok", "ok"]


def test_the_readme_recipe_is_valid_yaml_and_uses_only_options_that_exist():
    import re

    yaml = pytest.importorskip("yaml")
    from pytest_trt.run.settings import OPTIONS

    text = (REPO / "README.md").read_text()
    section = text[text.index("### Recipe: GitHub Actions, autosave on main"):]
    block = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
    workflow = yaml.safe_load(block)
    commands = [step["run"] for job in workflow["jobs"].values() for step in job["steps"] if "run" in step]
    flags = {w.split("=")[0] for c in commands for w in c.split() if w.startswith("--trt-")}
    assert {"--trt-autosave", "--trt-compare-run", "--trt-compare-fail", "--trt-storage"} <= flags
    assert flags <= {f"--{o.name}" for o in OPTIONS}, flags - {f"--{o.name}" for o in OPTIONS}
    gates = [w.split("=", 1)[1] for c in commands for w in c.split() if w.startswith("--trt-compare-fail=")]
    from pytest_trt.history.gate import parse_gate

    assert all(parse_gate([g]) for g in gates)


def test_precision_changes_of_a_dynamo_export_are_named_by_canonical_module(pytester):
    """Today's exporter names nodes ``node_pow_1``; the module is in the node metadata (issue 30). The
    realized maps are keyed by canonical names, so a change is placed in its module, not at the root."""
    pytester.makeini("[pytest]\n")
    decoder = SUITE / "models" / "decoder_dynamo.onnx"
    pytester.makepyfile(test_decoder=f"""
import pytest

@pytest.mark.trt(model={str(decoder)!r}, dims={{"batch": 1, "sequence": 8}},
                 val_range={{"input_ids": (0, 247), "attention_mask": (1, 1)}})
def test_decoder(trt):
    trt.check(atol=0.05, rtol=0.1)
""")
    common = ["--trt-fp16", "--trt-report=r.json"]
    assert run(pytester, *common, "--trt-keep-fp32=class:*RMSNorm", "--trt-save=kept").ret == 0
    result = run(pytester, *common, "--trt-compare-run=kept")
    assert result.ret == 0
    changes = json.loads((pytester.path / "r.json").read_text())["history"]["drift"]["precision_changes"]
    assert {(c["old"], c["new"]) for c in changes} == {("fp32", "fp16")}
    assert sum(c["nodes"] for c in changes) == 35  # 5 RMSNorms of 7 nodes each
    assert {c["pattern"] for c in changes} >= {"/model/layers.0/input_layernorm/*", "/model/norm/*"}, changes
    result.stdout.fnmatch_lines(["    35 node(s) fp32 -> fp16 in decoder_dynamo.onnx under /model/*"])
