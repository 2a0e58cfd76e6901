"""An empty value of an option that takes one is a usage error naming it (review2 defect 3).

``--trt-save=$TAG`` with ``TAG`` unset gave ``--trt-save=``, which was ignored: nothing saved,
nothing said, exit 0. Every value-taking option of :data:`pytest_trt.run.settings.OPTIONS` (the
table ``lookup_option`` reads) is refused at start (pytest exit 4) on the command line, naming the
flag and what to give; the console script's value flags exit 2. An empty *ini* value (in the file
or ``-o KEY=``) means "not set", as in pytest's own ini semantics (review3 row 4).
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


UNSET_PROBE = """
from pytest_trt.run.settings import OPTIONS_BY_DEST, lookup_option

def test_unset(pytestconfig):
    value, source = lookup_option(pytestconfig, OPTIONS_BY_DEST[{dest!r}], env=False)
    assert source == "default", (value, source)
    assert value == OPTIONS_BY_DEST[{dest!r}].default
"""


BOOLS = [o for o in OPTIONS if o.kind == "bool"]


@pytest.mark.parametrize("opt", VALUED + BOOLS, ids=lambda o: o.name)
@pytest.mark.parametrize("where", ["file", "-o"])
def test_an_empty_ini_value_means_not_set(pytester, opt, where):
    # pytest's ini semantics: an empty ini value (in the file, or `-o KEY=`) is "not set", the only way
    # to clear an ini list or switch an ini setting off for one run (review3 row 4: it was exit 4; for an
    # on/off option, review4 row 4: `-o trt_require_run=` exited 4 with "invalid truth value ''")
    pytester.makeini(f"[pytest]\n{opt.ini} =\n" if where == "file" else "[pytest]\n")
    pytester.makepyfile(UNSET_PROBE.format(dest=opt.dest))
    extra = ["-o", f"{opt.ini}="] if where == "-o" else []
    result = pytester.runpytest("-p", "no:cacheprovider", *extra)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=1)


def test_o_key_empty_clears_an_ini_list_and_switches_a_report_off(pytester):
    pytester.makeini("[pytest]\ntrt_keep_fp32 = op:Softmax\ntrt_report = out/r.json\n")
    pytester.makepyfile("""
from pytest_trt.run.settings import OPTIONS_BY_DEST, lookup_option

def test_cleared(pytestconfig):
    assert lookup_option(pytestconfig, OPTIONS_BY_DEST["trt_keep_fp32"])[1] == "default"
    assert lookup_option(pytestconfig, OPTIONS_BY_DEST["trt_report"]) == (None, "default")
""")
    result = pytester.runpytest("-p", "no:cacheprovider", "-o", "trt_keep_fp32=", "-o", "trt_report=")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=1)
    assert not (pytester.path / "out").exists()


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


def test_a_bad_ini_value_of_an_on_off_option_names_it(pytester):
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("-p", "no:cacheprovider", "-o", "trt_require_run=maybe")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines(["*ini trt_require_run: *'maybe'*: give true or false (e.g. -o trt_require_run=true)*"])
