"""``--trt-gpus N|auto``: spread pytest-xdist workers over GPUs, one worker per GPU.

The controller decides, once, which device each worker gets and hands it over twice:

* as ``CUDA_VISIBLE_DEVICES`` in the worker's execnet spec (``pytest_xdist_setupnodes``),
  so the worker process has it before it imports anything, user conftests included
  (a conftest that touches CUDA at import would otherwise see every GPU);
* as ``workerinput["trt_gpu"]`` (``pytest_configure_node``), which the worker applies
  again in ``pytest_configure`` (for gateways that ignore spec environments) and reports.

The devices are the entries of the controller's ``CUDA_VISIBLE_DEVICES`` when it is set
(indices, UUIDs or MIG ids, passed through unchanged), else ``0..n-1`` for the ``n``
GPUs ``nvidia-smi`` lists. ``auto`` uses as many GPUs as there are workers, at most all
visible ones; an explicit ``N`` must not exceed either. Workers beyond ``N`` share GPUs
round-robin (``-n 4 --trt-gpus 2``: gw0, gw2 -> first GPU; gw1, gw3 -> second).

With ``-n auto``, ``--trt-gpus auto`` starts one worker per visible GPU and ``--trt-gpus N``
starts ``N`` (:func:`auto_num_workers`, pytest-xdist's ``pytest_xdist_auto_num_workers`` hook);
``PYTEST_XDIST_AUTO_NUM_WORKERS``, when set, still wins.

Without a GPU, ``--trt-gpus auto`` warns and does nothing (the same ini setting then
works on CPU runners); ``--trt-gpus N`` is a usage error. Without pytest-xdist
distribution (no ``-n``, or ``-n 0``) the option warns and does nothing.
"""

from __future__ import annotations

import os

import pytest

from ..errors import UsageError
from ..run import settings as _settings
from .activation import current_session

ENV = "CUDA_VISIBLE_DEVICES"
WORKERINPUT_KEY = "trt_gpu"
ASSIGNMENT_KEY = pytest.StashKey[dict]()


def visible_devices() -> list[str]:
    """Device tokens this process may hand out: ``CUDA_VISIBLE_DEVICES`` entries, else GPU indices.

    Empty when no GPU is visible (``nvidia-smi`` lists none, or ``CUDA_VISIBLE_DEVICES`` is
    empty or ``-1``).
    """
    # load path: imported once in use (and looked up at call time: tests replace environment.gpus)
    from ..core import environment

    found = environment.gpus()
    if not found:
        return []
    visible = os.environ.get(ENV)
    if visible is not None:
        tokens = [t.strip() for t in visible.split(",") if t.strip()]
        # CUDA stops at the first invalid entry ("-1" hides everything after it)
        if "-1" in tokens:
            tokens = tokens[: tokens.index("-1")]
        return tokens
    return [str(i) for i in range(len(found))]


def parse_gpus(value: str) -> int | None:
    """``"auto"`` -> None, ``"2"`` -> 2; a UsageError for anything else."""
    text = str(value).strip().lower()
    if text == "auto":
        return None
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise pytest.UsageError(f"pytest-trt: --trt-gpus {value!r}: expected a positive number of GPUs or 'auto'")
    return number


def assign_devices(worker_ids: list[str], devices: list[str], wanted: int | None) -> dict[str, str]:
    """Map worker ids to device tokens; ``wanted`` None = auto. UsageError when ``wanted`` is too large.

    >>> assign_devices(["gw0", "gw1", "gw2"], ["2", "3"], None)
    {'gw0': '2', 'gw1': '3', 'gw2': '2'}
    """
    if wanted is None:
        count = min(len(worker_ids), len(devices))
    else:
        if wanted > len(devices):
            seen = f"{len(devices)} visible GPU(s)" + (f" ({ENV}={os.environ[ENV]})" if ENV in os.environ else "")
            raise pytest.UsageError(
                f"pytest-trt: --trt-gpus {wanted} but only {seen}: use --trt-gpus auto or at most {len(devices)}")
        if wanted > len(worker_ids):
            raise pytest.UsageError(
                f"pytest-trt: --trt-gpus {wanted} with {len(worker_ids)} pytest-xdist worker(s): one worker per GPU "
                f"needs -n {wanted} (or more)")
        count = wanted
    if count == 0:
        return {}
    chosen = devices[:count]
    return {wid: chosen[i % count] for i, wid in enumerate(worker_ids)}


def _option(config):
    try:  # (read in pytest_configure, before the plugin's own usage errors are reported: exit 4 here too)
        value, source = _settings.lookup_option(config, _settings.OPTIONS_BY_DEST["trt_gpus"])
    except UsageError as exc:
        raise pytest.UsageError(f"pytest-trt: {exc}") from None
    return value, source


def _worker_ids(config) -> list[str] | None:
    """The gateway ids xdist will start (``gw0``...), or None when the run is not distributed.

    Read from xdist's public ``--tx`` option values (by ``pytest_configure``, xdist has turned
    ``-n N`` into ``N`` ``popen`` specs); a spec ``3*popen`` stands for three gateways.
    """
    specs = getattr(config.option, "tx", None)
    if getattr(config.option, "dist", "no") == "no" or not specs:
        return None
    count = 0
    for spec in specs:
        head, star, _ = str(spec).partition("*")
        count += int(head) if star and head.strip().isdigit() else 1
    return [f"gw{i}" for i in range(count)]


def auto_num_workers(config) -> int | None:
    """pytest-xdist's ``-n auto`` with ``--trt-gpus auto``: one worker per visible GPU; with
    ``--trt-gpus N``: ``N`` workers. None (xdist decides, from the CPUs) without the option, without
    a GPU, or when ``PYTEST_XDIST_AUTO_NUM_WORKERS`` says how many."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    value, _ = _option(config)
    if value in (None, ""):
        return None
    wanted = parse_gpus(value)
    if wanted is not None:
        return wanted
    return len(visible_devices()) or None


def configure(config) -> None:
    """Called from the plugin's ``pytest_configure``, before the session touches any GPU."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        device = workerinput.get(WORKERINPUT_KEY)
        if device is not None:
            os.environ[ENV] = str(device)
            from ..core import environment  # load path: imported once in use

            environment.forget_gpus()  # this worker now sees one GPU
        return
    value, source = _option(config)
    if value in (None, ""):
        return
    wanted = parse_gpus(value)
    devices = visible_devices()
    if not devices:
        if wanted is None:
            _warn(config, f"{source} auto: no GPU visible; workers keep the default device settings")
            return
        raise pytest.UsageError(f"pytest-trt: {source} {value} but no GPU is visible (nvidia-smi lists none"
                                + (f", {ENV}={os.environ[ENV]!r}" if ENV in os.environ else "") + ")")
    if not config.pluginmanager.hasplugin("xdist"):
        _warn(config, f"{source} {value}: pytest-xdist is not installed (or disabled); running in one process on the default GPU")
        return
    workers = _worker_ids(config)
    if workers is None:
        _warn(config, f"{source} {value}: the run is not distributed (no -n); running in one process on the "
                      f"default GPU")
        return
    mapping = assign_devices(workers, devices, wanted)
    config.stash[ASSIGNMENT_KEY] = mapping
    config.pluginmanager.register(GpuAssigner(mapping), "pytest-trt-gpus")


def _warn(config, message: str) -> None:
    config.issue_config_time_warning(pytest.PytestConfigWarning(f"pytest-trt: {message}"), stacklevel=2)


class GpuAssigner:
    """Controller-side xdist hooks; registered only when a mapping was made (so xdist is present)."""

    def __init__(self, mapping: dict[str, str]):
        self.mapping = mapping

    def pytest_xdist_setupnodes(self, config, specs):
        for spec in specs:
            device = self.mapping.get(str(getattr(spec, "id", "")))
            if device is not None:
                spec.env[ENV] = device

    def pytest_configure_node(self, node):
        device = self.mapping.get(node.gateway.id)
        if device is not None:
            node.workerinput[WORKERINPUT_KEY] = device

    def pytest_report_header(self, config):
        pairs = ", ".join(f"{w} -> {d}" for w, d in self.mapping.items())
        return [f"pytest-trt: GPU per xdist worker ({ENV}): {pairs}"]

    def pytest_sessionstart(self, session):
        # the JSON/HTML reports read it from the run-wide TrtSession
        trt_session = current_session(session.config)
        if trt_session is not None:
            trt_session.gpu_assignment = dict(self.mapping)
