"""Building one TensorRT engine from a plan: realize, parse, check, configure, build.

The build step of the ``tensorrt`` backends, run by the artifact cache into a temporary
directory (:func:`build_into` writes ``engine.plan`` and ``build.json``). Strong typing parses
the plan's strongly typed realization and checks the parsed network against the plan
(:mod:`~pytest_trt.backends.tensorrt.network`); weak typing parses the original model and sets the
plan's hints. A shared timing cache per TensorRT version and GPU speeds up rebuilds. Any
failure is a :class:`~pytest_trt.errors.BuildError` quoting TensorRT's own messages, with the
stage and, where TensorRT names one, the node (:func:`build_error_message`); nothing is cached.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import onnx
from filelock import FileLock

from ... import realize  # a module reference: the realization is looked up at build time (tests replace it)
from ...errors import BackendUnavailable, BuildError, PytestTrtError
from ...layers.network_rule import LOWER
from ...realize.weight_sets import bind, read_refs, save_with_weights
from ..base import BuildConfig
from .compat import TrtCompat, get_logger, log
from .network import (
    LoweredPrecisionError,
    apply_weak_hints,
    check_network_dtypes,
    computed_float_tensors,
    lowered_message,
    mark_float_outputs,
    network_node_dtypes,
    node_from_log,
)

if TYPE_CHECKING:  # pragma: no cover
    from ...plan import PrecisionPlan

__all__ = ["ENGINE_FILE", "EXTERNAL_DATA_THRESHOLD", "RECORD_FILE", "build_error_message", "build_into",
           "parse_source"]

ENGINE_FILE = "engine.plan"
RECORD_FILE = "build.json"

#: Serialized protobuf messages cannot exceed 2 GiB; above this size a model is written with its
#: weights as external data and parsed with ``OnnxParser.parse_from_file`` (in every version of
#: the trt_api matrix), which reads the data file next to the model.
EXTERNAL_DATA_THRESHOLD = (1 << 31) - (64 << 20)


class _Failure(Exception):
    """A TensorRT call reported failure without raising."""


class _EngineBuild:
    """One build, stage by stage; ``stage`` names where a failure happened (for the message)."""

    def __init__(self, compat: TrtCompat, backend_name: str, plan: PrecisionPlan, config: BuildConfig,
                 typing: str, *, layerwise: bool) -> None:
        self.compat, self.plan, self.config, self.typing, self.layerwise = compat, plan, config, typing, layerwise
        self.logger = get_logger(compat.trt)
        self.strong = typing == "strong"
        self.stage = "setup"
        self.parser_errors: list[Any] = []
        self.record: dict[str, Any] = {
            "library": compat.label, "backend": backend_name, "typing": typing, "probe": layerwise,
            "config": config.to_json(), "low_precision": getattr(plan, "low_precision", None), "notes": [],
        }
        #: the model's weight sets (a model with external weights; set by :func:`build_into`)
        self.sets: Any = None
        #: what the parser reads by pointer: kept alive until the build is done
        self._keep: list[Any] = []

    def realize(self) -> onnx.ModelProto:
        self.stage = "realize"
        if self.strong:
            self.record["parsed"] = "strongly typed realization of the plan"
            return realize.realize_strong(self.plan)
        self.record["parsed"] = "original model"
        return self.plan.model.proto

    def parse(self, proto: onnx.ModelProto) -> tuple[Any, Any]:
        """``(builder, network)`` of the parsed model."""
        self.stage = "parse"
        trt, compat = self.compat.trt, self.compat
        builder = trt.Builder(self.logger)
        network = builder.create_network(compat.network_flags(self.strong))
        parser = trt.OnnxParser(network, self.logger)
        model = self.plan.model
        if getattr(model, "has_external_weights", False):
            ok = parse_with_weights(compat, parser, proto, model, self.sets, self.record, self._keep)
        else:
            path = getattr(model, "path", None)
            with parse_source(proto, copy=not self.strong) as (model_bytes, model_file):
                if model_file is not None:
                    self.record["parsed_from_file"] = "external data (model over the 2 GiB protobuf limit)"
                    ok = parser.parse_from_file(str(model_file))
                elif path is not None:
                    ok = parser.parse(model_bytes, str(path))
                else:
                    ok = parser.parse(model_bytes)
        if not ok:
            self.parser_errors = compat.parser_errors(parser)
            raise _Failure("the ONNX parser rejected the model")
        return builder, network

    def prepare_network(self, network) -> None:
        """Strong typing: the network against the plan; weak typing: the plan's hints; then debug outputs (or, for a
        layerwise build, every float tensor marked as an output)."""
        self.stage = "network"
        compat, plan, record = self.compat, self.plan, self.record
        if self.strong:
            mismatches = check_network_dtypes(network, plan)
            record["network_mismatches"] = [m.to_json() for m in mismatches]
            record["network_nodes"] = network_node_dtypes(network, plan)
            lowered = [m for m in mismatches if m.verdict == LOWER]
            if lowered:
                raise LoweredPrecisionError(lowered_message(
                    f"{compat.label} build of {plan.model.label} [{plan.policy.describe()}]", lowered),
                    lowered, record["network_nodes"])
        else:
            applied = apply_weak_hints(compat, network, realize.weak_hints(plan), plan)
            record["weak_hints"] = applied.to_json()
        if self.layerwise:  # "probe": the build record's key since 0.1.0 (cached records keep it)
            record["probe_outputs"] = mark_float_outputs(network, computed_float_tensors(plan))
            record["unfused_debug_tensors"] = False
        else:
            record["unfused_debug_tensors"] = compat.has_unfused_debug_tensors() and compat.mark_unfused_debug(network)

    def builder_config(self, builder, network, timing_path: Path | None) -> Any:
        """The ``IBuilderConfig`` (:meth:`TrtCompat.configure`), with the shared timing cache loaded."""
        self.stage = "config"
        wanted = self.config
        cfg, notes = self.compat.configure(
            builder, network, typing=self.typing, low_precision=getattr(self.plan, "low_precision", None),
            tf32=wanted.tf32, profiles=wanted.profiles, workspace_bytes=wanted.workspace_bytes,
            builder_optimization_level=wanted.builder_optimization_level, timing_cache=read_timing_cache(timing_path),
        )
        self.record["notes"].extend(notes)
        return cfg

    def build(self, builder, network, cfg, engine_file: Path) -> None:
        self.stage = "build"
        mem = builder.build_serialized_network(network, cfg)
        if mem is None:
            raise _Failure("build_serialized_network returned None")
        with open(engine_file, "wb") as f:
            f.write(self.compat.host_memory_bytes(mem))


def build_into(compat: TrtCompat, backend_name: str, plan: PrecisionPlan, config: BuildConfig, typing: str,
               tmp_dir: Path, *, layerwise: bool, timing_path: Path | None, sets: Any = None) -> None:
    """Build one engine into ``tmp_dir`` (``engine.plan`` + ``build.json``) or raise BuildError.

    ``sets``: the model's :class:`~pytest_trt.realize.weight_sets.WeightSets` when it has external weights
    (the strongly typed realization refers to its converted weight set)."""
    job = _EngineBuild(compat, backend_name, plan, config, typing, layerwise=layerwise)
    job.sets = sets
    start = time.perf_counter()
    with job.logger.capture() as messages:
        try:
            proto = job.realize()
            builder, network = job.parse(proto)
            job.prepare_network(network)
            cfg = job.builder_config(builder, network, timing_path)
            job.build(builder, network, cfg, tmp_dir / ENGINE_FILE)
            if timing_path is not None:
                save_timing_cache(cfg, timing_path)
        except (BackendUnavailable, BuildError):
            raise
        except Exception as exc:  # _Failure, TensorRT's own exceptions, realize errors
            if isinstance(exc, PytestTrtError) and job.stage == "realize":
                raise
            raise BuildError(build_error_message(
                compat, plan, config, typing, job.stage, messages, job.parser_errors, exc, layerwise=layerwise)) from exc
    record = job.record
    record["build_seconds"] = round(time.perf_counter() - start, 3)
    record["warnings"] = [m.message for m in messages if m.severity == "warning"][:50]
    (tmp_dir / RECORD_FILE).write_text(json.dumps(record, indent=1, sort_keys=True))


def parse_with_weights(compat: TrtCompat, parser, proto, model, sets, record: dict, keep: list) -> bool:
    """Parse ``proto`` (the model itself, or a realization referring to its weights) without copying them.

    * the model as written, from a file: ``parse_from_file`` on the model's own path (its external data
      beside it: TensorRT maps it);
    * a realization, where the parser takes user initializers (TensorRT 10.13+, TensorRT-RTX):
      ``load_model_proto`` + ``load_initializer`` with a pointer to each mapped (or converted) weight
      + ``parse_model_proto``; ``keep`` holds the arrays as long as the parser lives;
    * a realization on an older TensorRT: a temporary folder holding the graph and a data file (a
      copy of the realized weights: the one case that costs one; said in the build record).
    """
    own = proto is model.proto and not read_refs(proto)
    if own and model.path is not None:
        record["parsed_from_file"] = "the model's own file, external data beside it"
        return bool(parser.parse_from_file(str(model.path)))
    if compat.has_user_initializers():
        bound = bind(proto, model, sets, as_inputs=False)
        keep.append(bound)
        if not parser.load_model_proto(bound.proto.SerializeToString()):
            return False
        for name, arr in bound.arrays.items():
            if not parser.load_initializer(name, int(arr.ctypes.data), int(arr.nbytes)):
                return False
        record["parsed_from_file"] = (f"user initializers: {len(bound.arrays)} weights "
                                      f"({bound.nbytes} bytes) given by pointer, not copied")
        return bool(parser.parse_model_proto())
    tmp = tempfile.mkdtemp(prefix="pytest-trt-parse-")
    try:
        model_file = Path(tmp) / "model.onnx"
        save_with_weights(proto, model, model_file, sets)
        record["parsed_from_file"] = (f"a temporary copy with external data ({model_file.with_name('model.onnx.data').stat().st_size} "
                                      f"bytes): {compat.label} has no OnnxParser.load_initializer")
        return bool(parser.parse_from_file(str(model_file)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def parse_source(proto, *, copy: bool):
    """``(bytes, None)`` for a model under the protobuf limit, else ``(None, model file)`` with the
    weights written as external data into a temporary directory (removed afterwards).

    ``copy``: the proto is the user's model (weak typing parses the original), which
    ``onnx.save_model(save_as_external_data=True)`` would modify: write a copy.
    """
    size = proto.ByteSize()
    if size <= EXTERNAL_DATA_THRESHOLD:
        yield proto.SerializeToString(), None
        return
    with tempfile.TemporaryDirectory(prefix="pytest-trt-parse-") as tmp:
        target = proto
        if copy:
            target = onnx.ModelProto()
            target.CopyFrom(proto)
        model_file = Path(tmp) / "model.onnx"
        onnx.save_model(target, str(model_file), save_as_external_data=True, all_tensors_to_one_file=True,
                        location="model.onnx.data", size_threshold=1024)
        yield None, model_file


def read_timing_cache(path: Path | None) -> bytes | None:
    """The shared timing cache's bytes (under its file lock), None when there is none yet."""
    if path is None or not path.exists():
        return None
    with FileLock(str(path) + ".lock"):
        try:
            return path.read_bytes()
        except OSError:
            return None


def save_timing_cache(cfg, path: Path) -> None:
    """Merge this build's timing cache into the shared file (Polygraphy 0.53
    ``EngineBytesFromNetwork``: combine with the file's cache, ``ignore_mismatch=True``)."""
    try:
        cache = cfg.get_timing_cache()
        if cache is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(path) + ".lock"):
            if path.exists():
                with contextlib.suppress(Exception):
                    previous = cfg.create_timing_cache(path.read_bytes())
                    cache.combine(previous, True)
            data = TrtCompat.host_memory_bytes(cache.serialize())
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
    except Exception as exc:  # a timing cache is an optimization: never fail a build for it
        log.warning("timing cache not saved to %s: %s", path, exc)


_STAGES = {"parse": "parsing the ONNX model", "network": "preparing the network", "config": "configuring the builder",
           "build": "building the engine", "realize": "realizing the plan"}


def _config_line(compat: TrtCompat, plan, config: BuildConfig, typing: str) -> str:
    """``build config: TensorRT 10.13, strong typing, ...``: what a failed build was asked to do."""
    return (f"build config: {compat.label}, {typing} typing"
            + (f", low precision {plan.low_precision}" if getattr(plan, "low_precision", None) else "")
            + f", tf32 {'on' if config.tf32 else 'off'}"
            + (f", {len(config.profiles)} profile(s)" if config.profiles else "")
            + (f", workspace {config.workspace_bytes} bytes" if config.workspace_bytes else "")
            + (f", optimization level {config.builder_optimization_level}"
               if config.builder_optimization_level is not None else ""))


def build_error_message(compat: TrtCompat, plan, config: BuildConfig, typing: str, stage: str, messages,
                        parser_errors, exc: Exception, *, layerwise: bool) -> str:
    """The message of a failed build: stage, node (when TensorRT names one), config, TensorRT's errors."""
    errors = [m for m in messages if m.severity in ("error", "internal_error")]
    groups = [(pe.line() for pe in parser_errors), (m.line() for m in errors)]
    lines = [line.replace("\n", "\n    ") for group in groups for line in group]
    node = next((pe.node_name for pe in parser_errors if pe.node_name), None)
    if node is None:
        node = node_from_log([pe.desc for pe in parser_errors] + [m.message for m in errors], plan.nodes)
    what = _STAGES.get(stage, stage)
    head = (f"TensorRT build failed for {plan.model.label} [{plan.policy.describe()}] while {what}"
            + (f", at node {node!r}" if node else "") + (" (layerwise build)" if layerwise else ""))
    body = [head, _config_line(compat, plan, config, typing)]
    body.append(str(exc) if isinstance(exc, _Failure) else f"{type(exc).__name__}: {exc}")
    if lines:
        body.append("TensorRT said:")
        body.extend(f"  {line}" for line in lines[:20])
        if len(lines) > 20:
            body.append(f"  ... {len(lines) - 20} more")
    else:
        body.append("TensorRT logged no error (run with -o log_cli=true --log-cli-level=INFO to see its log)")
    body.append("Nothing was cached for this build.")
    return "\n".join(body)
