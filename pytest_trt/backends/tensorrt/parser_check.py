"""The parser check: every plan also parsed and built by TensorRT-RTX's real ONNX parser and builder.

TensorRT-RTX parses ONNX and builds engines on a machine without a GPU (only loading an
engine needs one), so a CPU CI job can put every plan through a real TensorRT-family
parser: ``--trt-parser-check tensorrt-rtx`` (ini ``trt_parser_check``), CLI
``pytest-trt compare/plan --parser-check tensorrt-rtx``, or explicitly
``trt.check_parser()`` / :func:`check_parser`.

What it does, per plan: the plan's strongly typed realization goes through the
``tensorrt-rtx`` backend's own build path (:meth:`TensorRTBackend._build_engine`: parser,
strongly typed network, builder, artifact cache keyed by the TensorRT-RTX version), which
records the parsed dtype of every planned node and judges planned vs parsed with the one
rule of :mod:`pytest_trt.layers.network_rule`:

* a node planned FP32 (or FP16/BF16) parsed in a lower or different type: **failure**;
* a node planned FP16/BF16 parsed FP32: a **promotion** ("TensorRT computes this in
  higher precision than planned"), reported and counted, never failed;
* the realization rejected by the parser (or the builder) while the source model parses:
  **failure** quoting the parser's message; the source rejected too: ``source_unparsable``
  (TensorRT-RTX cannot take this model at all, so the plan cannot be checked), also a
  failure of a requested check.

How it knows: *observed* in the parsed network (layer output dtypes of a strongly typed
network, layers mapped to ONNX nodes by name and ``[ONNX Layer: ...]`` metadata). It says
nothing about accuracy and nothing about what kernels run (that needs the GPU): it never
replaces the accuracy check of the backend that runs the tests.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from ...core.choices import PARSER_CHECK_CHOICES
from ...core.environment import module_available
from ...errors import BackendUnavailable, BuildError, UsageError
from ...layers.network_rule import HIGHER, LOWER, MEANING, judge, worst

if TYPE_CHECKING:  # pragma: no cover
    from ...cache import ArtifactCache
    from ...plan import PrecisionPlan
    from ..base import BuildConfig
    from .backend import TensorRTBackend

# This module is in the plugin's load path (pytest_trt.run.session imports it): the
# backends, realization and TensorRT glue it drives are imported inside the functions that
# run a check, so loading the plugin imports none of them (numpy, onnx, TensorRT).

INSTALL_HINT = 'pip install "pytest-trt[rtx]" (from a checkout: pip install -e ".[rtx]")'

PASSED, FAILED, SOURCE_UNPARSABLE = "passed", "failed", "source_unparsable"


def unavailable_reason(which: str = "tensorrt-rtx") -> str | None:
    """None when TensorRT-RTX's parser can run here (CPU or GPU), else why not (no import when missing)."""
    if not module_available("tensorrt_rtx"):
        return "TensorRT-RTX not installed"
    from ..base import get_backend  # (load path: see the top of the module)

    try:
        cast("TensorRTBackend", get_backend(which)).compat()  # (the tensorrt-rtx backend)
    except BackendUnavailable as exc:
        return exc.reason
    return None


def require(which: str, flag: str) -> None:
    """A requested parser check that cannot run here is a usage error naming the extra to install."""
    if which not in PARSER_CHECK_CHOICES:
        raise UsageError(f"{flag}: unknown value {which!r}; choose one of {', '.join(PARSER_CHECK_CHOICES)}")
    if which == "off":
        return
    reason = unavailable_reason(which)
    if reason:
        raise UsageError(f"{flag} {which} cannot run here: {reason}. Install it: {INSTALL_HINT}")


@dataclass
class ParserCheck:
    """The verdict of one plan parsed and built by TensorRT-RTX."""

    model: str
    policy: str
    library: str
    status: str
    #: planned compute node -> {"canonical", "module", "module_class", "op_type", "planned", "parsed", "verdict"};
    #: parsed None = folded away
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    error: str | None = None
    cache_hit: bool = False
    build_seconds: float = 0.0
    key: str = ""

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    def _with(self, verdict: str) -> list[dict[str, Any]]:
        # canonical/module/module_class default for node tables made without a plan (tests, older caches)
        return [{"node": n, "canonical": n, "module": None, "module_class": None, **v}
                for n, v in self.nodes.items() if v["verdict"] == verdict]

    @property
    def failures(self) -> list[dict[str, Any]]:
        """Nodes parsed in a lower (or different) precision than planned."""
        return self._with(LOWER)

    @property
    def promotions(self) -> list[dict[str, Any]]:
        """Nodes planned FP16/BF16 that TensorRT computes in FP32."""
        return self._with(HIGHER)

    def counts(self) -> dict[str, int]:
        c = {"nodes": len(self.nodes), "ok": 0, "lower": 0, "higher": 0, "not_in_network": 0}
        for v in self.nodes.values():
            c["not_in_network" if v["parsed"] is None else v["verdict"]] += 1
        return c

    def headline(self) -> str:
        c = self.counts()
        what = {PASSED: "passed", FAILED: "FAILED", SOURCE_UNPARSABLE: "FAILED (source model rejected)"}[self.status]
        done = "parsed" if "parse only" in self.library else "parsed and built"
        head = f"parser check {what}: {self.model} [{self.policy}] {done} by {self.library}"
        if self.error and not (c["ok"] or c["lower"] or c["higher"]):
            return head + f": no network to compare ({c['nodes']} planned node(s))"
        return (head + f": {c['ok']} node(s) as planned, {c['lower']} lower than planned, {c['higher']} computed in "
                f"higher precision than planned, {c['not_in_network']} folded away (observed in the parsed network)")

    def message(self) -> str:
        lines = [self.headline()]
        if self.error:
            lines.append(self.error)
        for f in self.failures[:20]:
            lines.append(f"  FAIL {f.get('canonical') or f['node']} ({f['op_type']}): planned {f['planned']}, "
                         f"parsed {f['parsed']}: "
                         f"{MEANING[LOWER]}")
        for p in self.promotions[:20]:
            lines.append(f"  note {p.get('canonical') or p['node']} ({p['op_type']}): planned {p['planned']}, "
                         f"parsed {p['parsed']}: "
                         f"{MEANING[HIGHER]}")
        if len(self.promotions) > 20:
            lines.append(f"  ... {len(self.promotions) - 20} more promotion(s)")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "policy": self.policy, "library": self.library, "status": self.status,
                "passed": self.passed, "how": "observed: layer dtypes of the parsed, strongly typed network",
                "counts": self.counts(), "failures": self.failures, "promotions": self.promotions,
                "error": self.error, "cache_hit": self.cache_hit, "build_seconds": round(self.build_seconds, 4),
                "key": self.key}

    def __str__(self) -> str:
        return self.message()


def _node_table(plan: PrecisionPlan, parsed: dict[str, str], mismatches) -> dict[str, dict[str, Any]]:
    verdicts: dict[str, list[str]] = {}
    parsed_of: dict[str, str] = {}
    for m in mismatches:
        verdicts.setdefault(m.node, []).append(judge(m.planned, m.actual))
        parsed_of.setdefault(m.node, m.actual)
    out = {}
    for name, d in plan.nodes.items():
        if d.kind != "compute" or d.precision is None:
            continue
        got = parsed.get(name)
        verdict = worst(verdicts.get(name, ()))
        # a node with several outputs: show the type that decided the verdict
        shown = parsed_of.get(name, got) if verdict != "ok" else got
        out[name] = {**plan.model.names.info(name), "op_type": d.op_type, "planned": d.precision, "parsed": shown,
                     "verdict": verdict}
    return out


def source_parse_error(plan: PrecisionPlan, compat) -> str | None:
    """None when TensorRT-RTX parses the *source* model (as written, strongly typed), else its message."""
    from .build import parse_with_weights  # (load path: see the top of the module)
    from .compat import get_logger

    trt = compat.trt
    logger = get_logger(trt)
    with logger.capture():
        builder = trt.Builder(logger)
        network = builder.create_network(compat.network_flags(True))
        parser = trt.OnnxParser(network, logger)
        path = getattr(plan.model, "path", None)
        if plan.model.has_external_weights:  # the model as written, from its file: nothing copied
            ok = parse_with_weights(compat, parser, plan.model.proto, plan.model, None, {}, [])
        else:
            data = plan.model.serialized()
            ok = parser.parse(data, str(path)) if path is not None else parser.parse(data)
        if ok:
            return None
        return "; ".join(e.line() for e in compat.parser_errors(parser)) or "the parser returned False"


def _parse_only(plan: PrecisionPlan, compat, cache: ArtifactCache | None = None, rebuild: bool = False):
    """Parse the strongly typed realization (no build): ``(node dtypes, mismatches)`` or a BuildError.

    A model with external weights: its realization's weights reach the parser by pointer from the
    model's files and its weight set in ``cache`` (built there when missing; converted in memory
    without a cache), never through a serialized copy."""
    # (load path: see the top of the module)
    from ...realize import realize_strong
    from ...realize.weight_sets import WeightSets
    from .backend import check_network_dtypes, network_node_dtypes
    from .build import parse_with_weights
    from .compat import get_logger

    trt = compat.trt
    logger = get_logger(trt)
    proto = realize_strong(plan)
    with logger.capture():
        builder = trt.Builder(logger)
        network = builder.create_network(compat.network_flags(True))
        parser = trt.OnnxParser(network, logger)
        path = getattr(plan.model, "path", None)
        keep: list = []
        if plan.model.has_external_weights:
            ok = parse_with_weights(compat, parser, proto, plan.model, WeightSets(plan.model, cache, rebuild=rebuild),
                                    {}, keep)
        else:
            data = proto.SerializeToString()
            ok = parser.parse(data, str(path)) if path is not None else parser.parse(data)
        if not ok:
            said = "; ".join(e.line() for e in compat.parser_errors(parser)) or "the parser returned False"
            raise BuildError(f"{compat.label} rejected the realization while parsing the ONNX model: {said}")
        return network_node_dtypes(network, plan), check_network_dtypes(network, plan)


def check_parser(plan: PrecisionPlan, config: BuildConfig | None = None, *, cache: ArtifactCache | None = None,
                 rebuild: bool = False, which: str = "tensorrt-rtx", build: bool | None = None) -> ParserCheck:
    """Parse and build ``plan``'s strongly typed realization with TensorRT-RTX; judge every node.

    Works on a CPU-only machine. The result is cached with the engine in ``cache`` (key:
    model, plan, TensorRT-RTX version, build config). A failed parse or build is never
    cached. ``build=False`` parses only (no builder, no engine cached): for large corpora. The default
    (None) builds, except for a model with external weights: the dtype check reads the parsed
    network and needs no build, and TensorRT-RTX's CPU build of a 2.69 GB model peaked at 8.1 GB
    (issue 29), while parsing takes the weights by pointer (measured: 0.29 GB peak for a 1.66 GB
    model). Raises :class:`~pytest_trt.errors.UsageError` when TensorRT-RTX is not installed.

    >>> check = check_parser(PrecisionPolicy("fp16").resolve(load_model("m.onnx")))  # doctest: +SKIP
    >>> check.passed, [p["node"] for p in check.promotions]  # doctest: +SKIP
    """
    # (load path: see the top of the module)
    from ..base import BuildConfig, get_backend
    from .backend import LoweredPrecisionError

    require(which, "parser check")
    backend = cast("TensorRTBackend", get_backend(which))  # (the tensorrt-rtx backend)
    compat = backend.compat()
    # TensorRT-RTX is strongly typed only: the check always parses the strongly typed realization
    cfg = dataclasses.replace(config or BuildConfig(), typing="auto")
    label, policy = plan.model.label, plan.policy.describe()
    if build is None:
        build = not plan.model.has_external_weights
    try:
        if not build:  # parse only (large corpora, big models): the same rule, no builder, no engine cached
            parsed, mismatches = _parse_only(plan, compat, cache, rebuild)
            nodes = _node_table(plan, parsed, mismatches)
            status = FAILED if any(v["verdict"] == LOWER for v in nodes.values()) else PASSED
            return ParserCheck(label, policy, compat.label + " (parse only)", status, nodes)
        engine = backend._build_engine(plan, cfg, cache, rebuild=rebuild)
    except LoweredPrecisionError as exc:
        return ParserCheck(label, policy, compat.label, FAILED, _node_table(plan, exc.nodes, exc.mismatches),
                           error=str(exc).splitlines()[0])
    except BuildError as exc:
        source_error = source_parse_error(plan, compat)
        if source_error is not None:
            return ParserCheck(label, policy, compat.label, SOURCE_UNPARSABLE, _node_table(plan, {}, ()),
                               error=f"{compat.label} rejects the source model itself, so this plan cannot be "
                                     f"checked by it: {source_error}")
        return ParserCheck(label, policy, compat.label, FAILED, _node_table(plan, {}, ()),
                           error=f"the source model parses, but its realization does not: {exc}")
    info = engine.build_info
    mismatches = engine.network_mismatches
    nodes = _node_table(plan, engine.network_nodes, mismatches)
    status = FAILED if any(v["verdict"] == LOWER for v in nodes.values()) else PASSED
    return ParserCheck(label, policy, compat.label, status, nodes, cache_hit=info.cache_hit,
                       build_seconds=info.build_seconds, key=info.key)


__all__ = ["INSTALL_HINT", "PARSER_CHECK_CHOICES", "ParserCheck", "check_parser", "require", "unavailable_reason"]
