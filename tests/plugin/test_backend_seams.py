"""The seams between the pipeline and a backend are contracts, not names (issue 27): what a third-party
backend states about itself (its timing's label, the backend that built an engine, the cache it came
through, its evidence) is what the ledger, the probes and the reports use; and the session's state the
reports read is public. Each test fails where a caller decided by name or read a private attribute.

The third-party backends here are registered with :func:`~pytest_trt.backends.register_backend` (the API
the ``pytest_trt_backends`` hook calls, tests/plugin/test_extension_points.py) and wrap ``emulate``, as
the ``emu2`` example does; the timed one's times are SYNTHETIC (declared here): no GPU is needed.
"""

from __future__ import annotations

import json

import pytest
from encoder_suite import ENCODER

from pytest_trt.backends import Backend, get_backend, register_backend, unregister_backend
from pytest_trt.backends.base import BuildConfig
from pytest_trt.backends.emulate import DISCLAIMER as EMULATE_DISCLAIMER
from pytest_trt.backends.emulate import EmulatedEngine
from pytest_trt.cache import ArtifactCache
from pytest_trt.cli import main
from pytest_trt.errors import BackendContractError
from pytest_trt.layers.timing import LayerProfile
from pytest_trt.ledger import ledger_of
from pytest_trt.ledger.islands import island_costs
from pytest_trt.model.load import load_model
from pytest_trt.plan.policy import PrecisionPolicy
from pytest_trt.run.session import TrtSession
from pytest_trt.run.settings import Settings
from pytest_trt.verify.precision import assert_precision
from pytest_trt.verify.probes import probe_precision

TIMED_LABEL = "emu-timed wall clock per layer (synthetic), not TensorRT"


class TimedEngine(EmulatedEngine):
    """An emulated engine that times its own layers and says so. Its profile names the ``tensorrt``
    source, as a plugin copying TensorRT's timing code would: the label must still be its own."""

    backend_name = "emu-timed"
    #: None: the Engine default ("<name> engine's own per-layer timing, not TensorRT")
    stated_label: str | None = TIMED_LABEL

    @property
    def timing_label(self):
        return self.stated_label or super().timing_label

    def layer_timing_reason(self):
        return None

    def time_layers(self, feeds, *, warmup=10, iterations=50, per_layer=True):
        return LayerProfile(source="tensorrt", unit="engine layer", warmup=warmup, iterations=iterations,
                            samples={}, end_to_end_ms=[1.0] * iterations)


class TimedBackend(Backend):
    """A third-party backend wrapping ``emulate`` whose engines time their layers."""

    name = "emu-timed"
    disclaimer = "CPU emulation timed by a plugin, not TensorRT"
    label: str | None = TIMED_LABEL

    def __init__(self):
        self.inner = get_backend("emulate")

    def unavailable_reason(self):
        return self.inner.unavailable_reason()

    def versions(self):
        return {"emu-timed": "0.1", **self.inner.versions()}

    def layer_timing_reason(self):
        return None

    def build(self, plan, config, cache, *, rebuild=False):
        inner = self.inner.build(plan, config, cache, rebuild=rebuild)
        engine = TimedEngine(inner.plan, inner.config, inner.build_info, inner.onnx_bytes)
        engine.stated_label = self.label
        return engine


@pytest.fixture
def timed():
    register_backend("emu-timed", TimedBackend)
    try:
        yield get_backend("emu-timed")
    finally:
        unregister_backend("emu-timed")


@pytest.fixture(scope="module")
def encoder():
    return load_model(ENCODER)


FEEDS: dict = {}  # the synthetic timing runs nothing


# -- 1. a backend's layer times carry its own label, never TensorRT's -----------------------------------
def test_a_plugin_engines_own_timing_is_labelled_as_it_states(timed, encoder):
    engine = timed.build(PrecisionPolicy("fp16").resolve(encoder), BuildConfig(), None)
    ledger = ledger_of(engine, FEEDS, timing="engine", iterations=3)
    assert ledger.time_label == TIMED_LABEL and ledger.to_json()["timing"]["label"] == TIMED_LABEL
    assert "TensorRT IProfiler" not in json.dumps(ledger.to_json())


def test_a_plugin_engine_that_states_no_label_is_not_labelled_tensorrt(timed, encoder):
    timed.label = None
    engine = timed.build(PrecisionPolicy("fp16").resolve(encoder), BuildConfig(), None)
    assert engine.timing_label == "emu-timed engine's own per-layer timing, not TensorRT"
    assert ledger_of(engine, FEEDS, timing="engine", iterations=3).time_label == engine.timing_label


def test_island_costs_on_a_plugin_backend_carry_its_label(timed, encoder):
    costs = island_costs(encoder, PrecisionPolicy("fp16"), ["*/LayerNorm/*", "op:Softmax"], FEEDS, backend=timed,
                         config=BuildConfig(), timing="engine", iterations=3)
    assert costs.measured and costs.label == TIMED_LABEL and costs.to_json()["label"] == TIMED_LABEL
    assert f"what each FP32 island costs ({TIMED_LABEL};" in costs.lines()[0]
    assert "TensorRT" not in costs.lines()[0].replace(", not TensorRT", "")


# -- 2. probes build with the engine's own backend and cache (public Engine contract) -----------------
class Unregistered(Backend):
    """A backend instance that is in no registry (built directly by its user): its engines say who built them."""

    name = "emu-private"
    disclaimer = "private emulation, not TensorRT"
    evidence = "emulated"

    def __init__(self):
        self.inner = get_backend("emulate")
        self.builds = 0

    def unavailable_reason(self):
        return None

    def versions(self):
        return self.inner.versions()

    def build(self, plan, config, cache, *, rebuild=False):
        self.builds += 1
        engine = self.inner.build(plan, config, cache, rebuild=rebuild)
        engine.backend_name = self.name
        engine.backend = self
        engine.layer_evidence = self.evidence
        return engine


def test_probes_build_with_the_backend_and_cache_the_engine_states(encoder, tmp_path):
    backend = Unregistered()
    cache = ArtifactCache(tmp_path / "cache")
    engine = backend.build(PrecisionPolicy("fp16").resolve(encoder), BuildConfig(), cache)
    assert engine.backend is backend and engine.artifact_cache is cache
    results = probe_precision(engine, "*/LayerNorm/*")  # not `get_backend("emu-private")`: unknown there
    assert backend.builds == 1 + len(results) and all(r.backend == "emu-private" and r.emulated for r in results)
    assert len([e for e in cache.events() if e.get("event") == "build"]) == 1 + len(results)


# -- 3. evidence is one set of values; an unknown one is an error naming the backend ------------------
def test_an_unknown_layer_evidence_is_an_error_naming_the_backend(encoder):
    backend = Unregistered()
    backend.evidence = "measured"
    engine = backend.build(PrecisionPolicy("fp16").resolve(encoder), BuildConfig(), None)
    with pytest.raises(BackendContractError, match="backend 'emu-private' states layer_evidence 'measured'"):
        probe_precision(engine, "*/LayerNorm/*")


def test_an_unknown_node_evidence_is_never_counted(encoder):
    report = get_backend("emulate").build(PrecisionPolicy("fp16").resolve(encoder), BuildConfig(), None).layers()
    report.backend = "emu2"
    next(o for o in report.nodes.values() if o.evidence is not None).evidence = "observed-ish"
    with pytest.raises(BackendContractError, match="backend 'emu2' states evidence of node .* 'observed-ish'"):
        report.evidence_counts()


class NodesSay(Unregistered):
    """An emulating plugin whose layer report states ``node_evidence`` for every compute node."""

    node_evidence = "seen"

    def build(self, plan, config, cache, *, rebuild=False):
        engine = super().build(plan, config, cache, rebuild=rebuild)
        said, layers = self.node_evidence, engine.layers

        def stated_layers():
            report = layers()
            for o in report.nodes.values():
                if o.status != "fixed":
                    o.evidence = said
            return report

        engine.layers = stated_layers
        return engine


@pytest.mark.parametrize("stated", ["Observed", "measured"])
def test_assert_precision_refuses_an_unknown_layer_evidence(encoder, stated):
    """Before, only the probe paths checked ``layer_evidence``: assert_precision passed."""
    backend = Unregistered()
    backend.evidence = stated
    engine = backend.build(PrecisionPolicy("fp16").resolve(encoder), BuildConfig(), None)
    with pytest.raises(BackendContractError, match=f"backend 'emu-private' states layer_evidence '{stated}', "
                                                   f"which is none of observed, emulated"):
        assert_precision(engine, "*/LayerNorm/*", "fp32")


def test_assert_precision_and_the_ledger_refuse_an_unknown_node_evidence(encoder):
    """Before, a node saying "seen" was counted as unverifiable and the JSON kept "seen"."""
    engine = NodesSay().build(PrecisionPolicy("fp16").resolve(encoder), BuildConfig(), None)
    what = "backend 'emu-private' states evidence of node .* 'seen', which is none of observed, inferred"
    with pytest.raises(BackendContractError, match=what):
        assert_precision(engine, "*/LayerNorm/*", "fp32")
    with pytest.raises(BackendContractError, match=what):
        assert_precision(engine.layers(), "*/LayerNorm/*", "fp32", plan=engine.plan)  # a report given as is
    with pytest.raises(BackendContractError, match=what):
        ledger_of(engine, FEEDS, timing="off")


def test_an_emulated_report_that_claims_observed_nodes_is_refused(encoder):
    """An engine stating ``emulated`` whose nodes say ``observed`` was counted "N observed (emulated)"."""
    backend = NodesSay()
    backend.node_evidence = "observed"
    engine = backend.build(PrecisionPolicy("fp16").resolve(encoder), BuildConfig(), None)
    with pytest.raises(BackendContractError, match="'emu-private' states layer_evidence 'emulated' but its layer "
                                                   "report says 'observed'"):
        assert_precision(engine, "*/LayerNorm/*", "fp32")


def test_a_backend_that_states_no_layer_evidence_is_told_the_default_not_that_it_stated_it(encoder):
    """review4 row 3: a backend written against 0.1.0 (no ``layer_evidence``: the base default) whose
    layers() reads a real engine was told it "states layer_evidence 'emulated'": it stated nothing."""
    from pytest_trt.backends.base import Engine

    backend = NodesSay()
    backend.node_evidence = "observed"
    engine = backend.build(PrecisionPolicy("fp16").resolve(encoder), BuildConfig(), None)
    del engine.layer_evidence  # set by Unregistered.build; the class's too, as if the backend never set it:
    engine.__class__ = type("PluginEngine010", (type(engine),), {"layer_evidence": Engine.layer_evidence})
    with pytest.raises(BackendContractError) as err:
        assert_precision(engine, "*/LayerNorm/*", "fp32")
    assert "'emu-private' does not state layer_evidence; the default is 'emulated'" in str(err.value)
    assert "set layer_evidence = 'observed' on its Engine if its layers are read from a real engine" in str(err.value)
    assert "states layer_evidence" not in str(err.value)


# -- 4. `pytest-trt layers` shows the disclaimer, text and JSON -----------------------------------------
@pytest.mark.parametrize("ledger", [(), ("--ledger", "--timing", "off")], ids=["report", "ledger"])
def test_layers_shows_the_backends_disclaimer(capsys, tmp_path, ledger):
    base = ["layers", str(ENCODER), "--fp16", "--backend", "emulate", f"--cache-dir={tmp_path / 'cache'}", *ledger]
    assert main(base) == 0
    assert f"(backend emulate: {EMULATE_DISCLAIMER})" in capsys.readouterr().out.splitlines()[1]
    assert main([*base, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["backend_disclaimer"] == EMULATE_DISCLAIMER


# -- 5. the session's state the reports read is public and read-only -----------------------------------
def test_the_session_exposes_what_the_reports_read(tmp_path):
    session = TrtSession(settings=Settings(rootdir=tmp_path, cache_dir=tmp_path / "cache"),
                         backend=get_backend("emulate"), backend_reason="test")
    assert session.opened_cache is None and session.opened_remote is None  # asking opens nothing
    assert not (tmp_path / "cache").exists()
    cache = session.cache
    assert session.opened_cache is cache
    first = session.fingerprint
    assert first["backend"] == "emulate" and session.fingerprint is first  # computed once (it asks git)
    with pytest.raises(AttributeError):
        session.opened_cache = None  # type: ignore[misc]
