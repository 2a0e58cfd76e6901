"""Reports of a pytest-trt session: terminal summary, JSON and HTML files.

The package itself stays light: the plugin's load path imports :mod:`pytest_trt.core.records`
(and so this package); the writers, which import numpy, are imported when a report is written.
"""

from __future__ import annotations


def write_reports(session, results, exitstatus) -> list[str]:
    """Write ``--trt-html`` and ``--trt-report`` (JSON) files, once, on the controller; returns one
    line per report that could not be written (``pytest-trt: --trt-report=PATH was not written:
    <reason>``), after cleaning up (:func:`pytest_trt.report.files.write_report_file`).

    The HTML is written first, so that the JSON, which CI gates read, states the exit status
    of a run whose HTML could not be written (1)."""
    from .files import write_report_file  # load path: imported once in use

    s = session.settings
    failures: list[str] = []
    if s.report_html:
        from .html_report import render_html  # load path: imported once in use

        failure = write_report_file(s.report_html, render_html(session, results, exitstatus),
                                    _flag(s, "trt_html", "--trt-html"), "html")
        failures += [failure] if failure else []
    if s.report_json:
        from .json_report import render_json  # load path: imported once in use

        status = 1 if failures and not exitstatus else exitstatus
        failure = write_report_file(s.report_json, render_json(session, results, status),
                                    _flag(s, "trt_report", "--trt-report"), "json")
        failures += [failure] if failure else []
    return failures


def _flag(settings, dest: str, default: str) -> str:
    """How the user gave a report path: ``--trt-report`` or ``ini trt_report``."""
    source = settings.sources.get(dest, default)
    return default if source == "default" else source
