"""Hooks other plugins (or a ``conftest.py``) implement to extend pytest-trt.

pytest-trt adds them to pytest's hook registry when it loads (``pytest_addhooks``), like
pytest-benchmark's ``hookspec.py``. Every hook is called only once the plugin is *in use*
(a ``--trt-*`` option, a ``trt_*`` ini value or a collected trt test): a run without trt tests
calls none of them, and an implementation may import what it needs.

A third-party backend, e.g. in a ``conftest.py`` or a plugin module passed with ``-p``::

    from pytest_trt.backends import Backend

    class MyBackend(Backend):
        name = "mine"
        ...  # unavailable_reason, versions, build (see pytest_trt.backends.base)

    def pytest_trt_backends(config):
        return {"mine": MyBackend}

then ``pytest --trt-backend mine`` runs every trt test through it, and
``@pytest.mark.trt(requires="mine")`` skips (with the exact reason) elsewhere.
"""

from __future__ import annotations

import pytest


def pytest_trt_backends(config: pytest.Config):
    """Provide backends, as a mapping ``{name: factory}``.

    ``factory`` is a :class:`~pytest_trt.backends.base.Backend` subclass, a no-argument callable
    returning one, or a Backend instance. Each becomes selectable with ``--trt-backend NAME``
    (or the ``trt_backend`` ini value), ``requires=NAME`` and
    :func:`~pytest_trt.backends.base.get_backend`, for this run (they are forgotten at
    ``pytest_unconfigure``). A name given by two implementations is a usage error; a built-in
    name (``emulate``, ``tensorrt``, ``tensorrt-rtx``) replaces that backend for the run.

    Called once per process (on each pytest-xdist worker too), when the plugin is put in use,
    before the backend is selected.
    """


@pytest.hookspec(firstresult=True)
def pytest_trt_select_backend(config: pytest.Config, requested: str, source: str):
    """Choose the session's backend; return ``(backend, reason)`` or None to leave it to the next
    implementation.

    ``requested`` is the value of ``--trt-backend`` (``auto`` by default), ``source`` the option
    or ini spelling it came from (for messages). ``reason`` is shown in the report header
    ("backend NAME (reason)") and the JSON report. pytest-trt's own implementation runs last:
    ``auto`` is TensorRT where it runs, else ``emulate``; a named backend that cannot run here is
    a usage error. An implementation that cannot honour an explicit request should raise
    ``pytest.UsageError`` rather than return another backend.
    """


def pytest_trt_report_header(config: pytest.Config, session) -> list[str] | None:
    """Lines to add to pytest-trt's report header (shown after its own lines).

    ``session`` is the run's :class:`~pytest_trt.run.session.TrtSession` (backend, settings).
    """


def pytest_trt_report_test(config: pytest.Config, entry: dict, records: list) -> None:
    """Extend one test's entry of the ``--trt-report`` JSON file, in place.

    ``entry`` is the test's entry of ``tests`` (see :mod:`pytest_trt.report.json_report`);
    ``records`` are the records the test produced in their JSON form (dicts with a ``kind``,
    :meth:`pytest_trt.core.records.Record.to_json`). Add keys under a
    name of your own (e.g. ``entry["myplugin"] = {...}``); values must be JSON-serializable.
    Called on the process that writes the report (the pytest-xdist controller), once per trt
    test, only when ``--trt-report`` is given.
    """
