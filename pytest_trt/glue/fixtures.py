"""pytest fixtures of pytest-trt.

* ``trt``: a :class:`~pytest_trt.glue.case.TrtCase` configured by the ``trt`` marker.
* ``trt_engine``: the engine of the ``trt`` case (built once per content key, cached).
* ``trt_build``: factory ``trt_build(model, policy=None, *, keep_fp32=(), precision=None, typing=None)``.
* ``trt_baseline``: factory ``trt_baseline(model, feeds)`` -> FP32 ONNX Runtime outputs (cached).
* ``trt_session``: the run-wide :class:`~pytest_trt.run.session.TrtSession`.
"""

from __future__ import annotations

import pytest

from ..core.dtypes import normalize_precision
from ..core.records import ParserRecord
from ..errors import BackendUnavailable, PytestTrtError, UsageError
from ..plan.policy import PrecisionPolicy
from .activation import CASE_KEY, RECORDS_KEY, activate, current_session, item_records


def _session(config):
    if config.pluginmanager.get_plugin("pytest-trt-results") is None:
        raise UsageError("pytest-trt is not configured (was the plugin disabled with -p no:trt?)")
    session = current_session(config)
    if session is None:  # e.g. request.getfixturevalue("trt_session") in a test that is no trt test
        session = activate(config)
    return session


@pytest.fixture(scope="session")
def trt_session(pytestconfig):
    """The run-wide TrtSession: settings, backend, artifact cache."""
    return _session(pytestconfig)


@pytest.fixture
def trt(request, trt_session):
    """The test's model under its precision policy: ``trt.check()``, ``trt.assert_precision(...)``, ...

    Configured with ``@pytest.mark.trt(model=..., keep_fp32=[...], val_range={...}, ...)``.
    """
    from .case import TrtCase  # load path: imported once in use (the pipeline: numpy, onnx, ...)

    case = TrtCase(trt_session, request.node)
    case.records = item_records(request.node)
    request.node.stash[CASE_KEY] = case  # --trt-ledger: its ledger after the test body (plugin)
    return case


@pytest.fixture
def trt_engine(trt):
    """The engine of the test's ``trt`` case (skips with the reason only under ``requires=``)."""
    return trt.engine


@pytest.fixture
def trt_build(request, trt_session):
    """Factory: ``trt_build(model, policy=None, *, keep_fp32=(), precision=None, typing=None) -> Engine``.

    ``precision`` defaults to the session's (``--trt-fp16``/``--trt-bf16``, else FP32). Without a
    ``policy``, the session's ``--trt-keep-fp32`` patterns that match the model apply as in a ``trt``
    test; a ``policy`` given is taken as it is.
    """
    records = item_records(request.node)

    def build(model, policy=None, *, keep_fp32=(), rules=(), precision=None, typing=None, tf32=None, profiles=None):
        loaded = trt_session.model(model)
        if policy is None:
            default = normalize_precision(precision) if precision else trt_session.settings.precision
            keep = trt_session.keep_fp32_with_session_patterns(loaded, (keep_fp32,) if isinstance(keep_fp32, str)
                                                               else keep_fp32)
            policy = PrecisionPolicy(default=default, keep_fp32=keep, rules=tuple(rules))
        plan = trt_session.plan(loaded, policy)
        config = trt_session.build_config(typing=typing, tf32=tf32, profiles=profiles)
        reason = trt_session.backend.supports(plan, config)
        if reason:
            raise UsageError(f"trt_build: {trt_session.backend.name} cannot build {loaded.label} "
                             f"[{plan.policy.describe()}] as asked: {reason}")
        engine, event = trt_session.engine(plan, config)
        records.append(event.to_record())
        if trt_session.settings.parser_check != "off":  # --trt-parser-check: judged after the test body
            records.append(ParserRecord.from_check(trt_session.parser_check(plan, config)))
        return engine

    return build


@pytest.fixture
def trt_baseline(trt_session):
    """Factory: ``trt_baseline(model, feeds) -> {output: array}``, FP32 ONNX Runtime, cached."""

    def baseline(model, feeds):
        return trt_session.baseline(trt_session.model(model), feeds)

    return baseline


__all__ = ["trt", "trt_engine", "trt_build", "trt_baseline", "trt_session", "RECORDS_KEY",
           "BackendUnavailable", "PytestTrtError"]
