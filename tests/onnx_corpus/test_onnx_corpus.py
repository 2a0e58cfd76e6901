"""Tier ``onnx_corpus``: every model of ONNX's own conformance corpus with float tensors,
planned in FP16 and BF16 and realized (``conformance.py`` says what is checked).

What CI runs: the whole corpus (``PYTEST_TRT_ONNX_CORPUS=full``, the default; about 80 s
of CPU for the onnx 1.23.2 corpus: generating the ~1,900 node models takes about 20 s of
it). ``PYTEST_TRT_ONNX_CORPUS=sample`` runs the deterministic sample
:data:`SAMPLE_SIZE` node models drawn by ``onnx_corpus.sample(SAMPLE_SIZE, seed=0)`` plus
every file-family model, for a quick local check. The expected counts are checked in
(``expected_counts.json``), keyed by the onnx and onnxruntime versions, which the tier
pins (tox env ``onnx_corpus``, ``.ci/run``): a new onnx release changes the corpus (and a
new ONNX Runtime what runs), and must come with new counts, not a red CI.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import onnx
import pytest
from conformance import refusal_reasons, run_corpus, summarize, table
from onnx_corpus import FAMILIES, ONNX_VERSION, case_ids, iter_corpus, sample

pytestmark = pytest.mark.onnx_corpus

EXPECTED = Path(__file__).with_name("expected_counts.json")
MODE_ENV = "PYTEST_TRT_ONNX_CORPUS"
SAMPLE_SIZE = 300


def _mode() -> str:
    mode = os.environ.get(MODE_ENV, "full")
    if mode not in ("full", "sample"):
        raise pytest.UsageError(f"{MODE_ENV}={mode!r}: use 'full' or 'sample'")
    return mode


def _ids(mode: str):
    if mode == "full":
        return None
    return sample(SAMPLE_SIZE, seed=0, families=["node"]) + case_ids([f for f in FAMILIES if f != "node"])


@pytest.fixture(scope="module")
def results():
    return run_corpus(_ids(_mode()))


def test_no_internal_error_and_every_realization_valid(results, capsys):
    """Plans resolve or are refused with a ModelError; realizations pass check_model(full_check=True);
    ONNX Runtime loads every FP16 realization of a source it loads; emulation runs where the source
    runs; the FP32 policy is bitwise equal to the FP32 baseline."""
    with capsys.disabled():
        print(f"\n[onnx_corpus: {_mode()}]\n{table(results)}")
    counts = summarize(results)
    assert counts["internal_errors"] == 0, [r.id for r in results if r.internal]
    for p in ("fp16", "bf16"):
        bad = {k: [r.id for r in results if p in getattr(r, k)]
               for k in ("check_failures", "ort_refusals", "emulation_failures") if counts[p][k]}
        assert not bad, f"{p}: {bad}"
    assert counts["fp32_mismatch"] == 0, {r.id: r.fp32_mismatch for r in results if r.fp32_mismatch}
    # the only realization check_model rejects is one whose source it rejects too
    inherited = {r.id for r in results if r.inherited_check_failures}
    assert inherited <= {r.id for r in results if r.source_check_failure}


def test_counts_match_the_recorded_ones(results):
    recorded = json.loads(EXPECTED.read_text())
    import onnxruntime

    key = f"onnx {ONNX_VERSION}, onnxruntime {onnxruntime.__version__}, {_mode()}"
    reasons = {where: dict(sorted(c.items())) for where, c in refusal_reasons(results).items()}
    got = {"counts": summarize(results), "refusals": reasons}
    assert key in recorded, (
        f"no recorded counts for {key!r} in {EXPECTED.name}: the tier pins onnx (tox.ini, .ci/run); "
        f"for a new onnx version, review the table and record these counts:\n{json.dumps({key: got}, indent=1)}")
    assert got == recorded[key], f"counts changed; now:\n{json.dumps({key: got}, indent=1)}"


def test_refusals_are_named_model_errors(results):
    """Every refusal is a ModelError (or subclass) whose message names a tensor or node."""
    for r in results:
        for why in [r.source_refused, r.fp32_refused, *r.refused.values()]:
            if why:
                assert why.split(":")[0].endswith("Error") and ("tensor" in why or "node" in why), (r.id, why)


def test_generator_is_deterministic_and_complete():
    ids = case_ids()
    assert len(ids) == len(set(ids))
    assert ids == case_ids()
    assert sample(50, seed=3) == sample(50, seed=3) != sample(50, seed=4)
    assert {i.split("/")[0] for i in ids} == set(FAMILIES)
    light = list(iter_corpus("light"))
    assert len(light) == 9 and all(c.inputs and c.outputs and c.has_float for c in light)
    first = next(iter_corpus(ids=ids[:1]))
    onnx.checker.check_model(first.model)
    assert first.inputs is not None and first.outputs is not None
