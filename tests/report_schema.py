"""Validate a ``--trt-report`` JSON against the schema shipped in the package.

Every test that reads a report it made checks it with :func:`assert_valid_report`, so each
variant the suite produces (xdist, fake GPUs, outcomes, the remote cache) meets the schema,
not only the golden run of tests/plugin/test_json_report_schema.py.
"""

from __future__ import annotations

import json
from importlib import resources


def report_schema() -> dict:
    """``pytest_trt/report/report.schema.json`` as installed (a package resource)."""
    text = resources.files("pytest_trt.report").joinpath("report.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


def assert_valid_report(data: dict) -> dict:
    """Raise AssertionError listing (up to 20) schema violations of ``data``; return ``data``."""
    import jsonschema  # the test extra

    validator = jsonschema.Draft202012Validator(report_schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    assert not errors, "the report does not match pytest_trt/report/report.schema.json:\n" + "\n".join(
        f"  {'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:300]}" for e in errors[:20])
    return data
