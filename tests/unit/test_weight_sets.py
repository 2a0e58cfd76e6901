"""Weight sets shared by every policy, weights bound to ONNX Runtime, exports, pruning together (issue 29)."""

from __future__ import annotations

import copy

import numpy as np
import onnx
import pytest

import pytest_trt.locate.divergence as layerwise
import pytest_trt.locate.segments as segments
from pytest_trt.backends import get_backend
from pytest_trt.backends.base import BuildConfig
from pytest_trt.cache import ArtifactCache
from pytest_trt.compare import compare_outputs
from pytest_trt.core import runstate
from pytest_trt.inputs import make_feeds
from pytest_trt.model import load_model
from pytest_trt.model.big_models import write_decoder
from pytest_trt.model.weights import set_file_name
from pytest_trt.plan.policy import PrecisionPolicy
from pytest_trt.realize import realize_emulation, realize_strong
from pytest_trt.realize.weight_sets import REFS_KEY, WEIGHTS_KIND, read_refs, save_with_weights
from pytest_trt.reference.baseline import fp32_baseline, reference_outputs


@pytest.fixture(autouse=True)
def fresh_run_state():
    with runstate.scoped():
        yield


@pytest.fixture
def decoder(tmp_path):
    return write_decoder(tmp_path / "m" / "decoder.onnx", layers=2, hidden=128, intermediate=256, seq=4)


@pytest.fixture
def inline(decoder):
    """The same model with every weight inside the proto (the path small models take)."""
    return load_model(onnx.load(str(decoder.path)))


def _cache_bytes(cache: ArtifactCache) -> int:
    return sum(e.size_bytes for e in cache.entries())


def test_realizations_refer_to_weights_instead_of_holding_them(decoder):
    model = load_model(decoder.path)
    plan = PrecisionPolicy("fp16", keep_fp32=("*/input_layernorm/*",)).resolve(model)
    strong = realize_strong(plan)
    refs = read_refs(strong)
    assert refs and all(s == "fp16" for _, s in refs.values())
    assert strong.ByteSize() < 64 << 10  # the graph alone: 0.8 MB of weights stay out of it
    for t in strong.graph.initializer:
        if t.name in refs:
            info = {e.key: e.value for e in t.external_data}
            assert info["location"] == set_file_name("fp16") and int(info["offset"]) % 65536 == 0
    emulation = realize_emulation(plan)
    assert {t.name: t.data_type for t in emulation.graph.initializer if t.name in refs} == dict.fromkeys(refs, 1)
    assert emulation.ByteSize() < 64 << 10 and dict(read_refs(emulation)) == refs


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_the_big_path_computes_what_the_inline_path_computes(decoder, inline, tmp_path, precision):
    model = load_model(decoder.path)
    feeds = make_feeds(model)
    cache = ArtifactCache(tmp_path / "cache")
    emulate = get_backend("emulate")
    outputs = {}
    for name, m in (("big", model), ("inline", inline)):
        plan = PrecisionPolicy(precision).resolve(m)
        engine = emulate.build(plan, BuildConfig(), cache)
        outputs[name] = (engine.run(feeds), fp32_baseline(m, feeds, cache=cache))
    assert model.sha256 == inline.sha256
    np.testing.assert_allclose(outputs["big"][0]["last_hidden_state"], outputs["inline"][0]["last_hidden_state"],
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outputs["big"][1]["last_hidden_state"], outputs["inline"][1]["last_hidden_state"],
                               rtol=1e-5, atol=1e-6)
    assert compare_outputs(outputs["big"][0], outputs["big"][1], precision=precision).passed


def test_policies_share_one_weight_set_and_add_only_their_graph(decoder, tmp_path):
    model = load_model(decoder.path)
    cache = ArtifactCache(tmp_path / "cache")
    emulate = get_backend("emulate")
    first = emulate.build(PrecisionPolicy("fp16").resolve(model), BuildConfig(), cache)
    sets = [e for e in cache.entries() if e.kind == WEIGHTS_KIND]
    assert len(sets) == 1 and sets[0].size_bytes >= model.weights.external_nbytes // 2
    assert first.build_info.bytes_written >= sets[0].size_bytes  # the first FP16 realization adds the FP16 weights
    before = _cache_bytes(cache)
    second = emulate.build(PrecisionPolicy("fp16", keep_fp32=("*/input_layernorm/*",)).resolve(model),
                           BuildConfig(), cache)
    added = _cache_bytes(cache) - before
    assert len([e for e in cache.entries() if e.kind == WEIGHTS_KIND]) == 1
    assert 0 < added <= 0.05 * model.weights.external_nbytes and second.build_info.bytes_written == added
    entry = next(e for e in cache.entries() if e.kind == "emulate" and e.key == second.build_info.key)
    assert entry.manifest["uses"] == [{"kind": WEIGHTS_KIND, "key": sets[0].key}]


def test_a_weight_set_hit_is_validated_by_the_memo_once_it_vouches(decoder, tmp_path, monkeypatch):
    import pytest_trt.cache.entry as entry_mod

    model = load_model(decoder.path)
    cache = ArtifactCache(tmp_path / "cache")
    get_backend("emulate").build(PrecisionPolicy("fp16").resolve(model), BuildConfig(), cache)
    hashed = []
    real = entry_mod.hash_file
    monkeypatch.setattr(entry_mod, "hash_file", lambda p, **k: hashed.append(p.name) or real(p, **k))
    (weights,) = [e for e in cache.entries() if e.kind == WEIGHTS_KIND]
    parts = weights.manifest["parts"]
    assert cache.validate(WEIGHTS_KIND, parts) is None
    assert set_file_name("fp16") in hashed  # just written: the memo's record is racy, the set is re-read
    for record in cache.memo_dir.glob("*.json"):  # as if that validation had happened 2 s later
        import json

        data = json.loads(record.read_text())
        data["recorded_ns"] += 3_000_000_000
        record.write_text(json.dumps(data))
    hashed.clear()
    assert cache.validate(WEIGHTS_KIND, parts) is None
    assert hashed == []  # the memo vouches for every file of the set: nothing is re-read
    path = weights.path / set_file_name("fp16")
    data = bytearray(path.read_bytes())
    data[100] ^= 1
    path.write_bytes(bytes(data))  # changed: the stat no longer matches the record
    assert "checksum mismatch" in str(cache.validate(WEIGHTS_KIND, parts))


def test_pruning_removes_entries_with_the_weight_sets_they_use(decoder, tmp_path):
    model = load_model(decoder.path)
    cache = ArtifactCache(tmp_path / "cache")
    emulate = get_backend("emulate")
    for policy in (PrecisionPolicy("fp16"), PrecisionPolicy("fp16", keep_fp32=("*/input_layernorm/*",)),
                   PrecisionPolicy("bf16")):
        emulate.build(policy.resolve(model), BuildConfig(), cache)
    fp32_baseline(model, make_feeds(model), cache=cache)
    kinds = sorted(e.kind for e in cache.entries())
    assert kinds == ["baseline", "emulate", "emulate", "emulate", "weights", "weights"]
    removed = cache.prune(max_bytes=_cache_bytes(cache) - 1)  # one group must go: the oldest, the FP16 one
    assert sorted(e.kind for e in removed) == ["emulate", "emulate", "weights"]
    left = cache.entries()
    keys = {(e.kind, e.key) for e in left}
    for e in left:
        assert all((u["kind"], u["key"]) in keys for u in e.manifest.get("uses", []))
    assert len(cache.prune(older_than=float("inf"))) == 3 and cache.entries() == []


def test_exported_realization_carries_its_weights(decoder, tmp_path):
    model = load_model(decoder.path)
    plan = PrecisionPolicy("fp16").resolve(model)
    out = tmp_path / "export" / "strong.onnx"
    out.parent.mkdir()
    save_with_weights(realize_strong(plan), model, out)
    onnx.checker.check_model(str(out), full_check=True)
    loaded = onnx.load(str(out))
    assert not any(p.key == REFS_KEY for p in loaded.metadata_props)
    w = next(t for t in loaded.graph.initializer if t.name == "model.layers.0.mlp.gate_proj.weight")
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(w),
                                  model.weights.array("model.layers.0.mlp.gate_proj.weight").astype(np.float16))


def test_locate_segments_give_the_rows_of_one_pass(decoder, monkeypatch):
    model = load_model(decoder.path)
    plan = PrecisionPolicy("fp16").resolve(model)
    engine = get_backend("emulate").build(plan, BuildConfig(), None)
    feeds = make_feeds(model)
    whole = layerwise.locate_divergence(engine, feeds)
    monkeypatch.setattr(segments, "ACTIVATION_BUDGET", 3 * 4 * 128 * 4)
    assert len(segments.segment_tensors(model, feeds)) > 5
    parts = layerwise.locate_divergence(engine, feeds)
    assert "segments" in parts.note
    assert [(t.tensor, t.rel, t.divergent) for t in whole.tensors] == [(t.tensor, t.rel, t.divergent)
                                                                     for t in parts.tensors]


def test_reference_of_an_fp16_model_with_external_weights(tmp_path):
    """An as-written FP16 model stored as external data: its FP32 reference widens the weights when bound."""
    src = write_decoder(tmp_path / "src" / "d.onnx", layers=1, hidden=128, intermediate=256, seq=4)
    full = onnx.load(str(src.path))
    for t in full.graph.initializer:  # the weights stored in FP16 (the graph casts them back to FP32)
        if t.dims and len(t.dims) == 2:
            values = onnx.numpy_helper.to_array(t).astype(np.float16)
            t.CopyFrom(onnx.numpy_helper.from_array(values, t.name))
    nodes = list(full.graph.node)
    del full.graph.node[:]
    big = {t.name for t in full.graph.initializer if t.data_type == 10}
    for node in nodes:
        for i, name in enumerate(node.input):
            if name in big:
                cast = name + "__as_fp32"
                full.graph.node.append(onnx.helper.make_node("Cast", [name], [cast], to=1, name=name + "/Cast"))
                node.input[i] = cast
        full.graph.node.append(node)
    path = tmp_path / "fp16" / "d.onnx"
    path.parent.mkdir()
    onnx.save(copy.deepcopy(full), path, save_as_external_data=True, size_threshold=0, location="d.onnx.data")
    model = load_model(path)
    assert model.has_external_weights
    feeds = make_feeds(model)
    got = reference_outputs(model, feeds)
    want = reference_outputs(load_model(full), feeds)
    np.testing.assert_allclose(got["last_hidden_state"], want["last_hidden_state"], rtol=1e-5, atol=1e-6)


def test_suggest_candidates_share_the_weight_set_and_say_what_each_wrote(decoder, tmp_path):
    from pytest_trt.suggest import suggest_fp32_islands

    model = load_model(decoder.path)
    cache = ArtifactCache(tmp_path / "cache")
    feeds = make_feeds(model, outliers={"inputs_embeds": {"count": 4, "magnitude": 400.0}})  # RMSNorm Pow overflows
    result = suggest_fp32_islands(model, "fp16", feeds, backend="emulate", cache=cache)
    assert len(result.attempts) >= 2
    (weights,) = [e for e in cache.entries() if e.kind == WEIGHTS_KIND]
    first, *later = result.attempts
    assert first.bytes_written >= weights.size_bytes  # the first candidate wrote the shared FP16 set
    assert all(0 <= a.bytes_written < weights.size_bytes / 4 for a in later)  # the others: their graph only
    assert all("bytes_written" in a.to_json() for a in result.attempts)
    assert "written to the cache" in result.message()
