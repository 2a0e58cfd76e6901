"""The HTML report's ledger tables: the top rows open, the rest collapsed (review1 defect 17).

Before: with ``--trt-ledger`` each test's ledger table listed every node uncollapsed (962 ``<tr>`` for
5 tests of at most 186 nodes); at the README's 11,329-node example that is tens of thousands of rows
per test. Now the first rows are a table of their own and the rest a sortable table inside a collapsed
``<details>``; a real browser sorts both.
"""

from __future__ import annotations

import html as html_lib
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_trt.backends import get_backend
from pytest_trt.backends.base import BuildConfig
from pytest_trt.ledger import ledger_of
from pytest_trt.ledger.render import TOP as TOP_ROWS  # the rows shown open: the terminal summary's count
from pytest_trt.model.load import load_model
from pytest_trt.plan.policy import PrecisionPolicy
from pytest_trt.report import html_report
from pytest_trt.run.session import TrtSession
from pytest_trt.run.settings import Settings

ENCODER = Path(__file__).resolve().parents[2] / "example_suite" / "models" / "encoder_opset14.onnx"


def _report(tests: int = 2) -> str:
    plan = PrecisionPolicy("fp16", keep_fp32=("*/LayerNorm/*", "op:Softmax")).resolve(load_model(ENCODER))
    data = ledger_of(get_backend("emulate").build(plan, BuildConfig(), None), {}, timing="off").to_json()
    res = [{"nodeid": f"test_enc.py::test_{i}", "outcome": "passed", "records": [
        {"kind": "ledger", "model": "encoder", "policy": "fp16", "backend": "emulate", "auto": True, "ledger": data}]}
        for i in range(tests)]
    session = TrtSession(settings=Settings(), backend=get_backend("emulate"), backend_reason="test")
    return html_report.render_html(session, res, 0)


def _rows(table_html: str) -> int:
    return table_html.split("<tbody>", 1)[1].split("</tbody>", 1)[0].count("<tr>")


def test_each_ledger_shows_its_top_rows_and_collapses_the_rest():
    text = _report(tests=2)
    section = text[text.index('<section id="ledgers">'):]
    cards = section.split('<div class="card">')[1:]
    assert len(cards) == 2
    for card in cards:
        tables = card.split('<table class="sortable ledger">')[1:]
        assert len(tables) == 2, card[:500]
        opened, rest = tables
        assert _rows(opened) == TOP_ROWS
        assert _rows(rest) == 130 - TOP_ROWS  # every row of the model's 130 nodes, once
        assert '<details class="ledger-rest"><summary>the other 120 nodes (a table of its own, sortable too)' \
               '</summary><table class="sortable ledger">' in card
        assert "<details open" not in card


#: opens the collapsed table, clicks its "op" header twice and records the column after each click
SORT_REST = """<script>
(function () {
  const details = document.querySelector("details.ledger-rest");
  details.open = true;
  const table = details.querySelector("table.sortable.ledger");
  const col = [...table.querySelectorAll("th")].findIndex(th => th.textContent === "op");
  const read = () => [...table.tBodies[0].rows].map(r => r.cells[col].textContent.toLowerCase());
  const before = read();
  table.querySelectorAll("th")[col].click();
  const ascending = read();
  table.querySelectorAll("th")[col].click();
  const descending = read();
  const pre = document.createElement("pre");
  pre.id = "sort-probe";
  pre.textContent = JSON.stringify({before, ascending, descending});
  document.body.appendChild(pre);
})();
</script>"""


@pytest.mark.browser
def test_the_collapsed_table_sorts_in_a_real_browser(tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium not found: apt-get install chromium")
    probe = tmp_path / "probe.html"
    probe.write_text(_report(tests=1).replace("</body>", SORT_REST + "</body>"))
    dumped = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'p'}",
                             "--virtual-time-budget=5000", "--dump-dom", probe.as_uri()],
                            capture_output=True, text=True, timeout=120)
    match = re.search(r'<pre id="sort-probe">(.*?)</pre>', dumped.stdout, re.S)
    assert match, f"no sort probe in the dumped DOM; chromium said:\n{dumped.stderr[-2000:]}"
    got = json.loads(html_lib.unescape(match.group(1)))
    assert len(got["before"]) == 130 - TOP_ROWS
    assert got["ascending"] == sorted(got["before"]) and got["descending"] == sorted(got["before"], reverse=True)
    assert got["ascending"] != got["before"]
