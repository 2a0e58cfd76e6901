"""The remote cache tier against a real nginx WebDAV server on loopback and a shared directory.

Fault matrix (issue 22): server down mid-upload, truncated download, tampered file, tampered
manifest, unknown key id, wrong signature, two runners uploading different bytes for one key,
the remote full (507) or read-only. In every case nothing built is lost and nothing that
failed verification reaches the loader.
"""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from report_schema import assert_valid_report

from pytest_trt.cache import ArtifactCache
from pytest_trt.cache.remote import (
    MANIFEST,
    PREFIX,
    RemoteTier,
    generate_keypair,
    load_private_key,
    published_name,
    sign_manifest,
)
from pytest_trt.errors import CacheWarning, UsageError

pytestmark = pytest.mark.remote_cache

for _module in ("fsspec", "webdav4", "cryptography"):  # the `remote` extra (also in `test`)
    pytest.importorskip(_module, reason=f"{_module} is missing: pip install -e '.[test]' (the remote extra)")

PARTS = {"model": "sha256-of-model", "gpu": {"name": "NVIDIA H100", "cc": "9.0"}, "trt": "10.13"}
HERE = Path(__file__).parent


def builder(url, keys, **kw):
    return RemoteTier(url, mode="rw", private_key=keys["builder"]["private"], trusted=[keys["builder"]["public"]], **kw)


def reader(url, keys):
    return RemoteTier(url, mode="ro", trusted=[keys["builder"]["public"]])


class Build:
    """A build callback that records its calls and writes known bytes (two files, one in a subdirectory)."""

    def __init__(self, plan: bytes = b"PLAN" * 50_000, extra: bytes = b"timing"):
        self.files = {"plan.bin": plan, "sub/timing.cache": extra}
        self.calls = 0

    def __call__(self, tmp: Path):
        self.calls += 1
        for rel, blob in self.files.items():
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_bytes(blob)


def entry_dir(root: Path, key: str, kind: str = "engine") -> Path:
    return root / PREFIX / kind / key


def publish(tmp_path, url, keys, build=None, name="builder-cache"):
    """A builder publishes the entry of PARTS; returns (key, its local result, the build)."""
    build = build or Build()
    cache = ArtifactCache(tmp_path / name, remote=builder(url, keys))
    result = cache.get_or_build("engine", PARTS, build)
    assert result.source == "built" and cache.stats.remote_uploads == 1
    return result.key, result, build


def fetch_cold(tmp_path, url, keys, name="reader-cache"):
    """A reader with an empty local cache asks for PARTS; returns (result, its build, the tier, warnings)."""
    tier = reader(url, keys)
    cache = ArtifactCache(tmp_path / name, remote=tier)
    build = Build(plan=b"LOCAL" * 1000)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = cache.get_or_build("engine", PARTS, build)
    return result, build, tier, [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]


def published(root: Path, key: str, keys, who: str = "builder") -> Path:
    return entry_dir(root, key) / published_name(keys[who]["key_id"])


def the_upload(root: Path, key: str) -> Path:
    (upload,) = (entry_dir(root, key) / "uploads").iterdir()
    return upload


# ---------------------------------------------------------------------- the good path


def test_a_cold_runner_gets_the_verified_entry_without_building(tmp_path, remote, keys):
    url, root = remote
    key, built, build = publish(tmp_path, url, keys)
    result, local_build, tier, warned = fetch_cold(tmp_path, url, keys)
    assert warned == []
    assert result.source == "remote" and local_build.calls == 0
    for rel, blob in build.files.items():
        assert (result.path / rel).read_bytes() == blob
    assert result.manifest["origin"]["remote"] == url
    assert tier.stats.remote_hits == 1 and tier.stats.remote_bytes_down > 200_000
    # the published manifest names exactly the files of one upload
    upload = the_upload(root, key)
    names = {str(p.relative_to(upload)) for p in upload.rglob("*") if p.is_file()}
    assert names - {MANIFEST} == {"plan.bin", "sub/timing.cache"}  # (WebDAV moved the staged manifest)
    envelope = json.loads(published(root, key, keys).read_text())
    payload = json.loads(base64.b64decode(envelope["payload"]))
    assert payload["upload_id"] == upload.name and set(payload["files"]) == {"plan.bin", "sub/timing.cache"}
    # the next ask is a local hit: the remote is not asked again
    again = ArtifactCache(tmp_path / "reader-cache", remote=tier).get_or_build("engine", PARTS, local_build)
    assert again.source == "local" and tier.stats.remote_hits == 1


def test_a_webdav_server_that_needs_mkcol(tmp_path, nginx, keys):
    """PUT answers 409 under a missing collection: the tier creates the collections and retries."""
    key, _, build = publish(tmp_path, nginx.plain_url, keys)
    methods = [line.split()[0] for line in nginx.requests()]
    assert "MKCOL" in methods and methods.count("PUT") >= 3
    result, local_build, _, warned = fetch_cold(tmp_path, nginx.plain_url, keys)
    assert warned == [] and result.source == "remote" and local_build.calls == 0
    assert (result.path / "sub" / "timing.cache").read_bytes() == build.files["sub/timing.cache"]


def test_read_only_mode_never_writes_to_the_remote(tmp_path, remote, keys):
    url, root = remote
    # a runner holding no signing key: mode auto means read-only
    tier = RemoteTier(url, trusted=[keys["builder"]["public"]])
    assert tier.mode == "ro"
    result = ArtifactCache(tmp_path / "c", remote=tier).get_or_build("engine", PARTS, Build())
    assert result.source == "built" and tier.stats.remote_misses == 1
    assert not (root / PREFIX).exists()


# ---------------------------------------------------------------------- tampering: never loaded


def _rejected(tmp_path, url, keys, expect: str):
    result, build, tier, warned = fetch_cold(tmp_path, url, keys)
    assert build.calls == 1 and result.source == "built", "a rejected entry is rebuilt locally"
    assert (result.path / "plan.bin").read_bytes() == b"LOCAL" * 1000, "the local entry holds the local build only"
    assert tier.stats.remote_rejected == 1 and tier.stats.remote_hits == 0
    assert len(warned) == 1 and expect in warned[0] and "It was not loaded" in warned[0], warned
    return warned[0]


def test_tampered_file_is_rejected(tmp_path, remote, keys):
    url, root = remote
    key, _, _ = publish(tmp_path, url, keys)
    plan = the_upload(root, key) / "plan.bin"
    data = bytearray(plan.read_bytes())
    data[1000] ^= 0xFF  # same size, one byte flipped
    plan.write_bytes(bytes(data))
    _rejected(tmp_path, url, keys, "checksum mismatch in 'plan.bin'")


def test_truncated_download_is_rejected(tmp_path, remote, keys):
    url, root = remote
    key, _, _ = publish(tmp_path, url, keys)
    plan = the_upload(root, key) / "plan.bin"
    plan.write_bytes(plan.read_bytes()[:5000])
    _rejected(tmp_path, url, keys, "'plan.bin' has 5000 bytes")


def test_tampered_manifest_is_rejected(tmp_path, remote, keys):
    """The attacker swaps in their own plan and edits the manifest's checksum to match it."""
    url, root = remote
    key, _, _ = publish(tmp_path, url, keys)
    evil = b"EVIL" * 50_000
    (the_upload(root, key) / "plan.bin").write_bytes(evil)
    manifest = published(root, key, keys)
    envelope = json.loads(manifest.read_text())
    payload = json.loads(base64.b64decode(envelope["payload"]))
    payload["files"]["plan.bin"] = {"sha256": hashlib.sha256(evil).hexdigest(), "size": len(evil)}
    envelope["payload"] = base64.b64encode(json.dumps(payload).encode()).decode()
    manifest.write_text(json.dumps(envelope))
    _rejected(tmp_path, url, keys, "signature does not verify")


def test_unknown_key_id_is_never_read_and_rejected_in_a_trusted_slot(tmp_path, remote, keys):
    url, root = remote
    stranger = RemoteTier(url, mode="rw", private_key=keys["stranger"]["private"], trusted=[])
    key = ArtifactCache(tmp_path / "stranger-cache", remote=stranger).get_or_build(
        "engine", PARTS, Build(b"EVIL" * 10)).key
    assert stranger.stats.remote_uploads == 1
    # published under the stranger's own key id: a reader trusting the builder does not even look at it
    result, build, tier, warned = fetch_cold(tmp_path, url, keys, name="reader0")
    assert result.source == "built" and build.calls == 1 and tier.stats.remote_misses == 1 and warned == []
    # copied into the builder's slot: read, and rejected by its key id
    stolen = published(root, key, keys, "stranger").read_bytes()
    published(root, key, keys).write_bytes(stolen)
    warned = _rejected(tmp_path, url, keys, f"key id '{keys['stranger']['key_id']}', which is not trusted")
    assert keys["builder"]["key_id"] in warned


def test_key_rotation(tmp_path, remote, keys):
    """Readers trust old and new; the new builder publishes under its own name; the old key is dropped."""
    url, root = remote
    old, new = keys["builder"], keys["stranger"]  # (the second pair plays the new key here)
    key, _, build = publish(tmp_path, url, keys)
    both = RemoteTier(url, mode="ro", trusted=[new["public"], old["public"]])
    got = ArtifactCache(tmp_path / "r1", remote=both).get_or_build("engine", PARTS, Build(b"LOCAL"))
    assert got.source == "remote" and both.stats.remote_requests >= 2  # looked for the new key's entry first
    new_builder = RemoteTier(url, mode="rw", private_key=new["private"], trusted=[old["public"]])
    assert list(new_builder.trusted)[0] == new["key_id"], "a builder looks up its own entries first"
    only_new = RemoteTier(url, mode="rw", private_key=new["private"])
    rebuilt = ArtifactCache(tmp_path / "b2", remote=only_new).get_or_build("engine", PARTS, Build(b"NEW" * 10))
    assert rebuilt.source == "built" and only_new.stats.remote_uploads == 1
    assert published(root, key, keys, "stranger").exists() and published(root, key, keys).exists()
    reader_new = RemoteTier(url, mode="ro", trusted=[new["public"]])
    got = ArtifactCache(tmp_path / "r2", remote=reader_new).get_or_build("engine", PARTS, Build(b"LOCAL"))
    assert got.source == "remote" and (got.path / "plan.bin").read_bytes() == b"NEW" * 10


def test_wrong_signature_is_rejected(tmp_path, remote, keys):
    """A manifest claiming the trusted key id, signed by another key."""
    url, root = remote
    key, _, _ = publish(tmp_path, url, keys)
    manifest = published(root, key, keys)
    envelope = json.loads(manifest.read_text())
    payload = json.loads(base64.b64decode(envelope["payload"]))
    forged = json.loads(sign_manifest(load_private_key(keys["stranger"]["private"]), payload))
    forged["key_id"] = envelope["key_id"]
    manifest.write_text(json.dumps(forged))
    _rejected(tmp_path, url, keys, f"does not verify with the trusted key {keys['builder']['key_id']}")


def test_a_signed_manifest_moved_to_another_key_is_rejected(tmp_path, remote, keys):
    url, root = remote
    other = dict(PARTS, model="another-model")
    cache = ArtifactCache(tmp_path / "b", remote=builder(url, keys))
    other_key = cache.get_or_build("engine", other, Build(b"OTHER" * 10)).key
    key = ArtifactCache.key(PARTS)
    entry_dir(root, key).mkdir(parents=True)
    published(root, key, keys).write_bytes(published(root, other_key, keys).read_bytes())
    _rejected(tmp_path, url, keys, "not this one")


def test_a_tampered_entry_never_reaches_the_loader(pytester, nginx, keys, monkeypatch):
    """A real pytest session (emulate backend): the deserializer of the emulation engine never
    sees the tampered bytes; the entry is rebuilt locally and the test passes."""
    import importlib

    # the module the sessions below use: an in-process pytester run of an earlier test may have imported
    # it first, and pytester then drops it from sys.modules, leaving a stale attribute on the package
    # (``from pytest_trt.backends import emulate`` returned that one, and the spy never saw a load)
    emulate = importlib.import_module("pytest_trt.backends.emulate")

    encoder = HERE.parents[1] / "example_suite" / "models" / "encoder_opset14.onnx"
    pytester.makepyfile(test_m=f"""
        import pytest

        @pytest.mark.trt(model={str(encoder)!r}, precision="fp16", keep_fp32=["*/LayerNorm/*"],
                         dims={{"batch": 2, "sequence": 8}}, val_range={{"hidden_states": (-1.0, 1.0)}})
        def test_kept(trt):
            trt.check(atol=1e-2)
    """)
    common = ["--trt-backend", "emulate", "--trt-remote-cache", nginx.url, "-p", "no:cacheprovider",
              "-W", "always::pytest_trt.errors.CacheWarning"]
    monkeypatch.setenv("PYTEST_TRT_REMOTE_CACHE_KEY", keys["builder"]["private"])
    first = pytester.runpytest_inprocess(*common, f"--trt-cache-dir={pytester.path / 'c1'}",
                                         "--trt-report=r1.json")
    first.assert_outcomes(passed=1)
    r1 = json.loads((pytester.path / "r1.json").read_text())["summary"]
    assert r1["remote_uploads"] >= 1 and r1["remote_hits"] == 0 and r1["remote_bytes"] > 0
    first.stdout.fnmatch_lines(["*remote (rw): 0 hit(s), * upload(s)*"])

    # a read-only runner with a cold local cache: everything comes from the remote, verified; nothing is built
    monkeypatch.delenv("PYTEST_TRT_REMOTE_CACHE_KEY")
    reader_args = [f"--trt-remote-cache-trust={keys['builder']['public']}"]
    warm = pytester.runpytest_inprocess(*common, *reader_args, f"--trt-cache-dir={pytester.path / 'c0'}",
                                        "--trt-report=r0.json")
    warm.assert_outcomes(passed=1)
    r0 = json.loads((pytester.path / "r0.json").read_text())["summary"]
    assert r0["remote_hits"] == r1["remote_uploads"] and r0["cache_builds"] == 0 and r0["remote_uploads"] == 0
    assert r0["engines_reused"] == 1 and r0["engines_built"] == 0
    warm.stdout.fnmatch_lines([f"*remote (ro): {r0['remote_hits']} hit(s), 0 miss(es), 0 upload(s)*"])

    # tamper the published emulation graph on the server (same size)
    (graph,) = [p for p in (nginx.root / "cache" / PREFIX / "emulate").rglob("*")
                if p.is_file() and not p.name.startswith("manifest")]
    data = bytearray(graph.read_bytes())
    data[len(data) // 2] ^= 0x01
    graph.write_bytes(bytes(data))
    tampered = hashlib.sha256(bytes(data)).hexdigest()

    loaded = []
    real = emulate.EmulatedEngine

    def spy(plan, config, info, blob):
        loaded.append(hashlib.sha256(blob).hexdigest())
        return real(plan, config, info, blob)

    monkeypatch.setattr(emulate, "EmulatedEngine", spy)
    second = pytester.runpytest_inprocess(*common, *reader_args, f"--trt-cache-dir={pytester.path / 'c2'}",
                                          "--trt-report=r2.json")
    second.assert_outcomes(passed=1)
    second.stdout.fnmatch_lines(["*CacheWarning*rejected the published emulate entry*checksum mismatch*"])
    assert loaded, "the engine was loaded (rebuilt locally)"
    assert tampered not in loaded, "the tampered emulation graph reached the deserializer"
    r2 = assert_valid_report(json.loads((pytester.path / "r2.json").read_text()))
    assert r2["summary"]["remote_rejected"] == 1 and r2["summary"]["remote_uploads"] == 0
    assert r2["session"]["remote_cache"]["mode"] == "ro"


# ---------------------------------------------------------------------- transport faults: nothing lost


def test_server_down_mid_upload_publishes_nothing_and_keeps_the_local_entry(tmp_path, nginx, keys):
    tier = builder(nginx.url, keys)
    real_write = tier.transport.write
    puts = []

    def write_then_die(path, source):
        real_write(path, source)
        puts.append(path)
        nginx.stop()  # the server goes away after the first file of the upload

    tier.transport.write = write_then_die
    cache = ArtifactCache(tmp_path / "b", remote=tier)
    build = Build()
    with pytest.warns(CacheWarning, match="not used for the rest of this session"):
        result = cache.get_or_build("engine", PARTS, build)
    assert len(puts) == 1 and tier.unavailable
    assert result.source == "built" and cache.validate("engine", PARTS) is None, "the local entry is intact"
    # later keys do not wait for the dead server again, and warn no more
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cache.get_or_build("engine", dict(PARTS, model="second"), Build())
    nginx.start()
    key = result.key
    assert not published(nginx.root / "cache", key, keys).exists(), "a partial upload was published"
    fresh, build2, tier2, warned = fetch_cold(tmp_path, nginx.url, keys)
    assert fresh.source == "built" and build2.calls == 1 and tier2.stats.remote_misses == 1 and warned == []


def test_server_down_at_lookup_builds_locally(tmp_path, nginx, keys):
    publish(tmp_path, nginx.url, keys)
    nginx.stop()
    result, build, tier, warned = fetch_cold(tmp_path, nginx.url, keys)
    assert result.source == "built" and build.calls == 1 and tier.stats.remote_errors == 1
    assert len(warned) == 1 and "ConnectError" in warned[0]


@pytest.mark.parametrize("which, reason", [("full_url", r"full \(HTTP 507 Insufficient Storage\)"),
                                           ("ro_url", r"refuses writes \(read-only: HTTP 405\)")])
def test_a_full_or_read_only_remote_keeps_the_entry_local(tmp_path, nginx, keys, which, reason):
    url = getattr(nginx, which)
    tier = builder(url, keys)
    cache = ArtifactCache(tmp_path / "b", remote=tier)
    with pytest.warns(CacheWarning, match=reason):
        result = cache.get_or_build("engine", PARTS, Build())
    assert result.source == "built" and cache.validate("engine", PARTS) is None
    assert tier.uploads_stopped and tier.stats.remote_upload_failures == 1
    before = len(nginx.requests())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning, no second upload attempt
        cache.get_or_build("engine", dict(PARTS, model="second"), Build())
    methods = [line.split()[0] for line in nginx.requests()[before:]]
    assert "PUT" not in methods and "MKCOL" not in methods
    root = nginx.root / which.split("_")[0] / "cache"
    assert not any(p.name.startswith("manifest") for p in root.rglob("*")), "nothing published"


# ---------------------------------------------------------------------- two runners, one key


def test_two_runners_uploading_different_bytes_publish_exactly_one_complete_upload(tmp_path, remote, keys):
    url, root = remote
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    procs = [subprocess.Popen([sys.executable, str(HERE / "race_runner.py"), url, keys["builder"]["private"],
                               keys["builder"]["public"], str(tmp_path / f"runner{i}"), str(barrier), f"r{i}"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        outs.append(json.loads(out.strip().splitlines()[-1]))
    assert outs[0]["files"] != outs[1]["files"], "the two builds differ"
    assert sorted(o["uploads"] for o in outs) == [0, 1], "exactly one upload won the write-if-absent"
    key = ArtifactCache.key({"model": "race"})
    assert len(list((entry_dir(root, key) / "uploads").iterdir())) == 2, "both uploads are complete on the remote"
    winner = next(o for o in outs if o["uploads"] == 1)
    for i in range(3):  # every reader gets the one published upload, whole and verified
        tier = RemoteTier(url, trusted=[keys["builder"]["public"]])
        result = ArtifactCache(tmp_path / f"reader{i}", remote=tier).get_or_build(
            "engine", {"model": "race"}, Build())
        assert result.source == "remote"
        got = {rel: hashlib.sha256((result.path / rel).read_bytes()).hexdigest() for rel in winner["files"]}
        assert got == winner["files"]


# ---------------------------------------------------------------------- configuration errors


def test_mode_rw_without_a_signing_key_is_a_usage_error(tmp_path, keys):
    with pytest.raises(UsageError, match="--trt-remote-cache-mode rw: .*PYTEST_TRT_REMOTE_CACHE_KEY"):
        RemoteTier(f"file://{tmp_path}", mode="rw", trusted=[keys["builder"]["public"]])


def test_no_trusted_key_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="no trusted public key.*--trt-remote-cache-trust"):
        RemoteTier(f"file://{tmp_path}", mode="ro")


def test_an_unreadable_trust_file_names_the_flag(tmp_path):
    with pytest.raises(UsageError, match="--trt-remote-cache-trust: cannot read the key file .*nope.pub"):
        RemoteTier(f"file://{tmp_path}", trusted=[str(tmp_path / "nope.pub")])


def test_a_private_key_is_not_a_public_key(tmp_path, keys):
    with pytest.raises(UsageError, match="not an Ed25519 public key"):
        RemoteTier(f"file://{tmp_path}", trusted=[keys["builder"]["private"]])


def test_local_read_only_and_remote_cannot_be_combined(pytester, keys):
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest_inprocess("--trt-cache-read-only", f"--trt-cache-dir={pytester.path}",
                                          "--trt-remote-cache", f"file://{pytester.path}",
                                          f"--trt-remote-cache-trust={keys['builder']['public']}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--trt-cache-read-only * and --trt-remote-cache * cannot be combined*"])


def test_keygen_cli_writes_a_usable_key_pair(tmp_path):
    out = subprocess.run([sys.executable, "-m", "pytest_trt.cli", "remote-cache", "keygen", "--out",
                          str(tmp_path), "--name", "fleet"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    private, public = tmp_path / "fleet.key", tmp_path / "fleet.pub"
    assert private.stat().st_mode & 0o077 == 0, "the private key is readable by its owner only"
    assert public.read_text().startswith("ed25519:")
    tier = RemoteTier(f"file://{tmp_path / 'r'}", private_key=str(private), trusted=[str(public)])
    assert tier.mode == "rw" and len(tier.trusted) == 1
    again = subprocess.run([sys.executable, "-m", "pytest_trt.cli", "remote-cache", "keygen", "--out",
                            str(tmp_path), "--name", "fleet"], capture_output=True, text=True)
    assert again.returncode == 2 and "never overwrites a key" in again.stderr


def test_generate_keypair_ids_differ():
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        a, b = generate_keypair(d, "a"), generate_keypair(d, "b")
    assert a["key_id"] != b["key_id"] and len(a["key_id"]) == 16


def _cli(*args, env_extra=None, cwd=None):
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_TRT_")}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "pytest_trt.cli", *args], capture_output=True, text=True,
                          env=env, cwd=cwd)


def test_cli_errors_use_the_cli_spelling(tmp_path, keys):
    encoder = HERE.parents[1] / "example_suite" / "models" / "encoder_opset14.onnx"
    proc = _cli("compare", str(encoder), "--backend", "emulate", "--cache-dir", str(tmp_path / "c"),
                "--remote-cache", f"file://{tmp_path / 'r'}", "--remote-cache-mode", "rw",
                "--remote-cache-trust", keys["builder"]["public"])
    assert proc.returncode == 2, proc.stderr
    assert "--remote-cache-mode rw: uploads are signed" in proc.stderr and "--trt-" not in proc.stderr


def test_cli_compare_publishes_and_a_reader_fetches(tmp_path, keys):
    encoder = HERE.parents[1] / "example_suite" / "models" / "encoder_opset14.onnx"
    remote = f"file://{tmp_path / 'r'}"
    (tmp_path / "r").mkdir()
    common = ["compare", str(encoder), "--fp16", "--keep-fp32", "*/LayerNorm/*", "--backend", "emulate",
              "--input-shapes", "hidden_states:[1,8,64]", "--atol", "1e-2", "--rtol", "1e-2", "--json"]
    built = _cli(*common, "--cache-dir", str(tmp_path / "c1"), "--remote-cache", remote,
                 env_extra={"PYTEST_TRT_REMOTE_CACHE_KEY": keys["builder"]["private"]})
    assert built.returncode == 0, built.stderr
    published = [p for p in (tmp_path / "r").rglob(f"manifest.{keys['builder']['key_id']}.json")]
    assert published, "the CLI's builds were published"
    fetched = _cli(*common, "--cache-dir", str(tmp_path / "c2"),
                   env_extra={"PYTEST_TRT_REMOTE_CACHE": remote, "PYTEST_TRT_REMOTE_CACHE_TRUST": keys["builder"]["public"]})
    assert fetched.returncode == 0, fetched.stderr
    events = [json.loads(line) for line in (tmp_path / "c2" / "events.jsonl").read_text().splitlines()]
    assert {e["event"] for e in events} == {"remote_hit"}, events


def test_an_emulation_graph_and_the_weight_set_it_uses_travel_together(remote, keys, tmp_path):
    """A big model's emulation entry names its weight set (``uses``, signed); a runner with an empty
    local cache fetches both, verified, and builds nothing (issue 29)."""
    from pytest_trt.backends import get_backend
    from pytest_trt.backends.base import BuildConfig
    from pytest_trt.core import runstate
    from pytest_trt.inputs import make_feeds
    from pytest_trt.model import load_model
    from pytest_trt.model.big_models import write_decoder
    from pytest_trt.plan.policy import PrecisionPolicy

    url, _ = remote
    info = write_decoder(tmp_path / "m" / "decoder.onnx", layers=1, hidden=128, intermediate=256, seq=4)
    outputs = []
    for name, tier in (("builder", builder(url, keys)), ("runner", reader(url, keys))):
        with runstate.scoped():
            model = load_model(info.path)
            cache = ArtifactCache(tmp_path / name, remote=tier)
            engine = get_backend("emulate").build(PrecisionPolicy("fp16").resolve(model), BuildConfig(), cache)
            outputs.append(engine.run(make_feeds(model))["last_hidden_state"])
            stats = cache.stats
            kinds = sorted(e.kind for e in cache.entries())
        assert kinds == ["emulate", "weights"]
        if name == "builder":
            assert stats.builds == 2 and stats.remote_uploads == 2
        else:
            assert stats.builds == 0 and stats.remote_hits == 2  # the graph, then the weight set it uses
            (graph,) = [e for e in ArtifactCache(tmp_path / name).entries() if e.kind == "emulate"]
            assert graph.manifest["uses"][0]["kind"] == "weights"  # sealed from the signed payload
    assert (outputs[0] == outputs[1]).all()
