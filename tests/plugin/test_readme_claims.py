"""What the README says about the package, checked against the package (review1 defects 5, 14, 16).

Before: the Quickstart said the main job gives "16 passed, 3 xfailed" (it gave 17 and 4); the
pipeline paragraph's package list left out ``ledger/`` and ``history/`` and put ``plugin.py`` under
the glue; ``plan --json``'s key list lacked ``model``, ``policy``, ``canonical``, ``module`` and
``module_class``.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from pytest_trt.cli import main as cli_main

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
SUITE = REPO / "example_suite"


@pytest.mark.parametrize("precision", ["--trt-fp16", "--trt-bf16"])
def test_the_quickstart_counts_are_the_example_suites(pytester, precision):
    quick = README[README.index("## Quickstart"):README.index("## A test")]
    passed, xfailed = map(int, re.search(r"\((\d+) passed, (\d+) xfailed", quick).groups())
    shutil.copytree(SUITE, pytester.path / "example_suite", ignore=shutil.ignore_patterns("__pycache__", "make_*.py"))
    # a subprocess: the suite imports pytest_trt modules itself (a second in-process run would meet new classes)
    result = pytester.runpytest_subprocess("example_suite", precision, f"--trt-cache-dir={pytester.path / 'cache'}",
                                "-p", "no:cacheprovider")
    result.assert_outcomes(passed=passed, xfailed=xfailed)
    words = {3: "three", 4: "four", 5: "five"}
    assert f"The {words.get(xfailed, xfailed)} **xfailed**" in quick


def test_the_pipeline_paragraph_names_every_package():
    start = README.index("The layout of `pytest_trt/` follows it")
    paragraph = README[start:README.index("\n\n", start)]
    packages = sorted(p.parent.name for p in (REPO / "pytest_trt").glob("*/__init__.py"))
    missing = [name for name in packages if f"`{name}/`" not in paragraph]
    assert not missing, f"README's pipeline paragraph does not name {missing}"
    assert "`plugin.py`, the plugin's entry point (top level" in paragraph


def test_the_plan_json_keys_are_the_readmes(capsys):
    text = README[README.index("`plan --json` prints"):]
    text = " ".join(text[:text.index(";")].split())
    top = re.search(r'prints `\{(.*?)\}`', text).group(1)
    top_keys = set(re.findall(r'"(\w+)"', re.sub(r"\[.*?\]", "", top)))
    node_keys = set(re.findall(r'"(\w+)"', re.search(r'"nodes": \[\{(.*?)\}', text).group(1)))
    assert cli_main(["plan", str(REPO / "tests" / "data" / "exports" / "llama_dynamo_opset18.onnx"), "--fp16",
                     "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == top_keys
    assert set(data["nodes"][0]) == node_keys


def test_the_readme_does_not_hard_code_the_schema_version():
    """It said ``schema_version`` 3 while the reports wrote 5: it points to the schema file instead."""
    assert not re.search(r"schema_version`? \d", README)
    assert "`pytest_trt/report/report.schema.json`" in README
