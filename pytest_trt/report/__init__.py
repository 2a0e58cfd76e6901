"""Reports of a pytest-trt session: terminal summary, JSON and HTML files."""

from __future__ import annotations


def write_reports(session, results, exitstatus) -> None:
    """Write ``--trt-report`` (JSON) and ``--trt-html`` files, once, on the controller."""
    s = session.settings
    if s.report_json:
        from .json_report import write_json_report

        write_json_report(s.report_json, session, results, exitstatus)
    if s.report_html:
        from .html_report import write_html_report

        write_html_report(s.report_html, session, results, exitstatus)
