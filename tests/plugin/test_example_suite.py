"""The example suite proves on every run that a LayerNorm left in FP16 is caught; the CI recipes it
ships are valid and only call what exists in the repository."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "example_suite"
NEGATIVE = 'keep_fp32=["op:Softmax"],\n    dims=ENCODER_DIMS, val_range=NORMAL,\n)\ndef test_negative_control'


def copy_suite(pytester) -> Path:
    target = pytester.path / "suite"
    target.mkdir()
    shutil.copytree(SUITE / "models", target / "models")
    shutil.copy(SUITE / "conftest.py", target / "conftest.py")
    shutil.copy(SUITE / "test_layernorm_precision.py", target / "test_layernorm_precision.py")
    return target


def test_negative_control_is_xfailed_as_shipped(pytester):
    suite = copy_suite(pytester)
    result = pytester.runpytest(str(suite), "--trt-fp16", "-rx")
    result.assert_outcomes(passed=1, xfailed=1)
    result.stdout.fnmatch_lines(["*XFAIL*test_negative_control_layernorm_in_fp16_is_caught*negative control*"])


def test_keeping_layernorm_fp32_in_the_negative_control_makes_the_run_fail(pytester):
    """If the violation stopped being caught, strict xfail turns the XPASS into a failure."""
    suite = copy_suite(pytester)
    test_file = suite / "test_layernorm_precision.py"
    text = test_file.read_text()
    assert NEGATIVE in text, "the negative control changed shape: update this test"
    test_file.write_text(text.replace(NEGATIVE, NEGATIVE.replace('["op:Softmax"]', '["*/LayerNorm/*", "op:Softmax"]')))
    result = pytester.runpytest(str(suite), "--trt-fp16")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*[[]XPASS(strict)[]]*negative control*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def _workflow_commands(workflow: dict) -> list[str]:
    commands = []
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            if "run" in step:
                commands += [line.strip() for line in step["run"].splitlines() if line.strip()]
    return commands


@pytest.mark.parametrize("name", ["cpu.yml", "gpu.yml"])
def test_workflows_are_valid_yaml_and_call_only_what_exists(name):
    yaml = pytest.importorskip("yaml")
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / name).read_text())
    assert workflow["jobs"], name
    from pytest_trt.run.settings import OPTIONS

    known_options = {f"--{o.name}" for o in OPTIONS}
    for command in _workflow_commands(workflow):
        if command.startswith(("pytest ", "pip install", "ruff ")):
            words = shlex.split(command.rstrip("\\"))
            for word in words:
                flag = word.split("=")[0]
                if flag.startswith("--trt-"):
                    assert flag in known_options, f"{name}: unknown option {flag} in {command!r}"
                if not flag.startswith("-") and re.fullmatch(r"[\w./-]+", flag) and ("/" in flag or flag.endswith(".py")):
                    assert (REPO / flag).exists() or flag.endswith((".xml", ".json", ".html")), \
                        f"{name}: {flag} does not exist (in {command!r})"
        if "pip install -e" in command:
            extras = re.search(r'"\.\[([\w,]+)\]"', command).group(1).split(",")
            pyproject = (REPO / "pyproject.toml").read_text()
            for extra in extras:
                assert re.search(rf"^{extra} = \[", pyproject, re.M), f"{name}: extra {extra!r} not in pyproject.toml"
