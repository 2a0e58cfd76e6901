"""Tier ``trt_parser`` over ONNX's conformance corpus (``tests/onnx_corpus.py``, the one shared generator).

For every float model of the corpus whose source TensorRT-RTX parses, the FP16 and the BF16
plans' strongly typed realizations must parse too, with 0 failures of the planned-vs-parsed
rule; promotions (planned FP16/BF16, parsed FP32) are counted and printed, grouped by op.
Parse only (no build): building ~1,000 models x 2 does not fit the tier's 3 minutes; the
example suite and the real exports are built in ``test_parser_models.py``.

``KNOWN_GAPS`` is a strict ratchet of realizations TensorRT-RTX 1.7.1 rejects while their
source parses (measured with onnx 1.23.2): they are issue 16 item 3's to fix (branch i18, the
realization) or to plan FP32 with a reason. A gap that disappears fails this test until it
is removed from the list, so the list can only shrink; a new one fails it at once.
"""

from __future__ import annotations

import logging
import sys
import time
import warnings
from collections import Counter, defaultdict
from pathlib import Path

import pytest

pytestmark = pytest.mark.trt_parser

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: (case id, precision) -> why TensorRT-RTX 1.7.1.116 rejects the realization (onnx 1.23.2)
KNOWN_GAPS = {
    ("node/test_celu", "fp16"): "Celu: parser sees rank -1 for the realized input",
    ("node/test_celu", "bf16"): "Celu: parser sees rank -1 for the realized input",
    ("node/test_lstm_with_peepholes", "fp16"): "LSTM peepholes: Select of Half and Float",
    ("node/test_lstm_with_peepholes", "bf16"): "LSTM peepholes: Select of BFloat16 and Float",
    **{(f"node/test_gru_{v}", "bf16"): "GRU: SUB of Float and BFloat16"
       for v in ("batchwise", "bidirectional", "defaults", "reverse", "seq_length", "with_initial_bias")},
    ("node/test_hardswish", "bf16"): "HardSwish: only FLOAT, HALF or INT8 input in this parser",
    ("node/test_mish", "bf16"): "Mish: only FLOAT32 or FLOAT16 input in this parser",
    **{(f"node/test_{v}", "bf16"): "LpNormalization: only float/half in this parser"
       for v in ("l1normalization_axis_0", "l1normalization_axis_1", "l1normalization_axis_last",
                 "l2normalization_axis_0", "l2normalization_axis_1", "lpnormalization_default")},
    ("node/test_lppool_2d_same_upper", "bf16"): "LpPool: only float/half in this parser",
    ("node/test_lppool_2d_strides", "bf16"): "LpPool: only float/half in this parser",
}
KNOWN_ONNX = "1.23.2"


def test_corpus_realizations_parse_where_their_source_parses(rtx, capsys):
    from onnx_corpus import ONNX_VERSION, iter_corpus

    from pytest_trt.backends.tensorrt.parser_check import check_parser, source_parse_error
    from pytest_trt.errors import PytestTrtError
    from pytest_trt.model.load import load_model
    from pytest_trt.plan.policy import PrecisionPolicy

    start = time.perf_counter()
    stats: Counter = Counter()
    promoted: dict[str, dict[str, set]] = {"fp16": defaultdict(set), "bf16": defaultdict(set)}
    failures: dict = {}
    logging.getLogger("pytest_trt.tensorrt").setLevel(logging.CRITICAL)  # the parser's own errors: thousands
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for case in iter_corpus(float_only=True):
            stats["float models"] += 1
            try:
                model = load_model(case.model)
            except PytestTrtError:
                stats["not loadable"] += 1
                continue
            plans = {}
            for precision in ("fp16", "bf16"):
                try:
                    plans[precision] = PrecisionPolicy(default=precision).resolve(model)
                except PytestTrtError:
                    stats[f"refused by the plan ({precision})"] += 1
            if not plans:
                continue
            if source_parse_error(next(iter(plans.values())), rtx) is not None:
                stats["source rejected by TensorRT-RTX"] += 1
                continue
            stats["source parses"] += 1
            for precision, plan in plans.items():
                check = check_parser(plan, build=False)
                stats[f"{precision} checked"] += 1
                for p in check.promotions:
                    promoted[precision][p["op_type"]].add(case.id)
                stats[f"{precision} promoted nodes"] += len(check.promotions)
                if not check.passed:
                    failures[(case.id, precision)] = check
    seconds = time.perf_counter() - start
    with capsys.disabled():
        print(f"\nONNX corpus (onnx {ONNX_VERSION}) through {rtx.label}'s parser in {seconds:.0f}s: {dict(stats)}")
        for precision, by_op in promoted.items():
            models = len(set().union(*by_op.values())) if by_op else 0
            print(f"  promotions {precision} (planned {precision}, parsed fp32): {stats[f'{precision} promoted nodes']}"
                  f" node(s) in {models} model(s); by op: "
                  + ", ".join(f"{op} {len(ids)}" for op, ids in sorted(by_op.items())))
        print(f"  realizations rejected while the source parses: {len(failures)} "
              f"({len(set(failures) & set(KNOWN_GAPS))} known gaps)")
    assert stats["source parses"] > 0 and stats["fp16 checked"] > 0 and stats["bf16 checked"] > 0
    lowered = [c for c in failures.values() if c.counts()["lower"]]
    assert not lowered, "nodes parsed lower than planned:\n" + "\n".join(c.message() for c in lowered)
    new = [c for k, c in failures.items() if k not in KNOWN_GAPS]
    assert not new, "realizations rejected while their source parses:\n\n" + "\n\n".join(c.message() for c in new)
    if ONNX_VERSION == KNOWN_ONNX:
        fixed = sorted(set(KNOWN_GAPS) - set(failures))
        assert not fixed, f"these realizations parse now: remove them from KNOWN_GAPS: {fixed}"
