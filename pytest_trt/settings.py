"""Command-line and ini options: one table, one resolver.

Every option is ``--trt-*`` with an ini twin ``trt_*``; precedence is
marker kwargs > command line > ini > default (markers are applied per test by
:mod:`pytest_trt.case`). The table below drives ``pytest_addoption`` and the help texts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .backends.base import BACKEND_CHOICES, TYPING_CHOICES
from .errors import UsageError

DEFAULT_CACHE_DIRNAME = ".trt-cache"


@dataclass(frozen=True)
class Option:
    name: str  # command-line flag without the leading dashes
    help: str
    kind: str = "str"  # str | bool | float | int | list | choice
    default: object = None
    choices: tuple = ()
    metavar: str | None = None

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
        "Default: auto.",
        "choice", "auto", BACKEND_CHOICES,
    ),
    Option("trt-typing", "TensorRT network typing: auto = strong typing (TensorRT >= 10.0, the only typing in 11.x and RTX), "
           "weak = per-layer hints with OBEY_PRECISION_CONSTRAINTS (TensorRT <= 10.x). Default: auto.",
           "choice", "auto", TYPING_CHOICES),
    Option("trt-keep-fp32", "Keep nodes matching PATTERN in FP32 (shell glob over ONNX node names, or op:TYPE); "
           "repeatable; adds to the marker's keep_fp32. Default: none.", "list", (), metavar="PATTERN"),
    Option("trt-cache-dir", f"Directory of cached engines, baselines and timing caches "
           f"(default: $PYTEST_TRT_CACHE_DIR or <rootdir>/{DEFAULT_CACHE_DIRNAME}).", "str", None, metavar="DIR"),
    Option("trt-cache-max-size", "Evict least-recently-used cache entries beyond this size, e.g. 20G, 500M "
           "(default: no limit).", "str", None, metavar="SIZE"),
    Option("trt-cache-read-only", "Use the cache directory read-only (e.g. a pre-populated cache shared by CI "
           "runners): valid entries are used, a missing or corrupt one is an error, nothing is written "
           "(default: off).", "bool", False),
    Option("trt-rebuild", "Ignore cached engines and baselines and rebuild them (default: off).", "bool", False),
    Option("trt-atol", "Absolute tolerance for every output (default: per precision: fp32 1e-5, fp16 1e-2, bf16 5e-2; FP16/BF16 also check a cosine floor).",
           "float", None, metavar="ATOL"),
    Option("trt-rtol", "Relative tolerance for every output (default: per precision: fp32 1e-5, fp16 2e-2, bf16 1e-1).",
           "float", None, metavar="RTOL"),
    Option("trt-seed", "Seed of generated inputs (default: 0). Shown in failure messages for replay.", "int", 0, metavar="N"),
    Option("trt-baseline-provider", "ONNX Runtime provider of the FP32 baseline: cpu (deterministic) or cuda "
           "(TF32 off). Default: cpu.", "choice", "cpu", ("cpu", "cuda")),
    Option("trt-locate-on-failure", "On an accuracy failure, run a layerwise comparison and name the first "
           "divergent node in the message (default: off).", "bool", False),
    Option("trt-report", "Write machine-readable results (JSON) to PATH (default: none).", "str", None, metavar="PATH"),
    Option("trt-html", "Write a self-contained HTML report to PATH (default: none).", "str", None, metavar="PATH"),
    Option("trt-gpus", "Spread pytest-xdist workers over N GPUs (or 'auto'), one worker per GPU, honouring "
           "CUDA_VISIBLE_DEVICES (default: not set).", "str", None, metavar="N|auto"),
)

OPTIONS_BY_DEST = {o.dest: o for o in OPTIONS}


def add_options(parser) -> None:
    """Register every option and its ini twin in one ``pytest-trt`` group."""
    group = parser.getgroup("trt", "pytest-trt (TensorRT engine accuracy testing)")
    for opt in OPTIONS:
        flag = f"--{opt.name}"
        if opt.kind == "bool":
            group.addoption(flag, action="store_true", default=None, dest=opt.dest, help=opt.help)
            parser.addini(opt.ini, f"ini twin of {flag}. {opt.help}", type="bool", default=opt.default)
        elif opt.kind == "list":
            group.addoption(flag, action="append", default=None, dest=opt.dest, metavar=opt.metavar, help=opt.help)
            parser.addini(opt.ini, f"ini twin of {flag} (one pattern per line). {opt.help}", type="linelist", default=[])
        elif opt.kind == "choice":
            group.addoption(flag, default=None, dest=opt.dest, choices=list(opt.choices), help=opt.help)
            parser.addini(opt.ini, f"ini twin of {flag}. {opt.help}", default=str(opt.default))
        else:
            group.addoption(flag, default=None, dest=opt.dest, metavar=opt.metavar, help=opt.help)
            parser.addini(opt.ini, f"ini twin of {flag}. {opt.help}", default=None)


def _convert(opt: Option, value, source: str):
    if value is None:
        return None
    try:
        if opt.kind == "float":
            number = float(value)
            if number < 0 or number != number:
                raise ValueError("must be a non-negative number")
            return number
        if opt.kind == "int":
            return int(value)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{source}: invalid value {value!r} for {opt.name}: {exc}") from None
    if opt.kind == "choice" and value not in opt.choices:
        raise UsageError(f"{source}: invalid value {value!r}; choose one of {', '.join(opt.choices)}")
    return value


def _lookup(config, opt: Option):
    """Command line first, then ini, then the default; returns (value, source)."""
    cli = config.getoption(opt.dest, default=None)
    if cli is not None and cli != []:
        return _convert(opt, cli if opt.kind != "list" else tuple(cli), f"--{opt.name}"), f"--{opt.name}"
    ini = config.getini(opt.ini)
    if opt.kind == "bool":
        if ini:
            return True, f"ini {opt.ini}"
        return bool(opt.default), "default"
    if opt.kind == "list":
        if ini:
            return tuple(ini), f"ini {opt.ini}"
        return (), "default"
    if ini not in (None, "", []) and not (opt.kind == "choice" and ini == opt.default):
        return _convert(opt, ini, f"ini {opt.ini}"), f"ini {opt.ini}"
    return opt.default, "default"


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
    """The run-wide options after precedence (command line > ini > default)."""

    precision: str = "fp32"
    precision_source: str = "default"
    as_is: bool = False
    backend: str = "auto"
    typing: str = "auto"
    keep_fp32: tuple = ()
    cache_dir: Path = Path(DEFAULT_CACHE_DIRNAME)
    cache_max_bytes: int | None = None
    cache_read_only: bool = False
    rebuild: bool = False
    atol: float | None = None
    rtol: float | None = None
    seed: int = 0
    baseline_provider: str = "cpu"
    locate_on_failure: bool = False
    report_json: Path | None = None
    report_html: Path | None = None
    gpus: str | None = None
    rootdir: Path = field(default_factory=Path.cwd)
    sources: dict = field(default_factory=dict)


def resolve_settings(config) -> Settings:
    """Read every option with its precedence; UsageError on contradictions."""
    values, sources = {}, {}
    for opt in OPTIONS:
        values[opt.dest], sources[opt.dest] = _lookup(config, opt)
    if values["trt_cache_read_only"] and values["trt_rebuild"]:
        raise UsageError("--trt-cache-read-only and --trt-rebuild contradict each other: a read-only cache "
                         "cannot be rebuilt")
    if values["trt_fp16"] and values["trt_bf16"]:
        raise UsageError("--trt-fp16 and --trt-bf16 both given (from "
                         f"{sources['trt_fp16']} and {sources['trt_bf16']}): choose one default precision")
    if values["trt_fp16"]:
        precision, psource = "fp16", sources["trt_fp16"]
    elif values["trt_bf16"]:
        precision, psource = "bf16", sources["trt_bf16"]
    else:
        precision, psource = "fp32", "default"
    rootdir = Path(str(config.rootpath))
    cache_dir = values["trt_cache_dir"] or os.environ.get("PYTEST_TRT_CACHE_DIR") or str(rootdir / DEFAULT_CACHE_DIRNAME)
    if values["trt_cache_dir"] is None and os.environ.get("PYTEST_TRT_CACHE_DIR"):
        sources["trt_cache_dir"] = "$PYTEST_TRT_CACHE_DIR"
    cache_path = Path(cache_dir).expanduser()
    if not cache_path.is_absolute():
        cache_path = (Path(str(config.invocation_params.dir)) / cache_path).resolve()

    def as_path(v):  # report paths are relative to where pytest was invoked, like the cache directory
        if not v:
            return None
        path = Path(v).expanduser()
        return path if path.is_absolute() else Path(str(config.invocation_params.dir)) / path

    return Settings(
        precision=precision,
        precision_source=psource,
        as_is=bool(values["trt_as_is"]),
        backend=values["trt_backend"],
        typing=values["trt_typing"],
        keep_fp32=tuple(values["trt_keep_fp32"] or ()),
        cache_dir=cache_path,
        cache_max_bytes=parse_size(values["trt_cache_max_size"]),
        cache_read_only=bool(values["trt_cache_read_only"]),
        rebuild=bool(values["trt_rebuild"]),
        atol=values["trt_atol"],
        rtol=values["trt_rtol"],
        seed=int(values["trt_seed"] or 0),
        baseline_provider=values["trt_baseline_provider"],
        locate_on_failure=bool(values["trt_locate_on_failure"]),
        report_json=as_path(values["trt_report"]),
        report_html=as_path(values["trt_html"]),
        gpus=values["trt_gpus"],
        rootdir=rootdir,
        sources=sources,
    )
