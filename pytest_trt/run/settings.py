"""Command-line and ini options: one table, one resolver.

Every option is ``--trt-*`` with an ini twin ``trt_*``; a few have a documented environment
variable (:attr:`Option.env`). One precedence, stated in the README's "Where each setting
comes from" table:

* session settings: command line > environment variable > ini > default;
* per-test settings: ``trt.check()``/``trt.feeds()`` argument > closest marker > command
  line > environment variable (none so far) > ini > per-precision default (markers and
  call arguments are applied per test by :mod:`pytest_trt.glue.case`).

A setting given twice at the same level (``--trt-fp16 --trt-bf16``) is a usage error; at
different levels the higher wins (``--trt-bf16`` over an ini ``trt_fp16 = true``). The table
below drives ``pytest_addoption``, the help texts and that README table's test.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ..core.choices import BACKEND_CHOICES, PARSER_CHECK_CHOICES, TIMING_CHOICES, TYPING_CHOICES
from ..core.locations import CACHE_DIR_ENV, DEFAULT_CACHE_DIRNAME, DEFAULT_RUNS_DIRNAME, default_cache_dir  # noqa: F401  (DEFAULT_CACHE_DIRNAME: re-exported)
from ..errors import PatternError, UsageError
from ..history.gate import parse_gate
from ..history.runid import check_name
from ..plan.rules import validate_pattern

#: Where a value came from, lowest first: a higher level wins; two values at one level contradict.
LEVELS = ("default", "ini", "env", "command line")


@dataclass(frozen=True)
class Option:
    name: str  # command-line flag without the leading dashes
    help: str
    kind: str = "str"  # str | bool | float | int | list | choice | optional (a str whose flag may come bare)
    default: object = None
    choices: tuple = ()
    metavar: str | None = None
    #: the value is a file or directory path: it must be written ``--flag=PATH`` (see
    #: :func:`check_path_option_forms`)
    path: bool = False
    #: a ``choice`` whose list plugins extend (``--trt-backend``): argparse takes any value, and
    #: the value is checked where the full list is known (:func:`pytest_trt.backends.base.select_backend`)
    open_choices: bool = False
    #: the documented environment variable, between the command line and the ini (a list option's
    #: value is comma- or whitespace-separated); None for most options
    env: str | None = None
    #: ``optional``: the value of the bare flag (``--trt-compare-run`` = ``--trt-compare-run=latest``)
    const: str | None = None

    @property
    def dest(self) -> str:
        return self.name.replace("-", "_")

    @property
    def ini(self) -> str:
        return self.dest


OPTIONS: tuple[Option, ...] = (
    Option("trt-fp16", "Default precision FP16 for every test that does not pin one (default: FP32).", "bool", False),
    Option("trt-bf16", "Default precision BF16 for every test that does not pin one (default: FP32).", "bool", False),
    Option("trt-as-is", "Test models in the precision they were exported in (mixed FP16/FP32, Q/DQ); no rewriting (default: off).", "bool", False),
    Option(
        "trt-backend",
        "Engine backend: auto = TensorRT when importable and a GPU is usable, else emulate (CPU precision "
        "emulation on ONNX Runtime, not TensorRT). An explicit backend that cannot run here is a usage error. "
        "Plugins add backends (the pytest_trt_backends hook). Default: auto.",
        "choice", "auto", BACKEND_CHOICES, metavar="{" + ",".join(BACKEND_CHOICES) + ",...}", open_choices=True,
    ),
    Option("trt-typing", "TensorRT network typing: auto = strong typing (TensorRT >= 10.0, the only typing in 11.x and RTX); "
           "strong = a strongly typed network, the plan's types are the contract (TensorRT >= 10.0); "
           "weak = per-layer hints with OBEY_PRECISION_CONSTRAINTS (TensorRT <= 10.x). A typing the installed "
           "TensorRT lacks, or weak on emulate (which has no weak typing), is a usage error. Default: auto.",
           "choice", "auto", TYPING_CHOICES),
    Option("trt-keep-fp32", "Keep nodes matching PATTERN in FP32 (shell glob over ONNX node names, or op:TYPE); "
           "repeatable; adds to the marker's keep_fp32 in every model it matches. A pattern that matches no node "
           "in any model of the trt tests that ran fails the session. Default: none.", "list", (), metavar="PATTERN"),
    Option("trt-cache-dir", f"Directory of cached engines, baselines and timing caches "
           f"(default: ${CACHE_DIR_ENV}, else ini trt_cache_dir, else <rootdir>/{DEFAULT_CACHE_DIRNAME}). "
           f"Write it --trt-cache-dir=DIR.",
           "str", None, metavar="DIR", path=True, env=CACHE_DIR_ENV),
    Option("trt-cache-max-size", "Evict least-recently-used cache entries beyond this size, e.g. 20G, 500M, "
           "when the session opens the cache and after each new entry; the summary's cache line counts the "
           "evictions (default: no limit).", "str", None, metavar="SIZE"),
    Option("trt-engine-memory", "GPU memory the session's loaded engines may hold; beyond it the least recently "
           "used are released (reloaded from the cache when needed again), e.g. 8G (default: half the GPU's "
           "memory; 0: keep only the engine in use).", "str", None, metavar="SIZE"),
    Option("trt-cache-read-only", "Use the cache directory read-only (e.g. a pre-populated cache shared by CI "
           "runners): valid entries are used, a missing or corrupt one is an error, nothing is written "
           "(default: off).", "bool", False),
    Option("trt-remote-cache", "Remote engine cache shared by a fleet, behind the local cache: file:///shared/dir, "
           "https://host/path (WebDAV), s3://bucket/prefix, ... (needs the `remote` extra). Entries are signed "
           "(Ed25519) and verified before use (default: $PYTEST_TRT_REMOTE_CACHE, else ini, else none).", "str", None,
           metavar="URL", env="PYTEST_TRT_REMOTE_CACHE"),
    Option("trt-remote-cache-mode", "ro = fetch only; rw = fetch and upload what this run builds (needs the private "
           "key in $PYTEST_TRT_REMOTE_CACHE_KEY); auto = rw when that key is set, else ro "
           "(default: $PYTEST_TRT_REMOTE_CACHE_MODE, else ini, else auto).", "choice", "auto", ("auto", "ro", "rw"),
           env="PYTEST_TRT_REMOTE_CACHE_MODE"),
    Option("trt-remote-cache-trust", "Public key whose signatures the remote cache accepts: a .pub file of "
           "`pytest-trt remote-cache keygen` or its 'ed25519:...' text; repeatable, for key rotation "
           "(default: $PYTEST_TRT_REMOTE_CACHE_TRUST, comma-separated, else ini; a builder also trusts its own "
           "key). Write it --trt-remote-cache-trust=KEY.",
           "list", (), metavar="KEY", path=True, env="PYTEST_TRT_REMOTE_CACHE_TRUST"),
    Option("trt-remote-cache-timeout", "Seconds one remote cache entry may take to arrive, plus 1 s per MiB of its "
           "files (a floor of 1 MiB/s); a slower entry is built locally and the remote is not asked again in the "
           "session (default: 60).", "float", 60.0, metavar="SECONDS"),
    Option("trt-rebuild", "Ignore cached engines and baselines and rebuild them (default: off).", "bool", False),
    # the defaults named here are pytest_trt.compare's DEFAULT_TOLERANCES / DEFAULT_MIN_COSINE
    # (tests/plugin/test_options.py checks they agree; not imported: compare imports numpy)
    Option("trt-atol", "Absolute tolerance for every output, finite and >= 0 (default: per precision: fp32 1e-5, "
           "fp16 1e-2, bf16 5e-2; fp16 and bf16 also check a whole-output cosine floor, 0.9999 and 0.999).",
           "float", None, metavar="ATOL"),
    Option("trt-rtol", "Relative tolerance for every output, finite and >= 0 (default: per precision: fp32 1e-5, "
           "fp16 2e-2, bf16 1e-1; fp16 and bf16 also check a whole-output cosine floor, 0.9999 and 0.999).",
           "float", None, metavar="RTOL"),
    Option("trt-seed", "Seed of generated inputs, an integer >= 0 (default: 0). Shown in failure messages for replay.", "int", 0, metavar="N"),
    Option("trt-baseline-provider", "ONNX Runtime provider of the FP32 baseline: cpu (deterministic) or cuda "
           "(TF32 off). Default: cpu.", "choice", "cpu", ("cpu", "cuda")),
    Option("trt-locate-on-failure", "On an accuracy failure, run a layerwise comparison and name the first "
           "divergent node in the message (default: off).", "bool", False),
    Option("trt-ledger", "After each trt test that built an engine, make its ledger: per ONNX node the declared "
           "precision (and rule), the realized precision (and evidence), the engine layer or node and its time; "
           "shown in the terminal summary (top units by time), --trt-report and --trt-html (default: off).",
           "bool", False),
    Option("trt-ledger-timing", "Timing source of the ledgers: auto = the engine's own per-layer timing (TensorRT), "
           "else ONNX Runtime CUDA (the strongly typed realization, not TensorRT), else none (the time column says "
           "why); engine / onnxruntime-cuda = that source, a usage error where it cannot run; off = no time. "
           "Default: auto.", "choice", "auto", TIMING_CHOICES),
    Option("trt-report", "Write machine-readable results (JSON) to PATH (default: none). Write it --trt-report=PATH.",
           "str", None, metavar="PATH", path=True),
    Option("trt-html", "Write a self-contained HTML report to PATH (default: none). Write it --trt-html=PATH.",
           "str", None, metavar="PATH", path=True),
    Option("trt-report-all-records", "Keep every record of repeated checks (each Hypothesis example) in "
           "--trt-report; by default a repeated check keeps its worst example and the example count "
           "(default: off).", "bool", False),
    Option("trt-parser-check", "Also parse and build every plan with TensorRT-RTX's real ONNX parser and builder "
           "(works without a GPU; needs the rtx extra): a node planned FP32 but parsed lower, or a realization it "
           "rejects, fails the test; promotions to higher precision are reported. Adds verdicts to the accuracy "
           "checks of --trt-backend, never replaces them. Default: off.",
           "choice", "off", PARSER_CHECK_CHOICES),
    Option("trt-gpus", "Spread pytest-xdist workers over N GPUs (or 'auto'), one worker per GPU, honouring "
           "CUDA_VISIBLE_DEVICES (default: not set).", "str", None, metavar="N|auto"),
    Option("trt-save", "Save this session's run (its JSON report and an environment fingerprint: versions, GPU, "
           "model and plan hashes, criteria, feeds) in --trt-storage under NAME (letters, digits, _ . -), to compare "
           "later runs with (default: not saved).", "str", None, metavar="NAME"),
    Option("trt-autosave", "Save every session's run in --trt-storage, unnamed (default: off).", "bool", False),
    Option("trt-storage", f"Where runs are saved and compared from: a directory, or a URL the remote cache takes "
           f"(file:///dir, https://host/path for WebDAV, s3://...; runs there are signed with the remote cache's key "
           f"and verified with its trusted keys) (default: <rootdir>/{DEFAULT_RUNS_DIRNAME}). Write it "
           f"--trt-storage=URI.", "str", None, metavar="URI", path=True),
    Option("trt-save-outputs", "With --trt-save or --trt-autosave: also store every check's feeds and engine "
           "outputs (.npz), so `pytest-trt runs recheck` can judge the run again elsewhere (default: off).",
           "bool", False),
    Option("trt-compare-run", "Compare this session's figures with a saved run: a run id, NUM (its position in "
           "`pytest-trt runs list`), NAME (the latest run saved so), or latest (the latest run whose session exited "
           "0 with its drift gate; what the bare flag means). Shows the drift per output, what changed in the "
           "environment and which nodes changed precision. A missing or damaged run is a usage error. Write it "
           "--trt-compare-run=RUN (default: no comparison).", "optional", None, metavar="RUN", const="latest"),
    Option("trt-compare-fail", "With --trt-compare-run: fail the session when an output drifted past EXPR: "
           "METRIC:THRESHOLD, relative (max_abs:+25%) or absolute (cosine:-1e-5); errors (max_abs, max_rel, "
           "mismatch, x_tol) fail when they grow, floors (cosine, snr_db) when they fall; comma-separated or "
           "repeatable. An improvement is reported, never failed (default: no gate).", "list", (), metavar="EXPR"),
    Option("trt-require-run", "Every collected trt test must run: a skipped trt test (requires=, an unsupported "
           "GPU, a skip marker) fails with the skip's reason, and so does one that passed without checking "
           "anything: no check, where a check is a comparison (trt.check()), a precision assertion, a parser "
           "check, locate, suggest, or an engine built by a backend whose build is a check "
           "(Backend.build_is_a_check: a real TensorRT builder, not emulate). A test that skipped after a failed "
           "check fails too. For CI jobs that exist to run them (default: off).",
           "bool", False),
)

OPTIONS_BY_DEST = {o.dest: o for o in OPTIONS}


def add_options(parser) -> None:
    """Register every option and its ini twin in one ``pytest-trt`` group."""
    group = parser.getgroup("trt", "pytest-trt (TensorRT engine accuracy testing)")
    for opt in OPTIONS:
        flag = f"--{opt.name}"
        arg_help = opt.help.replace("%", "%%")  # argparse formats help with %: a literal % (max_abs:+25%) doubled
        if opt.kind == "bool":
            group.addoption(flag, action="store_true", default=None, dest=opt.dest, help=arg_help)
            parser.addini(opt.ini, f"ini twin of {flag}. {opt.help}", type="bool", default=opt.default)
        elif opt.kind == "list":
            group.addoption(flag, action="append", default=None, dest=opt.dest, metavar=opt.metavar, help=arg_help)
            parser.addini(opt.ini, f"ini twin of {flag} (one value per line). {opt.help}", type="linelist", default=[])
        elif opt.kind == "optional":
            group.addoption(flag, nargs="?", const=opt.const, default=None, dest=opt.dest, metavar=opt.metavar,
                            help=arg_help)
            parser.addini(opt.ini, f"ini twin of {flag}. {opt.help}", default=None)
        elif opt.kind == "choice":
            choices = None if opt.open_choices else list(opt.choices)
            group.addoption(flag, default=None, dest=opt.dest, choices=choices, metavar=opt.metavar, help=arg_help)
            parser.addini(opt.ini, f"ini twin of {flag}. {opt.help}", default=str(opt.default))
        else:
            group.addoption(flag, default=None, dest=opt.dest, metavar=opt.metavar, help=arg_help)
            parser.addini(opt.ini, f"ini twin of {flag}. {opt.help}", default=None)


def _convert(opt: Option, value, source: str):
    if value is None:
        return None
    try:
        if opt.kind == "float":
            number = float(value)
            if number < 0 or number != number:
                raise ValueError("must be a non-negative number")
            if number == float("inf"):
                raise ValueError("must be finite (an infinite tolerance switches the accuracy check off; "
                                 "deselect such tests with -k/-m instead, or mark a test that only wants the "
                                 "figures @pytest.mark.trt(no_check=True))" if opt.name in ("trt-atol", "trt-rtol")
                                 else "must be finite")
            if number == 0 and opt.name == "trt-remote-cache-timeout":
                raise ValueError("must be more than 0 seconds")
            return number
        if opt.kind == "int":
            number = int(value)
            if number < 0:  # --trt-seed -1 would fail every trt test (InputError) instead of stopping here
                raise ValueError("must be a non-negative integer")
            return number
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{source}: invalid value {value!r} for {opt.name}: {exc}") from None
    if opt.kind == "choice" and value not in opt.choices and not opt.open_choices:
        raise UsageError(f"{source}: invalid value {value!r}; choose one of {', '.join(opt.choices)}")
    return value


def level_of(source: str) -> str:
    """The :data:`LEVELS` entry of a source as :func:`lookup_option` spells it."""
    if source == "default":
        return "default"
    if source.startswith("ini "):
        return "ini"
    if source.startswith("$"):
        return "env"
    return "command line"


def _wanted(opt: Option) -> str:
    """What a value of ``opt`` looks like, for the empty-value error."""
    if opt.choices and not opt.open_choices:
        return "one of " + ", ".join(opt.choices)
    return opt.metavar or "a value"


def _how(opt: Option) -> str:
    return opt.choices[0] if opt.choices and not opt.open_choices else (opt.metavar or "VALUE")


def _is_empty(value) -> bool:
    """An empty (or blank) value, or a list holding one: ``--trt-save=`` with an unset ``$TAG``."""
    if isinstance(value, (list, tuple)):
        return any(_is_empty(v) for v in value)
    return isinstance(value, str) and not value.strip()


def _refuse_empty(opt: Option, where: str, how: str) -> None:
    raise UsageError(f"{where}: empty value; give {_wanted(opt)} ({how}) or leave it out (an unset variable in "
                     f"`--{opt.name}=$VAR` gives an empty value, which would have been ignored)")


def _check_not_empty(opt: Option, cli) -> None:
    """UsageError for an empty value of ``opt`` given as a command-line flag (``--trt-save=``). An
    empty ini value (``trt_keep_fp32 =`` in the file, or ``-o trt_keep_fp32=``) is not refused: as
    in pytest's own ini semantics it means "not set" (a list cleared, a setting off for this run)."""
    if cli is not None and _is_empty(cli):
        _refuse_empty(opt, f"--{opt.name}=", f"--{opt.name}={_how(opt)}")


def lookup_option(config, opt: Option, *, env: bool = True):
    """One option's value and where it came from: the command line, then its environment variable
    (:attr:`Option.env`; skipped with ``env=False``), then the ini, then the default; returns
    ``(value, source)`` (source spelled as the user wrote it: ``--trt-gpus``, ``$PYTEST_TRT_CACHE_DIR``,
    ``ini trt_gpus``, ``default``).

    An empty value of a command-line flag that takes one (``--trt-save=``) is a :class:`UsageError`
    naming it: ignoring it made ``--trt-save=$TAG`` with ``TAG`` unset a silent no-op. An empty ini
    value (``trt_report =`` in the file, or ``-o trt_report=``) means "not set", as in pytest's own ini
    semantics: the only way to clear an ini list or switch an ini setting off for one run; the
    option then has its default (no report, no list). An environment variable that is set but
    empty counts as unset (a fork's CI without the secret it names)."""
    cli = config.getoption(opt.dest, default=None)
    if opt.kind != "bool":
        _check_not_empty(opt, cli)
    if cli is not None and cli != []:
        return _convert(opt, cli if opt.kind != "list" else tuple(cli), f"--{opt.name}"), f"--{opt.name}"
    if env and opt.env and os.environ.get(opt.env):
        raw = os.environ[opt.env]
        value = tuple(raw.replace(",", " ").split()) if opt.kind == "list" else raw
        return _convert(opt, value, f"${opt.env}"), f"${opt.env}"
    if opt.kind == "bool":
        if _ini_bool(config, opt):
            return True, f"ini {opt.ini}"
        return bool(opt.default), "default"
    ini = config.getini(opt.ini)
    if opt.kind == "list":
        if ini:
            return tuple(ini), f"ini {opt.ini}"
        return (), "default"
    if ini not in (None, "", []) and not (opt.kind == "choice" and ini == opt.default):
        return _convert(opt, ini, f"ini {opt.ini}"), f"ini {opt.ini}"
    return opt.default, "default"


def _ini_bool(config, opt: Option) -> bool | None:
    """An on/off option's ini value; None for an empty one (``trt_require_run =``, ``-o trt_require_run=``:
    "not set", as for every other ini value). Any other value pytest cannot read as a truth value is a
    :class:`UsageError` naming the ini key (pytest's own says only ``invalid truth value 'x'``)."""
    try:
        return config.getini(opt.ini)
    except (ValueError, TypeError, pytest.UsageError) as exc:
        if "invalid truth value ''" in str(exc):  # pytest's message for an empty value, in every version
            return None
        raise UsageError(f"ini {opt.ini}: {exc}: give true or false (e.g. -o {opt.ini}=true), or an empty value "
                         f"for the default (--{opt.name} on the command line turns it on)") from None


def given_options(config) -> list[str]:
    """The ``--trt-*`` options and ``trt_*`` ini values this run sets (their spelling), in table order.

    Any of them puts the plugin in use (shared/CONVENTIONS.md); a value that cannot be read
    counts as given, so that resolving the settings reports it.
    """
    given = []
    for opt in OPTIONS:
        try:  # environment variables do not put the plugin in use (a CI runner may export them for all jobs)
            _, source = lookup_option(config, opt, env=False)
        except UsageError:
            source = f"--{opt.name}"
        if source != "default":
            given.append(source)
    return given


def _space_form_tokens() -> list[str]:
    try:
        return shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))
    except ValueError:
        return []


def check_path_option_forms(config) -> None:
    """Refuse ``--trt-report PATH`` (space form) for every path-valued option; ask for ``--trt-report=PATH``.

    pytest chooses the rootdir and ini file before plugin options are known, so it reads the
    separate ``PATH`` as a test path too (pytest-dev/pytest#8846): an existing path outside the
    project moves the rootdir there and the project's ini (``testpaths``, ``trt_fp16`` ...) is
    silently dropped. That happens only once the file exists (the second run of a CI job),
    so the space form is refused whether or not the rootdir changed this time. Command-line
    arguments and ``PYTEST_ADDOPTS`` are checked (both take part in choosing the rootdir;
    ini ``addopts`` does not).
    """
    flags = {f"--{o.name}" for o in OPTIONS if o.path}
    for where, tokens in (("PYTEST_ADDOPTS", _space_form_tokens()),
                          ("the command line", [str(a) for a in config.invocation_params.args])):
        for i, token in enumerate(tokens[:-1]):
            if token in flags:
                value = tokens[i + 1]
                inifile = getattr(config, "inipath", None)
                raise UsageError(
                    f"{token} {value} ({where}): write it {token}={value}. Given as a separate argument, "
                    f"pytest also takes {value!r} for a test path when it chooses the rootdir and ini file "
                    f"(pytest-dev/pytest#8846); once that path exists outside the project the project's ini "
                    f"settings are silently ignored (this run: rootdir {config.rootpath}, ini file "
                    f"{inifile or 'none'})")


def describe_source(config, dest: str) -> str:
    """Where an option's value came from, in words a user can act on: ``--trt-keep-fp32 on the
    command line``, ``--trt-keep-fp32 in $PYTEST_ADDOPTS``, ``--trt-keep-fp32 in the ini file's
    addopts (tox.ini)``, ``ini trt_keep_fp32 (tox.ini)`` or ``default``."""
    opt = OPTIONS_BY_DEST[dest]
    try:
        _, source = lookup_option(config, opt)
    except UsageError:
        source = f"--{opt.name}"
    inifile = getattr(config, "inipath", None)
    if source == "default":
        return source
    if source.startswith("ini "):
        return f"{source} ({inifile})" if inifile else source
    flag = f"--{opt.name}"

    def given(tokens) -> bool:
        return any(str(t) == flag or str(t).startswith(flag + "=") for t in tokens)

    if given(config.invocation_params.args):
        return f"{flag} on the command line"
    if given(_space_form_tokens()):
        return f"{flag} in $PYTEST_ADDOPTS"
    return f"{flag} in the ini file's addopts" + (f" ({inifile})" if inifile else "")


def parse_size(text: str | None) -> int | None:
    """'20G' -> bytes. None stays None."""
    if text in (None, ""):
        return None
    s = str(text).strip().upper().rstrip("B")
    units = {"K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
    try:
        if s and s[-1] in units:
            return int(float(s[:-1]) * units[s[-1]])
        return int(s)
    except ValueError:
        raise UsageError(f"invalid cache size {text!r}: use a number of bytes or a suffix K, M, G, e.g. 20G") from None


@dataclass
class Settings:
    """The run-wide options after precedence (command line > environment variable > ini > default)."""

    precision: str = "fp32"
    precision_source: str = "default"
    as_is: bool = False
    backend: str = "auto"
    typing: str = "auto"
    keep_fp32: tuple = ()
    cache_dir: Path = Path(DEFAULT_CACHE_DIRNAME)
    cache_max_bytes: int | None = None
    #: --trt-engine-memory in bytes; None: half the GPU's memory (TrtSession.engine_memory_limit)
    engine_memory_bytes: int | None = None
    cache_read_only: bool = False
    remote_cache: str | None = None
    remote_cache_mode: str = "auto"
    remote_cache_trust: tuple = ()
    #: --trt-remote-cache-timeout (the default is pytest_trt.cache.remote.layout.DEFAULT_TIMEOUT)
    remote_cache_timeout: float = 60.0
    rebuild: bool = False
    atol: float | None = None
    rtol: float | None = None
    seed: int = 0
    baseline_provider: str = "cpu"
    locate_on_failure: bool = False
    ledger: bool = False
    ledger_timing: str = "auto"
    report_json: Path | None = None
    report_html: Path | None = None
    report_all_records: bool = False
    gpus: str | None = None
    parser_check: str = "off"
    require_run: bool = False
    #: saved runs (pytest_trt.history): --trt-save NAME, --trt-autosave, --trt-storage (None: the default),
    #: --trt-save-outputs, --trt-compare-run (a selector), --trt-compare-fail (parsed thresholds)
    save_name: str | None = None
    autosave: bool = False
    storage: str | None = None
    save_outputs: bool = False
    compare_run: str | None = None
    compare_fail: tuple = ()
    rootdir: Path = field(default_factory=Path.cwd)
    sources: dict = field(default_factory=dict)

    @property
    def saves(self) -> bool:
        """This session's run is saved (``--trt-save`` or ``--trt-autosave``)."""
        return bool(self.save_name or self.autosave)


def resolve_settings(config) -> Settings:
    """Read every option with its precedence; UsageError on contradictions."""
    values, sources = {}, {}
    for opt in OPTIONS:
        values[opt.dest], sources[opt.dest] = lookup_option(config, opt)
    if values["trt_cache_read_only"] and values["trt_rebuild"]:
        raise UsageError("--trt-cache-read-only and --trt-rebuild contradict each other: a read-only cache "
                         "cannot be rebuilt")
    remote = remote_settings(values["trt_remote_cache"], values["trt_remote_cache_mode"],
                             values["trt_remote_cache_trust"], sources)
    if remote[0] and values["trt_cache_read_only"]:
        raise UsageError(f"--trt-cache-read-only (from {sources['trt_cache_read_only']}) and --trt-remote-cache (from "
                         f"{sources['trt_remote_cache']}) cannot be combined: a remote entry is verified and "
                         f"installed into the local cache before it is loaded, which a read-only cache cannot "
                         f"hold. Use a writable --trt-cache-dir (--trt-remote-cache-mode ro keeps the remote "
                         f"read-only).")
    precision, psource = _default_precision(values, sources)
    for pattern in values["trt_keep_fp32"] or ():
        try:
            validate_pattern(pattern)
        except PatternError as exc:  # at start, not in every trt test
            raise UsageError(f"{sources['trt_keep_fp32']}: {exc}") from None
    rootdir = Path(str(config.rootpath))
    # command line > $PYTEST_TRT_CACHE_DIR > ini (lookup_option) > the one default rule (pytest_trt.core.locations)
    cache_dir = values["trt_cache_dir"] or str(default_cache_dir(rootdir=rootdir))
    cache_path = Path(cache_dir).expanduser()
    if not cache_path.is_absolute():
        cache_path = (relative_base(config, sources["trt_cache_dir"]) / cache_path).resolve()

    def as_path(dest):  # a report path, relative like the cache directory's
        if not values[dest]:
            return None
        path = Path(values[dest]).expanduser()
        return path if path.is_absolute() else relative_base(config, sources[dest]) / path

    return Settings(
        precision=precision,
        precision_source=psource,
        as_is=bool(values["trt_as_is"]),
        backend=values["trt_backend"],
        typing=values["trt_typing"],
        keep_fp32=tuple(values["trt_keep_fp32"] or ()),
        cache_dir=cache_path,
        cache_max_bytes=parse_size(values["trt_cache_max_size"]),
        engine_memory_bytes=parse_size(values["trt_engine_memory"]),
        cache_read_only=bool(values["trt_cache_read_only"]),
        remote_cache=remote[0],
        remote_cache_mode=remote[1],
        remote_cache_trust=remote[2],
        remote_cache_timeout=float(values["trt_remote_cache_timeout"]),
        rebuild=bool(values["trt_rebuild"]),
        atol=values["trt_atol"],
        rtol=values["trt_rtol"],
        seed=int(values["trt_seed"] or 0),
        baseline_provider=values["trt_baseline_provider"],
        locate_on_failure=bool(values["trt_locate_on_failure"]),
        ledger=bool(values["trt_ledger"]),
        ledger_timing=values["trt_ledger_timing"],
        report_json=as_path("trt_report"),
        report_html=as_path("trt_html"),
        report_all_records=bool(values["trt_report_all_records"]),
        gpus=values["trt_gpus"],
        parser_check=values["trt_parser_check"],
        require_run=bool(values["trt_require_run"]),
        save_name=check_name(values["trt_save"], sources["trt_save"]) if values["trt_save"] else None,
        autosave=bool(values["trt_autosave"]),
        storage=_storage(values["trt_storage"], relative_base(config, sources["trt_storage"])),
        save_outputs=bool(values["trt_save_outputs"]),
        compare_run=values["trt_compare_run"] or None,
        compare_fail=parse_gate(values["trt_compare_fail"], sources["trt_compare_fail"]),
        rootdir=rootdir,
        sources=sources,
    )


def relative_base(config, source: str) -> Path:
    """What a relative path option is relative to: the ini file's directory for a value from the ini
    (``source`` ``"ini NAME"``; pytest's own rule for ini paths), else the directory pytest was invoked
    in (the command line, an environment variable, a default). So ``trt_cache_dir = .trt-cache`` in
    the project's ini names one directory wherever in the project pytest is run."""
    if source.startswith("ini "):
        inipath = getattr(config, "inipath", None)
        return Path(str(inipath)).parent if inipath else Path(str(config.rootpath))
    return Path(str(config.invocation_params.dir))


def _storage(value: str | None, base: Path) -> str | None:
    """``--trt-storage``: a URL as given; a directory relative to :func:`relative_base`, like the cache's."""
    if not value or "://" in value:
        return value or None
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else base / path)


def _default_precision(values: dict, sources: dict) -> tuple[str, str]:
    """``--trt-fp16`` / ``--trt-bf16`` (or their ini twins) as one setting: the higher level wins
    (``--trt-bf16`` over an ini ``trt_fp16 = true``); both at one level contradict each other."""
    given = [(LEVELS.index(level_of(sources[dest])), precision, sources[dest])
             for dest, precision in (("trt_fp16", "fp16"), ("trt_bf16", "bf16")) if values[dest]]
    if not given:
        return "fp32", "default"
    top = max(level for level, _, _ in given)
    winners = [(precision, source) for level, precision, source in given if level == top]
    if len(winners) > 1:
        raise UsageError(f"--trt-fp16 and --trt-bf16 both given (from {winners[0][1]} and {winners[1][1]}): "
                         f"choose one default precision")
    return winners[0]


def remote_settings(url, mode, trust, sources: dict) -> tuple[str | None, str, tuple]:
    """(url, mode, trusted keys) of the remote cache after the environment fallbacks.

    ``$PYTEST_TRT_REMOTE_CACHE``, ``$PYTEST_TRT_REMOTE_CACHE_MODE`` and ``$PYTEST_TRT_REMOTE_CACHE_TRUST``
    (comma- or whitespace-separated) apply where the command line set no value (the console
    script; under pytest :func:`lookup_option` has already put them above the ini).
    ``sources`` is updated with where each value came from.
    """
    if not url and os.environ.get("PYTEST_TRT_REMOTE_CACHE"):
        url, sources["trt_remote_cache"] = os.environ["PYTEST_TRT_REMOTE_CACHE"], "$PYTEST_TRT_REMOTE_CACHE"
    if sources.get("trt_remote_cache_mode", "default") == "default" and os.environ.get("PYTEST_TRT_REMOTE_CACHE_MODE"):
        mode, sources["trt_remote_cache_mode"] = (os.environ["PYTEST_TRT_REMOTE_CACHE_MODE"],
                                                  "$PYTEST_TRT_REMOTE_CACHE_MODE")
        if mode not in ("auto", "ro", "rw"):
            raise UsageError(f"$PYTEST_TRT_REMOTE_CACHE_MODE: invalid value {mode!r}; choose one of auto, ro, rw")
    if not trust and os.environ.get("PYTEST_TRT_REMOTE_CACHE_TRUST"):
        trust = tuple(os.environ["PYTEST_TRT_REMOTE_CACHE_TRUST"].replace(",", " ").split())
        sources["trt_remote_cache_trust"] = "$PYTEST_TRT_REMOTE_CACHE_TRUST"
    return (url or None), (mode or "auto"), tuple(trust or ())
