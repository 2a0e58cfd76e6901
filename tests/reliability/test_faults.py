"""Faults around the artifact cache, seen from real pytest sessions (the plugin level).

tests/unit/test_cache_faults.py covers ``ArtifactCache`` itself under concurrent builds,
``kill -9`` and KeyboardInterrupt. Here the same faults hit whole ``pytest`` runs that
share a ``--trt-cache-dir``, and every test checks what a user would see next: the run
after the fault passes, rebuilds what was lost, and never uses a partial or foreign entry.

A slow, interruptible build without touching pytest-trt: the test projects get
``FAULT_CONFTEST``, an autouse fixture that (only when ``TRT_FAULT_MODE`` is set) wraps the
``build`` callable the emulate backend hands to ``ArtifactCache.get_or_build``:

* ``hang``: the first process to claim it writes the engine, truncates it to half (an
  engine caught mid-write), signals ``building-<pid>`` (holding the tmp path) and sleeps
  until killed or interrupted; any later build in the run is normal;
* ``barrier``: signals ``ready-<pid>``, waits for ``go``, then builds slowly (0.5 s), so two
  processes are inside ``get_or_build`` for one key at the same time;
* ``enospc``: writes half the engine and raises ``OSError(ENOSPC)``, like a full disk.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from pytest_trt.cache import MANIFEST, ArtifactCache

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals, setpriv and mount namespaces")

REPO = Path(__file__).resolve().parents[2]
ENCODER = REPO / "example_suite" / "models" / "encoder_opset14.onnx"

FAULT_CONFTEST = textwrap.dedent(
    """
    import errno, os, time
    from pathlib import Path

    import pytest


    @pytest.fixture(autouse=True)
    def _trt_fault(monkeypatch):
        mode = os.environ.get("TRT_FAULT_MODE")
        if not mode:
            yield
            return
        from pytest_trt.cache import ArtifactCache

        sync, pid = Path(os.environ["TRT_FAULT_SYNC"]), os.getpid()
        original = ArtifactCache.get_or_build

        def get_or_build(self, kind, parts, build, **kwargs):
            if kind != "emulate":
                return original(self, kind, parts, build, **kwargs)
            if mode == "barrier":
                (sync / f"ready-{pid}").touch()
                deadline = time.monotonic() + 60
                while not (sync / "go").exists():
                    assert time.monotonic() < deadline, "no go signal"
                    time.sleep(0.005)

            def faulty(tmp):
                build(tmp)
                files = [p for p in tmp.rglob("*") if p.is_file()]
                if mode == "barrier":
                    time.sleep(0.5)
                elif mode == "enospc":
                    for f in files:
                        f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
                    raise OSError(errno.ENOSPC, "No space left on device", str(files[0]))
                elif mode == "hang":
                    try:
                        os.close(os.open(sync / "claimed", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                    except FileExistsError:
                        return  # someone else hung already: build normally
                    for f in files:
                        f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
                    (sync / f"building-{pid}").write_text(str(tmp))
                    time.sleep(120)

            return original(self, kind, parts, faulty, **kwargs)

        monkeypatch.setattr(ArtifactCache, "get_or_build", get_or_build)
        yield
    """
)


def module_text(model: Path, *, tests: str = "one") -> str:
    """A test module over ``model``: fp16 with the LayerNorm kept fp32 (passes at atol 1e-2)."""
    head = f"import pytest\nMODEL = {str(model)!r}\n"
    kept = '@pytest.mark.trt(model=MODEL, precision="fp16", keep_fp32=["*/LayerNorm/*"])\n'
    if tests == "one":
        return head + kept + "def test_kept(trt):\n    trt.check(atol=1e-2)\n"
    if tests == "two":
        return (head + kept + "def test_kept(trt):\n    trt.check(atol=1e-2)\n\n"
                '@pytest.mark.trt(model=MODEL, precision="fp32")\n'
                "def test_fp32(trt):\n    trt.check()\n")
    if tests == "four-seeds":
        return (head + '@pytest.mark.parametrize("seed", [1, 2, 3, 4])\n' + kept
                + "def test_shared(trt, seed):\n    trt.check(trt.feeds(seed=seed), atol=1e-2)\n")
    raise ValueError(tests)


@pytest.fixture
def project(pytester, models):
    """The pytester dir with FAULT_CONFTEST and a test module; returns (dir, cache_dir, sync_dir).

    Runs that only have to show what the NEXT session does after a fault use
    ``pytester.runpytest`` there (in-process, much faster than a subprocess); FAULT_CONFTEST
    does nothing unless ``TRT_FAULT_MODE`` is set.
    """

    def make(tests: str = "one", model: Path | None = None):
        root = pytester.path
        (root / "conftest.py").write_text(FAULT_CONFTEST)
        (root / "test_model.py").write_text(module_text(model or models.layernorm, tests=tests))
        sync = root / "sync"
        sync.mkdir()
        return root, root / "cache", sync

    return make


def next_run(pytester, cache: Path, passed: int):
    """The next pytest session on ``cache`` (in-process): passes, with no CacheWarning."""
    result = pytester.runpytest("--trt-cache-dir=" + str(cache), "-W", "always::pytest_trt.errors.CacheWarning")
    result.assert_outcomes(passed=passed)
    assert "CacheWarning" not in result.stdout.str()
    return result


def fault_env(mode: str, sync: Path) -> dict:
    return {"TRT_FAULT_MODE": mode, "TRT_FAULT_SYNC": str(sync)}


def wait_for(predicate, what: str, timeout: float = 60.0, run=None):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if run is not None and run.proc.poll() is not None:
            run.finish()
            pytest.fail(f"pytest exited ({run.rc}) before {what}:\n{run.out}")
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.01)


def events(cache_dir: Path, kind: str | None = None, event: str | None = None) -> list[dict]:
    rows = []
    path = cache_dir / "events.jsonl"
    if path.exists():
        for line in path.read_text(errors="replace").splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue  # planted junk
            if isinstance(row, dict):
                rows.append(row)
    return [r for r in rows if (kind is None or r.get("kind") == kind) and (event is None or r.get("event") == event)]


def entries(cache_dir: Path, kind: str) -> list[Path]:
    d = cache_dir / kind
    return sorted(p for p in d.iterdir() if len(p.name) == 64) if d.is_dir() else []


def tmp_items(cache_dir: Path) -> list[Path]:
    d = cache_dir / ".pytest-trt-tmp"
    return sorted(d.iterdir()) if d.is_dir() else []


def building(sync: Path) -> tuple[int, Path] | None:
    """(pid, tmp build dir) of the process hanging in its build, once it signalled."""
    for f in sync.glob("building-*"):
        text = f.read_text()
        if text:
            return int(f.name.split("-")[1]), Path(text)
    return None


def lock_is_free(cache_dir: Path, key: str) -> bool:
    import filelock

    lock = filelock.FileLock(str(cache_dir / "locks" / f"{key}.lock"), timeout=0)
    try:
        lock.acquire()
    except filelock.Timeout:
        return False
    lock.release()
    return True


def assert_clean_pass(run, passed: int):
    assert run.rc == 0, run.out
    assert run.outcomes().get("passed") == passed, run.out
    assert "CacheWarning" not in run.out, run.out


# ----------------------------------------------------------------------------- kill -9, SIGINT


def test_kill_9_mid_build_then_the_next_run_rebuilds_and_never_reads_the_partial_engine(project, start_pytest, pytester):
    root, cache, sync = project()
    victim = start_pytest(root, "--trt-cache-dir=" + str(cache), env=fault_env("hang", sync))
    pid, tmp = wait_for(lambda: building(sync), "the build to start", run=victim)
    assert pid == victim.pid
    half_written = [p for p in tmp.iterdir()]
    assert half_written and MANIFEST not in {p.name for p in half_written}
    os.kill(victim.pid, signal.SIGKILL)
    victim.finish()
    assert victim.rc == -signal.SIGKILL
    key = tmp.name.split("-")[1]

    # What the killed run leaves: no entry, a manifest-less tmp build dir, a lock nobody holds.
    assert entries(cache, "emulate") == []
    assert tmp.is_dir() and tmp in tmp_items(cache)
    assert lock_is_free(cache, key), "the kernel releases a dead builder's lock"
    assert events(cache, "emulate", "build") == []

    next_run(pytester, cache, passed=1)
    [built] = events(cache, "emulate", "build")
    assert built["pid"] == os.getpid() and built["key"] == key
    assert events(cache, "emulate", "corrupt") == [] and events(cache, "emulate", "hit") == []
    [entry] = entries(cache, "emulate")
    assert entry.name == key and ArtifactCache(cache).validate("emulate", json.loads(
        (entry / MANIFEST).read_text())["parts"]) is None
    # The dead builder's leftover is never read; it is removed once stale (age) and unlocked.
    assert tmp.is_dir(), "a fresh leftover is kept (its builder might still be alive)"
    old = time.time() - 3600
    os.utime(tmp, (old, old))
    ArtifactCache(cache)  # opening the cache collects garbage
    assert not tmp.exists() and tmp_items(cache) == []


def test_kill_9_of_an_xdist_worker_mid_build_the_other_worker_builds_and_the_run_continues(project, start_pytest):
    pytest.importorskip("xdist")
    root, cache, sync = project("four-seeds")
    run = start_pytest(root, "-n", "2", "--trt-cache-dir=" + str(cache), env=fault_env("hang", sync))
    pid, tmp = wait_for(lambda: building(sync), "a worker to start the build", run=run)
    assert pid != run.pid, "the build runs in a worker, not in the controller"
    os.kill(pid, signal.SIGKILL)
    run.finish()

    # xdist reports the test that was running on the killed worker as failed (the worker
    # crashed) and replaces the worker; every other test passes on an engine built once.
    assert run.rc == 1, run.out
    assert run.outcomes() == {"failed": 1, "passed": 3}, run.out
    assert "crashed" in run.out or "node down" in run.out, run.out
    builds = events(cache, "emulate", "build")
    assert len(builds) == 1 and builds[0]["pid"] != pid, builds
    assert events(cache, "emulate", "corrupt") == []
    [entry] = entries(cache, "emulate")
    assert entry.name == tmp.name.split("-")[1]
    assert "CacheWarning" not in run.out


def test_ctrl_c_during_a_build_stops_the_run_and_the_next_run_rebuilds(project, start_pytest, pytester):
    root, cache, sync = project("two")
    run = start_pytest(root, "--trt-cache-dir=" + str(cache), env=fault_env("hang", sync))
    pid, tmp = wait_for(lambda: building(sync), "the build to start", run=run)
    os.kill(pid, signal.SIGINT)
    run.finish()

    assert run.rc == 2, run.out  # pytest's ExitCode.INTERRUPTED
    assert "KeyboardInterrupt" in run.out
    assert "passed" not in run.out and "test_fp32" not in run.out.split("KeyboardInterrupt")[-1], run.out
    # The interrupted build cleaned up after itself: no entry, no tmp dir, lock released.
    key = tmp.name.split("-")[1]
    assert entries(cache, "emulate") == [] and not tmp.exists() and tmp_items(cache) == []
    assert lock_is_free(cache, key)

    next_run(pytester, cache, passed=2)
    assert {e["key"] for e in events(cache, "emulate", "build")} >= {key}
    assert len(events(cache, "emulate", "build")) == 2
    assert events(cache, "emulate", "corrupt") == []


def test_two_pytest_processes_building_the_same_key_at_once_build_it_once(project, start_pytest):
    root, cache, sync = project()
    runs = [start_pytest(root, "--trt-cache-dir=" + str(cache), env=fault_env("barrier", sync)) for _ in range(2)]
    wait_for(lambda: len(list(sync.glob("ready-*"))) == 2, "both runs to reach the engine build")
    (sync / "go").touch()
    for run in runs:
        run.finish()
        assert_clean_pass(run, 1)

    pids = {run.pid for run in runs}
    [built] = events(cache, "emulate", "build")
    [hit] = events(cache, "emulate", "hit")
    assert {built["pid"], hit["pid"]} == pids
    assert hit["waited"] > 0.2, "the second process waited for the first one's (0.5 s) build"
    assert len(events(cache, "baseline", "build")) == 1, "the FP32 baseline is shared too"
    assert len(entries(cache, "emulate")) == 1 and tmp_items(cache) == []


# ----------------------------------------------------------------------------- damaged entries


def _rewrite_manifest(entry: Path, change) -> None:
    path = entry / MANIFEST
    manifest = json.loads(path.read_text())
    change(manifest)
    path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def _truncate(entry: Path, name: str):
    f = entry / name
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])


def _flip_bytes(entry: Path, name: str):
    f = entry / name
    data = bytearray(f.read_bytes())
    data[len(data) // 2: len(data) // 2 + 16] = bytes(b ^ 0xFF for b in data[len(data) // 2: len(data) // 2 + 16])
    f.write_bytes(bytes(data))


def _poison_baseline(entry: Path):
    """Same names, shapes and size, values off by 1000: a test using it could not pass."""
    f = entry / "outputs.npz"
    with np.load(f) as data:
        values = {k: data[k] + np.float32(1000) for k in data.files}
    size = f.stat().st_size
    np.savez(f, **values)
    assert f.stat().st_size == size


def _foreign_entry(cache: Path, entry: Path):
    """The entry of another key (another plan) moved in under this key's name."""
    kind = entry.parent.name
    other = cache / kind / ("0" * 64)
    shutil.copytree(entry, other)
    _rewrite_manifest(other, lambda m: m.update(key="0" * 64))
    shutil.rmtree(entry)
    other.rename(entry)
    _rewrite_manifest(entry, lambda m: m.update(key="0" * 64))


def _symlinked_entry(cache: Path, entry: Path):
    elsewhere = cache.parent / "elsewhere"
    shutil.move(str(entry), elsewhere)
    entry.symlink_to(elsewhere, target_is_directory=True)


def _junk_everywhere(cache: Path, _engine: Path, _baseline: Path):
    """Foreign files around the entries (not in them): ignored, nothing rebuilt."""
    (cache / "emulate" / "README.txt").write_text("not an entry")
    (cache / "emulate" / ("f" * 64 + ".bak")).write_text("not an entry either")
    (cache / "baseline" / "notes").mkdir()
    (cache / ".pytest-trt-tmp" / "something-else").write_text("junk")
    (cache / "unknown-kind").mkdir()
    with open(cache / "events.jsonl", "a") as f:
        f.write("{not json\n\x00\x01 binary junk\n")


_OTHER_ORT = {"backend_versions": {"onnxruntime": "0.0.1-other", "onnx": "0.0.1"}}

#: id -> (what it does to the populated cache (cache, emulate entry, baseline entry), kind whose entry
#:        must be rebuilt (None: nothing), the fragment of the CacheWarning)
DAMAGE = {
    "engine-truncated": (lambda c, e, b: _truncate(e, "emulation.onnx"), "emulate", "(truncated?)"),
    "engine-bytes-flipped": (lambda c, e, b: _flip_bytes(e, "emulation.onnx"), "emulate",
                             "checksum mismatch in 'emulation.onnx'"),
    "engine-manifest-deleted": (lambda c, e, b: (e / MANIFEST).unlink(), "emulate",
                                "has no manifest.json (an interrupted or foreign write)"),
    "engine-manifest-garbage": (lambda c, e, b: (e / MANIFEST).write_bytes(b"\x00{garbage"), "emulate",
                                "manifest.json is not valid JSON"),
    "engine-foreign-file-inside": (lambda c, e, b: (e / "evil.so").write_bytes(b"\x7fELF"), "emulate",
                                   "not listed in manifest.json (foreign): evil.so"),
    "engine-is-a-symlink": (lambda c, e, b: _symlinked_entry(c, e), "emulate", "the entry is not a directory"),
    "engine-of-another-key-under-this-name": (lambda c, e, b: _foreign_entry(c, e), "emulate",
                                              "manifest.json says key '0000000000000000'"),
    "engine-of-another-onnxruntime-version": (
        lambda c, e, b: _rewrite_manifest(e, lambda m: m["parts"].update(_OTHER_ORT)), "emulate",
        "its parts differ from the requested ones: backend_versions: "),
    "engine-of-another-backend": (
        lambda c, e, b: _rewrite_manifest(e, lambda m: m["parts"].update(backend="tensorrt")), "emulate",
        'backend: "tensorrt" in the entry, "emulate" requested'),
    "engine-of-another-cache-format": (lambda c, e, b: _rewrite_manifest(e, lambda m: m.update(format_version=99)),
                                       "emulate", "format_version 99 in manifest.json"),
    "baseline-values-poisoned": (lambda c, e, b: _poison_baseline(b), "baseline", "checksum mismatch in 'outputs.npz'"),
    "baseline-truncated": (lambda c, e, b: _truncate(b, "outputs.npz"), "baseline", "(truncated?)"),
    "baseline-of-another-onnxruntime-version": (
        lambda c, e, b: _rewrite_manifest(b, lambda m: m["parts"].update(onnxruntime="0.0.1-other")), "baseline",
        "its parts differ from the requested ones: onnxruntime: "),
    "foreign-files-around-entries": (_junk_everywhere, None, None),
}


_TEMPLATE: dict[str, Path] = {}


@pytest.fixture
def populated_cache(pytester, tmp_path_factory, models) -> Path:
    """A cache populated by one pytest session of one test: one emulate entry, one baseline entry.

    Made once per module (by the first test that asks, with an in-process run in a
    subdirectory of its pytester dir); tests copy it before damaging it.
    """
    if "cache" not in _TEMPLATE:
        cache = tmp_path_factory.mktemp("template") / "cache"
        sub = pytester.mkpydir("populate")
        (sub / "test_populate.py").write_text(module_text(models.layernorm))
        pytester.runpytest("populate", "--trt-cache-dir=" + str(cache)).assert_outcomes(passed=1)
        shutil.rmtree(sub)
        assert len(entries(cache, "emulate")) == len(entries(cache, "baseline")) == 1
        _TEMPLATE["cache"] = cache
    return _TEMPLATE["cache"]


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_cache_entry_is_reported_and_rebuilt_never_used(damage, pytester, populated_cache, models):
    cache = pytester.path / "cache"
    shutil.copytree(populated_cache, cache, symlinks=True)
    [engine] = entries(cache, "emulate")
    [baseline] = entries(cache, "baseline")
    apply, rebuilt, fragment = DAMAGE[damage]
    apply(cache, engine, baseline)
    before = {k: len(events(cache, k, "build")) for k in ("emulate", "baseline")}

    pytester.makepyfile(test_model=module_text(models.layernorm))
    result = pytester.runpytest("test_model.py", "--trt-cache-dir=" + str(cache),
                                "-W", "always::pytest_trt.errors.CacheWarning")

    out = result.stdout.str()
    if rebuilt is None:
        result.assert_outcomes(passed=1)
        assert "CacheWarning" not in out
        assert len(events(cache, "emulate", "hit")) == len(events(cache, "baseline", "hit")) == 1
    else:
        result.assert_outcomes(passed=1, warnings=1)
        result.stdout.fnmatch_lines([f"*CacheWarning: pytest-trt cache: discarding unusable {rebuilt} entry *"])
        assert fragment in out, out
        assert "rebuilding it" in out
        [corrupt] = events(cache, rebuilt, "corrupt")
        assert fragment in corrupt["reason"]
        other = "baseline" if rebuilt == "emulate" else "emulate"
        assert len(events(cache, rebuilt, "build")) == before[rebuilt] + 1
        assert len(events(cache, other, "build")) == before[other], f"the intact {other} entry was rebuilt"
        assert len(events(cache, other, "hit")) == 1
    # Whatever was damaged, the cache ends with exactly one valid entry of each kind.
    for kind in ("emulate", "baseline"):
        [entry] = entries(cache, kind)
        assert entry.is_dir() and not entry.is_symlink()
        parts = json.loads((entry / MANIFEST).read_text())["parts"]
        assert ArtifactCache(cache).validate(kind, parts) is None
    assert [p for p in tmp_items(cache) if p.name.startswith(("build-", "trash-"))] == []


# ----------------------------------------------------------------------------- full disk


def _encoder_module() -> str:
    return (f"import pytest\n"
            f"@pytest.mark.trt(model={str(ENCODER)!r}, precision='fp16', keep_fp32=['*/LayerNorm/*', 'op:Softmax'],\n"
            f"                 dims={{'batch': 2, 'sequence': 8}})\n"
            f"def test_encoder(trt):\n    trt.check(atol=1e-2)\n")


def _no_space_message(out: str, cache: Path):
    """What a user reads when the cache disk is full."""
    assert "CacheError" in out, out
    assert f"no space left on the device while building cache emulate entry {cache}/emulate/" in out, out
    assert "Nothing was stored. The disk is full: free space, lower the cache size limit, or point " \
           "--trt-cache-dir=DIR to a larger disk" in out, out
    assert "pytest_trt/cache.py" not in out and "Traceback" not in out, "internal frames shown"


def _can_mount_tmpfs() -> str | None:
    if os.getuid() != 0:
        return "mounting a tmpfs needs root (unshare -m + mount)"
    if not shutil.which("unshare"):
        return "unshare is not installed"
    probe = subprocess.run(["unshare", "-m", "sh", "-c", 'd=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs "$d"'],
                           capture_output=True, text=True)
    if probe.returncode:
        return f"cannot mount a tmpfs here: {probe.stderr.strip()}"
    return None


def test_full_disk_for_real_on_a_tiny_tmpfs_fails_clearly_and_stores_nothing(pytester, subprocess_env):
    """ENOSPC from the kernel: the cache directory is a 128 KiB tmpfs, the engine ~430 KB."""
    reason = _can_mount_tmpfs()
    if reason:
        pytest.skip(reason)  # test_full_disk_simulated below covers the same path everywhere
    root = pytester.path
    (root / "test_encoder.py").write_text(_encoder_module())
    cache = root / "cache"
    cache.mkdir()
    pytest_cmd = " ".join([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
                           "-q", "--color=no", "--trt-cache-dir=" + str(cache)])
    script = textwrap.dedent(f"""
        set -u
        mount -t tmpfs -o size=128k tmpfs {cache} || exit 99
        {pytest_cmd} > out.txt 2>&1; echo $? > rc.txt
        find {cache} | sort > listing.txt
    """)
    proc = subprocess.run(["unshare", "-m", "sh", "-c", script], cwd=root, env=subprocess_env, capture_output=True,
                          text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    out = (root / "out.txt").read_text()
    listing = [p[len(str(cache)):] for p in (root / "listing.txt").read_text().splitlines()]

    assert (root / "rc.txt").read_text().strip() == "1", out
    assert "1 failed" in out, out
    _no_space_message(out, cache)
    # Nothing half-written is left: no entry, no build or trash directory (the recovery run
    # on a disk with space is test_full_disk_simulated's second half).
    assert not [p for p in listing if p.startswith("/emulate/")], listing
    assert not [p for p in listing if p.startswith(("/tmp/build-", "/tmp/trash-"))], listing


def test_full_disk_simulated_fails_clearly_stores_nothing_and_recovers(project, pytester, monkeypatch):
    """ENOSPC raised by the build after writing half the engine (runs everywhere)."""
    root, cache, sync = project()
    monkeypatch.setenv("TRT_FAULT_MODE", "enospc")
    monkeypatch.setenv("TRT_FAULT_SYNC", str(sync))
    result = pytester.runpytest("--trt-cache-dir=" + str(cache))
    result.assert_outcomes(failed=1)
    _no_space_message(result.stdout.str(), cache)
    assert entries(cache, "emulate") == [] and tmp_items(cache) == []
    [failed] = events(cache, "emulate", "build_failed")
    assert failed["error"] == "CacheError"

    monkeypatch.delenv("TRT_FAULT_MODE")
    next_run(pytester, cache, passed=1)
    assert len(entries(cache, "emulate")) == 1


# ----------------------------------------------------------------------------- read-only cache


def _snapshot(tree: Path) -> dict:
    out = {}
    for p in sorted(tree.rglob("*")):
        st = p.lstat()
        out[str(p.relative_to(tree))] = (st.st_mode, st.st_size, st.st_mtime_ns,
                                          p.read_bytes() if p.is_file() and not p.is_symlink() else None)
    return out


def _unwritable(mode: str, cache: Path) -> tuple[list[str], str]:
    """Command prefix under which ``cache`` is really unwritable for this (root) user, and the OS reason."""
    if mode == "permission-denied":
        for d in [cache, *(p for p in cache.rglob("*") if p.is_dir())]:
            d.chmod(0o555)
        prefix = [] if os.getuid() != 0 else [
            "setpriv", "--bounding-set", "-dac_override,-dac_read_search,-fowner,-linux_immutable"]
        reason = "Permission denied"
    else:
        if os.getuid() != 0:
            pytest.skip("a read-only bind mount needs root (unshare -m + mount)")
        script = 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" "$1" && shift && exec "$@"'
        prefix = ["unshare", "-m", "sh", "-c", script, "sh", str(cache)]
        reason = "Read-only file system"
    if prefix and not shutil.which(prefix[0]):
        pytest.skip(f"{prefix[0]} is not installed: cannot make a directory unwritable for root")
    probe = subprocess.run([*prefix, "sh", "-c", f'touch "{cache}/probe" 2>/dev/null && echo writable'],
                           capture_output=True, text=True)
    if probe.returncode not in (0, 1) or "writable" in probe.stdout:
        pytest.skip(f"cannot make {cache} unwritable here ({' '.join(prefix[:3])}): {probe.stderr.strip()}")
    return prefix, reason


_READ_ONLY_OUTPUT: dict[str, str] = {}


@pytest.mark.parametrize("mode", ["permission-denied", "read-only-filesystem"])
def test_read_only_cache_directory_is_a_usage_error_at_session_start_and_is_left_untouched(
        mode, pytester, models, populated_cache, start_pytest):
    cache = pytester.path / "cache"
    shutil.copytree(populated_cache, cache)
    (pytester.path / "test_model.py").write_text(module_text(models.layernorm))
    before = _snapshot(cache)
    try:
        prefix, reason = _unwritable(mode, cache)
        run = start_pytest(pytester.path, "--trt-cache-dir=" + str(cache), prefix=tuple(prefix)).finish()
    finally:
        for d in [cache, *(p for p in cache.rglob("*") if p.is_dir())]:
            d.chmod(0o755)
    _READ_ONLY_OUTPUT.setdefault(mode, run.out)
    # pytest's usage error (exit 4) before any test runs, naming the directory, the OS reason and the way out.
    assert run.rc == 4, run.out
    assert f"ERROR: pytest-trt: the pytest-trt cache directory {cache} is not writable: {reason}." in run.out, run.out
    assert "Pass --trt-cache-dir=DIR (or set PYTEST_TRT_CACHE_DIR) to use a writable directory" in run.out
    assert "Traceback" not in run.out and "passed" not in run.out
    assert _snapshot(cache) == before, "a read-only cache must not be modified (not even events or LRU times)"


def test_read_only_cache_error_offers_a_way_that_works_from_pytest(pytester, models, populated_cache, start_pytest):
    out = _READ_ONLY_OUTPUT.get("permission-denied")
    if out is None:  # run on its own: make the output here
        cache = pytester.path / "cache"
        shutil.copytree(populated_cache, cache)
        (pytester.path / "test_model.py").write_text(module_text(models.layernorm))
        try:
            prefix, _ = _unwritable("permission-denied", cache)
            out = start_pytest(pytester.path, "--trt-cache-dir=" + str(cache), prefix=tuple(prefix)).finish().out
        finally:
            for d in [cache, *(p for p in cache.rglob("*") if p.is_dir())]:
                d.chmod(0o755)
    assert "is not writable" in out, out
    assert "pytest --trt-cache-read-only" in out, out


@pytest.mark.parametrize("mode", ["permission-denied", "read-only-filesystem"])
def test_read_only_cache_is_usable_with_trt_cache_read_only(mode, pytester, models, populated_cache, start_pytest):
    """A pre-populated cache shared read-only by CI runners: hits are served, nothing is written."""
    cache = pytester.path / "cache"
    shutil.copytree(populated_cache, cache)
    (pytester.path / "test_model.py").write_text(module_text(models.layernorm))
    before = _snapshot(cache)
    try:
        prefix, _ = _unwritable(mode, cache)
        run = start_pytest(pytester.path, "--trt-cache-dir=" + str(cache), "--trt-cache-read-only",
                           prefix=tuple(prefix)).finish()
    finally:
        for d in [cache, *(p for p in cache.rglob("*") if p.is_dir())]:
            d.chmod(0o755)
    assert run.rc == 0, run.out
    assert "passed" in run.out and "Traceback" not in run.out
    assert _snapshot(cache) == before, "a read-only cache must not be modified"
