"""One CI definition (issue 33): `.ci/run`, tox and the GitHub workflows run the same tiers.

`.ci/run` is the definition: one ``tier NAME BUDGET 'COMMAND'`` line per tier. The CPU workflow
runs `.ci/run` itself (in Debian, as root, so `.ci/install-tier-deps` installs the system
packages as it does here) plus the `tests` tier's command on the other Pythons; every tier but
`installs` is a tox environment with the same commands; the GPU workflow runs the documented GPU
tiers (`tox -e gpu`, `tox -e cuda`) with their tox commands. Every job runs with
PYTEST_TRT_CI_NO_SKIP=1 (and the GPU jobs with PYTEST_TRT_CI_GPU=1): a tier's skip is a failure.
Any drift between them fails here.
"""

from __future__ import annotations

import configparser
import re
import shlex
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO / ".github" / "workflows"

#: shared/CONVENTIONS.md "CI time": each tier's budget in seconds; 19 minutes at most in all.
#: A tier of `.ci/run` must be here with this budget (big_model: issue 29, when it lands).
BUDGETS = {"installs": 240, "tests": 150, "lint": 90, "example": 60, "trt_api": 120, "trt_parser": 120,
           "onnx_corpus": 120, "big_model": 240}
TOTAL_BUDGET = 19 * 60

#: options a workflow adds to a tier's command for the runner, not for what is tested: report files,
#: and one xdist worker per GPU of the runner (`-n "$NGPU" --trt-gpus "$NGPU"`)
RUNNER_ONLY = re.compile(r"^--(junitxml|trt-report|trt-html)=")
RUNNER_ONLY_WITH_VALUE = {"-n", "--trt-gpus"}


def ci_run_tiers() -> dict[str, tuple[int, str]]:
    """`.ci/run`'s tiers: name -> (budget seconds, command), in order."""
    tiers = {}
    for line in (REPO / ".ci" / "run").read_text().splitlines():
        if line.startswith("tier "):
            words = shlex.split(line, comments=True)
            assert len(words) == 4, f".ci/run: a tier line is `tier NAME BUDGET 'COMMAND'`: {line!r}"
            _, name, budget, command = words
            tiers[name] = (int(budget), command)
    return tiers


def commands(command: str) -> list[list[str]]:
    """The commands of a shell line without the installs (`pip install ...`), as word lists."""
    out = []
    for part in command.replace("\\\n", " ").split("&&"):
        words = shlex.split(part)
        if words and words[:2] != ["pip", "install"]:
            out.append(words)
    return out


def for_the_tier(words: list[str]) -> list[str]:
    """A workflow's command without the options that only serve the runner (reports, GPU count)."""
    kept = []
    for i, word in enumerate(words):
        if word in RUNNER_ONLY_WITH_VALUE and i + 1 < len(words) and words[i + 1].startswith("$"):
            continue
        if i and words[i - 1] in RUNNER_ONLY_WITH_VALUE and word.startswith("$"):
            continue
        if not RUNNER_ONLY.match(word):
            kept.append(word)
    return kept


def tox_envs() -> dict[str, list[list[str]]]:
    """tox.ini's environments -> their commands (``{posargs}`` dropped); ``[testenv]`` is `tests`."""
    ini = configparser.ConfigParser(interpolation=None)
    ini.read(REPO / "tox.ini")
    envs = {}
    for section in ini.sections():
        if section == "testenv" or section.startswith("testenv:"):
            name = "tests" if section == "testenv" else section.split(":", 1)[1]
            lines = [ln.strip() for ln in ini[section].get("commands", "").splitlines() if ln.strip()]
            envs[name] = [[w for w in shlex.split(ln) if w != "{posargs}"] for ln in lines]
    return envs


def workflow(name: str) -> dict:
    yaml = pytest.importorskip("yaml")
    return yaml.safe_load((WORKFLOWS / name).read_text())


def run_lines(job: dict) -> list[str]:
    return [step["run"] for step in job["steps"] if "run" in step]


def job_env(flow: dict, job: dict) -> dict:
    return {**flow.get("env", {}), **job.get("env", {})}


def test_every_tier_has_its_conventions_budget_and_all_fit_in_19_minutes():
    tiers = ci_run_tiers()
    assert list(tiers)[:2] == ["installs", "tests"] and "lint" in tiers and "example" in tiers, list(tiers)
    for name, (budget, _) in tiers.items():
        assert name in BUDGETS, f".ci/run tier {name!r} has no budget in shared/CONVENTIONS.md (CI time)"
        assert budget == BUDGETS[name], f".ci/run tier {name}: budget {budget}s, the conventions say {BUDGETS[name]}s"
    assert sum(budget for budget, _ in tiers.values()) <= TOTAL_BUDGET


def test_the_cpu_workflow_runs_ci_run_itself_in_debian_as_root_with_the_no_skip_switch():
    flow = workflow("cpu.yml")
    runs = {name: job for name, job in flow["jobs"].items() if any(".ci/run" in r for r in run_lines(job))}
    assert list(runs) == ["ci"], "one job runs .ci/run, the whole script: every tier"
    job = runs["ci"]
    assert run_lines(job) == ["bash .ci/run"]
    # Debian as root: .ci/install-tier-deps installs the system packages with apt-get
    assert job["container"] == "python:3.11-bookworm"
    assert job_env(flow, job).get("PYTEST_TRT_CI_NO_SKIP") == "1"


def test_the_cpu_matrix_runs_the_tests_tier_on_the_other_pythons_with_its_dependencies():
    flow = workflow("cpu.yml")
    job = flow["jobs"]["tests"]
    assert job["strategy"]["matrix"]["python-version"] == ["3.10", "3.12"]
    assert job["container"] == "python:${{ matrix.python-version }}-bookworm"
    assert job_env(flow, job).get("PYTEST_TRT_CI_NO_SKIP") == "1"
    lines = run_lines(job)
    assert "bash .ci/install-tier-deps" in lines, "the browser and remote_cache tiers need chromium and nginx"
    _, tests_command = ci_run_tiers()["tests"]
    ran = [for_the_tier(c) for line in lines for c in commands(line)]
    assert commands(tests_command)[0] in ran, f"the tests tier's command {tests_command!r} is not run: {lines}"
    installs = [line for line in lines if line.startswith("pip install")]
    assert installs and all(line.split("&&")[0].strip() == tests_command.split("&&")[0].strip() for line in installs)


def test_every_tier_is_a_tox_environment_with_the_same_commands():
    envs = tox_envs()
    for name, (_, command) in ci_run_tiers().items():
        if name == "installs":
            continue
        assert name in envs, f".ci/run tier {name!r} has no tox environment (tox -e {name})"
        assert envs[name] == commands(command), f"tox -e {name} runs {envs[name]}, .ci/run runs {command!r}"


def test_the_gpu_workflow_runs_the_documented_gpu_tiers_with_their_tox_commands():
    flow = workflow("gpu.yml")
    envs = tox_envs()
    ran: dict[str, list[list[str]]] = {}
    for name, job in flow["jobs"].items():
        assert job["runs-on"] == ["self-hosted", "linux", "gpu"], name
        env = job_env(flow, job)
        assert env.get("PYTEST_TRT_CI_NO_SKIP") == "1" and env.get("PYTEST_TRT_CI_GPU") == "1", name
        ran[name] = [for_the_tier(c) for line in run_lines(job) for ln in line.replace("\\\n", " ").splitlines()
                     for c in commands(ln) if c[0] == "pytest"]
    every = [c for cs in ran.values() for c in cs]
    for tier in ("gpu", "cuda"):  # README "Development": the GPU runner's tox environments
        for command in envs[tier]:
            assert command in every, f"tox -e {tier}'s {shlex.join(command)!r} is not in gpu.yml: {every}"
    assert sorted(map(shlex.join, every)) == sorted(shlex.join(c) for t in ("gpu", "cuda") for c in envs[t])


def test_the_lint_tier_checks_the_workflows_with_actionlint_and_zizmor():
    _, lint = ci_run_tiers()["lint"]
    names = [c[0] for c in commands(lint)]
    assert "actionlint" in names and "zizmor" in names, lint
    pyproject = (REPO / "pyproject.toml").read_text()
    extra = re.search(r"^lint = \[(.*?)\]", pyproject, re.M | re.S).group(1)
    for tool in ("actionlint", "zizmor"):
        assert re.search(rf'"{tool}[\w-]*==[\d.]+"', extra), f"{tool} is not pinned in the lint extra: {extra}"


@pytest.mark.parametrize("name", ["cpu.yml", "gpu.yml"])
def test_workflows_pin_actions_to_commits_and_hold_least_privilege(name):
    """What zizmor checks in the lint tier, stated here too (the lint tier may not run everywhere)."""
    flow = workflow(name)
    assert flow["permissions"] == {"contents": "read"}, "least privilege: the token reads the code only"
    for job_name, job in flow["jobs"].items():
        for step in job["steps"]:
            uses = step.get("uses")
            if uses is None:
                continue
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", uses), f"{name} {job_name}: {uses} is not a commit SHA"
            if uses.startswith("actions/checkout@"):
                assert step.get("with", {}).get("persist-credentials") is False, f"{name} {job_name}: checkout"
        for line in run_lines(job):
            assert "${{" not in line, f"{name} {job_name}: an expression in a run script (injection): {line!r}"


def test_ci_runs_the_readmes_two_quickstart_commands():
    """The Quickstart's commands are what CI runs: command 2 is the `tests` tier, command 1 (the
    main job) the example tier's first command (which then runs it in BF16 too)."""
    text = (REPO / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text[text.index("## Quickstart"):], re.S).group(1)
    main_job, tests = [line.split("#")[0].strip() for line in block.strip().splitlines()]
    tiers = ci_run_tiers()
    for readme, tier in ((tests, "tests"), (main_job, "example")):
        command = tiers[tier][1]
        assert commands(readme)[0] == commands(command)[0], f"README {readme!r} vs .ci/run {tier} {command!r}"
        extras = re.findall(r'"\.\[([\w,]+)\]"', readme)
        assert extras == re.findall(r'"\.\[([\w,]+)\]"', command), (readme, command)
    assert commands(tiers["example"][1])[1] == ["pytest", "example_suite", "--trt-bf16"]
