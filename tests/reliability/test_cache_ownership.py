"""The cache deletes only what it created and tags only directories it created (audit F1).

Before the fix, opening a cache on any directory deleted everything older than 10 minutes
under ``<dir>/tmp/`` and wrote ``CACHEDIR.TAG``, ``locks/`` and ``events.jsonl`` into it:
``--trt-cache-dir=.`` in a project with a ``tmp/`` folder, or a cache at ``$HOME``, lost the
user's files. Every test here works in folders it created under ``tmp_path``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_trt.cache import MARKER, SCRATCH_DIR, ArtifactCache, is_cache_dir
from pytest_trt.errors import CacheError

REPO = Path(__file__).resolve().parents[2]
ENCODER = REPO / "example_suite" / "models" / "encoder_opset14.onnx"
KEY = "a" * 64
OLD = time.time() - 3600

# What pytest-trt 0.1.0 wrote into every cache it opened.
TAG_010 = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by pytest-trt.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)


def backdate(*paths: Path) -> None:
    for p in paths:
        os.utime(p, (OLD, OLD), follow_symlinks=False)


def user_folder(root: Path) -> dict[str, bytes]:
    """A folder as a user has it: a ``tmp/`` with old work, a notes file; returns its files."""
    (root / "tmp" / "someones-work").mkdir(parents=True)
    files = {
        "tmp/notes.txt": b"notes",
        "tmp/someones-work/thesis.tex": b"\\section{}",
        "README": b"my project",
        # names the cache itself would generate: still not its own in a foreign directory
        f"tmp/build-{KEY}-99999-abcd/engine.plan": b"user data that looks like a build",
    }
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    backdate(*[root / rel for rel in files], root / "tmp" / "someones-work", root / "tmp" / f"build-{KEY}-99999-abcd")
    return files


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_foreign_directory_is_refused_and_left_untouched(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    files = user_folder(home)
    before = snapshot(home)
    with pytest.raises(CacheError) as info:
        ArtifactCache(home)
    message = str(info.value)
    assert "is not a pytest-trt cache" in message and "'README'" in message
    assert f"--trt-cache-dir={home / '.trt-cache'}" in message
    assert snapshot(home) == before and set(before) == set(files)
    for written in ("CACHEDIR.TAG", MARKER, "locks", "events.jsonl", SCRATCH_DIR):
        assert not (home / written).exists(), written


def test_the_suggested_subfolder_works_beside_the_users_files(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    user_folder(home)
    before = snapshot(home)
    cache = ArtifactCache(home / ".trt-cache", stale_seconds=0)
    cache.get_or_build("engine", {"p": 1}, lambda d: (d / "engine.plan").write_bytes(b"x"))
    cache.collect_garbage(max_age=0)
    after = {k: v for k, v in snapshot(home).items() if not k.startswith(".trt-cache/")}
    assert after == before
    assert (home / ".trt-cache" / "CACHEDIR.TAG").is_file() and not (home / "CACHEDIR.TAG").exists()


def test_pytest_with_a_project_root_as_cache_dir_is_a_usage_error(pytester):
    files = user_folder(pytester.path)
    (pytester.path / "models").mkdir()
    (pytester.path / "models" / "encoder.onnx").write_bytes(ENCODER.read_bytes())
    pytester.makepyfile(
        test_it="""
        import pytest

        @pytest.mark.trt(model="models/encoder.onnx", dims={"batch": 1, "sequence": 4})
        def test_encoder(trt):
            trt.check()
        """
    )
    before = {k: v for k, v in snapshot(pytester.path).items() if k in files}
    result = pytester.runpytest_subprocess("--trt-fp16", "--trt-cache-dir=.")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines(["*is not a pytest-trt cache*--trt-cache-dir=*.trt-cache*"])
    assert {k: v for k, v in snapshot(pytester.path).items() if k in files} == before
    assert not (pytester.path / "CACHEDIR.TAG").exists() and not (pytester.path / "locks").exists()


def test_pytest_trt_cache_dir_at_a_home_folder_is_a_usage_error(pytester, tmp_path, monkeypatch):
    home = tmp_path / "standin-home"
    home.mkdir()
    user_folder(home)
    before = snapshot(home)
    pytester.makepyfile(test_it="def test_nothing(trt):\n    pass\n")
    monkeypatch.setenv("PYTEST_TRT_CACHE_DIR", str(home))
    result = pytester.runpytest_subprocess("--trt-fp16")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    assert snapshot(home) == before and not (home / "CACHEDIR.TAG").exists()


def test_cli_cache_dir_dot_in_a_project_is_exit_2(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    user_folder(project)
    before = snapshot(project)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_trt.cli", "compare", str(ENCODER), "--fp16", "--cache-dir", ".",
         "--input-shapes", "hidden_states:[1,4,64]"],
        cwd=project, capture_output=True, text=True, timeout=300, env={**os.environ, "PYTEST_TRT_CACHE_DIR": ""},
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "is not a pytest-trt cache" in proc.stderr and "--cache-dir" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert snapshot(project) == before


def test_a_cache_written_by_0_1_0_keeps_working(tmp_path):
    root = tmp_path / "cache"
    cache = ArtifactCache(root)
    built = []
    cache.get_or_build("engine", {"p": 1}, lambda d: built.append((d / "engine.plan").write_bytes(b"x")))
    # Turn it into 0.1.0's layout: its tag, a tmp/ scratch folder, no marker.
    (root / MARKER).unlink()
    (root / "CACHEDIR.TAG").write_text(TAG_010)
    (root / SCRATCH_DIR).rename(root / "tmp")
    stale = root / "tmp" / f"build-{KEY}-99999-abcd"
    stale.mkdir()
    (stale / "engine.plan").write_bytes(b"partial")
    stranger = root / "tmp" / "not-ours.txt"  # something someone else put there
    stranger.write_bytes(b"keep me")
    backdate(stale, stranger)
    assert is_cache_dir(root)

    reopened = ArtifactCache(root)
    result = reopened.get_or_build("engine", {"p": 1}, lambda d: built.append(1))
    assert result.cache_hit and len(built) == 1
    assert not stale.exists() and stranger.read_bytes() == b"keep me"
    assert (root / MARKER).is_file()


def test_a_0_1_0_cache_without_its_tag_is_known_by_its_entries_manifests(tmp_path):
    root = tmp_path / "cache"
    ArtifactCache(root).get_or_build("engine", {"p": 1}, lambda d: (d / "engine.plan").write_bytes(b"x"))
    (root / MARKER).unlink()
    (root / "CACHEDIR.TAG").unlink()
    (root / "events.jsonl").touch()
    assert is_cache_dir(root)  # locks/, events.jsonl and an entry with pytest-trt's manifest


def _generic_folder(root: Path) -> dict[str, bytes]:
    """A user's folder with generic names (``locks/``, ``events.jsonl``) and a ``<name>/<64 hex>/`` file."""
    (root / "locks").mkdir(parents=True)
    files = {"events.jsonl": b'{"user": 1}\n', "notes.txt": b"mine", f"baseline/{KEY}/mine.bin": b"precious"}
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    backdate(*[root / rel for rel in files], root / "baseline" / KEY)
    return files


def test_a_folder_with_locks_and_events_jsonl_is_not_taken_for_a_0_1_0_cache(tmp_path, capsys):
    """Before, ``locks/`` beside ``events.jsonl`` made any folder a 0.1.0 cache: it was marked, and
    `cache prune` deleted the user's ``baseline/<64 hex>/mine.bin`` (review3 row 9)."""
    from pytest_trt.cli import main

    ud = tmp_path / "ud"
    _generic_folder(ud)
    before = snapshot(ud)
    assert not is_cache_dir(ud)
    assert main(["cache", "prune", "--cache-dir", str(ud), "--max-age", "0s"]) == 2
    assert "is not a pytest-trt cache" in capsys.readouterr().err
    with pytest.raises(CacheError, match="is not a pytest-trt cache"):
        ArtifactCache(ud)
    assert snapshot(ud) == before and not (ud / MARKER).exists()
    # a CACHEDIR.TAG that is not pytest-trt's own text is not evidence either
    (ud / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n# created by pytest-trt? no\n")
    assert not is_cache_dir(ud)


def test_prune_deletes_only_entries_with_pytest_trt_manifests(tmp_path, capsys):
    """An entry-shaped directory without a manifest (a user's file put into the cache) is never pruned;
    before, every ``<kind>/<64 hex>/`` went. One whose ``manifest.json`` is not its pytest-trt manifest is,
    in a marked cache, a damaged entry of the cache's: pruned (review4 row 1)."""
    from pytest_trt.cli import main

    root = tmp_path / "cache"
    cache = ArtifactCache(root)
    own = cache.get_or_build("engine", {"p": 1}, lambda d: (d / "engine.plan").write_bytes(b"x")).path
    strangers = {f"baseline/{KEY}/mine.bin": b"precious",
                 f"engine/{'b' * 64}/manifest.json": b'{"kind": "engine", "key": "not this one"}'}
    for rel, data in strangers.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    backdate(own / "manifest.json", root / "baseline" / KEY, root / "engine" / ("b" * 64),
             *[root / rel for rel in strangers])
    assert main(["cache", "prune", "--cache-dir", str(root), "--max-age", "1s", "--dry-run", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert sorted(e["key"] for e in out["removed"]) == sorted([own.name, "b" * 64]) and out["removed_damaged"] == 1
    assert main(["cache", "prune", "--cache-dir", str(root), "--max-age", "1s"]) == 0
    assert not own.exists() and not (root / "engine" / ("b" * 64)).exists()
    assert (root / "baseline" / KEY / "mine.bin").read_bytes() == b"precious"
    assert ArtifactCache(root).prune(0) == []  # the size limit spares it too


def _damaged_cache(root: Path) -> tuple[Path, Path]:
    """A marked cache with two entries; the older one's manifest truncated (``head -c 100``)."""
    cache = ArtifactCache(root)
    bad = cache.get_or_build("baseline", {"p": 1}, lambda d: (d / "out.npz").write_bytes(b"x" * 5000)).path
    good = cache.get_or_build("engine", {"p": 2}, lambda d: (d / "engine.plan").write_bytes(b"y")).path
    manifest = bad / "manifest.json"
    manifest.write_bytes(manifest.read_bytes()[:100])
    backdate(manifest, bad)
    assert (root / MARKER).is_file()
    return bad, good


def test_a_damaged_entry_of_a_marked_cache_is_pruned_by_age(tmp_path, capsys):
    """review4 row 1: since only valid manifests were pruned, a truncated one stayed for ever."""
    from pytest_trt.cli import main

    bad, good = _damaged_cache(tmp_path / "cache")
    os.utime(good / "manifest.json")
    assert main(["cache", "prune", "--cache-dir", str(tmp_path / "cache"), "--max-age", "60s"]) == 0
    out = capsys.readouterr().out
    assert "removed 1 entries" in out and "1 of them with a damaged manifest" in out and "(damaged manifest)" in out
    assert not bad.exists() and good.exists()


def test_a_damaged_entry_of_a_marked_cache_is_pruned_by_size(tmp_path, capsys):
    from pytest_trt.cli import main

    bad, good = _damaged_cache(tmp_path / "cache")
    assert main(["cache", "prune", "--cache-dir", str(tmp_path / "cache"), "--max-size", "3000"]) == 0
    assert not bad.exists() and good.exists()


def test_a_damaged_entry_is_pruned_when_a_session_opens_the_cache_over_its_limit(pytester, tmp_path):
    bad, good = _damaged_cache(tmp_path / "cache")
    pytester.makepyfile(test_it="def test_nothing(trt):\n    pass\n")
    result = pytester.runpytest_subprocess(f"--trt-cache-dir={tmp_path / 'cache'}", "--trt-cache-max-size=3000",
                                           "-p", "no:randomly", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()
    assert not bad.exists() and good.exists()


def test_a_damaged_look_alike_in_an_unmarked_directory_is_kept_and_said(tmp_path, capsys):
    """Where the directory is not known to be the cache's (no marker: a read-only dry run of a 0.1.0
    cache), the strict rule stays: a damaged entry is not removed, and the output says where it is."""
    from pytest_trt.cli import main

    root = tmp_path / "cache"
    bad, good = _damaged_cache(root)
    (root / MARKER).unlink()
    (root / "CACHEDIR.TAG").write_text(TAG_010)
    assert main(["cache", "prune", "--cache-dir", str(root), "--max-age", "0s", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would remove 1 entries" in out and "1 entries with a damaged manifest kept" in out and str(bad) in out


def test_a_restored_timing_cache_is_adopted(tmp_path):
    root = tmp_path / "engines"
    (root / "timing-cache").mkdir(parents=True)
    (root / "timing-cache" / "tensorrt-10.13-H100-9.0.cache").write_bytes(b"tactics")
    cache = ArtifactCache(root)
    cache.get_or_build("engine", {"p": 1}, lambda d: (d / "engine.plan").write_bytes(b"x"))
    assert (root / "timing-cache" / "tensorrt-10.13-H100-9.0.cache").read_bytes() == b"tactics"
    assert (root / MARKER).is_file() and is_cache_dir(root)
    # adopted, not created: no cache tag on a directory someone else made
    assert not (root / "CACHEDIR.TAG").exists()
    assert ArtifactCache(root).get_or_build("engine", {"p": 1}, lambda d: None).cache_hit


def test_an_empty_directory_is_adopted_untagged_and_a_new_one_created_tagged(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    ArtifactCache(empty)
    assert (empty / MARKER).is_file() and not (empty / "CACHEDIR.TAG").exists()
    new = tmp_path / "new" / "cache"
    ArtifactCache(new)
    assert (new / MARKER).is_file() and (new / "CACHEDIR.TAG").is_file()


def test_scratch_behind_a_symlink_is_never_followed(tmp_path):
    root = tmp_path / "cache"
    ArtifactCache(root)
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / f"build-{KEY}-99999-abcd"
    victim.mkdir()
    (victim / "data").write_bytes(b"someone else's")
    backdate(victim)
    os.rmdir(root / SCRATCH_DIR)
    os.symlink(outside, root / SCRATCH_DIR)
    with pytest.raises(CacheError, match="never follows a link"):
        ArtifactCache(root)
    assert (victim / "data").read_bytes() == b"someone else's"
    # a legacy tmp/ that is a link is skipped by garbage collection too
    os.unlink(root / SCRATCH_DIR)
    os.symlink(outside, root / "tmp")
    ArtifactCache(root, stale_seconds=0).collect_garbage(max_age=0)
    assert (victim / "data").read_bytes() == b"someone else's"
