"""ArtifactCache on real files: keys, hits and misses, validation, LRU, read-only, errors.

Process-level faults (concurrent builders, kill -9, interrupts) are in test_cache_faults.py.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import pytest_trt
from pytest_trt import cache as cache_mod
from pytest_trt._version import __version__
from pytest_trt.cache import FORMAT_VERSION, ArtifactCache, CacheResult, default_cache_dir
from pytest_trt.cache import entry as entry_mod
from pytest_trt.cache import eventlog as eventlog_mod
from pytest_trt.errors import CacheError, CacheWarning, UsageError

REPO = Path(pytest_trt.__file__).resolve().parent.parent

PARTS = {
    "model": "sha-of-model",
    "plan": "fp",
    "backend": "emulate",
    "backend_versions": {"onnxruntime": "1.31.1"},
    "device": {},
    "config": {"tf32": False, "profiles": []},
}
#: sha256 of the canonical JSON of PARTS. Changing it invalidates every user's cache: only on purpose.
PARTS_KEY = "16b114f3e13bf9ed8e6c689b4d98540cb00a76ec1cb9ca9193ea633428d4ea3b"


class Builder:
    """A build function that writes ``files`` and counts its calls."""

    def __init__(self, files: dict[str, bytes] | None = None):
        self.files = files or {"engine.plan": b"engine-bytes-v1" * 10, "meta/layers.json": b'{"layers": []}'}
        self.calls = 0

    def __call__(self, tmp: Path) -> None:
        self.calls += 1
        assert tmp.is_dir() and not any(tmp.iterdir()), "build gets a fresh, empty directory"
        for name, data in self.files.items():
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / name).write_bytes(data)


@pytest.fixture
def root(tmp_path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def cache(root) -> ArtifactCache:
    return ArtifactCache(root)


def tmp_items(root: Path) -> list[str]:
    return sorted(p.name for p in (root / ".pytest-trt-tmp").iterdir())


def lock_is_free(root: Path, key: str) -> bool:
    import filelock

    lock = filelock.FileLock(str(root / "locks" / f"{key}.lock"))
    try:
        lock.acquire(timeout=0)
    except filelock.Timeout:
        return False
    lock.release()
    return True


def event_names(cache: ArtifactCache) -> list[str]:
    return [e["event"] for e in cache.events()]


# ---------------------------------------------------------------------- keys


def test_key_is_sha256_of_canonical_json():
    assert ArtifactCache.key(PARTS) == PARTS_KEY
    canonical = json.dumps(PARTS, sort_keys=True, separators=(",", ":"))
    assert PARTS_KEY == hashlib.sha256(canonical.encode()).hexdigest()
    reordered = dict(reversed(list(PARTS.items())))
    reordered["config"] = {"profiles": [], "tf32": False}
    assert ArtifactCache.key(reordered) == PARTS_KEY
    assert ArtifactCache.key({**PARTS, "config": {"tf32": True, "profiles": []}}) != PARTS_KEY
    assert ArtifactCache.key({"shape": (1, 3)}) == ArtifactCache.key({"shape": [1, 3]})


@pytest.mark.parametrize("bad", [{"path": Path("/x")}, {"x": float("nan")}, ["not", "a", "dict"]])
def test_key_rejects_non_json_parts(bad):
    with pytest.raises(UsageError, match="parts must be"):
        ArtifactCache.key(bad)


@pytest.mark.parametrize("kind", ["", "locks", "tmp", "../engine", "Engine", "a/b"])
def test_kind_is_validated(cache, kind):
    with pytest.raises(UsageError, match="invalid cache kind"):
        cache.get_or_build(kind, PARTS, Builder())


# ---------------------------------------------------------------------- hit / miss


def test_miss_builds_then_hit_loads(cache, root):
    build = Builder()
    first = cache.get_or_build("engine", PARTS, build, label="bert fp16")
    assert isinstance(first, CacheResult)
    assert (first.path, first.key, first.cache_hit) == (root / "engine" / PARTS_KEY, PARTS_KEY, False)
    assert first.build_seconds >= 0 and first.waited_seconds >= 0
    assert (first.path / "engine.plan").read_bytes() == build.files["engine.plan"]
    assert (first.path / "meta" / "layers.json").read_bytes() == build.files["meta/layers.json"]

    second = cache.get_or_build("engine", PARTS, build, label="bert fp16")
    assert second.cache_hit and second.path == first.path and second.build_seconds == 0.0
    assert build.calls == 1
    assert event_names(cache) == ["build", "hit"]
    ev = cache.events()[0]
    assert ev["kind"] == "engine" and ev["key"] == PARTS_KEY and ev["label"] == "bert fp16"
    assert ev["pid"] == os.getpid() and isinstance(ev["time"], float) and ev["seconds"] >= 0
    # Nothing else left around: no temp dirs, one lock file per key.
    assert tmp_items(root) == []
    assert (root / "locks" / f"{PARTS_KEY}.lock").exists()


def test_manifest_records_what_was_built(cache):
    build = Builder()
    res = cache.get_or_build("engine", PARTS, build, label="m")
    manifest = json.loads((res.path / "manifest.json").read_text())
    assert manifest == res.manifest
    assert manifest["format_version"] == FORMAT_VERSION
    assert (manifest["kind"], manifest["key"], manifest["parts"]) == ("engine", PARTS_KEY, PARTS)
    assert manifest["label"] == "m" and manifest["pytest_trt"] == __version__
    assert manifest["build_seconds"] >= 0 and manifest["created"]
    assert manifest["files"] == {
        name: {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
        for name, data in build.files.items()
    }


def test_kinds_and_parts_are_separate_entries(cache):
    a = cache.get_or_build("engine", PARTS, Builder({"f": b"engine"}))
    b = cache.get_or_build("baseline", PARTS, Builder({"f": b"baseline"}))
    c = cache.get_or_build("engine", {**PARTS, "plan": "other"}, Builder({"f": b"engine2"}))
    assert len({a.path, b.path, c.path}) == 3 and a.key == b.key != c.key
    assert (b.path / "f").read_bytes() == b"baseline"


def test_rebuild_flag_replaces_a_valid_entry(cache):
    cache.get_or_build("engine", PARTS, Builder({"engine.plan": b"old"}))
    new = Builder({"engine.plan": b"new", "extra.bin": b"x"})
    res = cache.get_or_build("engine", PARTS, new, rebuild=True)
    assert not res.cache_hit and new.calls == 1
    assert sorted(p.name for p in res.path.iterdir()) == ["engine.plan", "extra.bin", "manifest.json"]
    assert (res.path / "engine.plan").read_bytes() == b"new"
    assert cache.get_or_build("engine", PARTS, new).cache_hit
    assert event_names(cache) == ["build", "build", "hit"]
    assert tmp_items(cache.root) == []


def test_rebuild_with_fresh_after_rebuilds_once_per_run(cache):
    cache.get_or_build("engine", PARTS, Builder({"engine.plan": b"from an earlier run"}))
    run_start = time.time()
    build = Builder({"engine.plan": b"this run"})
    first = cache.get_or_build("engine", PARTS, build, rebuild=True, fresh_after=run_start)
    again = cache.get_or_build("engine", PARTS, build, rebuild=True, fresh_after=run_start)
    assert (first.cache_hit, again.cache_hit, build.calls) == (False, True, 1)
    assert (again.path / "engine.plan").read_bytes() == b"this run"


def test_build_failure_leaves_nothing_and_propagates_unchanged(cache, root):
    err = ValueError("onnx parser: unsupported op Foo at node /x")

    def failing(tmp: Path):
        (tmp / "engine.plan").write_bytes(b"half an engine")
        raise err

    with pytest.raises(ValueError) as info:
        cache.get_or_build("engine", PARTS, failing)
    assert info.value is err
    assert not (root / "engine" / PARTS_KEY).exists()
    assert tmp_items(root) == []
    assert lock_is_free(root, PARTS_KEY)
    assert event_names(cache) == ["build_failed"]
    res = cache.get_or_build("engine", PARTS, Builder())
    assert not res.cache_hit
    assert event_names(cache) == ["build_failed", "build"]


@pytest.mark.parametrize(
    "write, match",
    [
        (lambda tmp: None, "wrote no files"),
        (lambda tmp: (tmp / "manifest.json").write_text("{}"), "reserves"),
        (lambda tmp: os.symlink("/etc/passwd", tmp / "engine.plan"), "symlink"),
    ],
    ids=["empty", "reserved-name", "symlink"],
)
def test_build_output_must_be_plain_files(cache, root, write, match):
    with pytest.raises(UsageError, match=match):
        cache.get_or_build("engine", PARTS, write)
    assert not (root / "engine" / PARTS_KEY).exists() and tmp_items(root) == []


def test_same_key_inside_its_own_build_is_an_error_not_a_deadlock(cache):
    def nested(tmp: Path):
        cache.get_or_build("engine", PARTS, Builder())

    with pytest.raises(UsageError, match="from inside its own build"):
        cache.get_or_build("engine", PARTS, nested)


# ---------------------------------------------------------------------- corrupt entries


def _replace_byte(p: Path) -> None:
    data = bytearray(p.read_bytes())
    data[3] ^= 0xFF
    p.write_bytes(bytes(data))


def _edit_manifest(**changes):
    def edit(entry: Path):
        m = json.loads((entry / "manifest.json").read_text())
        m.update(changes)
        (entry / "manifest.json").write_text(json.dumps(m))

    return edit


def _edit_file_record(name: str, **changes):
    def edit(entry: Path):
        m = json.loads((entry / "manifest.json").read_text())
        m["files"][name].update(changes)
        (entry / "manifest.json").write_text(json.dumps(m))

    return edit


def _entry_is_symlink(entry: Path):
    copy = entry.parent.parent / "elsewhere"
    shutil.copytree(entry, copy)
    shutil.rmtree(entry)
    os.symlink(copy, entry)


CORRUPTIONS = {
    # name: (how to damage the entry, text the warning must contain)
    "flipped-byte": (lambda e: _replace_byte(e / "engine.plan"), "checksum mismatch in 'engine.plan'"),
    "truncated": (
        lambda e: (e / "engine.plan").write_bytes((e / "engine.plan").read_bytes()[:7]),
        "'engine.plan' has 7 bytes, manifest.json says 150 (truncated?)",
    ),
    "missing-file": (
        lambda e: (e / "meta" / "layers.json").unlink(),
        "'meta/layers.json' listed in manifest.json is missing",
    ),
    "missing-manifest": (lambda e: (e / "manifest.json").unlink(), "has no manifest.json"),
    "truncated-manifest": (
        lambda e: (e / "manifest.json").write_bytes((e / "manifest.json").read_bytes()[:40]),
        "manifest.json is not valid JSON",
    ),
    # audit F10: RecursionError on every run, never discarded
    "deeply-nested-manifest": (
        lambda e: (e / "manifest.json").write_bytes(b"[" * 100_000 + b"]" * 100_000),
        "manifest.json is not valid JSON (nested more than 64 levels deep",
    ),
    "foreign-file": (
        lambda e: (e / "evil.so").write_bytes(b"\x7fELF"),
        "not listed in manifest.json (foreign): evil.so",
    ),
    "foreign-symlink": (lambda e: os.symlink("/etc/passwd", e / "meta" / "x"), "'meta/x' (a symlink)"),
    "other-library-version": (
        _edit_manifest(parts={**PARTS, "backend_versions": {"onnxruntime": "1.17.0"}}),
        'backend_versions: {"onnxruntime": "1.17.0"} in the entry, {"onnxruntime": "1.31.1"} requested',
    ),
    "key-mismatch": (_edit_manifest(key="0" * 64), "manifest.json says key '0000000000000000'"),
    "kind-mismatch": (_edit_manifest(kind="baseline"), "says kind 'baseline', expected 'engine'"),
    "old-format": (_edit_manifest(format_version=0), "format_version 0 in manifest.json"),
    "entry-is-symlink": (_entry_is_symlink, "not a directory"),
    # one well-formedness check with the remote tier's (cache.entry.well_formed_file_record): a size
    # that is negative or a bool is a malformed record here too, as in a signed remote manifest
    "negative-size": (_edit_file_record("engine.plan", size=-1), "malformed file record 'engine.plan'"),
    "bool-size": (_edit_file_record("engine.plan", size=True), "malformed file record 'engine.plan'"),
}


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_unusable_entry_warns_names_it_and_is_rebuilt(cache, root, corruption):
    damage, text = CORRUPTIONS[corruption]
    build = Builder()
    entry = cache.get_or_build("engine", PARTS, build, label="bert").path
    damage(entry)

    with pytest.warns(CacheWarning) as record:
        res = cache.get_or_build("engine", PARTS, build, label="bert")
    assert len(record) == 1
    message = str(record[0].message)
    assert str(entry) in message and "(bert)" in message and "rebuilding" in message
    assert text in message
    assert record[0].filename == __file__, "the warning points at the caller"

    assert not res.cache_hit and build.calls == 2 and res.path == entry
    assert not entry.is_symlink()
    assert cache.validate("engine", PARTS) is None
    assert (entry / "engine.plan").read_bytes() == build.files["engine.plan"]
    assert sorted(p.name for p in entry.iterdir()) == ["engine.plan", "manifest.json", "meta"]
    corrupt = [e for e in cache.events() if e["event"] == "corrupt"]
    assert len(corrupt) == 1 and text in corrupt[0]["reason"] and corrupt[0]["path"] == str(entry)
    assert tmp_items(root) == []


@pytest.mark.parametrize("manifest", ["nested", "fifo"])
def test_listing_survives_a_hostile_manifest(cache, root, manifest):
    """entries(), prune() and clear() read manifests without validating them (audit F10): a manifest
    nested 100k deep, or a named pipe in its place, is listed as an entry without a manifest."""
    entry = cache.get_or_build("engine", PARTS, Builder()).path
    (entry / "manifest.json").unlink()
    if manifest == "nested":
        (entry / "manifest.json").write_bytes(b"[" * 100_000 + b"]" * 100_000)
    else:
        os.mkfifo(entry / "manifest.json")
    (listed,) = cache.entries()
    assert listed.path == entry and listed.manifest is None
    assert cache.clear() == 1 and not entry.exists()


def test_corrupt_entry_is_removed_even_when_the_rebuild_fails(cache, root):
    entry = cache.get_or_build("engine", PARTS, Builder()).path
    _replace_byte(entry / "engine.plan")

    def failing(tmp):
        raise RuntimeError("builder crashed")

    with pytest.warns(CacheWarning, match="checksum mismatch"), pytest.raises(RuntimeError, match="crashed"):
        cache.get_or_build("engine", PARTS, failing)
    assert not entry.exists() and tmp_items(root) == []


# ---------------------------------------------------------------------- LRU


def _parts(i: int) -> dict:
    return {**PARTS, "model": f"model-{i}"}


def test_lru_evicts_least_recently_used_first(root):
    cache = ArtifactCache(root)
    blob = Builder({"engine.plan": b"x" * 1000})
    paths = {i: cache.get_or_build("engine", _parts(i), blob).path for i in (1, 2, 3)}
    sizes = {e.path: e.size_bytes for e in cache.entries()}
    entry_size = max(sizes.values())
    assert min(sizes.values()) > 1000

    # Use 1 (so 2 is now the least recently used), then store 4 with room for three entries.
    limit = 3 * entry_size + 50  # (manifests differ by a few bytes)
    limited = ArtifactCache(root, max_bytes=limit)
    assert limited.get_or_build("engine", _parts(1), blob).cache_hit
    limited.get_or_build("engine", _parts(4), blob)
    assert [p.exists() for p in (paths[1], paths[2], paths[3])] == [True, False, True]
    assert limited.size_bytes() <= limit
    evicts = [e for e in limited.events() if e["event"] == "evict"]
    assert [e["key"] for e in evicts] == [ArtifactCache.key(_parts(2))]
    assert evicts[0]["bytes"] == sizes[paths[2]] and evicts[0]["path"] == str(paths[2])

    # A bigger entry 5 needs two evictions: 3 (least recently used), then 1; never 5 itself.
    limited.get_or_build("engine", _parts(5), Builder({"engine.plan": b"y" * 1500}))
    assert not paths[3].exists() and not paths[1].exists()
    assert [e.key for e in limited.entries()] == [ArtifactCache.key(_parts(i)) for i in (4, 5)]
    assert limited.size_bytes() <= limit


def test_lru_never_evicts_the_entry_just_built(root):
    cache = ArtifactCache(root, max_bytes=10)
    old = cache.get_or_build("engine", _parts(1), Builder()).path
    new = cache.get_or_build("engine", _parts(2), Builder()).path
    assert not old.exists() and new.exists() and cache.validate("engine", _parts(2)) is None


def test_prune_skips_entries_locked_by_another_process(root):
    cache = ArtifactCache(root)
    for i in (1, 2, 3):
        cache.get_or_build("engine", _parts(i), Builder())
    held = ArtifactCache.key(_parts(1))  # the least recently used
    with hold_lock_in_subprocess(root / "locks" / f"{held}.lock"):
        evicted = cache.prune(max_bytes=0)
    assert sorted(e.key for e in evicted) == sorted(ArtifactCache.key(_parts(i)) for i in (2, 3))
    assert [e.key for e in cache.entries()] == [held]


class hold_lock_in_subprocess:
    """Hold a filelock from another process while the block runs."""

    def __init__(self, path: Path):
        self.path = path

    def __enter__(self):
        code = (
            "import filelock, sys; l = filelock.FileLock(sys.argv[1]); l.acquire(); "
            "print('locked', flush=True); sys.stdin.read()"
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, str(self.path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout.readline().strip() == "locked"
        return self

    def __exit__(self, *exc):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def test_lock_timeout_names_the_lock(root):
    cache = ArtifactCache(root, lock_timeout=0.2)
    with hold_lock_in_subprocess(root / "locks" / f"{PARTS_KEY}.lock"):
        with pytest.raises(CacheError, match=r"timed out after 0.2s waiting for the lock .*" + PARTS_KEY):
            cache.get_or_build("engine", PARTS, Builder())
    assert cache.get_or_build("engine", PARTS, Builder()).cache_hit is False


# ---------------------------------------------------------------------- read-only caches


def _snapshot(root: Path) -> dict:
    return {str(p): (p.stat().st_mtime_ns, p.stat().st_size) for p in sorted(root.rglob("*"))}


def test_read_only_mode_serves_hits_and_writes_nothing(root):
    writable = ArtifactCache(root)
    built = writable.get_or_build("engine", PARTS, Builder(), label="bert")
    other = writable.get_or_build("engine", _parts(2), Builder()).path
    _replace_byte(other / "engine.plan")
    before = _snapshot(root)

    ro = ArtifactCache(root, read_only=True)
    hit = ro.get_or_build("engine", PARTS, Builder(), label="bert")
    assert hit.cache_hit and hit.path == built.path and hit.waited_seconds == 0.0

    with pytest.raises(CacheError, match=r"is not in the read-only cache .*writable --trt-cache-dir"):
        ro.get_or_build("engine", _parts(3), Builder(), label="gpt2")
    with pytest.raises(CacheError, match=r"\(gpt2\) is not in the read-only cache"):
        ro.get_or_build("engine", _parts(3), Builder(), label="gpt2")
    with pytest.raises(
        CacheError, match=r"unusable \(checksum mismatch in 'engine.plan'.*\) and the cache .* is read-only"
    ):
        ro.get_or_build("engine", _parts(2), Builder())
    with pytest.raises(CacheError, match="cannot rebuild .* read-only"):
        ro.get_or_build("engine", PARTS, Builder(), rebuild=True)
    for op in (ro.clear, ro.prune):
        with pytest.raises(CacheError, match="opened read-only"):
            op()
    ro.record_event({"event": "custom"})
    assert len(ro.events()) == 2  # the writable cache's two builds; nothing from the read-only one
    assert _snapshot(root) == before


def test_read_only_root_must_exist(tmp_path):
    with pytest.raises(CacheError, match="read-only pytest-trt cache directory .*nowhere does not exist"):
        ArtifactCache(tmp_path / "nowhere", read_only=True)


CHILD_READ_ONLY = textwrap.dedent(
    """
    import json, os, sys
    from pytest_trt.cache import ArtifactCache
    from pytest_trt.errors import CacheError
    root, parts = sys.argv[1], json.loads(sys.argv[2])
    out = {"uid": os.getuid()}
    try:
        open(os.path.join(root, "probe"), "w")
        out["can_write"] = True
    except OSError:
        out["can_write"] = False
    for name, kwargs in (("writable", {}), ("read_only", {"read_only": True})):
        try:
            cache = ArtifactCache(root, **kwargs)
            hit = cache.get_or_build("engine", parts, lambda tmp: None)
            out[name + "_hit"] = [hit.cache_hit, str(hit.path)]
            cache.get_or_build("engine", {**parts, "plan": "missing"}, lambda tmp: None)
            out[name + "_miss"] = "built?!"
        except CacheError as exc:
            out[name + "_error"] = str(exc)
    print(json.dumps(out))
    """
)


def _unwritable_runner(mode: str, root: Path) -> list[str]:
    """A command prefix under which ``root`` is really unwritable, or pytest.skip with the reason.

    permission-denied: the tree is chmod a-w; root ignores modes, so as root the child runs
    without CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH/CAP_FOWNER (setpriv). read-only-filesystem:
    a read-only bind mount of ``root`` in a private mount namespace (unshare; needs root).
    """
    if mode == "permission-denied":
        for d in [root, *(p for p in root.rglob("*") if p.is_dir())]:
            d.chmod(0o555)
        if os.getuid() != 0:
            return []
        prefix = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search,-fowner,-linux_immutable"]
    else:
        if os.getuid() != 0:
            pytest.skip("a read-only bind mount needs root (unshare -m + mount)")
        script = 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" "$1" && shift && exec "$@"'
        prefix = ["unshare", "-m", "sh", "-c", script, "sh", str(root)]
    if not shutil.which(prefix[0]):
        pytest.skip(f"{prefix[0]} is not installed: cannot make a directory unwritable for root")
    probe = subprocess.run([*prefix, sys.executable, "-c", "pass"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(
            f"cannot make a directory unwritable for root here ({' '.join(prefix[:3])}): {probe.stderr.strip()}"
        )
    return prefix


@pytest.mark.parametrize("mode", ["permission-denied", "read-only-filesystem"])
def test_unwritable_directory_for_real(tmp_path, mode):
    """What a user meets with a cache directory they cannot write (checked by a real write in the child)."""
    root = tmp_path / "cache"
    entry = ArtifactCache(root).get_or_build("engine", PARTS, Builder()).path
    script = tmp_path / "child.py"
    script.write_text(CHILD_READ_ONLY)
    try:
        prefix = _unwritable_runner(mode, root)
        env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
        proc = subprocess.run(
            [*prefix, sys.executable, str(script), str(root), json.dumps(PARTS)],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
    finally:
        for d in [root, *(p for p in root.rglob("*") if p.is_dir())]:
            d.chmod(0o755)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["can_write"] is False, "the directory must really be unwritable for this test to mean anything"
    assert out["writable_error"].startswith(f"the pytest-trt cache directory {root} is not writable: ")
    reason = "Permission denied" if mode == "permission-denied" else "Read-only file system"
    assert reason in out["writable_error"]
    assert "--trt-cache-dir" in out["writable_error"] and "read_only=True" in out["writable_error"]
    assert out["read_only_hit"] == [True, str(entry)]
    assert "is not in the read-only cache" in out["read_only_error"]


def test_uncreatable_root_raises_cache_error_with_hint(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(CacheError) as info:
        ArtifactCache(blocker / "cache")
    message = str(info.value)
    assert message.startswith(f"cannot create the pytest-trt cache directory {blocker / 'cache'}: ")
    assert "--trt-cache-dir" in message and "PYTEST_TRT_CACHE_DIR" in message


# ---------------------------------------------------------------------- full disk


def test_disk_full_during_build_is_a_cache_error_and_leaves_nothing(cache, root):
    def fills_disk(tmp: Path):
        (tmp / "engine.plan").write_bytes(b"part of an engine")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(CacheError) as info:
        cache.get_or_build("engine", PARTS, fills_disk, label="bert")
    message = str(info.value)
    assert f"engine entry {root / 'engine' / PARTS_KEY} (bert)" in message
    assert "no space left" in message and "Nothing was stored" in message and "--trt-cache-dir" in message
    assert isinstance(info.value.__cause__, OSError) and info.value.__cause__.errno == errno.ENOSPC
    assert not (root / "engine" / PARTS_KEY).exists() and tmp_items(root) == []


def test_disk_full_while_writing_the_manifest(cache, root, monkeypatch):
    def no_space(path, data, *, sync=False):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(entry_mod, "write_new", no_space)  # the manifest, written last
    with pytest.raises(
        CacheError, match=r"cannot store cache engine entry .*No space left on device.*disk is full"
    ):
        cache.get_or_build("engine", PARTS, Builder())
    assert not (root / "engine" / PARTS_KEY).exists() and tmp_items(root) == []
    monkeypatch.undo()
    assert not cache.get_or_build("engine", PARTS, Builder()).cache_hit


def test_other_os_errors_from_build_propagate_unchanged(cache):
    err = PermissionError(errno.EACCES, "Permission denied", "/models/x.onnx")

    def build(tmp):
        raise err

    with pytest.raises(PermissionError) as info:
        cache.get_or_build("engine", PARTS, build)
    assert info.value is err


# ---------------------------------------------------------------------- garbage, events, helpers


def test_stale_temp_dirs_are_collected_on_open(cache, root):
    old = time.time() - 2 * cache_mod.STALE_SECONDS
    stale_build = root / ".pytest-trt-tmp" / f"build-{PARTS_KEY}-99999-abcd"
    stale_trash = root / ".pytest-trt-tmp" / f"trash-{PARTS_KEY}-99999-abcd"
    stale_probe = root / ".pytest-trt-probe-99999-abcd"
    young_build = root / ".pytest-trt-tmp" / f"build-{'1' * 64}-99998-abcd"
    for d in (stale_build, stale_trash / "entry", young_build):
        d.mkdir(parents=True)
        (d / "engine.plan").write_bytes(b"partial")
    stale_probe.write_bytes(b"")
    for p in (stale_build, stale_trash, stale_probe):
        os.utime(p, (old, old))

    ArtifactCache(root)
    assert tmp_items(root) == [young_build.name] and not stale_probe.exists()
    assert ArtifactCache(root, stale_seconds=0).collect_garbage() == [] and tmp_items(root) == []
    # Leftovers are never mistaken for entries.
    assert cache.entries() == []


def test_events_log(cache, root, monkeypatch):
    t0 = time.time()
    cache.record_event({"event": "custom", "detail": [1, 2]})
    with open(root / "events.jsonl", "a") as f:
        f.write('{"event": "half a li')  # a writer killed mid-line
    cache.get_or_build("engine", PARTS, Builder())
    events = cache.events()
    assert [e["event"] for e in events] == ["custom", "build"]
    assert events[0]["detail"] == [1, 2] and events[0]["pid"] == os.getpid() and events[0]["time"] >= t0
    assert cache.events(since=time.time() + 60) == []

    monkeypatch.setattr(eventlog_mod, "EVENTS_MAX_BYTES", 10)
    cache.record_event({"event": "after-rotation"})
    assert (root / "events.1.jsonl").exists()
    assert [e["event"] for e in cache.events()] == ["custom", "build", "after-rotation"]


def _lines(root: Path) -> list[str]:
    path = root / "events.jsonl"
    return [json.loads(line)["event"] for line in path.read_text().splitlines()] if path.exists() else []


def test_hits_are_appended_in_batches_in_order_and_at_exit(cache, root, monkeypatch):
    """Issue 33: a hit is the one event of every cached test; its line waits in memory and is
    appended, in order, before the process's next other event, before a read, once
    HITS_MAX_PENDING wait, at the session's end (flush_events) and at exit."""
    cache.get_or_build("engine", PARTS, Builder())
    cache.get_or_build("engine", PARTS, Builder())
    assert _lines(root) == ["build"], "the hit waits in memory"
    cache.get_or_build("engine", _parts(2), Builder())  # another event appends the hit first
    assert _lines(root) == ["build", "hit", "build"]
    cache.get_or_build("engine", PARTS, Builder())
    # another cache object on the same directory (e.g. the probes' one) reads this process's hits too
    assert [e["event"] for e in ArtifactCache(root).events()] == ["build", "hit", "build", "hit"]
    cache.get_or_build("engine", PARTS, Builder())
    cache.flush_events()
    assert _lines(root) == ["build", "hit", "build", "hit", "hit"]

    monkeypatch.setattr(eventlog_mod, "HITS_MAX_PENDING", 3)
    for _ in range(3):
        cache.get_or_build("engine", PARTS, Builder())
    assert _lines(root).count("hit") == 6, "the third kept hit appends the batch"

    # a process that exits normally leaves its hits in the file
    script = textwrap.dedent(f"""
        from pytest_trt.cache import ArtifactCache
        cache = ArtifactCache({str(root)!r})
        for _ in range(2):
            assert cache.get_or_build("engine", {PARTS!r}, lambda tmp: None).cache_hit
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    assert _lines(root).count("hit") == 8
    assert ArtifactCache(root, read_only=True).events()[-1]["pid"] != os.getpid()


def test_entries_size_and_clear(cache, root):
    a = cache.get_or_build("engine", _parts(1), Builder({"e": b"1" * 100}), label="a")
    cache.get_or_build("engine", _parts(2), Builder({"e": b"2" * 200}))
    cache.get_or_build("baseline", _parts(1), Builder({"b.npz": b"3" * 50}))
    (root / "engine" / "not-a-key").mkdir()  # foreign things in the tree are not entries
    entries = cache.entries()
    assert sorted((e.kind, e.key) for e in entries) == sorted(
        [
            ("engine", ArtifactCache.key(_parts(1))),
            ("engine", ArtifactCache.key(_parts(2))),
            ("baseline", ArtifactCache.key(_parts(1))),
        ]
    )
    first = next(e for e in entries if e.path == a.path)
    assert first.label == "a" and first.size_bytes == 100 + (a.path / "manifest.json").stat().st_size
    assert first.to_json()["has_manifest"] is True
    assert cache.size_bytes() == sum(e.size_bytes for e in entries)
    assert cache.clear("baseline") == 1 and len(cache.entries()) == 2
    assert cache.clear() == 2 and cache.entries() == [] and cache.size_bytes() == 0
    assert tmp_items(root) == []


def test_default_cache_dir_is_the_plugins_rule(monkeypatch, tmp_path):
    # one default for the plugin, the console script and the API (issue 28): $PYTEST_TRT_CACHE_DIR, else
    # <rootdir>/.trt-cache with the rootdir pytest would choose here
    monkeypatch.setenv("PYTEST_TRT_CACHE_DIR", str(tmp_path / "explicit"))
    assert default_cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("PYTEST_TRT_CACHE_DIR")
    project = tmp_path / "project"
    (project / "tests" / "unit").mkdir(parents=True)
    (project / "tox.ini").write_text("[pytest]\naddopts = -q\n")
    (project / "tests" / "setup.cfg").write_text("[metadata]\nname = x\n")  # no [tool:pytest]: not pytest's
    monkeypatch.chdir(project / "tests" / "unit")
    assert default_cache_dir() == project / ".trt-cache"
    assert default_cache_dir(tmp_path) == tmp_path / ".trt-cache"  # no project: the directory itself


def test_project_root_follows_pytests_rootdir_rule(tmp_path):
    from pytest_trt.core.locations import project_root

    outer, inner = tmp_path / "outer", tmp_path / "outer" / "pkg" / "sub"
    inner.mkdir(parents=True)
    (outer / "pytest.ini").write_text("[pytest]\n")
    (outer / "pkg" / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")  # no pytest table
    assert project_root(inner) == outer  # a pytest configuration file wins over a nearer plain pyproject.toml
    (outer / "pytest.ini").unlink()
    assert project_root(inner) == outer / "pkg"  # else the nearest pyproject.toml
    (outer / "pkg" / "pyproject.toml").write_text("[tool.pytest.ini_options]\naddopts = '-q'\n")
    (inner / "setup.cfg").write_text("[tool:pytest]\n")
    assert project_root(inner) == inner


def test_max_bytes_is_validated(tmp_path):
    with pytest.raises(UsageError, match="max_bytes"):
        ArtifactCache(tmp_path, max_bytes=-1)
