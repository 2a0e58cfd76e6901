"""``pytest-trt cache list|prune`` (issue 29): entries by model and kind, pruning by age and size, groups kept whole.

Exit statuses through the console script in a subprocess (a few); the rest in-process through
``pytest_trt.cli.main``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from pytest_trt.backends import get_backend
from pytest_trt.backends.base import BuildConfig
from pytest_trt.cache import MANIFEST, ArtifactCache
from pytest_trt.cli import main
from pytest_trt.core import runstate
from pytest_trt.inputs import make_feeds
from pytest_trt.model import load_model
from pytest_trt.model.big_models import write_decoder
from pytest_trt.plan.policy import PrecisionPolicy
from pytest_trt.reference.baseline import fp32_baseline


@pytest.fixture
def filled(tmp_path):
    """A cache holding a big-path model's FP16 and BF16 weight sets, three emulation graphs and a baseline."""
    with runstate.scoped():
        info = write_decoder(tmp_path / "m" / "decoder.onnx", layers=2, hidden=128, intermediate=256, seq=4)
        model = load_model(info.path)
        cache = ArtifactCache(tmp_path / "cache")
        emulate = get_backend("emulate")
        for policy in (PrecisionPolicy("fp16"), PrecisionPolicy("fp16", keep_fp32=("*/input_layernorm/*",)),
                       PrecisionPolicy("bf16")):
            emulate.build(policy.resolve(model), BuildConfig(), cache)
        fp32_baseline(model, make_feeds(model), cache=cache)
    return cache


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_trt.cli", *args], capture_output=True, text=True, timeout=120)


def _json(capsys, *args) -> dict:
    assert main(list(args)) == 0
    return json.loads(capsys.readouterr().out)


def test_exit_statuses(filled, tmp_path):
    assert _cli("cache", "list", "--cache-dir", str(filled.root)).returncode == 0
    missing = _cli("cache", "list", "--cache-dir", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "no pytest-trt cache at" in missing.stderr
    no_criterion = _cli("cache", "prune", "--cache-dir", str(filled.root))
    assert no_criterion.returncode == 2 and "--max-age" in no_criterion.stderr and "--max-size" in no_criterion.stderr
    bad_age = _cli("cache", "prune", "--cache-dir", str(filled.root), "--max-age", "soon")
    assert bad_age.returncode == 2 and "--max-age 'soon'" in bad_age.stderr


def test_list_groups_entries_by_model_and_kind(filled, capsys):
    assert main(["cache", "list", "--cache-dir", str(filled.root)]) == 0
    out = capsys.readouterr().out
    assert "6 entries" in out
    assert "decoder.onnx" in out and "weights" in out and "(uses weights" in out
    listing = _json(capsys, "cache", "list", "--cache-dir", str(filled.root), "--json")
    assert sorted(e["kind"] for e in listing["entries"]) == ["baseline"] + ["emulate"] * 3 + ["weights"] * 2
    assert {e["model_label"] for e in listing["entries"]} == {"decoder.onnx"}
    assert listing["groups"] == 3  # FP16 set + two graphs; BF16 set + one graph; the baseline alone
    assert listing["size_bytes"] == sum(e["size_bytes"] for e in listing["entries"])


def test_list_refuses_a_directory_that_is_not_a_cache(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    assert main(["cache", "list", "--cache-dir", str(tmp_path)]) == 2
    assert "is not a pytest-trt cache" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_prune_by_size_removes_whole_groups_oldest_first(filled, capsys):
    entries = filled.entries()
    old = time.time() - 3600
    for e in entries:  # the FP16 group was used an hour ago, everything else now
        if e.kind == "weights" and e.manifest["parts"]["precision"] == "fp16" or \
                any(u["key"] for u in e.manifest.get("uses", []) if _precision(filled, u["key"]) == "fp16"):
            os.utime(e.path / MANIFEST, (old, old))
    total = sum(e.size_bytes for e in entries)
    dry = _json(capsys, "cache", "prune", "--cache-dir", str(filled.root), "--max-size", str(total - 1),
                "--dry-run", "--json")
    assert dry["dry_run"] and len(filled.entries()) == len(entries)  # nothing removed
    result = _json(capsys, "cache", "prune", "--cache-dir", str(filled.root), "--max-size", str(total - 1), "--json")
    assert [e["key"] for e in result["removed"]] == [e["key"] for e in dry["removed"]]
    assert sorted(e["kind"] for e in result["removed"]) == ["emulate", "emulate", "weights"]
    left = {(e.kind, e.key) for e in filled.entries()}
    assert all((u["kind"], u["key"]) in left for e in filled.entries() for u in e.manifest.get("uses", []))


def test_prune_by_age(filled, capsys):
    old = time.time() - 10 * 86400
    for e in filled.entries():
        if e.kind == "baseline":
            os.utime(e.path / MANIFEST, (old, old))
    result = _json(capsys, "cache", "prune", "--cache-dir", str(filled.root), "--max-age", "7d", "--json")
    assert [e["kind"] for e in result["removed"]] == ["baseline"] and result["remaining"] == 5


def _precision(cache, key: str) -> str | None:
    for e in cache.entries("weights"):
        if e.key == key:
            return e.manifest["parts"]["precision"]
    return None


@pytest.mark.parametrize("age", ["3", "1.5", " 14 "])
def test_an_age_without_a_unit_is_refused_and_nothing_is_removed(filled, capsys, age):
    before = len(filled.entries())
    assert main(["cache", "prune", "--cache-dir", str(filled.root), "--max-age", age]) == 2
    n = age.strip()
    assert f"--max-age {n}: give a unit, e.g. {n}d (days) or {n}h" in capsys.readouterr().err
    assert len(filled.entries()) == before  # a bare 3 meant 3 seconds: the whole cache went


@pytest.mark.parametrize(("given", "env", "said", "not_said"), [
    ("mystuff", None, ["(--cache-dir) is not a pytest-trt cache", "check the path"], ["give --cache-dir"]),
    ("nowhere", None, ["no pytest-trt cache at", "(--cache-dir)", "check the path"], ["give --cache-dir"]),
    (None, "mystuff", ["(from $PYTEST_TRT_CACHE_DIR) is not a pytest-trt cache", "give --cache-dir DIR"], []),
    (None, "nowhere", ["(from $PYTEST_TRT_CACHE_DIR)", "give --cache-dir DIR"], []),
])
def test_a_refused_cache_dir_is_worded_for_where_it_came_from(tmp_path, monkeypatch, capsys, given, env, said,
                                                               not_said):
    (tmp_path / "mystuff").mkdir()
    (tmp_path / "mystuff" / "notes.txt").write_text("mine")
    monkeypatch.delenv("PYTEST_TRT_CACHE_DIR", raising=False)
    if env:
        monkeypatch.setenv("PYTEST_TRT_CACHE_DIR", str(tmp_path / env))
    args = ["cache", "list"] + (["--cache-dir", str(tmp_path / given)] if given else [])
    assert main(args) == 2
    err = capsys.readouterr().err
    assert all(s in err for s in said), err
    assert not any(s in err for s in not_said), err
    assert sorted(os.listdir(tmp_path / "mystuff")) == ["notes.txt"]
