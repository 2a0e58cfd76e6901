"""Saved runs on real files (issue 31): a directory (unsigned, damage detected) and a ``file://``
URL (signed with the remote cache's keys). Run ids created only if absent, concurrent writers losing
nothing, ``latest`` / NUM / NAME / id selection, forged and damaged runs rejected, prune."""

from __future__ import annotations

import json
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from pytest_trt.cache.remote.signing import RejectedEntry
from pytest_trt.errors import UsageError
from pytest_trt.history.runid import make_run_id
from pytest_trt.history.store import PREFIX, RunStore, StoreError

pytest.importorskip("cryptography", reason="the remote extra: pip install -e '.[remote]'")


def _run(name=None, exitstatus=0, when=None, gate=None):
    return {"format": "pytest-trt-run-v1", "id": make_run_id(name, now=when), "name": name,
            "created": "2026-11-27T10:00:00+00:00", "exitstatus": exitstatus, "gate": gate, "fingerprint": {},
            "report": {"session": {"backend": "emulate", "precision": "fp16"}, "summary": {"tests": 1, "outputs": 1},
                       "tests": []}}


def _at(minutes):
    return datetime(2026, 11, 27, 10, 0, tzinfo=timezone.utc) + timedelta(minutes=minutes)


def test_a_directory_store_saves_lists_and_loads_runs_in_time_order(tmp_path):
    store = RunStore(str(tmp_path / "runs"))
    late, early = _run("b", when=_at(5)), _run("a", when=_at(1))
    outputs = tmp_path / "x.npz"
    outputs.write_bytes(b"npz bytes")
    store.save(late, {"x.npz": outputs})
    store.save(early)
    entries = store.entries()
    assert [(e.number, e.name, e.status) for e in entries] == [(1, "a", "ok"), (2, "b", "ok")]
    assert store.load(entries[1]) == late
    assert entries[1].payload["summary"]["saved_outputs"] and entries[1].size > 0
    got = store.fetch_output(entries[1], "x.npz", tmp_path / "back.npz")
    assert got.read_bytes() == b"npz bytes"
    run_dir = tmp_path / "runs" / PREFIX / late["id"]
    assert sorted(p.name for p in run_dir.iterdir()) == ["manifest.json", "outputs", "run.json"]


def test_an_id_is_created_only_if_absent(tmp_path):
    store = RunStore(str(tmp_path))
    run = _run("x")
    store.save(run)
    with pytest.raises(StoreError, match="exists already"):
        store.save({**run, "exitstatus": 1})
    assert store.load(store.entries()[0])["exitstatus"] == 0  # nothing was overwritten


def test_concurrent_writers_lose_no_run(tmp_path):
    store_dir = str(tmp_path / "shared")
    errors: list[BaseException] = []
    ids = [_run(f"w{i}")["id"] for i in range(8)]

    def save(run_id):
        try:
            RunStore(store_dir).save({**_run(), "id": run_id})
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=save, args=(i,)) for i in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(e.id for e in RunStore(store_dir).entries() if e.status == "ok") == sorted(ids)


def test_latest_is_the_newest_run_that_exited_0_with_its_gate(tmp_path):
    store = RunStore(str(tmp_path))
    good = _run("good", when=_at(1))
    gated = _run("gated", exitstatus=1, when=_at(2), gate={"passed": False})
    failed = _run("failed", exitstatus=1, when=_at(3))
    for run in (good, gated, failed):
        store.save(run)
    assert store.select("latest").id == good["id"]
    assert store.select("3").id == failed["id"]          # NUM: position in time order
    assert store.select("gated").id == gated["id"]       # NAME: named, whatever its exit
    assert store.select(good["id"][:20]).id == good["id"]  # a unique id prefix
    with pytest.raises(UsageError, match="holds 3 run"):
        store.select("4")
    with pytest.raises(UsageError, match="no saved run 'nope'"):
        store.select("nope")
    with pytest.raises(UsageError, match="no run is stored there"):
        RunStore(str(tmp_path / "empty")).select("latest")


def test_a_damaged_run_is_rejected_never_read(tmp_path):
    store = RunStore(str(tmp_path))
    run = _run("x")
    store.save(run)
    run_json = tmp_path / PREFIX / run["id"] / "run.json"
    run_json.write_text(run_json.read_text().replace('"fp16"', '"fp32"'))  # same size, other bytes
    entry = store.entries()[0]
    with pytest.raises(RejectedEntry, match="sha256 .* manifest says"):
        store.load(entry)
    (tmp_path / PREFIX / run["id"] / "manifest.json").write_text("{not json")
    entry = store.entries()[0]
    assert entry.status == "rejected" and "not valid JSON" in entry.reason
    with pytest.raises(UsageError, match="rejected run is never compared with"):
        store.select(run["id"])


def test_an_incomplete_run_is_listed_never_selected_and_pruned_after_an_hour(tmp_path):
    store = RunStore(str(tmp_path))
    old = _run("old", when=_at(0))
    store.save(old)
    stale = make_run_id("stale", now=_at(-120))
    (tmp_path / PREFIX / stale).mkdir()
    fresh = make_run_id("fresh", now=_at(30))
    (tmp_path / PREFIX / fresh).mkdir()
    statuses = {e.name: e.status for e in store.entries()}
    assert statuses == {"stale": "incomplete", "old": "ok", "fresh": "incomplete"}
    removed = store.prune(keep=5, now=_at(31))
    assert [e.name for e in removed] == ["stale"] and (tmp_path / PREFIX / fresh).is_dir()


def test_prune_by_age_count_and_size_touches_only_run_folders(tmp_path):
    store = RunStore(str(tmp_path))
    runs = [_run(f"r{i}", when=_at(i * 60 * 24)) for i in range(5)]  # one a day
    for run in runs:
        store.save(run)
    mine = tmp_path / PREFIX / "notes.txt"
    mine.write_text("mine")
    assert [e.name for e in store.prune(older_than=timedelta(days=2), dry_run=True, now=_at(4 * 60 * 24))] == \
        ["r0", "r1"]
    assert len(store.entries()) == 5  # a dry run deletes nothing
    assert [e.name for e in store.prune(keep=3, now=_at(0))] == ["r0", "r1"]
    size = store.entries()[0].size
    assert [e.name for e in store.prune(max_bytes=size, now=_at(0))] == ["r2", "r3"]
    assert [e.name for e in store.entries()] == ["r4"] and mine.read_text() == "mine"


def test_prune_never_follows_a_link_planted_in_a_run(tmp_path):
    store = RunStore(str(tmp_path / "runs"))
    run = _run("x", when=_at(0))
    store.save(run)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("keep")
    (tmp_path / "runs" / PREFIX / run["id"] / "link").symlink_to(outside)
    assert [e.name for e in store.prune(keep=0, now=_at(0))] == ["x"]
    assert (outside / "precious").read_text() == "keep" and not (tmp_path / "runs" / PREFIX / run["id"]).exists()


# ----------------------------------------------------------------------------- a URL: signed
@pytest.fixture
def keys(tmp_path):
    from pytest_trt.cache.remote import generate_keypair

    return {"builder": generate_keypair(tmp_path / "keys", "builder"),
            "stranger": generate_keypair(tmp_path / "keys", "stranger")}


def test_runs_at_a_url_are_signed_and_verified_with_the_remote_cache_keys(tmp_path, keys):
    url = f"file://{tmp_path / 'remote'}"
    builder = RunStore(url, private_key=keys["builder"]["private"])
    run = _run("main")
    builder.save(run)
    reader = RunStore(url, trusted=[keys["builder"]["public_key"]])
    entry = reader.select("latest")
    assert entry.id == run["id"] and reader.load(entry) == run
    assert [p.name for p in (tmp_path / "remote" / PREFIX / run["id"]).glob("manifest.*")] == [
        f"manifest.{keys['builder']['key_id']}.json"]
    # a reader holding no key cannot save; one trusting nothing cannot read
    with pytest.raises(UsageError, match="signed with the remote cache's key, and none is set"):
        reader.save(_run("x"))
    with pytest.raises(UsageError, match="no trusted public key"):
        RunStore(url)


def test_a_run_forged_without_the_key_is_rejected_and_never_latest(tmp_path, keys):
    url = f"file://{tmp_path / 'remote'}"
    RunStore(url, private_key=keys["builder"]["private"]).save(_run("real", when=_at(0)))
    # someone with write access to the storage, without the builder's key: a newer "run" whose
    # figures would hide a regression, signed with their own key
    forged = _run("forged", when=_at(10))
    RunStore(url, private_key=keys["stranger"]["private"]).save(forged)
    reader = RunStore(url, trusted=[keys["builder"]["public_key"]])
    by_name = {e.name: e for e in reader.entries()}
    assert by_name["forged"].status == "rejected" and "not trusted here" in by_name["forged"].reason
    assert reader.select("latest").name == "real"
    with pytest.raises(UsageError, match="rejected run is never compared with"):
        reader.select("forged")
    # and a run edited after signing: its run.json no longer has the signed sha256
    real = by_name["real"]
    path = tmp_path / "remote" / PREFIX / real.id / "run.json"
    data = json.loads(path.read_text())
    data["exitstatus"] = 0
    data["report"]["summary"]["tests"] = 99
    path.write_text(json.dumps(data))
    with pytest.raises(RejectedEntry):
        reader.load(reader.entries()[0])


def test_a_cache_manifest_signature_never_verifies_as_a_run(tmp_path, keys):
    from pytest_trt.cache.remote import load_private_key, sign_manifest

    url = f"file://{tmp_path / 'remote'}"
    store = RunStore(url, private_key=keys["builder"]["private"])
    run = _run("x")
    store.save(run)
    entry = store.entries()[0]
    manifest = Path(tmp_path / "remote" / PREFIX / run["id"] / f"manifest.{keys['builder']['key_id']}.json")
    # the same payload signed as a remote cache manifest (the cache's context and format)
    manifest.unlink()
    manifest.write_bytes(sign_manifest(load_private_key(keys["builder"]["private"]), entry.payload))
    assert store.entries()[0].status == "rejected"
