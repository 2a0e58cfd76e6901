"""The changelog policy, checked: a change users can see comes with a CHANGELOG.md entry.

The user-visible surface (every pytest option with its default and choices, every console-script
flag with its default, the per-precision default tolerances and floors, the JSON report's
``schema_version``, the cache layout names) is recorded in ``tests/data/user_surface.json``
together with the sha256 of CHANGELOG.md at the time it was recorded. When the surface changes,
this test fails until CHANGELOG.md has changed too and the record is regenerated::

    PYTEST_TRT_REGEN_SURFACE=1 pytest tests/unit/test_changelog.py

Regeneration refuses while CHANGELOG.md is unchanged: the entry comes first.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
from pathlib import Path

import pytest

from pytest_trt import cache
from pytest_trt.cli import build_parser
from pytest_trt.compare.tolerances import DEFAULT_MIN_COSINE, DEFAULT_TOLERANCES
from pytest_trt.model.weights import MEMO_DIR
from pytest_trt.realize.weight_sets import WEIGHTS_KIND
from pytest_trt.run.settings import OPTIONS

REPO = Path(__file__).resolve().parents[2]
CHANGELOG = REPO / "CHANGELOG.md"
RECORD = REPO / "tests" / "data" / "user_surface.json"
SCHEMA = REPO / "pytest_trt" / "report" / "report.schema.json"


def _cli_surface() -> dict:
    out = {}
    parser = build_parser()

    def walk(p: argparse.ArgumentParser, prefix: str) -> None:
        for action in p._actions:  # argparse has no public walk over its actions
            if isinstance(action, argparse._SubParsersAction):
                for name, child in sorted(action.choices.items()):
                    walk(child, f"{prefix} {name}".strip())
            elif action.option_strings:
                default = action.default if action.default is not argparse.SUPPRESS else None
                out[f"{prefix} {'/'.join(action.option_strings)}"] = repr(default)

    walk(parser, "pytest-trt")
    return out


def surface() -> dict:
    schema = json.loads(SCHEMA.read_text())
    return {
        "schema_version": schema["properties"]["schema_version"].get("const"),
        "pytest_options": {
            o.name: {"kind": o.kind, "default": repr(o.default), "choices": list(o.choices)} for o in OPTIONS
        },
        "cli": _cli_surface(),
        "default_tolerances": {k: list(v) for k, v in DEFAULT_TOLERANCES.items()},
        "default_min_cosine": dict(DEFAULT_MIN_COSINE),
        "cache_layout": {"marker": cache.MARKER, "scratch": cache.SCRATCH_DIR, "memo": MEMO_DIR,
                         "weight_set_kind": WEIGHTS_KIND},
    }


def changelog_sha() -> str:
    return hashlib.sha256(CHANGELOG.read_bytes()).hexdigest()


def test_changelog_exists_and_names_the_schema_version():
    text = CHANGELOG.read_text()
    assert text.startswith("# Changelog") and "## [Unreleased]" in text
    version = surface()["schema_version"]
    assert re.search(rf"schema_version`? {version}\b", text), f"CHANGELOG.md never mentions schema_version {version}"


def test_user_visible_surface_changes_come_with_a_changelog_entry():
    current = surface()
    recorded = json.loads(RECORD.read_text()) if RECORD.exists() else None
    if os.environ.get("PYTEST_TRT_REGEN_SURFACE"):
        if recorded is not None and recorded["surface"] != current and recorded["changelog_sha256"] == changelog_sha():
            pytest.fail("the user-visible surface changed but CHANGELOG.md did not: add the entry first")
        RECORD.write_text(json.dumps({"changelog_sha256": changelog_sha(), "surface": current}, indent=1,
                                     sort_keys=True) + "\n")
        return
    assert recorded is not None, f"{RECORD} is missing: regenerate it with PYTEST_TRT_REGEN_SURFACE=1"
    if recorded["surface"] == current:
        return
    changed = sorted(k for k in set(current) | set(recorded["surface"])
                     if current.get(k) != recorded["surface"].get(k))
    if recorded["changelog_sha256"] == changelog_sha():
        pytest.fail(f"user-visible change ({', '.join(changed)}) without a CHANGELOG.md entry: add one under "
                    f"[Unreleased], then regenerate {RECORD.name} with PYTEST_TRT_REGEN_SURFACE=1")
    pytest.fail(f"user-visible change ({', '.join(changed)}): CHANGELOG.md changed too; regenerate "
                f"{RECORD.name} with PYTEST_TRT_REGEN_SURFACE=1")
