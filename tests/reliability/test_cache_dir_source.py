"""A refused cache directory is named with where it came from (review1 defect 6a).

Before: ``PYTEST_TRT_CACHE_DIR=<a foreign folder> pytest`` was refused (exit 4; the console
script exit 2) with the fix "e.g. ``--trt-cache-dir=.../.trt-cache``": the variable the user had
actually set was never named.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_trt.cache import ArtifactCache
from pytest_trt.cli import main as cli_main
from pytest_trt.errors import CacheError

ENCODER = Path(__file__).resolve().parents[2] / "example_suite" / "models" / "encoder_opset14.onnx"


@pytest.fixture
def foreign(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "my_notes.txt").write_text("mine\n")
    return folder


def test_the_environment_variable_is_named_under_pytest(pytester, foreign, monkeypatch):
    pytester.makepyfile(test_it="def test_nothing(trt_session):\n    pass\n")
    monkeypatch.setenv("PYTEST_TRT_CACHE_DIR", str(foreign))
    result = pytester.runpytest("--trt-fp16", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*pytest-trt: {foreign} (from $PYTEST_TRT_CACHE_DIR) is not a pytest-trt cache: *"
                                 f"e.g. PYTEST_TRT_CACHE_DIR={foreign / '.trt-cache'}."])
    assert sorted(p.name for p in foreign.iterdir()) == ["my_notes.txt"]


def test_the_ini_value_is_named_under_pytest(pytester, foreign):
    pytester.makeini(f"[pytest]\ntrt_cache_dir = {foreign}\n")
    pytester.makepyfile(test_it="def test_nothing(trt_session):\n    pass\n")
    result = pytester.runpytest("--trt-fp16", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{foreign} (from ini trt_cache_dir) is not a pytest-trt cache: *"
                                 f"e.g. trt_cache_dir = {foreign / '.trt-cache'} in the ini file."])


def test_the_environment_variable_is_named_by_the_console_script(foreign, monkeypatch, capsys):
    monkeypatch.setenv("PYTEST_TRT_CACHE_DIR", str(foreign))
    rc = cli_main(["compare", str(ENCODER), "--backend", "emulate", "--input-shapes", "hidden_states:[1,4,64]"])
    assert rc == 2
    err = capsys.readouterr().err
    assert f"{foreign} (from $PYTEST_TRT_CACHE_DIR) is not a pytest-trt cache" in err, err
    assert f"e.g. PYTEST_TRT_CACHE_DIR={foreign / '.trt-cache'}." in err, err


def test_an_unwritable_directory_from_the_environment_says_how_to_change_it(tmp_path):
    target = tmp_path / "a-file"
    target.write_text("not a directory\n")
    with pytest.raises(CacheError, match=r"a-file \(from \$PYTEST_TRT_CACHE_DIR\) is not a directory\. "
                                         r"Set PYTEST_TRT_CACHE_DIR to a writable directory"):
        ArtifactCache(target, source="$PYTEST_TRT_CACHE_DIR")
