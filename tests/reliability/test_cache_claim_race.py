"""Two claimers of one cache directory at once: neither refuses the other (review2 row 5).

Before the fix, process B found the directory A had just created (``FileExistsError``), saw
no marker yet (``is_cache_dir``), then listed the directory after A had written its marker,
counted the marker as a foreign file and refused with exit 4: "holds other files
('.pytest-trt-cache') and no .pytest-trt-cache marker". The tests replay every interleaving
of A's steps with B's look-ups at the file system, then once with two real processes paused
at that point. Every test works in folders it created under ``tmp_path``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

import pytest_trt.cache.ownership as own
from pytest_trt.cache import MARKER, SCRATCH_DIR
from pytest_trt.cache.ownership import claim_root
from pytest_trt.errors import CacheError

KEY = "a" * 64
TAG_010 = "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by pytest-trt.\n"


def claimer_steps(root: Path) -> list:
    """What claimer A does to a directory, in the order the cache does it: creates the directory,
    the marker (``O_EXCL``, filled after), then ``locks/``, the scratch directory, its probe,
    the cache tag and an entry. B may have written the marker first: then A leaves it be."""
    mine = []

    def create_marker():
        try:
            os.close(os.open(root / MARKER, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
            mine.append(True)
        except FileExistsError:
            pass

    def fill_marker():
        if mine:
            (root / MARKER).write_text(own.MARKER_TEXT)

    def probe():
        (root / ".pytest-trt-probe-1-abcd").write_bytes(b"")
        (root / ".pytest-trt-probe-1-abcd").unlink()

    return [
        lambda: os.mkdir(root),
        create_marker,
        fill_marker,
        lambda: (root / "locks").mkdir(exist_ok=True),
        lambda: (root / SCRATCH_DIR).mkdir(exist_ok=True),
        probe,
        lambda: (root / "CACHEDIR.TAG").write_text("Signature: x\n# created by pytest-trt\n"),
        lambda: (root / "engine" / KEY).mkdir(parents=True),
    ]


def watched_os(on_look):
    """``os`` for the ownership module whose look-ups at the file system call ``on_look()`` first."""
    def wrap(fn):
        def looked(*args, **kwargs):
            on_look()
            return fn(*args, **kwargs)
        return looked
    proxy = types.SimpleNamespace(**{n: getattr(os, n) for n in dir(os) if not n.startswith("__")})
    for name in ("mkdir", "listdir", "lstat"):
        setattr(proxy, name, wrap(getattr(os, name)))
    return proxy


def prepare(kind: str, root: Path) -> int:
    """The directory before either claimer starts; returns the first of A's steps still to do."""
    if kind == "fresh":
        return 0
    root.mkdir()
    if kind == "timing-cache":
        (root / "timing-cache").mkdir()
        (root / "timing-cache" / "t.cache").write_bytes(b"tactics")
    elif kind == "0.1.0":
        (root / "CACHEDIR.TAG").write_text(TAG_010)
        (root / "locks").mkdir()
        (root / "events.jsonl").write_text("")
    return 1


def schedules(n_steps: int, start: int):
    """(A's steps done before B starts, how A goes on): all at B's look-up j, one per look-up, or never."""
    for before in range(max(start, 1), n_steps + 1):  # B starts once the directory exists
        for j in range(12):
            yield before, ("all at", j)
        yield before, ("one per look-up", None)
        yield before, ("never", None)


@pytest.mark.parametrize("kind", ["fresh", "empty", "timing-cache", "0.1.0"])
def test_b_accepts_the_directory_at_every_interleaving_with_a(tmp_path, monkeypatch, kind):
    failures = []
    for i, (before, (how, at)) in enumerate(schedules(len(claimer_steps(tmp_path)), 0 if kind == "fresh" else 1)):
        root = tmp_path / f"c{i}"
        steps = claimer_steps(root)
        pending = steps[prepare(kind, root):]
        for _ in range(before - (len(steps) - len(pending))):
            pending.pop(0)()
        looks = [0]

        def on_look(pending=pending, looks=looks, how=how, at=at):
            if how == "one per look-up" and pending:
                pending.pop(0)()
            elif how == "all at" and looks[0] == at:
                while pending:
                    pending.pop(0)()
            looks[0] += 1

        monkeypatch.setattr(own, "os", watched_os(on_look))
        try:
            created = claim_root(root, "hint")
        except CacheError as exc:
            failures.append(f"A did {before} step(s), then {how} {at}: B refused: {exc}")
            continue
        finally:
            monkeypatch.setattr(own, "os", os)
        while pending and how != "never":  # A finishes
            pending.pop(0)()
        assert not created, f"{before} {how} {at}: B says it created a directory A created"
        assert own.is_regular(root / MARKER)
        if kind == "timing-cache":
            assert (root / "timing-cache" / "t.cache").read_bytes() == b"tactics"
    assert not failures, f"{len(failures)} interleaving(s) failed, e.g.\n" + "\n".join(failures[:5])


def test_a_marker_still_being_written_makes_a_cache(tmp_path):
    root = tmp_path / "cache"
    root.mkdir()
    (root / MARKER).write_bytes(b"")  # A created it (O_EXCL) and has not filled it yet
    assert claim_root(root, "hint") is False
    assert (root / MARKER).read_bytes() == b""  # A's file: not rewritten


def test_a_link_named_like_the_marker_is_the_users_and_refused_without_contradiction(tmp_path):
    root = tmp_path / "mine"
    root.mkdir()
    (tmp_path / "elsewhere.txt").write_text("mine")
    os.symlink(tmp_path / "elsewhere.txt", root / MARKER)
    with pytest.raises(CacheError) as info:
        claim_root(root, "hint")
    assert f"its {MARKER} is not a regular file" in str(info.value)
    assert f"no {MARKER} marker" not in str(info.value)
    assert sorted(os.listdir(root)) == [MARKER] and (tmp_path / "elsewhere.txt").read_text() == "mine"


def test_a_users_folder_made_while_the_parents_are_created_is_refused_not_tagged(tmp_path, monkeypatch):
    root = tmp_path / "new" / "cache"
    calls = [0]

    def mkdir(path, *args, **kwargs):
        calls[0] += 1
        if calls[0] == 1:  # B finds no parent; meanwhile the user makes the folder, with a file
            (tmp_path / "new" / "cache").mkdir(parents=True)
            (root / "notes.txt").write_text("mine")
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return os.mkdir(path, *args, **kwargs)

    proxy = watched_os(lambda: None)
    proxy.mkdir = mkdir
    monkeypatch.setattr(own, "os", proxy)
    with pytest.raises(CacheError, match="is not a pytest-trt cache"):
        claim_root(root, "hint")
    monkeypatch.setattr(own, "os", os)
    assert sorted(os.listdir(root)) == ["notes.txt"]


DRIVER = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    import pytest_trt.cache.ownership as own
    from pytest_trt.cache import ArtifactCache
    role, root, signals = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])

    def wait_for(check):
        deadline = time.monotonic() + 60
        while not check():
            if time.monotonic() > deadline:
                sys.exit(f"{role}: the other process did not get there")
            time.sleep(0.005)

    if role == "A":  # pauses after creating the directory, before writing its marker
        real_write_new = own.write_new
        def write_new(path, data, **kw):
            wait_for((signals / "b-lists").exists)
            return real_write_new(path, data, **kw)
        own.write_new = write_new
    else:  # starts once A made the directory; lets A write its marker right before it lists it
        wait_for(root.is_dir)
        real_listdir = os.listdir
        def listdir(path):
            if Path(path) == root:
                (signals / "b-lists").write_text("")
                wait_for(lambda: own.is_regular(root / own.MARKER))
            return real_listdir(path)
        own.os.listdir = listdir
    ArtifactCache(root)
""")


def test_two_real_processes_claiming_a_new_cache_together_both_open_it(tmp_path):
    root, signals = tmp_path / "cache", tmp_path / "signals"
    signals.mkdir()
    procs = {role: subprocess.Popen([sys.executable, "-c", DRIVER, role, str(root), str(signals)],
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for role in ("A", "B")}
    out = {role: p.communicate(timeout=120)[0] for role, p in procs.items()}
    assert [procs["A"].returncode, procs["B"].returncode] == [0, 0], out
    assert own.is_regular(root / MARKER) and (root / "CACHEDIR.TAG").is_file()
