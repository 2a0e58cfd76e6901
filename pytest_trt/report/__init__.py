"""Reports of a pytest-trt session: terminal summary, JSON and HTML files.

The package itself stays light: the plugin's load path imports :mod:`pytest_trt.core.records`
(and so this package); the writers, which import numpy, are imported when a report is written.
"""

from __future__ import annotations


def write_reports(session, results, exitstatus) -> None:
    """Write ``--trt-report`` (JSON) and ``--trt-html`` files, once, on the controller."""
    s = session.settings
    if s.report_json:
        from .json_report import write_json_report  # load path: imported once in use

        write_json_report(s.report_json, session, results, exitstatus)
    if s.report_html:
        from .html_report import write_html_report  # load path: imported once in use

        write_html_report(s.report_html, session, results, exitstatus)
