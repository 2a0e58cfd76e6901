"""An empty value of an option that takes one is a usage error naming it (review2 defect 3).

``--trt-save=$TAG`` with ``TAG`` unset gave ``--trt-save=``, which was ignored: nothing saved,
nothing said, exit 0. Every value-taking option of :data:`pytest_trt.run.settings.OPTIONS` (the
table ``lookup_option`` reads) is refused at start (pytest exit 4) on the command line and in the
ini, naming the flag or the ini key and what to give; the console script's value flags exit 2.
"""

from __future__ import annotations

import pytest

from pytest_trt.cli import main
from pytest_trt.run.settings import OPTIONS

VALUED = [o for o in OPTIONS if o.kind != "bool"]


def test_every_value_taking_option_is_covered():
    # the table below is the options' table: a new option is covered without editing this file
    assert {o.name for o in VALUED} >= {"trt-save", "trt-compare-run", "trt-report", "trt-html", "trt-storage",
                                        "trt-cache-dir", "trt-keep-fp32", "trt-compare-fail", "trt-gpus"}


@pytest.mark.parametrize("opt", VALUED, ids=lambda o: o.name)
def test_an_empty_value_on_the_command_line_is_a_usage_error(pytester, opt):
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("-p", "no:cacheprovider", f"--{opt.name}=")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    if opt.choices and not opt.open_choices:  # argparse's own check names the flag and the choices
        result.stderr.fnmatch_lines([f"*argument --{opt.name}: invalid choice: '' (choose from *"])
    else:
        result.stderr.fnmatch_lines([f"*--{opt.name}=: empty value; give * (--{opt.name}=*) or leave it out*"])
    assert "test_nothing" not in result.stdout.str()


@pytest.mark.parametrize("opt", VALUED, ids=lambda o: o.name)
def test_an_empty_value_in_the_ini_is_a_usage_error(pytester, opt):
    pytester.makeini(f"[pytest]\n{opt.ini} =\n")
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines([f"*ini {opt.ini}: empty value; give * ({opt.ini} = *) or leave it out*"])


def test_the_bare_compare_run_flag_still_means_latest(pytester):
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("-p", "no:cacheprovider", "--trt-compare-run")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--trt-compare-run=latest: no run to compare with*"])


CLI = [
    (["compare", "m.onnx", "--cache-dir="], "--cache-dir"),
    (["compare", "m.onnx", "--criterion="], "--criterion"),
    (["compare", "m.onnx", "--load-inputs="], "--load-inputs"),
    (["compare", "m.onnx", "--load-inputs", "a.npz", ""], "--load-inputs"),
    (["plan", "m.onnx", "--export-onnx="], "--export-onnx"),
    (["compare", "m.onnx", "--keep-fp32="], "--keep-fp32"),
    (["compare", ""], "MODEL"),
    (["runs", "show", ""], "RUN"),
    (["runs", "diff", "a", ""], "B"),
    (["runs", "list", "--storage="], "--storage"),
    (["runs", "recheck", "x", "--model="], "--model"),
    (["runs", "prune", "--older-than="], "--older-than"),
    (["cache", "list", "--cache-dir="], "--cache-dir"),
]


@pytest.mark.parametrize("argv, flag", CLI, ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_the_console_script_refuses_empty_values(argv, flag, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: empty value; give " in err, err
