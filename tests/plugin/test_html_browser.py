"""The HTML report as a dashboard in a real browser (tier ``browser``): headless Chromium from
the system packages (Debian's ``chromium``) renders a report of a small suite at 1280 px and
the page measures its own layout.

Checked: nothing overflows horizontally (the document, the tests table, any table cell's
content), the failing test is the first group and lies in the first screen, long test ids
are abbreviated with the full id on hover, and the whole-network precision strip wraps
inside the page. Skips with the exact reason where no Chromium is installed, except in CI
(``PYTEST_TRT_CI_NO_SKIP=1``: ``.ci/install-tier-deps`` installs it; tests/tiers.py).
"""

from __future__ import annotations

import html as html_lib
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from encoder_suite import ENCODER_PREAMBLE

pytestmark = pytest.mark.browser

WIDTH, HEIGHT = 1280, 800

SUITE = f"""
import pytest
from pytest_trt import AccuracyError
{ENCODER_PREAMBLE}KEEP = ["*/LayerNorm/*", "op:Softmax"]
LONG = "a_very_long_parameter_id_" * 8

@pytest.mark.parametrize("case", [pytest.param(i, id=f"{{LONG}}{{i}}") for i in range(6)])
@pytest.mark.trt(model=ENCODER, precision="fp16", keep_fp32=KEEP, dims=DIMS, val_range=NORMAL)
def test_passing_with_a_long_parametrized_name(trt, case):
    trt.check(trt.feeds(outliers=OUTLIERS), atol=1e-2)
    trt.assert_precision("*/LayerNorm/*", "fp32")

@pytest.mark.xfail(strict=True, raises=AccuracyError, reason="negative control")
@pytest.mark.trt(model=ENCODER, precision="fp16", dims=DIMS, val_range=NORMAL)
def test_negative_control(trt):
    trt.check(trt.feeds(outliers=OUTLIERS), atol=1e-2)

@pytest.mark.parametrize("case", [pytest.param(0, id=LONG)])
@pytest.mark.trt(model=ENCODER, precision="fp16", dims=DIMS, val_range=NORMAL)
def test_zz_failing_fp16_layernorm(trt, case):
    trt.check(trt.feeds(outliers=OUTLIERS), atol=1e-2)
"""

#: injected into a copy of the report (the report itself has no script): measures the layout
#: and writes it into the DOM, which --dump-dom prints
PROBE = """<script>
(function () {
  const doc = document.documentElement;
  const table = document.querySelector("table.tests");
  const first = document.querySelector("table.tests tbody");
  const failing = document.querySelector("table.tests tbody.tone-bad");
  const overflowing = [];
  for (const cell of document.querySelectorAll("table.tests td")) {
    if (cell.scrollWidth > cell.clientWidth + 1) overflowing.push(cell.textContent.slice(0, 80));
  }
  const nets = [...document.querySelectorAll(".net")].map(n => n.getBoundingClientRect().right);
  const r = failing ? failing.getBoundingClientRect() : null;
  const out = {
    viewport: [innerWidth, innerHeight], doc_scroll_width: doc.scrollWidth,
    table_right: table.getBoundingClientRect().right, table_scroll: table.scrollWidth, table_client: table.clientWidth,
    first_is_failing: first === failing, failing_top: r && r.top, failing_bottom: r && r.bottom,
    failing_text: failing && failing.innerText.slice(0, 300), overflowing: overflowing, net_rights: nets,
  };
  const pre = document.createElement("pre");
  pre.id = "layout-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("chromium not found: apt-get install chromium")


def _headless(browser: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           f"--user-data-dir={profile}", f"--window-size={WIDTH},{HEIGHT}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=90)


def test_html_report_is_a_dashboard_at_1280px(pytester):
    browser = _chromium()
    pytester.makepyfile(test_dashboard=SUITE)
    result = pytester.runpytest(f"--trt-cache-dir={pytester.path / 'cache'}", "--trt-html=out/report.html",
                                "-p", "no:randomly")
    result.assert_outcomes(passed=6, failed=1, xfailed=1)
    report = pytester.path / "out" / "report.html"
    text = report.read_text()
    # long ids are abbreviated (the parameter id, never the test's name), the full id on hover
    assert re.search(r'<abbr title="test_dashboard\.py::test_passing_with_a_long_parametrized_name\[a_very_long'
                     r'[^"]*">test_dashboard\.py::test_passing_with_a_long_parametrized_name\[a_very[^<]*…', text)

    probe = report.with_name("probe.html")
    probe.write_text(text.replace("</body>", PROBE + "</body>"))
    dumped = _headless(browser, pytester.path / "profile", "--virtual-time-budget=5000", "--dump-dom",
                       probe.as_uri())
    match = re.search(r'<pre id="layout-probe">(.*?)</pre>', dumped.stdout, re.S)
    assert match, f"no layout probe in the dumped DOM; chromium said:\n{dumped.stderr[-2000:]}"
    layout = json.loads(html_lib.unescape(match.group(1)))

    assert layout["viewport"][0] == WIDTH
    assert layout["doc_scroll_width"] <= WIDTH, layout  # no horizontal scrolling of the page
    assert layout["table_right"] <= WIDTH and layout["table_scroll"] <= layout["table_client"], layout
    assert layout["overflowing"] == [], layout  # no cell's content spills out of its column
    assert layout["net_rights"] and max(layout["net_rights"]) <= WIDTH, layout  # the network strip wraps
    # the failing test is the first group, and fully in the first screen
    assert layout["first_is_failing"], layout
    assert 0 < layout["failing_top"] and layout["failing_bottom"] <= layout["viewport"][1], layout
    assert "test_zz_failing_fp16_layernorm" in layout["failing_text"]

    shot = pytester.path / "out" / "report.png"
    taken = _headless(browser, pytester.path / "profile", f"--screenshot={shot}", report.as_uri())
    assert shot.exists(), taken.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


#: clicks the ledger table's "median ms" header twice and records the column after each click
SORT_PROBE = """<script>
(function () {
  const table = document.querySelector("table.sortable.ledger");
  const col = [...table.querySelectorAll("th")].findIndex(th => th.textContent === "median ms");
  const read = () => [...table.tBodies[0].rows].map(r => parseFloat(r.cells[col].dataset.v));
  const before = read();
  table.querySelectorAll("th")[col].click();
  const ascending = read();
  table.querySelectorAll("th")[col].click();
  const descending = read();
  const strip = document.querySelector(".lstrip").getBoundingClientRect();
  const overflowing = [...table.querySelectorAll("td")].filter(c => c.scrollWidth > c.clientWidth + 1)
    .map(c => c.textContent.slice(0, 60));
  const pre = document.createElement("pre");
  pre.id = "sort-probe";
  pre.textContent = JSON.stringify({before, ascending, descending, strip_right: strip.right,
                                    table_right: table.getBoundingClientRect().right, overflowing,
                                    cells: document.querySelectorAll(".lstrip div").length,
                                    doc_scroll_width: document.documentElement.scrollWidth});
  document.body.appendChild(pre);
})();
</script>"""


def test_ledger_table_sorts_in_a_real_browser(tmp_path):
    """The ledger card of a timed ledger (the kgen inspector fixture with SYNTHETIC TensorRT layer times):
    a click on a header sorts the table (the report's one inline script), the scope strip and the table
    stay inside the page at 1280 px."""
    from pytest_trt.backends import get_backend
    from pytest_trt.layers.report import LayerReport
    from pytest_trt.layers.timing import LayerProfile
    from pytest_trt.ledger import build_ledger
    from pytest_trt.model.load import load_model
    from pytest_trt.plan.policy import PrecisionPolicy
    from pytest_trt.report import html_report
    from pytest_trt.run.session import TrtSession
    from pytest_trt.run.settings import Settings

    browser = _chromium()
    data = Path(__file__).resolve().parents[1] / "data"
    plan = PrecisionPolicy(default="fp16", keep_fp32=("*/LayerNorm/*",)).resolve(load_model(data / "bert_tiny_opset14.onnx"))
    inspector = json.loads((data / "inspector" / "bert_tiny_kgen_trt10.json").read_text())
    samples = {layer["Name"]: [0.002 * ((7 * i) % 13 + 1)] * 3 for i, layer in enumerate(inspector["Layers"])}
    profile = LayerProfile(source="tensorrt", unit="engine layer", warmup=1, iterations=3, samples=samples,
                           end_to_end_ms=[0.4] * 3)
    ledger = build_ledger(plan, LayerReport.from_inspector_json(inspector, plan, typing="strong"), profile)
    res = [{"nodeid": "test_bert.py::test_ledger", "outcome": "passed", "records": [
        {"kind": "ledger", "model": "bert", "policy": "fp16", "backend": "tensorrt", "ledger": ledger.to_json()}]}]
    session = TrtSession(settings=Settings(), backend=get_backend("tensorrt"), backend_reason="test")
    text = html_report.render_html(session, res, 0)
    assert text.count("<script>") == 1 and "<script src" not in text
    probe = tmp_path / "probe.html"
    probe.write_text(text.replace("</body>", SORT_PROBE + "</body>"))
    dumped = _headless(browser, tmp_path / "profile", "--virtual-time-budget=5000", "--dump-dom", probe.as_uri())
    match = re.search(r'<pre id="sort-probe">(.*?)</pre>', dumped.stdout, re.S)
    assert match, f"no sort probe in the dumped DOM; chromium said:\n{dumped.stderr[-2000:]}"
    got = json.loads(html_lib.unescape(match.group(1)))
    assert got["before"] == sorted(got["before"], reverse=True)  # slowest first as rendered
    assert got["ascending"] == sorted(got["before"]) and got["descending"] == sorted(got["before"], reverse=True)
    assert got["cells"] > 5 and got["strip_right"] <= WIDTH and got["table_right"] <= WIDTH
    assert got["doc_scroll_width"] <= WIDTH and got["overflowing"] == [], got
