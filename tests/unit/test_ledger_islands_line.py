"""The ledger's "FP32 islands" line lists every FP32 node, also those in a scope that is partly FP32
(review1 defect 13).

Before: with ``keep_fp32=["*/LayerNorm/*", "op:Softmax"]`` the roll-up said "fp32 (FP32 islands) 38
nodes" while the islands line listed the 4 LayerNorm scopes (36 nodes): each Softmax shares its
scope with FP16 MatMuls, so the scope's precision is ``mixed`` and it was left out; with only
``op:Softmax`` kept, no islands line was printed at all.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_trt.backends.base import BuildConfig, get_backend
from pytest_trt.ledger import ledger_of
from pytest_trt.ledger.render import summary_lines
from pytest_trt.model.load import load_model
from pytest_trt.plan.policy import PrecisionPolicy

ENCODER = Path(__file__).resolve().parents[2] / "example_suite" / "models" / "encoder_opset14.onnx"


def _ledger(*keep):
    plan = PrecisionPolicy("fp16", keep_fp32=keep).resolve(load_model(ENCODER))
    return ledger_of(get_backend("emulate").build(plan, BuildConfig(), None), {}, timing="off").to_json()


@pytest.mark.parametrize("keep", [("*/LayerNorm/*", "op:Softmax"), ("op:Softmax",)])
def test_the_islands_add_up_to_the_fp32_rollup(keep):
    data = _ledger(*keep)
    line = next(ln for ln in summary_lines(data) if ln.strip().startswith("FP32 islands:"))
    listed = sum(int(n) for n in re.findall(r"\((\d+)(?: of \d+ nodes: [^)]*)?\)", line))
    assert listed == data["precisions"]["fp32"]["nodes"], line
    assert "/encoder/layer.0/attention/self (1 of 28 nodes: op:Softmax)" in line, line


def test_a_scope_kept_whole_is_listed_by_its_fp32_nodes():
    from pytest_trt.ledger.render import island_scopes

    islands = island_scopes(_ledger("*/LayerNorm/*"))
    assert islands == [f"/encoder/layer.{i}/{where}/LayerNorm (9)" for i in (0, 1)
                       for where in ("attention/output", "output")]
