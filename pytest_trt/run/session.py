"""Run-wide state of a pytest-trt session: settings, backend, cache, engines, results.

One :class:`TrtSession` per pytest process (controller and each xdist worker), kept in
``config.stash``. The console script builds one too, so the CLI and the plugin share
every code path.
"""

from __future__ import annotations

import collections
import contextlib
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..backends.base import Backend, BuildConfig, Engine, select_backend
from ..backends.tensorrt.parser_check import check_parser, require
from ..core.choices import PARSER_CHECK_LIBRARY
from ..core.records import EngineRecord
from ..errors import UsageError
from ..plan.policy import PrecisionPolicy
from ..plan.rules import Rule
from .session_patterns import SessionPatterns
from .settings import Settings

if TYPE_CHECKING:  # pragma: no cover
    from ..cache import ArtifactCache
    from ..model.load import Model
    from ..plan import PrecisionPlan
    from ..plan.policy import PrecisionPolicy


@dataclass
class BuildEvent:
    """One engine a test used: for the terminal summary and the reports."""

    model: str
    policy: str
    backend: str
    cache_hit: bool
    build_seconds: float
    key: str
    #: the GPU the engine runs on (:meth:`TrtSession.record_gpu`), None on CPU/emulate
    gpu: dict | None = None
    #: the backend's build is a check (:attr:`Backend.build_is_a_check`): a test that only built counts as checked
    build_is_a_check: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model, "policy": self.policy, "backend": self.backend,
            "cache_hit": self.cache_hit, "build_seconds": round(self.build_seconds, 4), "key": self.key,
            "gpu": self.gpu,
        }

    def to_record(self, via: str | None = None) -> EngineRecord:
        """The test's engine record (``via``: ``suggest``/``locate`` for engines built on their behalf)."""
        return EngineRecord(**self.to_json(), via=via, build_is_a_check=True if self.build_is_a_check else None)


@dataclass
class TrtSession:
    """Settings plus the chosen backend, the artifact cache and in-process memos."""

    settings: Settings
    backend: Backend
    backend_reason: str
    _cache: Any = None
    _remote: Any = None
    #: how the options are spelled where this session was configured (``--trt-`` in pytest, ``--`` in the CLI)
    flag_prefix: str = "--trt-"
    #: CacheStats.to_json() of each finished xdist worker (merged on the controller)
    worker_cache_stats: list = field(default_factory=list)
    #: --trt-gpus: xdist worker id -> its CUDA_VISIBLE_DEVICES entry (set on the controller)
    gpu_assignment: dict[str, str] | None = None
    #: this run's memo tables (:mod:`pytest_trt.core.runstate`), installed as current by the plugin
    state: Any = None
    #: the run state that was current before this session's (restored at pytest_unconfigure)
    previous_state: Any = None
    #: time.time() of the test run's start (the controller's, under xdist): with
    #: --trt-rebuild, entries built after it are fresh and not rebuilt again
    started_at: float = field(default_factory=time.time)
    _models: dict = field(default_factory=dict)
    _plans: dict = field(default_factory=dict)
    #: engines of this process, least recently used first (released beyond engine_memory_limit)
    _engines: collections.OrderedDict = field(default_factory=collections.OrderedDict)
    #: (engine label, bytes) of every release, for reports and tests
    released_engines: list = field(default_factory=list)
    _parser_checks: dict = field(default_factory=dict)
    _lock: threading.RLock = field(default_factory=threading.RLock)
    #: callback(str) to show progress lines (set by the plugin to the terminal reporter)
    progress: Any = None
    #: with ``progress``: announce every engine (``-v``), not only those that took over a second
    verbose: bool = False
    #: seconds between "still building" lines
    heartbeat_seconds: float = 30.0

    #: trt tests that ran here (or on the workers) and those skipped, ``(nodeid, reason)``:
    #: the terminal summary's first line
    trt_tests: set = field(default_factory=set)
    skipped: list = field(default_factory=list)
    #: which session-wide patterns (--trt-keep-fp32) matched in the models of the trt tests that ran
    patterns: SessionPatterns = field(default_factory=SessionPatterns)
    #: on the controller, after the run: why the session failed although its tests did not
    #: (a session pattern that matched nothing; a report that could not be written)
    session_failures: list = field(default_factory=list)
    #: backends registered for this run by plugins (the ``pytest_trt_backends`` hook)
    plugin_backends: tuple = ()
    #: ``(path, what) -> None``, raising UsageError for a file the session must not load because the
    #: report written at its end would replace it (set by the plugin; None in the console script)
    guard_input: Any = None
    #: ``(entry, records) -> None``: extends a test's JSON report entry (the ``pytest_trt_report_test``
    #: hook; None outside pytest)
    extend_test_entry: Any = None
    _gpu_record: Any = None
    _gpu_known: bool = False
    _fingerprint: Any = None
    #: --trt-save-outputs: where checks write their feeds and outputs (the controller's staging folder,
    #: shared with its xdist workers); None when outputs are not saved
    outputs_dir: Path | None = None
    #: engines (``<backend>:<plan fingerprint>``) whose realized-precision map this process recorded
    realized_engines: set = field(default_factory=set)
    #: the saved-runs state of the controller (pytest_trt.glue.runs.History), None when runs are neither
    #: saved nor compared
    history: Any = None

    @classmethod
    def create(cls, settings: Settings, *, started_at: float | None = None, flag_prefix: str = "--trt-",
               selected: tuple | None = None) -> TrtSession:
        """Select the backend and check that everything asked for can be honoured here.

        Raises :class:`~pytest_trt.errors.PytestTrtError` (a usage error) naming the fix: an
        explicit backend that cannot run, ONNX Runtime missing or broken, a baseline provider
        that does not really run, a typing the TensorRT version lacks, a ledger timing source that
        cannot run here.
        """
        from ..reference.baseline import check_runtime  # load path: imported once in use

        if selected is None:
            selected = select_backend(settings.backend, settings.sources.get("trt_backend", "--trt-backend"))
        backend, reason = selected
        provider_source = settings.sources.get("trt_baseline_provider", "default")
        check_runtime(settings.baseline_provider, gpu=backend.uses_gpu or None,
                      source="--trt-baseline-provider" if provider_source == "default" else provider_source)
        why = backend.typing_reason(settings.typing)
        if why:  # refused at start (e.g. weak typing on emulate or on TensorRT 11), not in every test
            raise UsageError(f"{settings.sources.get('trt_typing', '--trt-typing')} {settings.typing} cannot be "
                             f"honoured by {backend.name} ({reason}): {why}")
        session = cls(settings=settings, backend=backend, backend_reason=reason)
        if settings.ledger_timing not in ("auto", "off"):
            from ..ledger.timing import check_available  # load path: imported once in use

            check_available(settings.ledger_timing, backend,
                            settings.sources.get("trt_ledger_timing", "--trt-ledger-timing"))
        if settings.parser_check != "off":
            require(settings.parser_check, settings.sources.get("trt_parser_check", "--trt-parser-check"))
        session.flag_prefix = flag_prefix
        if started_at is not None:
            session.started_at = started_at
        if settings.remote_cache:
            session.remote  # noqa: B018  (keys and mode are checked at session start: usage errors early)
        if settings.sources.get("trt_cache_dir", "default") != "default" or settings.cache_dir.exists():
            # An explicitly chosen (or existing) cache directory is checked now, so an
            # unwritable one is a clear error at session start rather than mid-run.
            session.cache  # noqa: B018
        return session

    @property
    def cache(self) -> ArtifactCache:
        """The artifact cache, created on first use (a run without engine tests creates no directory)."""
        from ..cache import ArtifactCache  # load path: imported once in use

        with self._lock:
            if self._cache is None:
                self._cache = ArtifactCache(self.settings.cache_dir, max_bytes=self.settings.cache_max_bytes,
                                            read_only=self.settings.cache_read_only, remote=self.remote,
                                            source=self.settings.sources.get("trt_cache_dir"))
                if self.settings.rebuild:
                    self._cache.fresh_after = self.started_at
                # model identities read through this cache's digest memo (pytest_trt.model.weights.identity)
                from ..model.weights import use_memo  # load path: imported once in use

                use_memo(self._cache.memo_dir, read_only=self._cache.read_only)
            return self._cache

    @property
    def remote(self):
        """The :class:`~pytest_trt.cache.remote.RemoteTier` of ``--trt-remote-cache``, or None.

        Created without any network access; the signing key comes from ``$PYTEST_TRT_REMOTE_CACHE_KEY``.
        """
        if not self.settings.remote_cache:
            return None
        with self._lock:
            if self._remote is None:
                from ..cache.remote import ENV_AUTH, ENV_KEY, RemoteTier  # load path: imported once in use

                key = os.environ.get(ENV_KEY) or None
                source = self.settings.sources.get("trt_remote_cache", "default")
                self._remote = RemoteTier(self.settings.remote_cache, mode=self.settings.remote_cache_mode,
                                          private_key=key, trusted=self.settings.remote_cache_trust,
                                          auth=os.environ.get(ENV_AUTH) or None,
                                          timeout=self.settings.remote_cache_timeout, flag_prefix=self.flag_prefix,
                                          url_source=None if source == "default" else source)
            return self._remote

    @property
    def opened_cache(self) -> ArtifactCache | None:
        """The artifact cache if this process opened it, None otherwise (never opens it: :attr:`cache` does)."""
        return self._cache

    @property
    def opened_remote(self):
        """The :class:`~pytest_trt.cache.remote.RemoteTier` if it was created, None otherwise (never creates
        it: :attr:`remote` does)."""
        return self._remote

    @property
    def fingerprint(self) -> dict[str, Any]:
        """The environment fingerprint of this session
        (:func:`pytest_trt.history.fingerprint.session_fingerprint`), computed once (it asks git)."""
        if self._fingerprint is None:
            from ..history.fingerprint import session_fingerprint  # load path: imported once in use
            from ..reference.baseline import (
                onnxruntime_version,  # (imported by every session that ran a baseline)
            )

            ort = onnxruntime_version()
            self._fingerprint = session_fingerprint(self, None if ort == "missing" else ort)
        return self._fingerprint

    def cache_stats(self):
        """This process's :class:`~pytest_trt.cache.remote.CacheStats` plus those merged from xdist workers."""
        from ..cache.remote import CacheStats  # load path: imported once in use

        total = CacheStats()
        if self._cache is not None:
            total.add(self._cache.stats)
        for stats in self.worker_cache_stats:
            total.add(stats)
        return total

    # -- pipeline steps, memoized per process ---------------------------------------
    def model(self, source, *, origin: str | None = None) -> Model:
        """The model of ``source``, loaded once per process; ``origin`` as in :func:`~pytest_trt.model.load.load_model`."""
        from ..model.load import Model, load_model  # load path: imported once in use

        if isinstance(source, Model):
            return source
        if isinstance(source, (str, os.PathLike)) and self.guard_input is not None:
            self.guard_input(Path(source), "the model a test loads")
        key = str(source)
        with self._lock:
            if key not in self._models:
                self._models[key] = load_model(source, origin=origin)
            return self._models[key]

    def plan(self, model: Model, policy: PrecisionPolicy) -> PrecisionPlan:
        key = (model.sha256, repr(sorted(policy.to_json().items())))
        with self._lock:
            if key not in self._plans:
                self._plans[key] = policy.resolve(model)
            return self._plans[key]

    def keep_fp32_with_session_patterns(self, model: Model, keep) -> tuple[str, ...]:
        """``keep`` plus each session-wide ``--trt-keep-fp32`` pattern (or ini twin) that matches a node
        of ``model`` other than its fixed ones (no pattern changes those); a pattern that matches
        nothing here is meant for other models and left out. Each pattern's use is noted: one that
        matches in no model of the run fails the session (:mod:`pytest_trt.run.session_patterns`).
        Used by the ``trt`` fixture's policy and by ``trt_build`` without a ``policy``."""
        keep = list(keep)
        if not self.settings.keep_fp32:
            return tuple(keep)
        plan = self.plan(model, PrecisionPolicy("fp32"))  # memoized; fixed nodes are the same under every policy
        fixed = frozenset(name for name, d in plan.nodes.items() if d.kind != "compute")
        nodes = list(model.graph.node)
        names = model.names
        for pattern in self.settings.keep_fp32:
            rule = Rule(pattern, "fp32", source="--trt-keep-fp32")
            matched = any(rule.matches(n, names.get(n.name)) and n.name not in fixed for n in nodes)
            self.patterns.note(pattern, model.label, matched, nodes, names)
            if pattern not in keep and matched:
                keep.append(pattern)
        return tuple(keep)

    def build_config(self, **overrides) -> BuildConfig:
        kwargs: dict[str, Any] = {"typing": self.settings.typing}
        kwargs.update({k: v for k, v in overrides.items() if v is not None})
        return BuildConfig(**kwargs)

    def engine(self, plan: PrecisionPlan, config: BuildConfig, *, backend: Backend | None = None) -> tuple[Engine, BuildEvent]:
        """Build or load the engine; the first use in this process reports how it was obtained."""
        backend = backend or self.backend
        key = (backend.name, plan.model.sha256, plan.fingerprint(), config.fingerprint())
        with self._lock:
            if key in self._engines:
                engine = self._engines[key]
                self._engines.move_to_end(key)
                self._release_engines(keep=key)
                info = engine.build_info
                return engine, BuildEvent(plan.model.label, plan.policy.describe(), backend.name, True, 0.0, info.key,
                                          self.record_gpu(backend), bool(backend.build_is_a_check))
            label = f"{plan.model.label} [{plan.policy.describe()}] on {backend.name}"
            start = time.perf_counter()
            with self._heartbeat(label, start):
                engine = backend.build(plan, config, self.cache, rebuild=self.settings.rebuild)
            info = engine.build_info
            if self.progress and (self.verbose or time.perf_counter() - start > 1.0):
                how = "cache hit" if info.cache_hit else f"built in {info.build_seconds:.2f}s"
                self.progress(f"pytest-trt: engine {label}: {how} ({time.perf_counter() - start:.2f}s)")
            self._engines[key] = engine
            self._release_engines(keep=key)
            return engine, BuildEvent(plan.model.label, plan.policy.describe(), backend.name,
                                      info.cache_hit, info.build_seconds, info.key, self.record_gpu(backend),
                                      bool(backend.build_is_a_check))

    def record_gpu(self, backend: Backend | None = None) -> dict | None:
        """The GPU this process's engines run on, as every engine and accuracy record names it.

        ``{"name", "uuid", "cuda_visible_devices", "worker"}``: the first GPU CUDA exposes to this
        process (:func:`pytest_trt.core.environment.gpus`, from ``nvidia-smi`` through
        ``CUDA_VISIBLE_DEVICES``), so under pytest-xdist with ``--trt-gpus`` the worker's assigned
        GPU; ``uuid`` null where nvidia-smi gave none; ``worker`` the xdist worker id or null.
        None for a backend that runs on no GPU (``emulate``: :attr:`Backend.uses_gpu`) and where no GPU
        is visible.
        """
        backend = backend or self.backend
        if not backend.uses_gpu:
            return None
        with self._lock:
            if not self._gpu_known:
                # load path: imported once in use (and looked up at call time: tests replace environment.gpus)
                from ..core import environment

                found = environment.gpus()
                self._gpu_record = None if not found else {
                    "name": found[0].name, "uuid": found[0].uuid or None,
                    "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
                    "worker": os.environ.get("PYTEST_XDIST_WORKER"),
                }
                self._gpu_known = True
            return None if self._gpu_record is None else dict(self._gpu_record)

    def parser_check(self, plan: PrecisionPlan, config: BuildConfig, which: str | None = None):
        """The plan parsed and built by TensorRT-RTX (:func:`pytest_trt.backends.tensorrt.parser_check.check_parser`),
        once per plan and config in this process, through the artifact cache."""
        which = which or (self.settings.parser_check if self.settings.parser_check != "off" else PARSER_CHECK_LIBRARY)
        key = (which, plan.model.sha256, plan.fingerprint(), config.fingerprint())
        with self._lock:
            if key not in self._parser_checks:
                self._parser_checks[key] = check_parser(plan, config, cache=self.cache, rebuild=self.settings.rebuild,
                                                        which=which)
            return self._parser_checks[key]

    @property
    def engine_memory_limit(self) -> int | None:
        """``--trt-engine-memory`` in bytes; default half the first GPU's memory; None: no GPU known."""
        if self.settings.engine_memory_bytes is not None:
            return self.settings.engine_memory_bytes
        from ..core import environment  # load path: imported once in use

        found = environment.gpus()
        try:
            mib = float(str(found[0].memory_mib).split()[0]) if found else 0.0
        except (ValueError, IndexError):
            mib = 0.0
        return int(mib * 1024 * 1024 / 2) if mib else None

    def _release_engines(self, keep) -> None:
        """Release loaded engines, least recently used first, while the others hold more than the limit."""
        limit = self.engine_memory_limit
        if limit is None:
            return
        for key in list(self._engines):
            if key == keep:
                continue
            held = sum(e.loaded_bytes for k, e in self._engines.items() if k != keep)
            if held <= limit:
                break
            engine = self._engines[key]
            if engine.loaded_bytes:
                self.released_engines.append((engine.describe(), engine.loaded_bytes))
                engine.release()

    @contextlib.contextmanager
    def _heartbeat(self, label: str, start: float):
        """While an engine is being obtained, say so every ``heartbeat_seconds`` (TensorRT
        builds take minutes: a silent terminal looks like a hang)."""
        if not self.progress:
            yield
            return
        if self.verbose:
            self.progress(f"pytest-trt: engine {label} ...")
        done = threading.Event()

        def beat():
            while not done.wait(self.heartbeat_seconds):
                self.progress(f"pytest-trt: still building {label} ({time.perf_counter() - start:.0f}s elapsed)")

        thread = threading.Thread(target=beat, name="pytest-trt-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()

    def baseline(self, model: Model, feeds: dict) -> dict:
        from ..reference.baseline import fp32_baseline  # load path: imported once in use

        return fp32_baseline(model, feeds, provider=self.settings.baseline_provider, cache=self.cache,
                             rebuild=self.settings.rebuild)
