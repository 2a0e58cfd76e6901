"""The criterion object (pytest_trt/compare/criterion.py): resolved once, with the source of every
value, judged by unchanged everywhere, and read back from its JSON form judging exactly as written."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from pytest_trt.compare import compare_outputs
from pytest_trt.compare.criterion import Criterion, Level, Setting
from pytest_trt.errors import UsageError

NAMES = ["logits", "hidden"]


def _levels(**given):
    """Levels in README order, from ``given = {level: {field: value}}``."""
    sources = {"argument": "trt.check()", "marker": "marker", "command line": "--trt-atol", "ini": "ini trt_atol"}
    return [Level(level, sources[level], values) for level, values in given.items()]


def test_each_value_comes_from_the_first_level_that_gives_it_and_says_so():
    c = Criterion.resolve(NAMES, "fp16", _levels(
        argument={"min_cosine": 0.999},
        marker={"atol": {"logits": 1e-3}},             # one output only: the other falls through
        **{"command line": {"atol": 5e-2}},
        ini={"atol": 0.4, "rtol": {"hidden": 0.3}}))
    logits, hidden = c.outputs["logits"], c.outputs["hidden"]
    assert logits.atol == Setting(1e-3, "marker", "marker")
    assert hidden.atol == Setting(5e-2, "command line", "--trt-atol")
    assert logits.rtol == Setting(0.02, "default", "fp16 default") and hidden.rtol == Setting(0.3, "ini", "ini trt_atol")
    assert logits.min_cosine == Setting(0.999, "argument", "trt.check()") and not logits.default_cosine
    assert logits.min_snr_db == Setting(None, "default", "none")


def test_a_per_precision_dict_picks_the_criterions_precision_else_falls_through():
    levels = _levels(marker={"atol": {"fp16": 1e-2, "bf16": {"logits": 9e-2}}})
    bf16 = Criterion.resolve(NAMES, "bf16", levels)
    assert bf16.outputs["logits"].atol.value == 9e-2 and bf16.outputs["hidden"].atol.source == "bf16 default"
    assert Criterion.resolve(NAMES, "fp32", levels).outputs["logits"].atol.source == "fp32 default"
    with pytest.raises(UsageError, match=r"^t.py::t: atol= mixes precisions and output names"):
        Criterion.resolve(NAMES, "fp16", _levels(marker={"atol": {"fp16": 1, "logits": 2}}), where="t.py::t: ")


def test_bad_values_are_usage_errors_naming_the_output():
    with pytest.raises(UsageError, match="atol names 'other', which is not compared"):
        Criterion.resolve(NAMES, "fp16", _levels(ini={"atol": {"other": 1.0}}))  # checked even when overridden
    with pytest.raises(UsageError, match="rtol for output 'logits' must be a non-negative number, not -1.0"):
        Criterion.resolve(NAMES, "fp16", _levels(argument={"rtol": -1}))
    with pytest.raises(UsageError, match=r"atol=inf \(output 'logits', 'hidden'\) switches the accuracy check off"):
        Criterion.resolve(NAMES, "fp16", _levels(argument={"atol": math.inf}))
    no_check = Criterion.resolve(NAMES, "fp16", no_check=True, no_check_source="marker")
    assert no_check.outputs["logits"].atol == Setting(math.inf, "default", "no_check (marker)")


def test_the_json_form_judges_exactly_as_the_criterion_it_was_written_from():
    """A saved criterion keeps every value, level and source; the default cosine floor stays a default
    (not applied to an output whose reference is within atol of zero), an explicit one stays explicit."""
    c = Criterion.resolve(NAMES, "fp16", _levels(marker={"atol": {"logits": 1e-3}}, argument={"min_snr_db": 60.0}))
    back = Criterion.from_json(json.loads(json.dumps(c.to_json(), allow_nan=False)))
    assert back == c
    rng = np.random.default_rng(0)
    expected = {"logits": rng.standard_normal(256).astype(np.float32), "hidden": np.full(256, 1e-4, np.float32)}
    actual = {"logits": expected["logits"] + np.float32(5e-4), "hidden": -expected["hidden"]}
    first, second = (compare_outputs(actual, expected, criterion=x) for x in (c, back))
    assert first.to_json() == second.to_json() and first.criterion is c and second.criterion is back
    assert second.outputs["hidden"].min_cosine is None   # near zero: the default floor does not apply


def test_levels_over_a_saved_criterion_replace_only_what_they_give():
    saved = Criterion.resolve(NAMES, "fp16", _levels(marker={"rtol": {"hidden": 0.5}}, argument={"min_cosine": 0.9}))
    replayed = Criterion.resolve(NAMES, saved.precision,
                                 [Level("command line", "--atol", {"atol": 0.3}), *saved.as_levels(", from x.json")])
    hidden = replayed.outputs["hidden"]
    assert hidden.atol == Setting(0.3, "command line", "--atol")
    assert hidden.rtol == Setting(0.5, "marker", "marker, from x.json")
    assert hidden.min_cosine == Setting(0.9, "argument", "trt.check(), from x.json")
    assert hidden.min_snr_db == Setting(None, "default", "none, from x.json")  # "no floor" stays none
    assert Criterion.resolve(NAMES, saved.precision, saved.as_levels()) == saved


def test_compare_outputs_records_the_criterion_and_refuses_both_forms():
    a = {"y": np.ones(3, np.float32)}
    result = compare_outputs(a, a, atol=0.5)
    assert result.criterion.outputs["y"].atol == Setting(0.5, "argument", "argument")
    assert result.to_json()["criterion"]["outputs"]["y"]["rtol"]["source"] == "fp32 default"
    with pytest.raises(UsageError, match="pass criterion= or atol=, not both"):
        compare_outputs(a, a, atol=0.5, criterion=result.criterion)


def test_changes_name_what_judges_differently_and_where_the_new_value_came_from():
    """A saved run's criterion against today's (the drift's cause line): a value that moved level but kept
    its number is no change; a cosine floor that stopped being the default is (it applies more widely)."""
    old = Criterion.resolve(NAMES, "fp16", _levels(marker={"atol": 1e-2}))
    assert old.changes(Criterion.resolve(NAMES, "fp16", _levels(ini={"atol": 1e-2})), "logits") == []
    new = Criterion.resolve(NAMES, "bf16", _levels(**{"command line": {"atol": 5e-2}}, argument={"min_cosine": 0.9999}))
    assert old.changes(new, "logits") == ["precision fp16 -> bf16", "rtol 0.02 -> 0.1 (bf16 default)",
                                          "atol 0.01 -> 0.05 (--trt-atol)",
                                          "min_cosine 0.9999 from fp16 default -> trt.check()"]
    assert old.changes(Criterion.from_json(old.to_json()), "hidden") == []


def test_describe_says_where_each_value_came_from():
    c = Criterion.resolve(NAMES, "fp16", _levels(marker={"atol": {"logits": 1e-3}}, argument={"min_cosine": 0.99999999}))
    assert c.describe() == ("rtol=0.02 (fp16 default); min_cosine=0.99999999 (trt.check()); "
                            "atol per output: 'logits' 0.001 (marker), 'hidden' 0.01 (fp16 default)")
    assert c.describe(["hidden"]) == "rtol=0.02, atol=0.01 (fp16 default); min_cosine=0.99999999 (trt.check())"


def test_a_malformed_criterion_file_is_a_usage_error(tmp_path):
    bad = tmp_path / "c.json"
    bad.write_text('{"version": 1, "outputs": {"y": {"rtol": 1}}}')
    with pytest.raises(UsageError, match=r"--criterion .*c.json: criterion: output 'y' must give exactly"):
        Criterion.load(bad)
    good = Criterion.resolve(["y"], "fp16").save(tmp_path / "ok.json")
    with pytest.raises(UsageError, match="the criterion is for outputs 'y'; the model has 'z'"):
        Criterion.load(good).with_outputs(["z"])
