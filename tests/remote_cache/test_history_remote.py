"""Saved runs on the remote cache's storage (issue 31): a real nginx WebDAV server on loopback.

Runs saved there are signed with the remote cache's private key and read only through a manifest
that verifies with a trusted public key. A run forged on the server by someone who can write to it
but does not hold the key (a newer "run" whose figures would hide a regression) is rejected: never
``latest``, and naming it is a usage error. A run edited after signing is damaged: a usage error.
"""

from __future__ import annotations

import json

import pytest
from encoder_suite import ENCODER_PREAMBLE

from pytest_trt.history.runid import make_run_id
from pytest_trt.history.store import PREFIX, RunStore

pytestmark = pytest.mark.remote_cache
pytest.importorskip("webdav4", reason="the remote extra: pip install -e '.[remote]'")

SUITE = f"""
import pytest
{ENCODER_PREAMBLE}
@pytest.mark.trt(model=ENCODER, keep_fp32=["*/LayerNorm/*", "op:Softmax"], dims=DIMS, val_range=NORMAL,
                 atol={{"fp16": 1e-2, "bf16": 5e-2}})
def test_encoder(trt):
    trt.check(trt.feeds(outliers=OUTLIERS))
"""


@pytest.fixture
def project(pytester, nginx):
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_enc=SUITE)
    return pytester


def session(pytester, *args):
    return pytester.runpytest("-p", "no:cacheprovider", f"--trt-cache-dir={pytester.path / 'cache'}", *args)


def test_runs_on_webdav_are_signed_and_a_forged_one_is_rejected(project, nginx, keys, monkeypatch):
    url = nginx.url
    builder = keys["builder"]
    monkeypatch.setenv("PYTEST_TRT_REMOTE_CACHE_KEY", builder["private"])
    saved = session(project, "--trt-fp16", "--trt-save=main", f"--trt-storage={url}")
    assert saved.ret == 0, saved.stdout.str()
    monkeypatch.delenv("PYTEST_TRT_REMOTE_CACHE_KEY")
    on_server = nginx.root / "cache" / PREFIX
    [real_id] = [p.name for p in on_server.iterdir()]
    assert (on_server / real_id / f"manifest.{builder['key_id']}.json").is_file()

    # someone with write access to the server, without the key: a newer run, "FP16 with huge errors",
    # against which a real regression would look like an improvement
    forged = RunStore(url, private_key=keys["stranger"]["private"])
    run = json.loads((on_server / real_id / "run.json").read_text())
    run["id"] = make_run_id("forged")
    for test in run["report"]["tests"]:
        for check in test["accuracy"]:
            for out in check["outputs"]:
                out["max_abs"] = 1.0
    forged.save(run)
    forged.close()

    trust = f"--trt-remote-cache-trust={builder['public_key']}"
    result = session(project, "--trt-bf16", f"--trt-storage={url}", trust, "--trt-compare-run",
                     "--trt-compare-fail=max_abs:+25%")
    assert result.ret == 1, result.stdout.str()  # compared with the real run: the BF16 regression is seen
    result.stdout.fnmatch_lines([f"*comparing with run {real_id} (#1, exit 0*",
                                 f"pytest-trt drift gate FAILED against run {real_id}: 1 regressed output(s)*"])
    named = session(project, "--trt-bf16", f"--trt-storage={url}", trust, f"--trt-compare-run={run['id']}")
    assert named.ret == pytest.ExitCode.USAGE_ERROR
    named.stderr.fnmatch_lines(["*rejected: signed only by key(s) not trusted here*a rejected run is never "
                                "compared with*"])
    # the real run edited on the server after signing: damaged, a usage error
    path = on_server / real_id / "run.json"
    path.write_text(path.read_text().replace('"passed":true', '"passed":false', 1))
    damaged = session(project, "--trt-bf16", f"--trt-storage={url}", trust, f"--trt-compare-run={real_id}")
    assert damaged.ret == pytest.ExitCode.USAGE_ERROR
    damaged.stderr.fnmatch_lines([f"*run {real_id} in {url} is damaged: run.json * (damaged or tampered)*"])


def test_a_url_storage_needs_the_keys(project, nginx, keys):
    no_key = session(project, "--trt-fp16", "--trt-save=x", f"--trt-storage={nginx.url}",
                     f"--trt-remote-cache-trust={keys['builder']['public_key']}")
    assert no_key.ret == pytest.ExitCode.USAGE_ERROR
    no_key.stderr.fnmatch_lines(["*--trt-storage http://127.0.0.1:*/cache: runs saved at a URL are signed with the "
                                 "remote cache's key, and none is set. Set PYTEST_TRT_REMOTE_CACHE_KEY*"])
    no_trust = session(project, "--trt-fp16", "--trt-compare-run", f"--trt-storage={nginx.url}")
    assert no_trust.ret == pytest.ExitCode.USAGE_ERROR
    no_trust.stderr.fnmatch_lines(["*runs stored at a URL are signed, and no trusted public key is given*"])


def test_list_and_prune_over_webdav(nginx, keys):
    store = RunStore(nginx.url, private_key=keys["builder"]["private"])
    for name in ("a", "b", "c"):
        store.save({"format": "pytest-trt-run-v1", "id": make_run_id(name), "name": name, "exitstatus": 0,
                    "report": {"tests": []}})
    assert [e.name for e in store.entries()] == ["a", "b", "c"]
    assert [e.name for e in store.prune(keep=1)] == ["a", "b"]
    assert [e.name for e in store.entries()] == ["c"]
    assert [p.name.rsplit("-", 1)[1] for p in (nginx.root / "cache" / PREFIX).iterdir()] == ["c"]
    store.close()
