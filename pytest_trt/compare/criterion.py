"""The pass/fail criterion of a comparison: per output, its tolerances and metric floors, each with
where it came from.

One object (:class:`Criterion`) is resolved once per check and used unchanged by everything that
judges or shows it: ``trt.check()`` and ``trt.suggest()`` (:mod:`pytest_trt.glue.case`), the FP32
island search (:mod:`pytest_trt.suggest`), the console script's ``compare`` / ``locate`` /
``suggest``, the replay command written beside a failing test's saved inputs, and every report
(the failure message, the JSON report's ``criterion``, the HTML).

Resolution (:meth:`Criterion.resolve`): for every output and every field (``rtol``, ``atol``,
``min_cosine``, ``min_snr_db``) the first :class:`Level` that gives a value wins, in the order
given; the README's precedence ("Where each setting comes from") is that order: the ``trt.check()``
argument, the closest marker, the command line, the environment, the ini, the per-precision
default. A level gives a number (every output), a dict per output name (the outputs it does not
name, or names with None, fall through), or a dict per precision (``{"fp16": 1e-2, "bf16": 5e-2}``,
each value a number or a dict per output; the criterion's precision picks the entry, a level
without it falls through). The default level ends every resolution: :data:`DEFAULT_TOLERANCES`
(``inf`` under ``no_check``) and :data:`DEFAULT_MIN_COSINE` of the precision, no SNR floor.

Every value records its ``level`` (one of :data:`LEVELS`) and its ``source`` as the user wrote it
(``trt.check()``, ``marker``, ``--trt-atol``, ``ini trt_rtol``, ``fp16 default``...). A default
cosine floor applies only where the reference is not within ``atol`` of zero (see
:mod:`pytest_trt.compare`); an explicit one always applies: that distinction is the floor's level.

The JSON form (:meth:`Criterion.to_json`, :meth:`Criterion.from_json`) keeps every value and
its source: replay scripts and saved runs carry it, and a criterion read back judges exactly as
the one written.
"""

from __future__ import annotations

import difflib
import json
import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..core.dtypes import FP32, normalize_precision
from ..core.formatting import fmt_tol
from ..core.jsonsafe import json_number
from ..errors import UsageError
from .tolerances import DEFAULT_MIN_COSINE, DEFAULT_TOLERANCES

__all__ = ["FIELDS", "LEVELS", "PRECISION_KEYS", "Criterion", "Level", "OutputCriterion", "Setting",
           "refuse_infinite"]

#: the settings of a criterion, per output: the element rule's tolerances, then the metric floors
FIELDS = ("rtol", "atol", "min_cosine", "min_snr_db")
#: the levels a value can come from, highest first (README "Where each setting comes from")
LEVELS = ("argument", "marker", "command line", "environment", "ini", "default")
#: keys of a per-precision dict (``atol={"fp16": 1e-2, "bf16": 5e-2}``)
PRECISION_KEYS = frozenset({"fp32", "fp16", "bf16"})
#: the version of :meth:`Criterion.to_json`'s layout (a file written by a later version is refused)
JSON_VERSION = 1
_TOLERANCES = ("rtol", "atol")


@dataclass(frozen=True)
class Setting:
    """One value of a criterion and where it came from: ``level`` (one of :data:`LEVELS`) and
    ``source``, as the user wrote it (``marker``, ``--trt-atol``, ``fp16 default``)."""

    value: float | None
    level: str
    source: str

    def to_json(self) -> dict[str, Any]:
        return {"value": json_number(self.value), "level": self.level, "source": self.source}

    @classmethod
    def from_json(cls, data: Any, what: str) -> Setting:
        if not isinstance(data, Mapping) or not {"value", "level", "source"} <= set(data):
            raise UsageError(f"criterion: {what} must be {{\"value\", \"level\", \"source\"}}, got {data!r}")
        value = data["value"]
        if isinstance(value, str):
            value = float(value) if value in ("inf", "-inf") else value
        if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Real)):
            raise UsageError(f"criterion: {what} value must be a number or null, got {value!r}")
        if data["level"] not in LEVELS:
            raise UsageError(f"criterion: {what} level must be one of {', '.join(LEVELS)}, got {data['level']!r}")
        return cls(None if value is None else float(value), str(data["level"]), str(data["source"]))


@dataclass(frozen=True)
class OutputCriterion:
    """The criterion of one output: its four :class:`Setting`\\ s."""

    rtol: Setting
    atol: Setting
    min_cosine: Setting
    min_snr_db: Setting

    @property
    def default_cosine(self) -> bool:
        """The cosine floor is the precision's default (applied only where the reference is not
        within ``atol`` of zero), not one that was asked for."""
        return self.min_cosine.level == "default" and self.min_cosine.value is not None

    def settings(self) -> dict[str, Setting]:
        return {f: getattr(self, f) for f in FIELDS}

    def to_json(self) -> dict[str, Any]:
        return {f: s.to_json() for f, s in self.settings().items()}


@dataclass(frozen=True)
class Level:
    """One level of the precedence: its name (one of :data:`LEVELS`), its source as the user wrote
    it, and the values it gives (``{field: number | {output: number} | {precision: ...} | None}``).
    ``source`` may be a dict per field where the fields of one level come from different places
    (``--trt-atol`` and ``ini trt_rtol``)."""

    level: str
    source: str | Mapping[str, str]
    values: Mapping[str, Any] = field(default_factory=dict)

    def source_of(self, what: str) -> str:
        return self.source.get(what, self.level) if isinstance(self.source, Mapping) else self.source


def _compared_unknown(what: str, unknown: list, names: list[str]) -> str:
    """compare_outputs' wording: the outputs it compares."""
    listing = ", ".join(repr(n) for n in unknown)
    return (f"{what} names {listing}, which {'is' if len(unknown) == 1 else 'are'} not compared; outputs "
            f"compared: {', '.join(repr(n) for n in names) or '(none)'}")


def _did_you_mean(unknown: list, names: list[str]) -> str:
    """``; did you mean 'fp16' (a precision key) for 'fp61'?``: the closest precision key or output
    name of each unknown key (difflib), so that a typo'd precision key is not read as an output."""
    hints = []
    for key in unknown:
        word = str(key)
        precision = difflib.get_close_matches(word.lower(), sorted(PRECISION_KEYS), n=1, cutoff=0.6)
        output = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
        if precision:
            hints.append(f"{precision[0]!r} (a precision key) for {word!r}")
        elif output:
            hints.append(f"{output[0]!r} (an output) for {word!r}")
    return f"; did you mean {', '.join(hints)}?" if hints else ""


@dataclass(frozen=True)
class Criterion:
    """Per output, the tolerances and metric floors of a comparison and where each came from.

    Attributes:
        precision: the precision whose defaults apply (``fp32``, ``fp16``, ``bf16``).
        outputs: ``{output name: OutputCriterion}``, in the order resolved.
        no_check: compare without a tolerance verdict (the tolerances' defaults are ``inf``).
        no_check_source: where ``no_check`` came from (``marker``, ``--no-check``, ``default``).
        equal_nan: NaN on both sides passes.

    >>> c = Criterion.resolve(["logits"], "fp16", [Level("argument", "trt.check()", {"atol": 1e-3})])
    >>> c.outputs["logits"].atol
    Setting(value=0.001, level='argument', source='trt.check()')
    >>> c.describe()
    'rtol=0.02, min_cosine=0.9999 (fp16 default); atol=0.001 (trt.check())'

    Judge with it: ``compare_outputs(actual, expected, criterion=c)``.
    """

    precision: str
    outputs: Mapping[str, OutputCriterion]
    no_check: bool = False
    no_check_source: str = "default"
    equal_nan: bool = False

    # -- resolution --------------------------------------------------------------------------
    @classmethod
    def resolve(cls, names: Iterable[str], precision: str = FP32, levels: Sequence[Level] = (), *,
                no_check: bool = False, no_check_source: str = "default", equal_nan: bool = False,
                where: str = "", unknown: Callable[[str, list, list[str]], str] | None = None) -> Criterion:
        """Resolve every field of every output in ``names`` through ``levels`` (highest first), then
        the defaults of ``precision``.

        Raises :class:`~pytest_trt.errors.UsageError`, prefixed with ``where``, for a level naming an
        output not in ``names`` (worded by ``unknown(what, unknown_names, names)``; every level is
        checked, also one a higher level overrides), a dict mixing precisions and output names, a
        value that is not a number (a tolerance: not a non-negative one), and, without
        ``no_check``, an infinite tolerance.
        """
        names = list(names)
        precision = normalize_precision(precision)
        word = unknown or _compared_unknown
        default = _default_level(precision, no_check, no_check_source)
        outputs: dict[str, dict[str, Setting]] = {n: {} for n in names}
        for what in FIELDS:
            given = [(lv, _per_precision(what, lv.values.get(what), precision, names, where)) for lv in levels]
            for _, value in given:
                if isinstance(value, Mapping):
                    bad = [k for k in value if k not in names]
                    if bad:
                        raise UsageError(where + word(what, bad, names) + _did_you_mean(bad, names))
            for name in names:
                outputs[name][what] = _first(what, name, given, default, where)
        resolved = {n: OutputCriterion(**settings) for n, settings in outputs.items()}
        criterion = cls(precision, resolved, bool(no_check), no_check_source, bool(equal_nan))
        if not no_check:
            refuse_infinite(criterion.tolerances(), where)
        return criterion

    def as_levels(self, note: str = "") -> list[Level]:
        """The criterion as levels that give exactly its values, with their level and source
        (``note`` appended to each source, e.g. where it was read from): put below other levels,
        e.g. a replay's ``--atol`` over a saved criterion, each value a level gives replaces the
        saved one."""
        groups: dict[tuple[str, str], dict[str, dict[str, float | None]]] = {}
        for name, oc in self.outputs.items():
            for what, s in oc.settings().items():
                groups.setdefault((s.level, s.source + note), {}).setdefault(what, {})[name] = s.value
        # a value of None (no floor) must win over the defaults too: give it as an explicit "off"
        return [Level(level, source, {what: {n: _OFF if v is None else v for n, v in per.items()}
                                      for what, per in values.items()})
                for (level, source), values in groups.items()]

    # -- use ---------------------------------------------------------------------------------
    def output(self, name: str) -> OutputCriterion:
        """The criterion of ``name``; an output it does not know (extra in ``actual``) gets the
        precision's defaults."""
        known = self.outputs.get(name)
        if known is not None:
            return known
        return Criterion.resolve([name], self.precision, no_check=self.no_check,
                                 no_check_source=self.no_check_source).outputs[name]

    def tolerances(self) -> dict[str, dict[str, float]]:
        """``{"rtol": {output: value}, "atol": {output: value}}``."""
        return {what: {n: float(getattr(oc, what).value) for n, oc in self.outputs.items()} for what in _TOLERANCES}

    # -- words -------------------------------------------------------------------------------
    def describe(self, names: Iterable[str] | None = None) -> str:
        """The criterion in one line, each value with its source: ``rtol=0.02, atol=0.01 (fp16 default);
        min_cosine=0.9999 (fp16 default)``; values that differ per output are listed per output.
        ``names`` restricts it to those outputs (e.g. the float ones)."""
        chosen = [n for n in (self.outputs if names is None else names) if n in self.outputs]
        if not chosen:
            return "exact comparison"
        groups: dict[str, list[str]] = {}
        per_output: list[str] = []
        for what in FIELDS:
            settings = [getattr(self.outputs[n], what) for n in chosen]
            if len({(s.value, s.source) for s in settings}) == 1:
                s = settings[0]
                if s.value is not None:
                    groups.setdefault(s.source, []).append(f"{what}={fmt_tol(s.value)}")
                continue
            per_output.append(f"{what} per output: " + ", ".join(
                f"{n!r} {'none' if s.value is None else fmt_tol(s.value)} ({s.source})"
                for n, s in zip(chosen, settings, strict=True)))
        parts = [f"{', '.join(items)} ({source})" for source, items in groups.items()] + per_output
        return "; ".join(parts)

    def changes(self, other: Criterion, name: str) -> list[str]:
        """How ``other`` judges output ``name`` differently from this criterion, each change with the
        new value's source: ``["atol 0.01 -> 0.05 (--trt-atol)"]`` (a saved run's criterion against
        today's). A value that kept its number but came from another level is no change, except a
        cosine floor that became or stopped being the default (the default one applies only where
        the reference is not within ``atol`` of zero)."""
        found = [f"{key} {getattr(self, key)} -> {getattr(other, key)}"
                 for key in ("precision", "no_check", "equal_nan") if getattr(self, key) != getattr(other, key)]
        old, new = self.output(name), other.output(name)
        for what in FIELDS:
            a, b = getattr(old, what), getattr(new, what)
            default_changed = what == "min_cosine" and old.default_cosine != new.default_cosine
            if a.value != b.value or default_changed:
                words = ["none" if s.value is None else fmt_tol(s.value) for s in (a, b)]
                found.append(f"{what} {words[0]} -> {words[1]} ({b.source})" if a.value != b.value
                             else f"{what} {words[1]} from {a.source} -> {b.source}")
        return found

    # -- JSON --------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """Plain JSON (non-finite numbers as ``"inf"``): every value with its level and source."""
        return {"version": JSON_VERSION, "precision": self.precision, "no_check": self.no_check,
                "no_check_source": self.no_check_source, "equal_nan": self.equal_nan,
                "outputs": {n: oc.to_json() for n, oc in self.outputs.items()}}

    @classmethod
    def from_json(cls, data: Any) -> Criterion:
        """The criterion of :meth:`to_json` (UsageError naming what is wrong)."""
        if not isinstance(data, Mapping) or not isinstance(data.get("outputs"), Mapping):
            raise UsageError("criterion: expected a JSON object with \"outputs\" (Criterion.to_json())")
        if data.get("version") != JSON_VERSION:
            raise UsageError(f"criterion: version {data.get('version')!r}, this pytest-trt reads {JSON_VERSION}")
        outputs = {}
        for name, per in data["outputs"].items():
            if not isinstance(per, Mapping) or set(per) != set(FIELDS):
                raise UsageError(f"criterion: output {name!r} must give exactly {', '.join(FIELDS)}")
            outputs[str(name)] = OutputCriterion(**{f: Setting.from_json(per[f], f"{name!r} {f}") for f in FIELDS})
        for key in ("no_check", "equal_nan"):
            if not isinstance(data.get(key, False), bool):
                raise UsageError(f"criterion: {key} must be true or false, got {data.get(key)!r}")
        criterion = cls(normalize_precision(str(data.get("precision", FP32))), outputs, bool(data.get("no_check")),
                        str(data.get("no_check_source", "default")), bool(data.get("equal_nan")))
        for name, oc in outputs.items():
            for what in FIELDS:
                _check_value(what, name, getattr(oc, what).value, "criterion: ")
        if not criterion.no_check:
            refuse_infinite(criterion.tolerances(), "criterion: ")
        return criterion

    def save(self, path: str | Path) -> Path:
        """Write :meth:`to_json` to ``path`` (the replay scripts' ``--criterion`` file)."""
        path = Path(path)
        path.write_text(json.dumps(self.to_json(), indent=1, allow_nan=False) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path, flag: str = "--criterion") -> Criterion:
        """Read a file written by :meth:`save` (UsageError naming ``flag`` and the file)."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UsageError(f"{flag} {path}: cannot read a criterion: {exc}") from None
        try:
            return cls.from_json(data)
        except UsageError as exc:
            raise UsageError(f"{flag} {path}: {exc}") from None

    def with_outputs(self, names: Iterable[str], flag: str = "--criterion") -> Criterion:
        """This criterion, checked to cover exactly ``names`` (a model's outputs), in their order."""
        names = list(names)
        if set(names) != set(self.outputs):
            raise UsageError(f"{flag}: the criterion is for outputs {', '.join(map(repr, self.outputs))}; the "
                             f"model has {', '.join(map(repr, names))}")
        return replace(self, outputs={n: self.outputs[n] for n in names})


#: a floor given as "off" by a level (None there means "not given": fall through)
_OFF = object()


def _default_level(precision: str, no_check: bool, no_check_source: str) -> dict[str, Setting]:
    if no_check:
        where = "no_check" if no_check_source == "default" else f"no_check ({no_check_source})"
        rtol = atol = Setting(math.inf, "default", where)
    else:
        d_rtol, d_atol = DEFAULT_TOLERANCES[precision]
        rtol, atol = Setting(d_rtol, "default", f"{precision} default"), Setting(d_atol, "default", f"{precision} default")
    cosine = DEFAULT_MIN_COSINE[precision]
    return {"rtol": rtol, "atol": atol,
            "min_cosine": Setting(cosine, "default", f"{precision} default" if cosine is not None else "none"),
            "min_snr_db": Setting(None, "default", "none")}


def _per_precision(what: str, value: Any, precision: str, names: list[str], where: str) -> Any:
    """A per-precision dict replaced by its entry for ``precision`` (None when it has none)."""
    if not isinstance(value, Mapping) or not value:
        return value
    keys = {str(k) for k in value}
    precise = keys & PRECISION_KEYS
    if not precise:
        return value
    if precise != keys or precise & set(names):
        raise UsageError(f"{where}{what}= mixes precisions and output names "
                         f"({', '.join(sorted(map(str, value)))}); give per-precision values "
                         f"{{'fp16': 1e-2, 'bf16': 5e-2}}, each a number or a dict per output")
    return value.get(precision)


def _first(what: str, name: str, given: list[tuple[Level, Any]], default: dict[str, Setting],
           where: str) -> Setting:
    """The first level's value for output ``name`` (None in a dict, or no entry, falls through)."""
    for level, value in given:
        if isinstance(value, Mapping):
            value = value.get(name)
        if value is None:
            continue
        if value is _OFF:
            return Setting(None, level.level, level.source_of(what))
        return Setting(_check_value(what, name, value, where), level.level, level.source_of(what))
    return default[what]


def _check_value(what: str, name: str, value: Any, where: str) -> float | None:
    """A tolerance is a non-negative number; a metric floor a number (None: no floor)."""
    if value is None:
        if what in _TOLERANCES:
            raise UsageError(f"{where}{what} for output {name!r} is missing (None): give a number")
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise UsageError(f"{where}{what} for output {name!r} must be a number, got {value!r}")
    value = float(value)
    tolerance = what in _TOLERANCES
    if math.isnan(value) or (tolerance and value < 0):
        raise UsageError(f"{where}{what} for output {name!r} must be a {'non-negative ' if tolerance else ''}"
                         f"number, not {value!r}")
    return value


def refuse_infinite(levels: Mapping[str, Mapping[str, float]], where: str = "") -> None:
    """UsageError for an infinite tolerance (``{"atol": {output: value}, ...}``), in the API's spelling."""
    for what, values in levels.items():
        infinite = [n for n, v in values.items() if isinstance(v, (int, float)) and math.isinf(v)]
        if infinite:
            outputs = ", ".join(repr(n) for n in infinite)
            raise UsageError(
                f"{where}{what}=inf (output {outputs}) switches the accuracy check off: every finite element "
                f"passes and the precision's default cosine floor no longer applies, so a real overflow "
                f"passes. Pass no_check=True to compare without a tolerance verdict (NaN/Inf mismatches, "
                f"missing outputs and explicit min_cosine/min_snr_db floors still fail), or give a finite "
                f"tolerance")
