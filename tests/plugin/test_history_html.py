"""The HTML report's view of a comparison with a saved run (issue 31), in headless Chromium at 1280 px
(tier ``browser``, as tests/plugin/test_html_browser.py): the tests table gains a drift column, the
"Changed since run" section lists the drift worst first with the cause line and the precision
changes, and nothing overflows the page or a cell."""

from __future__ import annotations

import html as html_lib
import json
import re

import pytest
from encoder_suite import ENCODER_PREAMBLE
from test_html_browser import WIDTH, _chromium, _headless

pytestmark = pytest.mark.browser

SUITE = f"""
import pytest
{ENCODER_PREAMBLE}
KEEP = ["*/LayerNorm/*", "op:Softmax"]
LONG = "a_long_parameter_id_" * 6

@pytest.mark.parametrize("case", [pytest.param(0, id=LONG)])
@pytest.mark.trt(model=ENCODER, keep_fp32=KEEP, dims=DIMS, val_range=NORMAL, atol={{"fp16": 1e-2, "bf16": 5e-2}})
def test_encoder(trt, case):
    trt.check(trt.feeds(outliers=OUTLIERS))

@pytest.mark.trt(model=ENCODER, precision="fp32", dims=DIMS, val_range=NORMAL)
def test_pinned_fp32(trt):
    trt.check()
"""

PROBE = """<script>
(function () {
  const doc = document.documentElement;
  const overflowing = [];
  for (const cell of document.querySelectorAll("table.tests td, table.drift td")) {
    if (cell.scrollWidth > cell.clientWidth + 1) overflowing.push(cell.textContent.slice(0, 80));
  }
  const section = document.querySelector("#drift");
  const heads = [...document.querySelectorAll("table.tests thead th")].map(th => th.textContent);
  const first = document.querySelector("table.drift tbody tr");
  const out = {doc_scroll_width: doc.scrollWidth, overflowing: overflowing, heads: heads,
               section_right: section && section.getBoundingClientRect().right,
               section_title: section && section.querySelector("h2").textContent,
               first_row: first && first.innerText, drift_cells: [...document.querySelectorAll("table.tests td.drift b")]
                 .map(b => b.textContent)};
  const pre = document.createElement("pre");
  pre.id = "layout-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


def test_html_report_shows_the_drift_column_and_the_changed_since_section(pytester):
    browser = _chromium()
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_dash=SUITE)
    common = ["-p", "no:cacheprovider", f"--trt-cache-dir={pytester.path / 'cache'}"]
    assert pytester.runpytest(*common, "--trt-fp16", "--trt-save=fp16").ret == 0
    result = pytester.runpytest(*common, "--trt-bf16", "--trt-compare-run=fp16", "--trt-compare-fail=max_abs:+25%",
                                "--trt-html=out/report.html")
    assert result.ret == 1
    report = pytester.path / "out" / "report.html"
    probe = report.with_name("probe.html")
    probe.write_text(report.read_text().replace("</body>", PROBE + "</body>"))
    dumped = _headless(browser, pytester.path / "profile", "--virtual-time-budget=5000", "--dump-dom", probe.as_uri())
    match = re.search(r'<pre id="layout-probe">(.*?)</pre>', dumped.stdout, re.S)
    assert match, f"no layout probe in the dumped DOM; chromium said:\n{dumped.stderr[-2000:]}"
    layout = json.loads(html_lib.unescape(match.group(1)))
    assert layout["heads"][-1] == "drift"
    assert layout["section_title"].startswith("Changed since run ") and layout["section_title"].endswith("(fp16)")
    assert layout["first_row"].startswith("REGRESSED"), layout
    assert sorted(layout["drift_cells"]) == ["REGRESSED", "same"], layout
    assert layout["doc_scroll_width"] <= WIDTH and layout["section_right"] <= WIDTH, layout
    assert layout["overflowing"] == [], layout
