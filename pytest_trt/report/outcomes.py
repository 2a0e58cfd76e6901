"""What pytest made of a trt test: its outcome, its message, and what an ``xfail`` means here.

Every trt test reaches the reports (JSON, HTML, JUnit, terminal) with pytest's own
outcome, including tests that failed before recording anything (a usage error, an
``expect_fp32`` violation) and expected failures. A negative control, a test marked
``xfail`` because its configuration *must* fail, is only worth something when it failed
with pytest-trt's own verdict (:class:`~pytest_trt.errors.AccuracyError` or
:class:`~pytest_trt.errors.PrecisionError`); anything else (a usage error, a crash)
means it tested nothing. The recommended form says so to pytest too::

    @pytest.mark.xfail(strict=True, raises=AccuracyError, reason="LayerNorm in FP16 overflows")

Outcomes: ``passed``, ``failed``, ``error`` (setup or teardown failed), ``skipped``,
``xfailed``, ``xpassed``; a strict xfail that passed is ``failed`` with
``expected_failure.verdict == "missed"``, as pytest counts it.

A trt test that *passed without checking anything* (:func:`checked_nothing`: it recorded no
check, precision assertion, parser check, locate or suggest result or ledger, and built no engine
on a backend whose build is a check, :attr:`Backend.build_is_a_check
<pytest_trt.backends.base.Backend.build_is_a_check>`) is a pytest pass that says nothing about the
engine: the reports word it ``passed, but nothing was checked`` and give it the ``warn`` tone. On
``emulate`` building means writing an ONNX graph, so a test that only built or ran its engine
there compared nothing.

A trt test that passed although one of its checks failed (:func:`caught_in_test`: the failure was
caught inside the test, by ``pytest.raises(AccuracyError)`` as a negative control or by a
``try``/``except`` that swallowed it) is worded ``passed, a failed check was caught by the test``
(``warn`` tone): its failed outputs and precision checks are counted with the caught ones
(``*_caught``), as an xfail negative control's are, never as failures of a green run. The same holds
for a trt test that recorded a failed check and then *skipped* (``pytest.skip()`` in the ``except``)
or *xpassed* (a non-strict ``xfail`` whose body swallowed the failure): ``skipped after a failed
check`` / ``xpassed after a failed check``, never "tested nothing" (:data:`CAUGHT_VERDICTS`). Under
``--trt-require-run`` a skipped trt test fails, so it is ``failed`` and none of these.
"""

from __future__ import annotations

from typing import Any

from ..core.records import AccuracyRecord, EngineRecord, ParserRecord, PrecisionRecord, as_record
from ..errors import AccuracyError, PrecisionError, PytestTrtError

#: longest message kept per test (the full traceback stays in pytest's own output and JUnit)
MESSAGE_CHARS = 4000

#: expected_failure.verdict values and how the reports call them
VERDICT_TEXT = {
    "caught": "expected failure, caught",
    "not_tested": "expected failure, but nothing was tested",
    "missed": "negative control missed (XPASS strict)",
    "passed": "expected failure passed (XPASS)",
}


#: the verdict text of a test that passed without checking anything
NOTHING_CHECKED = "passed, but nothing was checked"
#: the verdict text of a test that passed although a check of it failed (caught inside the test)
CAUGHT_IN_TEST = "passed, a failed check was caught by the test"
#: a trt test that recorded a failed check and did not fail, by pytest's outcome: the test caught the failure
#: itself (a strict xfail negative control that failed is ``xfailed`` and counted as a caught control instead)
CAUGHT_VERDICTS = {"passed": CAUGHT_IN_TEST, "skipped": "skipped after a failed check",
                   "xpassed": "xpassed after a failed check"}
#: record kinds that are no check: a CUDA baseline's CPU fallback is a note about the reference; a
#: realized map (saved runs) is what ran, with no verdict
_NOT_A_CHECK = frozenset({"baseline_fallback", "realized"})


def checked_something(records) -> bool:
    """Whether ``records`` (:class:`~pytest_trt.core.records.Record` objects or their JSON forms) hold
    evidence of a check: an accuracy, precision, parser, layerwise or ledger record, or an engine
    built or loaded by a backend whose build is a check (``EngineRecord.build_is_a_check``, from
    :attr:`Backend.build_is_a_check <pytest_trt.backends.base.Backend.build_is_a_check>`: a real
    TensorRT builder can reject the network), or by ``trt.suggest()`` (whose search compares). Not a baseline fallback note, a realized map, or an
    engine of a backend whose build cannot fail for a real reason (``emulate``: an ONNX graph)."""
    for record in records or ():
        kind = record.get("kind") if isinstance(record, dict) else getattr(record, "kind", None)
        if kind in _NOT_A_CHECK:
            continue
        if kind == EngineRecord.kind:
            get = record.get if isinstance(record, dict) else (lambda key, r=record: getattr(r, key, None))
            # an engine trt.suggest() built stands for its search, which compares (locate records its own)
            if not (get("build_is_a_check") or get("via") == "suggest"):
                continue
        return True
    return False


def built_only(entry: dict) -> bool:
    """A test that checked nothing but built or ran an engine (on a backend whose build is no check)."""
    return checked_nothing(entry) and any(
        (r.get("kind") if isinstance(r, dict) else getattr(r, "kind", None)) == EngineRecord.kind
        for r in entry.get("records") or ())


def precision_passed(rec: PrecisionRecord) -> bool:
    """A precision record's verdict: its own ``passed`` when set (TrtCase records every verdict); else
    the report's, else passed (a record without one was appended after the check returned)."""
    if rec.passed is not None:
        return bool(rec.passed)
    report = rec.report
    if isinstance(report, dict) and "passed" in report:
        return bool(report["passed"])
    return True


def failed_check(record) -> bool:
    """Whether ``record`` (a record or its JSON form) is a check whose verdict is a failure: an accuracy
    check, a precision assertion or a parser check that failed (``no_check`` outputs carry no verdict)."""
    rec = as_record(record)
    if isinstance(rec, (AccuracyRecord, ParserRecord)):
        return not rec.passed
    if isinstance(rec, PrecisionRecord):
        return not precision_passed(rec)
    return False


def caught_outcome(outcome, expected_failure) -> bool:
    """Whether a test with this outcome and ``expected_failure`` did not fail although a check of it may
    have: ``passed`` (no xfail verdict), ``skipped``, or ``xpassed`` (a non-strict xfail that passed)."""
    verdict = (expected_failure or {}).get("verdict")
    return outcome in CAUGHT_VERDICTS and verdict in (None, "passed")


def caught_in_test(entry: dict) -> bool:
    """A trt test that did not fail (pytest's ``passed``, ``skipped`` or ``xpassed``) although it recorded
    a failed check: the failure was caught inside the test (``pytest.raises(AccuracyError)``, or
    ``try``/``except``, then perhaps ``pytest.skip()``). The reports word it by outcome
    (:data:`CAUGHT_VERDICTS`) and count its failures with the caught ones."""
    if not caught_outcome(entry.get("outcome"), entry.get("expected_failure")):
        return False
    return any(failed_check(r) for r in entry.get("records") or ())


def checked_nothing(entry: dict) -> bool:
    """A trt test that passed (pytest's ``passed``) without recording any check or engine: a green
    that tested nothing, reported apart (terminal summary, JSON ``checked``, HTML, JUnit)."""
    return entry.get("outcome") == "passed" and not checked_something(entry.get("records"))


def _message(excinfo) -> str:
    value = excinfo.value
    if isinstance(value, (AccuracyError, PrecisionError, PytestTrtError)):
        text = f"{excinfo.typename}: {value}"
    else:
        text = excinfo.exconly()
    notes = "".join(f"\n{note}" for note in getattr(value, "__notes__", ()))
    text += notes
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 3] + "..."


def _xfail_marker(item) -> dict[str, Any] | None:
    mark = item.get_closest_marker("xfail")
    if mark is None:
        return None
    strict = mark.kwargs.get("strict", item.config.getini("xfail_strict"))
    raises = mark.kwargs.get("raises")
    if raises is not None:
        raises = [r.__name__ for r in (raises if isinstance(raises, tuple) else (raises,))]
    reason = mark.kwargs.get("reason", mark.args[1] if len(mark.args) > 1 else "")
    return {"reason": str(reason or ""), "strict": bool(strict), "raises": raises}


def classify(item, call, report) -> dict[str, Any] | None:
    """The outcome facts of one phase's report of a trt test, or None when this phase decides nothing.

    The setup phase decides when it did not pass (error, skip, xfail(run=False)); the
    call phase always; the teardown phase when it failed (an error after the test).
    """
    when = report.when
    if when == "setup" and report.passed:
        return None
    if when == "teardown" and not report.failed:
        return None
    wasxfail = hasattr(report, "wasxfail")
    longrepr = report.longrepr
    facts: dict[str, Any] = {"message": None, "expected_failure": None, "outcome": _outcome(report, wasxfail)}
    if facts["outcome"] == "skipped" and isinstance(longrepr, tuple) and len(longrepr) == 3:
        facts["message"] = str(longrepr[2])
    excinfo = getattr(call, "excinfo", None)
    if excinfo is not None and facts["outcome"] in ("failed", "error", "xfailed"):
        facts["message"] = _message(excinfo)
    elif facts["outcome"] in ("failed", "error") and report.longrepr is not None:
        # failed by the plugin after a passing body (--trt-parser-check, --trt-require-run): its longrepr says why
        facts["message"] = str(report.longrepr)
    xfail = _xfail_marker(item)
    if xfail is not None or wasxfail:
        facts["expected_failure"] = _expected_failure(xfail, report, excinfo, facts)
    return facts


def _outcome(report, wasxfail: bool) -> str:
    """pytest's outcome of a deciding phase: passed, failed, error, skipped, xfailed or xpassed."""
    if report.skipped:
        return "xfailed" if wasxfail else "skipped"
    if report.passed:
        return "xpassed" if wasxfail else "passed"
    return "error" if report.when != "call" else "failed"


def _expected_failure(xfail: dict[str, Any] | None, report, excinfo, facts: dict[str, Any]) -> dict[str, Any] | None:
    """The ``expected_failure`` facts of an xfail-marked test (None: it failed otherwise, a plain
    failure); a strict xfail that passed also sets ``facts["message"]``."""
    info: dict[str, Any] = dict(xfail or {"reason": "", "strict": False, "raises": None})
    if getattr(report, "wasxfail", None):
        info["reason"] = str(report.wasxfail).removeprefix("reason: ")
    longrepr = report.longrepr
    if facts["outcome"] == "xfailed":
        caught = excinfo is not None and excinfo.errisinstance((AccuracyError, PrecisionError))
        info["raised"] = excinfo.typename if excinfo is not None else None
        info["verdict"] = "caught" if caught else "not_tested"
    elif facts["outcome"] == "xpassed":
        info["raised"] = None
        info["verdict"] = "passed"
    elif facts["outcome"] == "failed" and isinstance(longrepr, str) and longrepr.startswith("[XPASS(strict)]"):
        info["raised"] = None
        info["verdict"] = "missed"
        facts["message"] = longrepr
    else:
        return None  # failed otherwise (e.g. raised what raises= does not name): a plain failure
    return info


def verdict_text(entry: dict) -> str:
    """A test's outcome as the reports word it (e.g. ``expected failure, caught``)."""
    if caught_in_test(entry):
        return CAUGHT_VERDICTS[str(entry.get("outcome"))]
    xf = entry.get("expected_failure") or {}
    if xf.get("verdict"):
        return VERDICT_TEXT[xf["verdict"]]
    if checked_nothing(entry):
        return NOTHING_CHECKED
    return str(entry.get("outcome") or "?")


def tone(entry: dict) -> str:
    """``good``, ``bad``, ``neutral`` (a negative control that caught its failure) or ``warn``
    (tested nothing: skipped, an expected failure for another reason, or passed without checking
    anything; or passed although a check failed inside it, caught by the test)."""
    outcome = entry.get("outcome")
    xf = entry.get("expected_failure") or {}
    if xf.get("verdict") == "caught":
        return "neutral"
    if xf.get("verdict") in ("not_tested", "passed"):
        return "warn"
    if outcome in ("failed", "error"):
        return "bad"
    if outcome == "skipped" or checked_nothing(entry) or caught_in_test(entry):
        return "warn"
    return "good"


def junit_outcome_properties(facts: dict) -> list[tuple[str, str]]:
    """``trt_outcome`` (and ``trt_verdict``/``trt_message`` where they say more) for JUnit XML."""
    props = [("trt_outcome", str(facts.get("outcome")))]
    if facts.get("expected_failure") or checked_nothing(facts) or caught_in_test(facts):
        props.append(("trt_verdict", verdict_text(facts)))
    return props


__all__ = ["CAUGHT_IN_TEST", "CAUGHT_VERDICTS", "caught_outcome", "NOTHING_CHECKED", "VERDICT_TEXT", "built_only", "caught_in_test", "checked_nothing",
           "checked_something", "classify", "failed_check", "junit_outcome_properties", "precision_passed", "tone",
           "verdict_text"]
