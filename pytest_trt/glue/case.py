"""``TrtCase``: the object behind the ``trt`` fixture.

A case is one model under one precision policy on the session's backend, configured
by the ``trt`` marker (closest marker wins per keyword), the command line and ini. It
builds the engine lazily (through the cache), generates or loads inputs, computes the
FP32 baseline, compares, and records figures for the reports.

    @pytest.mark.trt(model="models/encoder.onnx", keep_fp32=["*/LayerNorm/*"],
                     val_range={"hidden_states": (-400, 400)}, dims={"batch": 2, "sequence": 16})
    def test_encoder_fp16(trt):
        trt.check()                                   # engine vs FP32 ONNX Runtime, within tolerance
        trt.assert_precision("*/LayerNorm/*", "fp32")  # and the LayerNorm really stayed FP32
"""

from __future__ import annotations

import functools
import re
import shlex
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import pytest

from ..backends.base import get_backend
from ..backends.tensorrt.parser_check import require
from ..compare import CompareResult, compare_outputs
from ..compare.criterion import PRECISION_KEYS, Criterion, Level
from ..compare.figures import DETAILS_MAX_ELEMENTS
from ..core.choices import PARSER_CHECK_LIBRARY
from ..core.dtypes import normalize_precision
from ..core.records import (
    AccuracyRecord,
    EngineRecord,
    LedgerRecord,
    ParserRecord,
    PrecisionRecord,
    RealizedRecord,
    Record,
)
from ..errors import AccuracyError, ParserCheckError, PrecisionError, UsageError
from ..history.outputs import save_check_outputs
from ..inputs import check_feeds, load_feeds, make_feeds, resolve_profile, save_feeds
from ..inputs.files import comment_text, write_replay_script
from ..layers.report import engine_layers
from ..ledger import ledger_of
from ..locate.divergence import locate_divergence
from ..plan.policy import PrecisionPolicy
from ..reference.baseline import feeds_digest, normalize_baseline, reference_label, reference_model
from ..report.files import refuse_report_path
from ..report.plots import failing_output_figures, layerwise_record
from ..report.rows import network_scopes
from ..run.settings import level_of
from ..suggest import suggest_fp32_islands
from ..verify.precision import assert_precision
from .marker import MARKER_KEYS, marker_kwargs, validate_options

if TYPE_CHECKING:  # pragma: no cover
    from ..backends.base import Engine
    from ..run.session import TrtSession



class Tolerances(NamedTuple):
    """The tolerances of a check, per output name: ``Tolerances(atol={...}, rtol={...})``."""

    atol: dict
    rtol: dict


#: where feeds that failed and that no seed can regenerate are saved (next to --trt-report, else in rootdir)
ARTIFACTS_DIRNAME = "trt-artifacts"
#: the criterion saved beside them (``<stem>.criterion.json``), read by the replay's ``--criterion``
CRITERION_SUFFIX = ".criterion.json"


class Feeds(dict):
    """Input feeds ``{name: array}`` that remember how they were made, for replay messages.

    ``seed`` is set for feeds generated from the declared specs; ``source`` names a file
    they were loaded from. Feeds a test builds itself (Hypothesis, its own arrays) are plain
    dicts: on failure they are saved as ``.npz`` with a replay command.
    """

    seed: int | None = None
    source: str | None = None
    #: ``remake(seed) -> Feeds`` made the same way with another seed (None for loaded feeds); the
    #: FP32-island search re-checks its answers on such feeds.
    remake: Any = None


class TrtCase:
    """One model + precision policy + tolerances + inputs, ready to build, run and check."""

    def __init__(self, session: TrtSession, node, **overrides):
        self.session = session
        self.node = node
        self.options = {**marker_kwargs(node), **{k: v for k, v in overrides.items() if v is not None}}
        validate_options(self.options, node.nodeid)
        self.records: list[Record] = []
        self._engine: Engine | None = None
        self._default_feeds: Feeds | None = None
        self._parser_recorded: set = set()

    # -- declared things --------------------------------------------------------------
    @property
    def base_dir(self) -> Path:
        path = getattr(self.node, "path", None)
        return Path(path).parent if path else Path.cwd()

    def resolve_path(self, value) -> Path:
        """Relative paths in markers are relative to the test file's directory."""
        path = Path(value)
        return path if path.is_absolute() else self.base_dir / path

    def path_origin(self, keyword: str, value) -> str | None:
        """How the marker's relative ``keyword=value`` path was resolved, for "not found" messages."""
        if Path(value).is_absolute():
            return None
        test_file = getattr(self.node, "path", None)
        where = f"the test file {test_file}" if test_file else f"the current directory {Path.cwd()}"
        return f"{keyword}={str(value)!r} in the trt marker is relative to {where}"

    @functools.cached_property
    def model(self):
        source = self.options.get("model")
        if source is None:
            raise UsageError(
                f"{self.node.nodeid}: no model declared: use @pytest.mark.trt(model='path/to/model.onnx') "
                f"or trt_build(model, ...)"
            )
        if isinstance(source, (str, Path)):
            return self.session.model(self.resolve_path(source), origin=self.path_origin("model", source))
        return self.session.model(source)

    @functools.cached_property
    def precision(self) -> str:
        if "precision" in self.options:
            return normalize_precision(self.options["precision"])
        return self.session.settings.precision

    @functools.cached_property
    def policy(self):
        policy = self.options.get("policy")
        if policy is not None:
            if not isinstance(policy, PrecisionPolicy):
                raise UsageError(f"{self.node.nodeid}: policy= must be a pytest_trt.PrecisionPolicy")
            return policy
        keep = list(self.options.get("keep_fp32") or ())
        if isinstance(self.options.get("keep_fp32"), str):
            keep = [self.options["keep_fp32"]]
        expect = self.options.get("expect_fp32") or ()
        expect = (expect,) if isinstance(expect, str) else tuple(expect)
        # as_is: the marker decides; else --trt-as-is applies to every test whose marker
        # does not pin a rewriting policy (precision/keep_fp32/rules), like --trt-fp16.
        if self.options.get("as_is") is not None:
            as_is = bool(self.options["as_is"])
        else:
            pinned = any(self.options.get(k) for k in ("precision", "keep_fp32", "rules"))
            as_is = bool(self.session.settings.as_is) and not pinned
        if as_is:
            # The model's own types are the plan: the session's --trt-fp16/--trt-bf16 and
            # --trt-keep-fp32 (rewrites meant for FP32 source models) do not apply. A
            # marker that asks both is refused by PrecisionPolicy (UsageError).
            default = self.options["precision"] if "precision" in self.options else "fp32"
            return PrecisionPolicy(default=default, keep_fp32=tuple(keep), rules=self._rules(),
                                   as_is=True, expect_fp32=expect)
        # Patterns from the command line / ini apply to every test whose model they match
        keep = list(self.session.keep_fp32_with_session_patterns(self.model, keep))
        kwargs: dict[str, Any] = dict(default=self.precision, keep_fp32=tuple(keep), rules=self._rules())
        if expect:
            kwargs["expect_fp32"] = expect
        return PrecisionPolicy(**kwargs)

    def _rules(self) -> tuple:
        """The marker's ``rules=``: ``"PATTERN=PREC"`` strings, ``(pattern, precision)`` pairs, or a mapping
        ``{pattern: precision}`` (as ``PrecisionPolicy(rules={...})``), in order."""
        rules = self.options.get("rules") or ()
        if isinstance(rules, dict):
            return tuple(rules.items())
        return tuple(rules)

    @functools.cached_property
    def plan(self):
        return self.session.plan(self.model, self.policy)

    def tolerances(self, atol=None, rtol=None):
        """Deprecated: ``(rtol, atol)``, in that order; use :meth:`resolve_tolerances`, whose record
        names its fields (``.atol``, ``.rtol``) in the order everything else uses."""
        warnings.warn("TrtCase.tolerances() returns (rtol, atol); use trt.resolve_tolerances(), a named record "
                      "with .atol and .rtol", DeprecationWarning, stacklevel=2)
        resolved = self.resolve_tolerances(atol, rtol)
        return resolved.rtol, resolved.atol

    def resolve_tolerances(self, atol=None, rtol=None, *, no_check: bool = False) -> Tolerances:
        """The tolerances a check would use, as ``Tolerances(atol={output: value}, rtol={output: value})``:
        those of :meth:`criterion` (see there for the precedence)."""
        tolerances = self.criterion(atol=atol, rtol=rtol, no_check=no_check).tolerances()
        return Tolerances(atol=tolerances["atol"], rtol=tolerances["rtol"])

    def criterion(self, atol=None, rtol=None, min_cosine=None, min_snr_db=None, *, no_check: bool | None = None,
                  caller: str = "trt.check()") -> Criterion:
        """The :class:`~pytest_trt.compare.criterion.Criterion` of a check: per output, its tolerances and
        metric floors, each with the level it came from.

        Precedence (README "Where each setting comes from"): the call's arguments (``caller``) > the
        closest marker > ``--trt-atol``/``--trt-rtol`` > their ini twins > per-precision defaults
        (``inf`` tolerances under ``no_check``, which comes from the argument, else the marker). The
        floors ``min_cosine``/``min_snr_db`` come from the arguments, else the precision's default.
        Each level may give one number, a dict per output name, or a dict per precision
        (``atol={"fp16": 1e-2, "bf16": 5e-2}``; each value a number or a dict per output): the
        plan's low precision (``fp32`` when there is none) picks the entry, and a level without one
        falls through to the next, as do outputs a level does not mention.
        """
        s = self.session.settings
        if no_check is None:
            no_check, no_check_source = bool(self.options.get("no_check", False)), "marker"
        else:
            no_check_source = caller
        levels = [
            Level("argument", caller, {"atol": atol, "rtol": rtol, "min_cosine": min_cosine, "min_snr_db": min_snr_db}),
            Level("marker", "marker", {"atol": self.options.get("atol"), "rtol": self.options.get("rtol")}),
        ]
        for what in ("atol", "rtol"):  # one source each: --trt-atol may be on the command line, trt_rtol in the ini
            source = s.sources.get(f"trt_{what}", f"--trt-{what}")
            level = level_of(source)
            levels.append(Level("environment" if level == "env" else level, source, {what: getattr(s, what)}))
        outputs = self.model.output_names()
        label = self.model.label

        def unknown(what, names, _compared):
            return (f"{what} names unknown output(s) {', '.join(map(str, names))}; {label} has outputs "
                    f"{', '.join(outputs)}")

        return Criterion.resolve(outputs, self.plan.low_precision or "fp32", levels, no_check=bool(no_check),
                                 no_check_source=no_check_source if no_check else "default",
                                 where=f"{self.node.nodeid}: ", unknown=unknown)

    # -- engine -------------------------------------------------------------------------
    @property
    def build_config(self):
        profile = None
        if self.options.get("profile") or self.options.get("shapes") or self.options.get("dims"):
            profile = resolve_profile(self.model, shapes=self.options.get("shapes"), dims=self.options.get("dims"),
                                      profile=self.options.get("profile"))
        return self.session.build_config(
            typing=self.options.get("typing"), tf32=self.options.get("tf32"),
            profiles=(profile,) if profile else None,
        )

    def skip_reason(self) -> str | None:
        """Why this case is skipped here: only ``requires=`` naming backends that do not run the
        session (the documented skip). None when it runs."""
        requires = self.options.get("requires")
        backend = self.session.backend
        if requires:
            wanted = (requires,) if isinstance(requires, str) else tuple(requires)
            if backend.name not in wanted:
                reasons = [get_backend(w).unavailable_reason() for w in wanted]
                why = "; ".join(r for r in reasons if r) or f"backend is {backend.name}"
                return f"needs {' or '.join(wanted)}: {why}"
        return None

    def unsupported_reason(self) -> str | None:
        """Why the session's backend cannot build this case as declared (None when it can):
        a usage error, never a skip (e.g. ``typing="weak"`` on TensorRT 11)."""
        return self.session.backend.supports(self.plan, self.build_config)

    @property
    def engine(self):
        """The engine for this case (built once per content key, then cached)."""
        if self._engine is None:
            reason = self.skip_reason()
            if reason:
                pytest.skip(reason)
            why = self.unsupported_reason()
            if why:
                raise UsageError(f"{self.session.backend.name} cannot build {self.model.label} "
                                 f"[{self.plan.policy.describe()}] as this test declares it: {why}. Change the "
                                 f"marker (typing=, as_is=), or declare requires= for the backends that can")
            engine, event = self.session.engine(self.plan, self.build_config)
            self._engine = engine
            self.records.append(event.to_record())
            if self.session.settings.saves or self.session.settings.compare_run:
                self._record_realized(engine)
            if self.session.settings.parser_check != "off":
                # --trt-parser-check: a verdict beside the backend's; a failure fails the test after
                # its body ran (plugin.pytest_runtest_makereport), so no accuracy verdict is lost
                self._parser_check(self.session.settings.parser_check)
        return self._engine

    def _record_realized(self, engine) -> None:
        """Runs are saved or compared: which precision each compute node of the engine ran in (its layer
        report), the map once per engine and process (:class:`~pytest_trt.core.records.RealizedRecord`)."""
        key = f"{engine.backend_name}:{self.plan.fingerprint()}"
        first = key not in self.session.realized_engines
        nodes = None
        if first:
            try:
                report = engine_layers(engine)
            except Exception as exc:  # the history's view; never the test's verdict
                warnings.warn(f"pytest-trt: no layer report of {self.model.label} for the saved run: {exc}",
                              stacklevel=2)
                return
            self.session.realized_engines.add(key)
            # as the ledger reads it (NodeObservation.realized), keyed by the report's canonical names
            # (issue 30, Model.names): what two runs are matched by
            nodes = {o.label: o.realized for o in report.nodes.values() if o.status != "fixed"}
            source = report.source
        else:
            source = "see the first test of this engine"
        self.records.append(RealizedRecord(model=self.model.label, model_sha256=self.model.sha256,
                                           plan=self.plan.fingerprint(), policy=self.plan.policy.describe(),
                                           backend=engine.backend_name, source=source, nodes=nodes))

    def _parser_check(self, which: str, *, explicit: bool = False):
        check = self.session.parser_check(self.plan, self.build_config, which)
        key = (check.model, check.policy, check.library)
        if key not in self._parser_recorded:
            self._parser_recorded.add(key)
            # explicit: trt.check_parser() raised (or returned) its verdict itself; only the
            # automatic (--trt-parser-check) ones are turned into test failures by the plugin
            self.records.append(ParserRecord.from_check(check, explicit=explicit))
        return check

    def check_parser(self, which: str = PARSER_CHECK_LIBRARY):
        """Parse and build this case's plan with TensorRT-RTX's real parser (CPU or GPU) and judge
        every node, planned vs parsed (see :mod:`pytest_trt.backends.tensorrt.parser_check`).

        Raises :class:`~pytest_trt.errors.ParserCheckError` (a ``PrecisionError``) when a node
        planned FP32 was parsed in lower precision, or the realization is rejected; promotions to FP32 are reported, never
        failed. UsageError when TensorRT-RTX is not installed. Returns the
        :class:`~pytest_trt.backends.tensorrt.parser_check.ParserCheck`. Independent of ``--trt-backend``: it
        adds a verdict, it does not run the model.
        """
        require(which, "trt.check_parser()")
        check = self._parser_check(which, explicit=True)
        if not check.passed:
            raise ParserCheckError(check.message(), check)
        return check

    # -- inputs -------------------------------------------------------------------------
    @property
    def seed(self) -> int:
        seed = self.options.get("seed")
        return self.session.settings.seed if seed is None else int(seed)

    def feeds(self, seed: int | None = None, **overrides) -> dict:
        """Input feeds: the marker's ``inputs`` (npz path or dict), else generated from the declared specs."""
        inputs = overrides.pop("inputs", self.options.get("inputs"))
        shapes = overrides.pop("shapes", self.options.get("shapes"))
        dims = overrides.pop("dims", self.options.get("dims"))
        if inputs is not None:
            if isinstance(inputs, (str, Path)):
                refuse_report_path(self.session.settings, self.resolve_path(inputs), "the inputs file a test loads")
                feeds = Feeds(load_feeds(self.resolve_path(inputs), origin=self.path_origin("inputs", inputs)))
                feeds.source = str(self.resolve_path(inputs))
            else:
                feeds = Feeds(inputs)
                feeds.source = "the marker's inputs="
            check_feeds(self.model, feeds, shapes=shapes, dims=dims)
            return feeds
        if seed is None and not overrides and self._default_feeds is not None:
            return self._default_feeds
        used_seed = self.seed if seed is None else seed
        recipe = dict(overrides, shapes=shapes, dims=dims)
        feeds = Feeds(make_feeds(
            self.model, shapes=shapes, dims=dims,
            val_range=overrides.pop("val_range", self.options.get("val_range")),
            seed=used_seed, **overrides,
        ))
        feeds.seed = used_seed
        feeds.remake = lambda other: self.feeds(seed=other, **recipe)
        if seed is None and not overrides:
            self._default_feeds = feeds
        return feeds

    def _feeds_or_default(self, feeds):
        """The case's default feeds, or the test's own, checked against the model first.

        Feeds a test builds itself get the same checks as loaded ones (names, dtypes,
        static dims, NaN/Inf unless ``allow_nonfinite=True``), so a typo or a NaN is an
        InputError naming the input rather than ONNX Runtime's message or a silent drop.
        """
        if feeds is None:
            return self.feeds()
        if getattr(feeds, "seed", None) is None and getattr(feeds, "source", None) is None:
            check_feeds(self.model, feeds, allow_nonfinite=bool(self.options.get("allow_nonfinite", False)))
        return feeds

    # -- running and checking -----------------------------------------------------------------
    def baseline(self, feeds: dict | None = None, *, baseline: str | None = None) -> dict:
        """Reference outputs (ONNX Runtime, cached): ``baseline=`` argument > marker > ``"fp32"``.

        ``"fp32"``: the model upcast to FP32 (Q/DQ removed), which for an FP32 source model
        is the model itself; ``"as-written"``: the model as written (fake-quant for Q/DQ).
        See :mod:`pytest_trt.reference.upcast` for which to use when.
        """
        feeds = self._feeds_or_default(feeds)
        which = normalize_baseline(baseline if baseline is not None else self.options.get("baseline", "fp32"))
        return self.session.baseline(reference_model(self.model, which), feeds)

    def run(self, feeds: dict | None = None) -> dict:
        feeds = self._feeds_or_default(feeds)
        return self.engine.run(feeds)

    def check(self, feeds: dict | None = None, *, atol=None, rtol=None, min_cosine=None, min_snr_db=None,
              locate: bool | None = None, baseline: str | None = None, no_check: bool | None = None) -> CompareResult:
        """Compare the engine with the reference; raise AccuracyError with diagnostics when outside tolerance.

        Reference: ``baseline=`` argument > marker ``baseline`` > ``"fp32"`` (see :meth:`baseline`).
        Tolerances: arguments > marker > ``--trt-atol/--trt-rtol`` > ini > per-precision defaults.
        An infinite tolerance is a UsageError unless ``no_check=True`` (argument > marker): the
        figures are recorded without a tolerance verdict; NaN/Inf mismatches, missing outputs and
        explicit ``min_cosine``/``min_snr_db`` floors still fail (the console script's ``--no-check``).
        First the policy's ``expect_fp32`` assertions: a selected node that the plan (for an
        as-is model: the model itself) computes in FP16/BF16 raises PrecisionError naming it.
        """
        self.plan.assert_expectations()
        which = normalize_baseline(baseline if baseline is not None else self.options.get("baseline", "fp32"))
        feeds = self._feeds_or_default(feeds)
        engine = self.engine
        expected = self.session.baseline(reference_model(self.model, which), feeds)
        actual = engine.run(feeds)
        criterion = self.criterion(atol, rtol, min_cosine, min_snr_db, no_check=no_check)
        result = compare_outputs(actual, expected, criterion=criterion,
                                 details=sum(int(getattr(v, "size", 0)) for v in actual.values()) <= DETAILS_MAX_ELEMENTS)
        record = AccuracyRecord(model=self.model.label, backend=engine.backend_name,
                                policy=self.plan.policy.describe(), seed=self.seed,
                                baseline=which, gpu=self.session.record_gpu(), result=result.to_json(),
                                fingerprint={"model_sha256": self.model.sha256, "plan": self.plan.fingerprint(),
                                             "feeds_sha256": feeds_digest(feeds)})
        if self.session.outputs_dir is not None:  # --trt-save-outputs: re-checkable elsewhere (pytest-trt runs recheck)
            record.outputs_file = save_check_outputs(self.session.outputs_dir, dict(feeds), actual)
        if not result.passed:
            # small, JSON-able: error histogram + max-pooled error grid per failing output (HTML report)
            record.figures = failing_output_figures(actual, expected, result)
        self.records.append(record)
        # weak typing: the planned-vs-ran rule (pytest_trt.layers.network_rule) on the engine's layers
        lowered = engine.typing_rule_failures()
        if not result.passed:
            label = reference_label(self.model, which, self.session.settings.baseline_provider)
            message = self._failure_message(result, feeds, locate, label, which, criterion)
            if lowered:
                message += "\nalso, under weak typing, node(s) planned FP32 ran lower:\n  " + "\n  ".join(lowered)
            raise AccuracyError(message, result)
        if lowered:
            raise PrecisionError(
                f"{self.model.label}: {engine.backend_name} engine [{self.plan.policy.describe()}], weak typing: "
                f"{len(lowered)} node(s) planned FP32 ran in lower precision (the precision constraints were not "
                f"honoured; outputs were within tolerance on these inputs):\n  " + "\n  ".join(lowered[:20])
                + "\nUse strong typing (--trt-typing strong), where the network's types are the contract.")
        return result

    def _inputs_line(self, feeds, which: str, criterion: Criterion) -> str:
        """Where the inputs came from and how to replay them."""
        seed = getattr(feeds, "seed", None)
        if seed is not None:
            return f"  inputs: generated with seed {seed} (replay with --trt-seed {seed})"
        source = getattr(feeds, "source", None)
        if source:
            return f"  inputs: from {source}"
        try:
            path, command = self._save_failing_feeds(feeds, which, criterion)
        except Exception as exc:  # saving is a courtesy; the failure stays the headline
            return f"  inputs: given by the test (could not save them for replay: {exc})"
        return f"  inputs: given by the test, saved to {path}\n  replay: {command}"

    def _save_failing_feeds(self, feeds, which: str, criterion: Criterion):
        """Save feeds the test built itself (e.g. a Hypothesis example) with a replay command, and the
        criterion they failed (``<stem>.criterion.json``: every tolerance and floor, per output, with
        its source), so that the replay judges exactly as the test did.

        Hypothesis replays the shrunk example last, so the files end up holding it.
        """
        s = self.session.settings
        base = s.report_json.resolve().parent if s.report_json else s.rootdir
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", self.node.nodeid).strip("_")[:150]
        path = save_feeds(base / ARTIFACTS_DIRNAME / f"{stem}.npz", feeds)
        criterion_path = criterion.save(path.with_suffix(CRITERION_SUFFIX))
        command = self.replay_command(shlex.quote(str(path)), which, shlex.quote(str(criterion_path)))
        write_replay_script(path.with_suffix(".sh"), command,
                            [f"replays the failing inputs of {comment_text(self.node.nodeid)}",
                             f"judged by the test's criterion: {criterion.describe()}"])
        return path, command

    def replay_command(self, feeds_path: str, which: str = "fp32", criterion_path: str | None = None) -> str:
        """A ``pytest-trt compare`` command that replays this case on saved feeds (quoted paths).

        ``criterion_path``: a criterion file (:meth:`~pytest_trt.compare.criterion.Criterion.save`)
        that the replay is judged by (``--criterion``); without it, the tolerances the command line
        can carry for every output alike."""
        policy = self.plan.policy
        parts = ["pytest-trt", "compare", shlex.quote(str(self.model.path or self.model.label))]
        if policy.as_is:
            parts.append("--as-is")
        elif policy.default != "fp32":
            parts.append(f"--{policy.default}")
        for pattern in policy.keep_fp32:
            parts += ["--keep-fp32", shlex.quote(pattern)]
        for rule in policy.rules:
            parts += ["--precision", shlex.quote(rule.text())]
        if which != "fp32":
            parts += ["--baseline", which]
        if criterion_path is not None:
            parts += ["--criterion", criterion_path]
        else:
            criterion = self.criterion()
            for flag, values in (("--rtol", criterion.tolerances()["rtol"]), ("--atol", criterion.tolerances()["atol"])):
                distinct = set(values.values())
                if len(distinct) == 1:
                    parts += [flag, repr(float(distinct.pop()))]
            if criterion.no_check:
                parts.append("--no-check")  # the console script takes an infinite tolerance only with it
        parts += ["--backend", self.session.backend.name, "--load-inputs", feeds_path]
        return " ".join(parts)

    def _failure_message(self, result, feeds, locate, reference: str, which: str, criterion: Criterion) -> str:
        engine = self.engine
        lines = [
            f"{self.model.label}: {engine.backend_name} engine [{self.plan.policy.describe()}] differs from the "
            f"{reference}",
        ]
        disclaimer = self.session.backend.disclaimer
        if disclaimer:
            lines.append(f"  (backend {engine.backend_name}: {disclaimer})")
        lines.append(self._inputs_line(feeds, which, criterion))
        lines.append(result.message())
        if locate if locate is not None else self.options.get("locate_on_failure", self.session.settings.locate_on_failure):
            try:
                before = engine.layerwise_engine
                found = locate_divergence(engine, feeds)
                self._record_layerwise_engine(engine, before, "locate")
                self._record_layerwise(found)
                lines.append(found.message())
            except Exception as exc:  # the accuracy failure stays the headline
                lines.append(f"(layerwise localisation failed: {exc})")
        else:
            lines.append("hint: run with --trt-locate-on-failure, or `pytest-trt locate`, to name the first divergent node")
        return "\n".join(lines)

    def layers(self):
        """The engine's LayerReport (what ran, per node)."""
        return engine_layers(self.engine)

    def ledger(self, feeds: dict | None = None, *, timing: str | None = None, warmup: int = 10,
               iterations: int = 50, auto: bool | None = None):
        """The engine's ledger (:func:`pytest_trt.ledger.ledger_of`): per ONNX node the declared precision
        and its rule, the realized precision and its evidence, the engine layer or node and its time,
        measured on ``feeds`` (default: the case's). ``timing``: ``auto`` (the default, or
        ``--trt-ledger-timing``), ``engine``, ``onnxruntime-cuda``, ``off``. Recorded for the reports."""
        settings = self.session.settings
        if timing is None:
            timing = settings.ledger_timing
            source = settings.sources.get("trt_ledger_timing", "--trt-ledger-timing")
        else:
            source = "timing"
        engine = self.engine
        ledger = ledger_of(engine, self._feeds_or_default(feeds), timing=timing, warmup=warmup,
                           iterations=iterations, source="timing" if source == "default" else source)
        self.records.append(LedgerRecord(model=self.model.label, policy=self.plan.policy.describe(),
                                         backend=engine.backend_name, ledger=ledger.to_json(), auto=auto))
        return ledger

    def auto_ledger(self) -> None:
        """``--trt-ledger``: the ledger of an engine the test built, unless the test made one itself."""
        if self._engine is None or any(isinstance(r, LedgerRecord) for r in self.records):
            return
        self.ledger(auto=True)

    def assert_precision(self, pattern: str, precision: str, **kwargs):
        """Assert every node matching ``pattern`` ran in ``precision`` (see pytest_trt.assert_precision)."""
        def as_json(x):
            return x.to_json() if hasattr(x, "to_json") else x

        try:
            report = assert_precision(self.engine, pattern, precision, **kwargs)
        except PrecisionError as exc:  # a failed check is the one the reports must show
            self.records.append(PrecisionRecord(pattern=pattern, precision=precision, passed=False,
                                                report=as_json(exc.findings), network=self._network_scopes()))
            raise
        self.records.append(PrecisionRecord(pattern=pattern, precision=precision, passed=True,
                                            report=as_json(report), network=self._network_scopes()))
        return report

    def _network_scopes(self) -> list[dict]:
        """The whole planned network, compactly, for the HTML precision view: per scope (canonical node
        name up to its last ``/``), in graph order, ``{"scope", "module", "module_class", "nodes",
        "planned": {precision: count}}``."""
        try:
            return network_scopes(self.plan.nodes.values(), self.plan.model.names)
        except Exception:  # a courtesy for the report; the check's own verdict stands
            return []

    def locate(self, feeds: dict | None = None, **kwargs):
        """Layerwise comparison: the first node whose error jumps (see pytest_trt.locate_divergence)."""
        engine = self.engine
        before = engine.layerwise_engine
        found = locate_divergence(engine, self.feeds() if feeds is None else feeds, **kwargs)
        self._record_layerwise_engine(engine, before, "locate")
        self._record_layerwise(found)
        return found

    def _record_engine(self, plan, engine, via: str) -> None:
        """An engine record for an engine built or loaded outside :attr:`engine` (``via``: ``suggest``,
        ``locate``), so the run's engine counts include it (counted per cache key like the others)."""
        info = engine.build_info
        plan = plan if plan is not None else self.plan
        self.records.append(EngineRecord(model=plan.model.label, policy=plan.policy.describe(),
                                         backend=self.session.backend.name, cache_hit=bool(info.cache_hit),
                                         build_seconds=round(float(info.build_seconds or 0.0), 4), key=info.key,
                                         gpu=self.session.record_gpu(), via=via,
                                         build_is_a_check=True if self.session.backend.build_is_a_check else None))

    def _record_layerwise_engine(self, engine, before, via: str) -> None:
        """A layerwise comparison that built (or loaded) a separate engine (TensorRT < 10.12:
        :attr:`~pytest_trt.backends.base.Engine.layerwise_engine`) records it like any engine."""
        built = engine.layerwise_engine
        if built is not None and built is not before:
            self._record_engine(engine.plan, built, via)

    def _record_layerwise(self, found) -> None:
        self.records.append(layerwise_record(found, seed=self.seed))

    def suggest(self, feeds: dict | None = None, **kwargs):
        """FP32-fallback search: the patterns to keep in FP32 so the model passes (see pytest_trt.suggest_fp32_islands).

        Every candidate is judged by the test's criterion (:meth:`criterion`: ``atol``, ``rtol``,
        ``min_cosine``, ``min_snr_db`` arguments > marker > options > defaults; never ``no_check``: a
        search needs a verdict)."""
        criterion = self.criterion(*(kwargs.pop(k, None) for k in ("atol", "rtol", "min_cosine", "min_snr_db")),
                                   no_check=False, caller="trt.suggest()")
        kwargs.setdefault("baseline_provider", self.session.settings.baseline_provider)
        if feeds is None:
            feeds = self.feeds()
        kwargs.setdefault("on_engine", lambda plan, engine: self._record_engine(plan, engine, "suggest"))
        return suggest_fp32_islands(self.model, self.plan.policy, feeds, backend=self.session.backend,
                                    cache=self.session.cache, criterion=criterion, config=self.build_config, **kwargs)


__all__ = ["ARTIFACTS_DIRNAME", "DETAILS_MAX_ELEMENTS", "Feeds", "MARKER_KEYS", "PRECISION_KEYS", "Tolerances",
           "TrtCase", "marker_kwargs"]
