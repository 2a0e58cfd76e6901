"""One precedence, stated once (issue 28): every option's twins, and the README table that lists them.

Session settings: command line > environment variable (where one is documented) > ini > default.
Per-test settings: ``trt.check()`` argument > closest marker > command line > ini > per-precision default.
The option tests run over ``settings.OPTIONS`` on real pytest configurations (``pytester.parseconfig``
reads the ini file and the command line as pytest does), so an option added to the table is covered.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_trt.errors import UsageError
from pytest_trt.run.settings import OPTIONS, lookup_option, resolve_settings

README = Path(__file__).resolve().parents[2] / "README.md"
ENV_VARS = ("PYTEST_TRT_CACHE_DIR", "PYTEST_TRT_REMOTE_CACHE", "PYTEST_TRT_REMOTE_CACHE_MODE",
            "PYTEST_TRT_REMOTE_CACHE_TRUST")

#: values an option takes that its kind's generic values are not (sizes, URLs, numbers of GPUs)
_VALUES = {
    "trt-cache-max-size": ("1G", "2G", "3G"),
    "trt-engine-memory": ("1G", "2G", "3G"),
    "trt-gpus": ("1", "2", "3"),
    "trt-remote-cache": ("file:///ini-store", "file:///env-store", "file:///cli-store"),
    "trt-compare-fail": ("max_abs:+1%", "max_abs:+2%", "cosine:-1e-5"),
}


def _values(opt) -> tuple:
    """(ini, env, command line) spellings of three distinct valid values of ``opt``."""
    if opt.name in _VALUES:
        return _VALUES[opt.name]
    if opt.kind == "bool":
        return ("true", None, None)
    if opt.kind == "choice":
        others = [c for c in opt.choices if c != opt.default]  # an ini value equal to the default reads as unset
        return (others[0], others[-1], opt.default)
    return {"float": ("0.5", "0.25", "0.125"), "int": ("3", "5", "7")}.get(opt.kind, ("ini-v", "env-v", "cli-v"))


def _config(pytester, opt, *, ini=None, cli=None):
    if ini is not None:
        pytester.makeini(f"[pytest]\n{opt.ini} = {ini}\n")
    else:
        pytester.makeini("[pytest]\n")
    return pytester.parseconfig(*([f"--{opt.name}={cli}"] if cli is not None else []))


def _expected(opt, spelled):
    if opt.kind == "list":
        return tuple(spelled.replace(",", " ").split())
    if opt.kind == "float":
        return float(spelled)
    if opt.kind == "int":
        return int(spelled)
    return spelled


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("opt", OPTIONS, ids=[o.name for o in OPTIONS])
def test_every_option_command_line_over_environment_over_ini_over_default(pytester, monkeypatch, opt):
    ini, env, cli = _values(opt)
    # default
    value, source = lookup_option(_config(pytester, opt), opt)
    assert source == "default" and value == (opt.default if opt.kind != "list" else ())
    # ini
    config = _config(pytester, opt, ini=ini)
    value, source = lookup_option(config, opt)
    assert (value, source) == ((True if opt.kind == "bool" else _expected(opt, ini)), f"ini {opt.ini}")
    assert resolve_settings(config).sources[opt.dest] == f"ini {opt.ini}"
    # environment variable (only where one is documented) over the ini
    if opt.env:
        monkeypatch.setenv(opt.env, env)
        config = _config(pytester, opt, ini=ini)
        assert lookup_option(config, opt) == (_expected(opt, env), f"${opt.env}")
        assert resolve_settings(config).sources[opt.dest] == f"${opt.env}"
    # command line over both
    if opt.kind == "bool":
        pytester.makeini(f"[pytest]\n{opt.ini} = true\n")
        config = pytester.parseconfig(f"--{opt.name}")
        assert lookup_option(config, opt) == (True, f"--{opt.name}")
    else:
        config = _config(pytester, opt, ini=ini, cli=cli)
        assert lookup_option(config, opt) == (_expected(opt, cli), f"--{opt.name}")
    assert resolve_settings(config).sources[opt.dest] == f"--{opt.name}"


def test_levels_are_ordered_as_documented():
    from pytest_trt.run.settings import LEVELS, level_of

    assert LEVELS == ("default", "ini", "env", "command line")
    assert [level_of(s) for s in ("default", "ini trt_seed", "$PYTEST_TRT_CACHE_DIR", "--trt-seed")] == list(LEVELS)


@pytest.mark.parametrize("ini, args, expected", [
    ("trt_fp16 = true", ["--trt-bf16"], ("bf16", "--trt-bf16")),   # was refused: "both given"
    ("trt_bf16 = true", ["--trt-fp16"], ("fp16", "--trt-fp16")),
    ("trt_fp16 = true", [], ("fp16", "ini trt_fp16")),
    ("", ["--trt-bf16"], ("bf16", "--trt-bf16")),
])
def test_command_line_precision_beats_the_ini_one(pytester, ini, args, expected):
    pytester.makeini(f"[pytest]\n{ini}\n")
    settings = resolve_settings(pytester.parseconfig(*args))
    assert (settings.precision, settings.precision_source) == expected


@pytest.mark.parametrize("ini, args", [("", ["--trt-fp16", "--trt-bf16"]), ("trt_fp16 = true\ntrt_bf16 = true", [])])
def test_fp16_and_bf16_at_one_level_contradict(pytester, ini, args):
    pytester.makeini(f"[pytest]\n{ini}\n")
    with pytest.raises(UsageError, match="--trt-fp16 and --trt-bf16 both given"):
        resolve_settings(pytester.parseconfig(*args))


def test_bf16_on_the_command_line_runs_over_an_ini_fp16(pytester):
    pytester.makeini("[pytest]\ntrt_fp16 = true\n")
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("--trt-bf16")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["pytest-trt: default precision bf16 (--trt-bf16)*"])


def test_environment_cache_dir_beats_the_ini_one(pytester, monkeypatch, tmp_path):
    # the README's GPU recipe exports PYTEST_TRT_CACHE_DIR; an ini trt_cache_dir used to win silently
    pytester.makeini(f"[pytest]\ntrt_cache_dir = {tmp_path / 'from-ini'}\n")
    monkeypatch.setenv("PYTEST_TRT_CACHE_DIR", str(tmp_path / "from-env"))
    settings = resolve_settings(pytester.parseconfig())
    assert settings.cache_dir == tmp_path / "from-env" and settings.sources["trt_cache_dir"] == "$PYTEST_TRT_CACHE_DIR"
    settings = resolve_settings(pytester.parseconfig(f"--trt-cache-dir={tmp_path / 'from-cli'}"))
    assert settings.cache_dir == tmp_path / "from-cli"


def test_relative_paths_in_the_ini_are_relative_to_the_ini_file_wherever_pytest_runs(pytester, monkeypatch):
    # pytest's rule for paths in an ini file; a relative trt_cache_dir was taken from the invocation
    # directory, so running pytest from a subfolder made (and filled) a second cache there
    pytester.makeini("[pytest]\ntrt_cache_dir = cache\ntrt_report = out/r.json\ntrt_html = out/r.html\n"
                     "trt_storage = runs\n")
    sub = pytester.mkdir("sub")
    monkeypatch.chdir(sub)
    settings = resolve_settings(pytester.parseconfig())
    root = pytester.path
    assert settings.cache_dir == (root / "cache").resolve()
    assert settings.report_json == root / "out" / "r.json" and settings.report_html == root / "out" / "r.html"
    assert settings.storage == str(root / "runs")
    # the command line and the environment stay relative to where pytest was invoked
    settings = resolve_settings(pytester.parseconfig("--trt-cache-dir=here", "--trt-report=r.json"))
    assert settings.cache_dir == (sub / "here").resolve() and settings.report_json == sub / "r.json"
    monkeypatch.setenv("PYTEST_TRT_CACHE_DIR", "envcache")
    assert resolve_settings(pytester.parseconfig()).cache_dir == (sub / "envcache").resolve()


def test_an_environment_variable_alone_does_not_put_the_plugin_in_use(pytester, monkeypatch, tmp_path):
    # a CI runner may export PYTEST_TRT_CACHE_DIR for every job: a project without trt tests stays untouched
    monkeypatch.setenv("PYTEST_TRT_CACHE_DIR", str(tmp_path / "cache"))
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest()
    assert result.ret == 0 and "pytest-trt:" not in result.stdout.str()


def test_console_script_uses_the_plugins_default_cache_inside_a_project(pytester, monkeypatch):
    # one default: pytest-trt run in a subdirectory of a pytest project uses <rootdir>/.trt-cache, the cache
    # the suite's engines are in (it used ./.trt-cache, a second cache per directory)
    from pytest_trt.cli import main

    model = Path(__file__).resolve().parents[2] / "example_suite" / "models" / "encoder_opset14.onnx"
    pytester.makeini("[pytest]\n")
    sub = pytester.path / "tools" / "scripts"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    assert main(["compare", str(model), "--backend", "emulate", "--input-shapes", "hidden_states:[1,4,64]",
                 "--json"]) == 0
    assert (pytester.path / ".trt-cache").is_dir() and not (sub / ".trt-cache").exists()


# ----------------------------------------------------------------------------- the README table
def _readme_table() -> dict[str, list[str]]:
    """``{option: [option, ini, environment, per test, meaning]}`` of the README's options table."""
    text = README.read_text()
    section = text[text.index("### Where each setting comes from"):text.index("**Path options take `=`**")]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if line.startswith("| `--trt-"):
            rows[cells[0].strip("`")] = cells
    return rows


def test_readme_table_lists_every_option_with_its_ini_and_environment_variable():
    rows = _readme_table()
    assert set(rows) == {f"--{o.name}" for o in OPTIONS}, set(rows) ^ {f"--{o.name}" for o in OPTIONS}
    for opt in OPTIONS:
        option, ini, env, _per_test, _meaning = rows[f"--{opt.name}"]
        assert ini == f"`{opt.ini}`", (opt.name, ini)
        assert (env.split()[0] if env else None) == (f"`{opt.env}`" if opt.env else None), (opt.name, env)


def test_per_test_settings_call_over_marker_over_command_line_over_ini(pytester):
    model = Path(__file__).resolve().parents[2] / "example_suite" / "models" / "encoder_opset14.onnx"
    pytester.makeini("[pytest]\ntrt_atol = 0.4\ntrt_seed = 7\n")
    pytester.makepyfile(f"""
import pytest
OUT = "last_hidden_state"
KW = dict(model={str(model)!r}, precision="fp16", dims={{"batch": 1, "sequence": 4}})

@pytest.mark.trt(**KW, atol=0.2, seed=3)
def test_marker(trt):
    assert trt.resolve_tolerances().atol[OUT] == 0.2           # marker over command line and ini
    assert trt.resolve_tolerances(atol=0.1).atol[OUT] == 0.1   # the call over the marker
    assert trt.seed == 3 and trt.feeds(seed=5).seed == 5

@pytest.mark.trt(**KW)
def test_session(trt, request):
    expected = 0.3 if request.config.getoption("trt_atol") else 0.4
    assert trt.resolve_tolerances().atol[OUT] == expected     # command line over ini
    assert trt.seed == (11 if request.config.getoption("trt_seed") else 7)

class TestClass:
    pytestmark = pytest.mark.trt(atol=0.25)

    @pytest.mark.trt(**KW, atol=0.15)
    def test_closest_marker(self, trt):
        assert trt.resolve_tolerances().atol[OUT] == 0.15      # function marker over class marker
""")
    pytester.runpytest(f"--trt-cache-dir={pytester.path / 'c'}").assert_outcomes(passed=3)
    pytester.runpytest(f"--trt-cache-dir={pytester.path / 'c'}", "--trt-atol=0.3", "--trt-seed=11").assert_outcomes(
        passed=3)


def test_the_reports_carry_the_criterion_with_the_level_of_each_value(pytester):
    """The criterion object records where each value came from (issue 28's precedence, issue 27's
    criterion): the JSON report's accuracy entries say it per output, the HTML's failure card and the
    failure message too."""
    import json

    model = Path(__file__).resolve().parents[2] / "example_suite" / "models" / "encoder_opset14.onnx"
    pytester.makeini("[pytest]\ntrt_atol = 0.4\n")
    pytester.makepyfile(f"""
import pytest
KW = dict(model={str(model)!r}, precision="fp16", dims={{"batch": 1, "sequence": 4}})

@pytest.mark.trt(**KW, atol={{"fp16": 0.3, "bf16": 0.5}})
def test_marker(trt):
    trt.check(min_cosine=0.99)

@pytest.mark.trt(**KW)
def test_session(trt):
    trt.check(rtol=0.0, atol=0.0)

@pytest.mark.trt(**KW)
def test_ini(trt):
    trt.check()
""")
    report, html = pytester.path / "r.json", pytester.path / "r.html"
    result = pytester.runpytest(f"--trt-cache-dir={pytester.path / 'c'}", "--trt-rtol=0.25", f"--trt-report={report}",
                                f"--trt-html={html}")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*differ from the reference [[]precision fp16; rtol=0, atol=0 (trt.check()); "
                                 "min_cosine=0.9999 (fp16 default)[]]*"])
    entries = {t["nodeid"].split("::")[1]: t["accuracy"][0]["criterion"]["outputs"]["last_hidden_state"]
               for t in json.loads(report.read_text())["tests"]}
    marker, session = entries["test_marker"], entries["test_session"]
    assert marker["atol"] == {"value": 0.3, "level": "marker", "source": "marker"}
    assert marker["rtol"] == {"value": 0.25, "level": "command line", "source": "--trt-rtol"}
    assert marker["min_cosine"] == {"value": 0.99, "level": "argument", "source": "trt.check()"}
    assert session["atol"] == {"value": 0.0, "level": "argument", "source": "trt.check()"}
    assert entries["test_ini"]["atol"] == {"value": 0.4, "level": "ini", "source": "ini trt_atol"}
    pytester.makeini("[pytest]\ntrt_atol = 0.4\n")
    result = pytester.runpytest(f"--trt-cache-dir={pytester.path / 'c'}", f"--trt-report={report}", "-k", "marker")
    result.assert_outcomes(passed=1)
    criterion = json.loads(report.read_text())["tests"][0]["accuracy"][0]["criterion"]["outputs"]["last_hidden_state"]
    assert criterion["rtol"] == {"value": 0.02, "level": "default", "source": "fp16 default"}
    assert "criterion rtol=0, atol=0 (trt.check()); min_cosine=0.9999 (fp16 default)" in html.read_text()
