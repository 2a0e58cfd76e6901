"""The weight store, the model identity and its digest memo, big single-file models, conversions (issue 29)."""

from __future__ import annotations

import copy
import json
import os

import numpy as np
import onnx
import pytest

from pytest_trt.core.dtypes import ELEM_BFLOAT16, ELEM_FLOAT, ELEM_FLOAT16
from pytest_trt.errors import ModelError
from pytest_trt.model import load_model
from pytest_trt.model import testing_models as tm
from pytest_trt.model.big_models import write_decoder
from pytest_trt.model.weights import (
    RACY_SECONDS,
    DigestMemo,
    bf16_bits_to_fp32,
    convert_values,
    identity,
    singlefile,
    to_bf16_bits,
    to_fp16,
    widen_to_fp32,
)


@pytest.fixture
def decoder(tmp_path):
    """A 2-layer decoder from the tier's generator: every weight (>= 64 KiB) held by reference."""
    return write_decoder(tmp_path / "m" / "decoder.onnx", layers=2, hidden=128, intermediate=256, seq=4)


def _forms(tmp_path):
    """One model as a single file, as external data, and in memory."""
    proto = tm.decomposed_layernorm_block(hidden=256)
    single, external = tmp_path / "single" / "m.onnx", tmp_path / "external" / "m.onnx"
    single.parent.mkdir()
    external.parent.mkdir()
    onnx.save(proto, single)
    onnx.save(copy.deepcopy(proto), external, save_as_external_data=True, size_threshold=0, location="m.onnx.data")
    return proto, single, external


def test_loading_reads_the_structure_and_maps_weights_on_demand(decoder):
    model = load_model(decoder.path)
    store = model.weights
    assert model.has_external_weights and len(store.external_names) == 2 * 3  # the MLP weights (norms are small)
    assert store.external_nbytes == 2 * 3 * 128 * 256 * 4
    assert all(not t.raw_data for t in model.proto.graph.initializer if store.is_external(t.name))
    w = store.array("model.layers.0.mlp.gate_proj.weight")
    assert isinstance(w.base, (np.ndarray, memoryview)) or w.base is not None  # a view of a mapping, not a copy
    assert w.shape == (128, 256) and not w.flags.writeable
    full = onnx.load(str(decoder.path))  # onnx's own loader reads the same values
    ref = next(t for t in full.graph.initializer if t.name == "model.layers.0.mlp.gate_proj.weight")
    np.testing.assert_array_equal(w, onnx.numpy_helper.to_array(ref))
    with pytest.raises(ModelError, match="serialized with them"):
        model.serialized()


def test_one_identity_for_a_path_an_external_form_and_an_in_memory_model(tmp_path, monkeypatch):
    proto, single, external = _forms(tmp_path)
    ids = {load_model(single).sha256, load_model(external).sha256, load_model(proto).sha256}
    monkeypatch.setattr(singlefile, "SCAN_BYTES", 1)  # the big single-file path: weights referenced in place
    scanned = load_model(single)
    assert scanned.has_external_weights
    assert len(ids | {scanned.sha256}) == 1
    for name in scanned.weights.names:
        np.testing.assert_array_equal(scanned.weights.array(name), load_model(proto).weights.array(name))


def test_the_identity_changes_with_one_weight_byte(decoder):
    before = load_model(decoder.path).sha256
    with open(decoder.data_path, "r+b") as f:
        f.seek(70000)  # inside the first MLP weight
        byte = f.read(1)
        f.seek(70000)
        f.write(bytes([byte[0] ^ 1]))
    assert load_model(decoder.path).sha256 != before


def test_the_memo_is_trusted_only_for_an_unchanged_file_recorded_long_after_its_last_change(decoder, tmp_path,
                                                                                            monkeypatch):
    memo = DigestMemo(tmp_path / "memo")
    calls = []
    real = identity._hash_range
    monkeypatch.setattr(identity, "_hash_range", lambda *a: calls.append(a) or real(*a))

    def ident():
        model = load_model(decoder.path)
        return identity.model_identity(model.proto, model.weights, memo)

    first = ident()
    assert len(calls) == 6
    assert ident() == first and len(calls) == 12  # recorded within 2 s of the file's last write: racy, re-read
    record_file = next((tmp_path / "memo").glob("*.json"))
    record = json.loads(record_file.read_text())
    st = os.stat(decoder.data_path)
    record["recorded_ns"] = max(st.st_mtime_ns, st.st_ctime_ns) + int(RACY_SECONDS * 1e9)  # as if taken later
    record_file.write_text(json.dumps(record))
    assert ident() == first and len(calls) == 12  # trusted: nothing read
    data = bytearray(decoder.data_path.read_bytes())
    data[70000] ^= 1
    decoder.data_path.write_bytes(bytes(data))  # same size, new content: the stat changes
    assert ident() != first and len(calls) == 18


@pytest.mark.parametrize("fault", ["missing", "truncated", "outside", "symlink"])
def test_external_data_faults_are_clear_errors(decoder, tmp_path, fault):
    data = decoder.data_path
    if fault == "missing":
        data.unlink()
        expect = ["external data", "decoder.onnx.data"]
    elif fault == "truncated":
        with open(data, "r+b") as f:
            f.truncate(data.stat().st_size // 2)
        expect = ["truncated", "decoder.onnx.data", "model.layers.1"]
    elif fault == "symlink":
        moved = tmp_path / "elsewhere.data"
        data.rename(moved)
        data.symlink_to(moved)
        expect = ["symbolic link"]
    else:
        proto = onnx.load(str(decoder.path), load_external_data=False)
        for t in proto.graph.initializer:
            for e in t.external_data:
                if e.key == "location":
                    e.value = "../decoder.onnx.data"
        onnx.save(proto, decoder.path)
        expect = ["outside"]
    for check in (True, False):  # onnx.checker's message, and the store's own without the checker
        with pytest.raises(ModelError) as info:
            load_model(decoder.path, check=check)
        text = str(info.value)
        assert "decoder.onnx" in text and all(e in text for e in expect), text


def test_a_model_over_the_protobuf_limit_is_never_serialized(decoder, monkeypatch):
    calls = []
    real = onnx.ModelProto.SerializeToString

    def spy(self, *a, **k):
        out = real(self, *a, **k)
        calls.append(len(out))
        return out

    monkeypatch.setattr(onnx.ModelProto, "SerializeToString", spy)
    model = load_model(decoder.path)
    assert model.sha256
    assert max(calls, default=0) < decoder.weight_bytes / 10  # only structures, never the weights


def test_ort_conversions_agree_bit_for_bit_with_numpy():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(50000).astype(np.float32) * s for s in (1e-8, 1e-5, 0.03, 1, 1e4)]
                       + [np.array([np.inf, -np.inf, np.nan, 65504, 65505, -70000, 65519.9, 65520], np.float32)])
    for values in (x[:-8], x):  # the ONNX Runtime path, and the exact path it hands saturation to
        half, clamped = convert_values(values.view(np.uint8), ELEM_FLOAT, "fp16")
        ref, ref_clamped = to_fp16(values)
        assert np.array_equal(half.view(np.uint16), ref.view(np.uint16)) and clamped == ref_clamped
    assert np.array_equal(widen_to_fp32(ref.view(np.uint8), ELEM_FLOAT16), ref.astype(np.float32), equal_nan=True)
    for values in (x[:-8], x):
        bits, clamped = convert_values(values.view(np.uint8), ELEM_FLOAT, "bf16")
        ref_bits, ref_clamped = to_bf16_bits(values)
        assert np.array_equal(bits.view(np.uint16), ref_bits) and clamped == ref_clamped
    ties = (np.arange(1, 4097, dtype=np.uint32) << 16 | 0x8000).view(np.float32)  # exact ties: to even
    assert np.array_equal(convert_values(ties.view(np.uint8), ELEM_FLOAT, "bf16")[0].view(np.uint16),
                          to_bf16_bits(ties)[0])
    bits, _ = to_bf16_bits(x)
    assert np.array_equal(widen_to_fp32(bits.view(np.uint8), ELEM_BFLOAT16).view(np.uint32),
                          bf16_bits_to_fp32(bits).view(np.uint32))


def test_generator_streams_weights_and_is_deterministic(tmp_path):
    a = write_decoder(tmp_path / "a" / "d.onnx", layers=1, hidden=64, intermediate=128, seq=2)
    b = write_decoder(tmp_path / "b" / "d.onnx", layers=1, hidden=64, intermediate=128, seq=2)
    assert a.data_path.read_bytes() == b.data_path.read_bytes()
    onnx.checker.check_model(str(a.path), full_check=True)
    proto = onnx.load(str(a.path), load_external_data=False)
    offsets = [int({e.key: e.value for e in t.external_data}["offset"]) for t in proto.graph.initializer
               if t.external_data]
    assert offsets and all(o % 65536 == 0 for o in offsets)
    assert "/model/layers.0/input_layernorm/Pow" in [n.name for n in proto.graph.node]
    with pytest.raises(ValueError):
        write_decoder(tmp_path / "c.onnx")
