"""ArtifactCache under process-level faults, with real processes.

(a) several processes build the same key at once: one build, everyone gets the entry;
(b) a builder killed with SIGKILL mid-build: nothing partial is ever used, the leftover
    is garbage-collected once its builder is dead (and not while it lives);
(c) KeyboardInterrupt inside build (raised in-process, and a real SIGINT to a child):
    nothing stored, lock released, the next call builds.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import pytest_trt
from pytest_trt.cache import ArtifactCache
from pytest_trt.errors import CacheError, CacheWarning

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses POSIX signals")

REPO = Path(pytest_trt.__file__).resolve().parent.parent
PARTS = {"model": "m" * 64, "plan": "p", "backend": "tensorrt", "backend_versions": {"tensorrt": "10.8.0"}}
KEY = ArtifactCache.key(PARTS)

# The child: opens the cache and asks for PARTS with a build that records its call, then
#   mode "build": waits for the start signal, builds slowly (1 s);
#   mode "hang":  writes half an engine, signals readiness, and sleeps until killed.
CHILD = textwrap.dedent(
    """
    import json, os, sys, time, warnings
    from pathlib import Path
    from pytest_trt.cache import ArtifactCache

    root, sync, mode, parts = sys.argv[1], Path(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
    pid = os.getpid()

    def build(tmp):
        with open(sync / "calls", "a") as f:
            f.write(f"{pid}\\n")
        (tmp / "engine.plan").write_bytes(b"partial")
        if mode == "hang":
            # published whole (renamed into place): the test reads the path as soon as the file exists
            (sync / f".building-{pid}").write_text(str(tmp))
            os.replace(sync / f".building-{pid}", sync / f"building-{pid}")
            time.sleep(120)
        time.sleep(1.0)
        (tmp / "engine.plan").write_bytes(f"built by {pid}".encode())

    cache = ArtifactCache(root)
    if mode == "build":
        (sync / f"ready-{pid}").touch()
        deadline = time.monotonic() + 30
        while not (sync / "go").exists():
            assert time.monotonic() < deadline, "no start signal"
            time.sleep(0.005)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            res = cache.get_or_build("engine", parts, build, label=f"worker {pid}")
        except KeyboardInterrupt:
            print(json.dumps({"pid": pid, "interrupted": True}))
            sys.exit(3)
    print(json.dumps({
        "pid": pid, "hit": res.cache_hit, "path": str(res.path), "waited": res.waited_seconds,
        "content": (res.path / "engine.plan").read_text(), "warnings": [str(w.message) for w in caught],
    }))
    """
)


@pytest.fixture
def child(tmp_path):
    """Start children running CHILD; returns a function ``start(mode) -> Popen``."""
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    sync = tmp_path / "sync"
    sync.mkdir()
    procs = []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}

    def start(mode: str, root: Path) -> subprocess.Popen:
        proc = subprocess.Popen(
            [sys.executable, str(script), str(root), str(sync), mode, json.dumps(PARTS)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            # SIGINT as Python expects it, even where the launcher ignores it (`cmd &` without job
            # control): the SIGINT test below would otherwise wait out its timeout
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        procs.append(proc)
        return proc

    start.sync = sync
    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()


def wait_for(predicate, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def finish(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return json.loads(out)


def calls(sync: Path) -> list[str]:
    return (sync / "calls").read_text().split() if (sync / "calls").exists() else []


# ---------------------------------------------------------------------- (a) concurrent builders


@pytest.mark.parametrize("start_with", ["empty", "corrupt-entry"])
def test_concurrent_processes_build_a_key_exactly_once(tmp_path, child, start_with):
    root = tmp_path / "cache"
    cache = ArtifactCache(root)
    if start_with == "corrupt-entry":
        entry = cache.get_or_build(
            "engine", PARTS, lambda tmp: (tmp / "engine.plan").write_bytes(b"old")
        ).path
        (entry / "engine.plan").write_bytes(b"bad")
    n = 4
    procs = [child("build", root) for _ in range(n)]
    wait_for(lambda: len(list(child.sync.glob("ready-*"))) == n, "the children to start")
    (child.sync / "go").touch()
    results = [finish(p) for p in procs]

    builders = [r for r in results if not r["hit"]]
    assert len(builders) == 1, results
    builder = builders[0]["pid"]
    assert calls(child.sync) == [str(builder)]
    assert [
        e["pid"] for e in cache.events() if e["event"] == "build" and e["label"].startswith("worker")
    ] == [builder]
    assert sum(e["event"] == "hit" for e in cache.events()) == n - 1
    # Everyone got the same complete entry; the others waited for the builder.
    assert {r["path"] for r in results} == {str(root / "engine" / KEY)}
    assert {r["content"] for r in results} == {f"built by {builder}"}
    assert max(r["waited"] for r in results if r["hit"]) > 0.5
    assert cache.validate("engine", PARTS) is None
    assert list((root / ".pytest-trt-tmp").iterdir()) == []
    # A corrupt entry is reported once, by the process that replaced it.
    warned = [w for r in results for w in r["warnings"]]
    corrupt = [e for e in cache.events() if e["event"] == "corrupt"]
    if start_with == "corrupt-entry":
        assert len(warned) == 1 and "checksum mismatch in 'engine.plan'" in warned[0]
        assert builders[0]["warnings"] == warned and [e["pid"] for e in corrupt] == [builder]
    else:
        assert warned == [] and corrupt == []


# ---------------------------------------------------------------------- (b) kill -9 mid-build


def test_builder_killed_mid_build_leaves_nothing_usable(tmp_path, child, recwarn):
    root = tmp_path / "cache"
    cache = ArtifactCache(root)
    proc = child("hang", root)
    wait_for(lambda: any(child.sync.glob("building-*")), "the child to start building")
    partial = Path(next(child.sync.glob("building-*")).read_text())
    assert partial.parent == root / ".pytest-trt-tmp" and (partial / "engine.plan").read_bytes() == b"partial"
    assert not (root / "engine" / KEY).exists()

    # While the builder lives: its temp dir is not garbage even when "stale", and others wait.
    ArtifactCache(root, stale_seconds=0)
    assert partial.exists()
    with pytest.raises(CacheError, match="timed out after 0.3s waiting for the lock"):
        ArtifactCache(root, lock_timeout=0.3).get_or_build("engine", PARTS, lambda tmp: None)

    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    # The dead builder's lock is free (the kernel released it); its partial files are not an entry.
    def build(tmp):
        (tmp / "engine.plan").write_bytes(b"complete engine")

    res = cache.get_or_build("engine", PARTS, build)
    assert not res.cache_hit and (res.path / "engine.plan").read_bytes() == b"complete engine"
    assert not [w for w in recwarn if issubclass(w.category, CacheWarning)]
    assert [e["pid"] for e in cache.events() if e["event"] == "build"] == [os.getpid()]
    assert partial.exists()  # younger than stale_seconds: left for now ...
    ArtifactCache(root, stale_seconds=0)  # ... and collected once stale, its builder being dead
    assert list((root / ".pytest-trt-tmp").iterdir()) == []
    assert cache.get_or_build("engine", PARTS, build).cache_hit


# ---------------------------------------------------------------------- (c) KeyboardInterrupt


def test_keyboard_interrupt_inside_build_stores_nothing(tmp_path):
    root = tmp_path / "cache"
    cache = ArtifactCache(root)

    def interrupted(tmp):
        (tmp / "engine.plan").write_bytes(b"partial")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        cache.get_or_build("engine", PARTS, interrupted)
    assert not (root / "engine" / KEY).exists()
    assert list((root / ".pytest-trt-tmp").iterdir()) == []
    # The lock is free for another process (not merely re-entrant in this one).
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import filelock, sys; filelock.FileLock(sys.argv[1]).acquire(timeout=0)",
            str(root / "locks" / f"{KEY}.lock"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert probe.returncode == 0, probe.stderr
    assert [e["event"] for e in cache.events()] == []

    res = cache.get_or_build("engine", PARTS, lambda tmp: (tmp / "engine.plan").write_bytes(b"ok"))
    assert not res.cache_hit and (res.path / "engine.plan").read_bytes() == b"ok"


def test_sigint_to_a_building_process_cleans_up(tmp_path, child):
    root = tmp_path / "cache"
    proc = child("hang", root)
    wait_for(lambda: any(child.sync.glob("building-*")), "the child to start building")
    partial = Path(next(child.sync.glob("building-*")).read_text())
    os.kill(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 3, err  # the KeyboardInterrupt reached the caller unchanged
    assert json.loads(out)["interrupted"] is True
    assert not partial.exists() and list((root / ".pytest-trt-tmp").iterdir()) == []
    assert not (root / "engine" / KEY).exists()
    cache = ArtifactCache(root, lock_timeout=5)
    assert not cache.get_or_build(
        "engine", PARTS, lambda tmp: (tmp / "engine.plan").write_bytes(b"x")
    ).cache_hit
