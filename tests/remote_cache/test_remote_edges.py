"""The remote cache at its edges: the audit of 2026-11-26 (F2-F13, ../shared/audit/) in CI form.

Whatever the store, a server in front of it or the configuration holds, a reader warns and
builds locally (never a failed test, a hang or an unreachable remote because of one object), a
builder writes only inside the store, a killed upload is published on the builder's next run,
no credential or key reaches any output, and a malformed configuration is a usage error. The
remote cases run against the real nginx WebDAV server and a file:// store, or a loopback HTTP
server the test starts (the trickle). APIs added by these fixes are imported inside the tests,
so that each test fails on its own on the code before its fix.
"""

from __future__ import annotations

import http.server
import json
import os
import threading
import time
import warnings
from pathlib import Path

import pytest
from test_remote_cache import (
    HERE,
    PARTS,
    Build,
    builder,
    entry_dir,
    fetch_cold,
    publish,
    published,
    reader,
)

from pytest_trt.cache import ArtifactCache
from pytest_trt.cache.remote import FORMAT, MAX_MANIFEST_BYTES, PREFIX, RemoteTier, published_name
from pytest_trt.errors import CacheError, CacheWarning, UsageError

pytestmark = pytest.mark.remote_cache

ENCODER = HERE.parents[1] / "example_suite" / "models" / "encoder_opset14.onnx"
CONVNET = HERE.parents[1] / "example_suite" / "models" / "convnet.onnx"
SECRET = "Pw-s3cr3t-XYZ"
# one small trt test (its engine, emulation graph and baseline are cache entries)
TRT_TEST = f"""
    import pytest

    @pytest.mark.trt(model={str(CONVNET)!r}, shapes={{"image": (1, 3, 32, 32)}}, val_range={{"image": (0.0, 1.0)}})
    def test_convnet(trt):
        trt.check()
"""


def _envelope(**fields) -> bytes:
    return json.dumps(fields).encode()


def poisons(kid: str) -> dict[str, bytes]:
    """Published manifests a store writer without the key can write (r01, r02)."""
    return {
        "key_id-a-list": _envelope(format=FORMAT, key_id=[kid], payload="", signature=""),
        "key_id-an-object": _envelope(format=FORMAT, key_id={"a": 1}, payload="", signature=""),
        "nested-200k": b"[" * 200_000,
        "nested-inside-an-envelope": (b'{"format": "%s", "key_id": "%s", "x": ' % (FORMAT.encode(), kid.encode()))
        + b"[" * 100_000 + b"]" * 100_000 + b"}",
        "over-1MiB": b" " * (MAX_MANIFEST_BYTES + 1),
        "payload-an-int": _envelope(format=FORMAT, key_id=kid, payload=123, signature=""),
        "signature-a-list": _envelope(format=FORMAT, key_id=kid, payload="e30=", signature=[1, 2]),
        "not-utf8": b"\xff\xfe\x00garbage",
    }


# ---------------------------------------------------------------------- F2: malformed manifests


@pytest.mark.parametrize("poison", sorted(poisons("0" * 16)))
def test_a_malformed_published_manifest_is_a_warning_and_a_local_build(tmp_path, remote, keys, poison):
    url, root = remote
    target = entry_dir(root, ArtifactCache.key(PARTS)) / published_name(keys["builder"]["key_id"])
    target.parent.mkdir(parents=True)
    target.write_bytes(poisons(keys["builder"]["key_id"])[poison])
    result, build, tier, warned = fetch_cold(tmp_path, url, keys)
    assert result.source == "built" and build.calls == 1
    assert tier.stats.remote_rejected == 1 and tier.unavailable is None, "one bad object is no unreachable remote"
    assert len(warned) == 1 and "rejected the published engine entry" in warned[0], warned


def test_an_unexpected_error_while_verifying_is_a_rejection_not_a_failure(tmp_path, keys, monkeypatch):
    """The backstop: whatever goes wrong verifying one published name can never fail a test."""
    from pytest_trt.cache.remote import tier as tier_module

    (tmp_path / "shared").mkdir()
    url = f"file://{tmp_path / 'shared'}"
    publish(tmp_path, url, keys)

    def broken(data, trusted):
        raise ZeroDivisionError("a bug in verification")

    monkeypatch.setattr(tier_module, "verify_manifest", broken)
    result, build, tier, warned = fetch_cold(tmp_path, url, keys)
    assert result.source == "built" and build.calls == 1 and tier.stats.remote_rejected == 1
    assert len(warned) == 1 and "could not be verified (ZeroDivisionError: a bug in verification)" in warned[0]


def test_poisoned_manifests_never_fail_a_readers_tests(pytester, nginx, keys, monkeypatch):
    """r02: a builder publishes, a store writer without the key overwrites every published
    manifest; a read-only runner with a cold cache passes, warned, with everything built locally."""
    pytester.makepyfile(test_m=TRT_TEST)
    common = ["--trt-backend=emulate", f"--trt-remote-cache={nginx.url}", "-p", "no:cacheprovider",
              "-W", "always::pytest_trt.errors.CacheWarning"]
    monkeypatch.setenv("PYTEST_TRT_REMOTE_CACHE_KEY", keys["builder"]["private"])
    pytester.runpytest_inprocess(*common, f"--trt-cache-dir={pytester.path / 'c1'}").assert_outcomes(passed=1)
    names = sorted((nginx.root / "cache").rglob(published_name(keys["builder"]["key_id"])))
    assert names, "the builder published its entries"
    chosen = [poisons(keys["builder"]["key_id"])[p] for p in ("key_id-a-list", "nested-200k", "over-1MiB")]
    for i, name in enumerate(names):
        name.write_bytes(chosen[i % len(chosen)])
    monkeypatch.delenv("PYTEST_TRT_REMOTE_CACHE_KEY")
    result = pytester.runpytest_inprocess(*common, f"--trt-remote-cache-trust={keys['builder']['public']}",
                                          f"--trt-cache-dir={pytester.path / 'c2'}", "--trt-report=r.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*CacheWarning*rejected the published*"])
    summary = json.loads((pytester.path / "r.json").read_text())["summary"]
    assert summary["remote_rejected"] == len(names) and summary["remote_hits"] == 0


# ---------------------------------------------------------------------- F3, F13a: what a file:// store holds


def _plant(path: Path, what: str) -> None:
    path.unlink()
    if what == "fifo":
        os.mkfifo(path)
    elif what == "dir":
        path.mkdir()
    else:
        os.symlink(what, path)


def _fetch_within(seconds: float, tmp_path, url, keys, fifos=()):
    """fetch_cold in a thread; a reader still blocked after ``seconds`` fails the test (its
    named pipes are then opened for writing, which releases it)."""
    out = {}
    thread = threading.Thread(target=lambda: out.update(r=fetch_cold(tmp_path, url, keys)), daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        for fifo in fifos:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
        thread.join(10)
        pytest.fail(f"the reader was still blocked after {seconds} s (a named pipe planted in the store)")
    return out["r"]


@pytest.mark.parametrize("what", ["fifo", "dir", "/dev/zero", "/etc/passwd"])
@pytest.mark.parametrize("target", ["published-manifest", "upload-file"])
def test_a_special_file_planted_in_a_file_store_is_a_rejected_entry(tmp_path, keys, target, what):
    shared = tmp_path / "shared"
    shared.mkdir()
    url = f"file://{shared}"
    key, _, _ = publish(tmp_path, url, keys)
    upload = next((entry_dir(shared, key) / "uploads").iterdir())
    path = published(shared, key, keys) if target == "published-manifest" else upload / "plan.bin"
    _plant(path, what)
    result, build, tier, warned = _fetch_within(10, tmp_path, url, keys, fifos=[path] if what == "fifo" else [])
    assert result.source == "built" and build.calls == 1
    assert tier.unavailable is None, f"a planted {what} switched the remote off: {tier.unavailable}"
    assert tier.stats.remote_rejected == 1
    assert len(warned) == 1 and "rejected the published engine entry" in warned[0], warned


def test_a_planted_folder_does_not_switch_the_remote_off(tmp_path, keys):
    shared = tmp_path / "shared"
    shared.mkdir()
    url = f"file://{shared}"
    key, _, _ = publish(tmp_path, url, keys)
    other = dict(PARTS, model="another model")
    ArtifactCache(tmp_path / "builder-cache", remote=builder(url, keys)).get_or_build("engine", other, Build())
    _plant(next((entry_dir(shared, key) / "uploads").iterdir()) / "plan.bin", "dir")
    tier = reader(url, keys)
    cache = ArtifactCache(tmp_path / "reader", remote=tier)
    with pytest.warns(CacheWarning, match=r"plan\.bin is not a regular file in the file:// store but a folder"):
        assert cache.get_or_build("engine", PARTS, Build()).source == "built"
    assert cache.get_or_build("engine", other, Build()).source == "remote", "the remote still serves other keys"


@pytest.mark.parametrize("walk", ["dir_fd", "lstat"])
@pytest.mark.parametrize("where", ["kind", "entry", "uploads"])
def test_a_builder_never_writes_through_a_link_planted_in_the_store(tmp_path, keys, where, walk, monkeypatch):
    """``walk``: descriptor-relative calls (POSIX), or the lstat/realpath checks used without them (Windows)."""
    if walk == "lstat":
        from pytest_trt.cache.remote import localfs

        monkeypatch.setattr(localfs, "_DIR_FD", False)
    shared, outside = tmp_path / "shared", tmp_path / "outside-the-store"
    shared.mkdir()
    outside.mkdir()
    kind_dir = shared / PREFIX / "engine"
    link = {"kind": kind_dir, "entry": kind_dir / ArtifactCache.key(PARTS),
            "uploads": kind_dir / ArtifactCache.key(PARTS) / "uploads"}[where]
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(outside, link)
    tier = builder(f"file://{shared}", keys)
    cache = ArtifactCache(tmp_path / "b", remote=tier)
    with pytest.warns(CacheWarning, match="symbolic link or not a folder; pytest-trt never writes through"):
        result = cache.get_or_build("engine", PARTS, Build())
    assert result.source == "built" and cache.validate("engine", PARTS) is None, "the local entry is intact"
    assert sorted(outside.rglob("*")) == [], "written outside the store"
    assert tier.stats.remote_uploads == 0 and tier.uploads_stopped


@pytest.mark.parametrize("walk", ["dir_fd", "lstat"])
def test_a_file_store_publishes_through_either_walk(tmp_path, keys, walk, monkeypatch):
    from pytest_trt.cache.remote import localfs

    monkeypatch.setattr(localfs, "_DIR_FD", walk == "dir_fd")
    (tmp_path / "shared").mkdir()
    url = f"file://{tmp_path / 'shared'}"
    publish(tmp_path, url, keys)
    result, build, _, warned = fetch_cold(tmp_path, url, keys)
    assert result.source == "remote" and build.calls == 0 and warned == []


# ---------------------------------------------------------------------- F4: the signing key


def _pem(keys) -> tuple[str, str]:
    pem = Path(keys["builder"]["private"]).read_text()
    return pem, "".join(line for line in pem.splitlines() if "-----" not in line)


@pytest.mark.parametrize("form", ["double-quoted", "single-quoted", "base64-body", "escaped-newlines"])
def test_the_signing_key_is_accepted_in_the_forms_ci_secrets_take(tmp_path, keys, form):
    pem, body = _pem(keys)
    value = {"double-quoted": f'"{pem.strip()}"', "single-quoted": f"'{pem}'", "base64-body": body,
             "escaped-newlines": pem.strip().replace("\n", "\\n")}[form]
    tier = RemoteTier(f"file://{tmp_path}", private_key=value)
    assert tier.mode == "rw" and list(tier.trusted) == [keys["builder"]["key_id"]]


@pytest.mark.parametrize("form", ["quoted-damaged-pem", "truncated-base64-body", "secret-looking-text"])
def test_a_bad_signing_key_is_a_usage_error_that_never_shows_it(pytester, keys, monkeypatch, form):
    pem, body = _pem(keys)
    damaged = pem.replace(body[10:30], "A" * 20)
    value = {"quoted-damaged-pem": f'"{damaged.strip()}"', "truncated-base64-body": body[:-8],
             "secret-looking-text": f"not-a-key-but-{SECRET}"}[form]
    monkeypatch.setenv("PYTEST_TRT_REMOTE_CACHE_KEY", value)
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest_inprocess(f"--trt-remote-cache=file://{pytester.path / 'r'}",
                                          f"--trt-remote-cache-trust={keys['builder']['public']}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stdout.str() + result.stderr.str()
    assert "$PYTEST_TRT_REMOTE_CACHE_KEY" in text
    for secret in (body[:24], body[-24:], body[30:50], SECRET):
        assert secret not in text, f"key material in the output: {text}"


# ---------------------------------------------------------------------- F5: credentials in URLs


@pytest.mark.parametrize("url, shown", [
    (f"http://user:{SECRET}@127.0.0.1:5/cache", "http://***@127.0.0.1:5/cache"),
    (f"http://user:{SECRET}@x@127.0.0.1:5/cache", "http://***@127.0.0.1:5/cache"),
    (f"http://127.0.0.1:5/cache?token={SECRET}", "http://127.0.0.1:5/cache?token=***"),
    (f"http://127.0.0.1:5/cache?a=1&sig={SECRET}", "http://127.0.0.1:5/cache?a=***&sig=***"),
    (f"webdav+https://u:{SECRET}@host/c#{SECRET}", "webdav+https://***@host/c#***"),
    ("file:///mnt/a@b/cache", "file:///mnt/a@b/cache"),
    ("http://[::1]:80/@scope/cache", "http://[::1]:80/@scope/cache"),
])
def test_the_url_is_shown_without_credentials(keys, url, shown):
    tier = RemoteTier(url, trusted=[keys["builder"]["public"]])
    assert tier.url == shown and SECRET not in repr(tier) and SECRET not in tier.describe()


@pytest.mark.parametrize("url", [f"s3://AKIAEXAMPLE:{SECRET}@bucket/trt", f"foo://user:{SECRET}@127.0.0.1/x",
                                 f"http://user:{SECRET}/x@127.0.0.1:9/cache"])
def test_a_url_that_cannot_be_opened_is_a_usage_error_without_its_secret(keys, url):
    try:
        tier = RemoteTier(url, trusted=[keys["builder"]["public"]])
    except UsageError as exc:
        message = str(exc)
        assert "--trt-remote-cache" in message and "***@" in message
    else:  # (s3fs installed: the URL opens, and is shown masked)
        message = tier.describe()
    assert SECRET not in message and "AKIAEXAMPLE" not in message, message


def test_exception_texts_are_redacted():
    from pytest_trt.cache.remote.urls import Redactor

    url = f"http://user:{SECRET}@127.0.0.1:5/cache?token=tok-{SECRET}"
    redact = Redactor(url, auth=f"admin:{SECRET}2")
    text = redact(f"Client error '403 Forbidden' for url 'http://user:{SECRET}@127.0.0.1:5/cache/pytest-trt"
                  f"-remote-v1/x?token=tok-{SECRET}' (auth admin:{SECRET}2, user%3A{SECRET})")
    assert SECRET not in text and "http://***@127.0.0.1:5/cache" in text, text


def test_no_secret_reaches_any_output(pytester, nginx, keys, monkeypatch):
    """r08 in CI form: a password holding '@', a token in the query and an auth secret, against a
    working server and a down one, through a builder's session with every report: the header,
    warnings, the JSON, HTML and JUnit reports and the local cache's files show none of them."""
    pytester.makepyfile(test_m=TRT_TEST)
    monkeypatch.setenv("PYTEST_TRT_REMOTE_CACHE_KEY", keys["builder"]["private"])
    monkeypatch.setenv("PYTEST_TRT_REMOTE_CACHE_AUTH", f"user:auth-{SECRET}")
    secrets = [SECRET, f"{SECRET}@x", "@x@"]
    for name, port in (("up", nginx.port), ("down", 9)):
        out = pytester.path / name
        html = [f"--trt-html={out / 'r.html'}"] if name == "up" else []  # (the HTML report is slow to write)
        result = pytester.runpytest_inprocess(
            "--trt-backend=emulate", f"--trt-remote-cache=http://user:{SECRET}@x@127.0.0.1:{port}/cache?token={SECRET}",
            f"--trt-cache-dir={out / 'cache'}", f"--trt-report={out / 'r.json'}", *html,
            f"--junitxml={out / 'j.xml'}", "-rA", "-p", "no:cacheprovider", "-W", "always::pytest_trt.errors.CacheWarning")
        result.assert_outcomes(passed=1)
        texts = {"stdout": result.stdout.str(), "stderr": result.stderr.str()}
        texts |= {str(p): p.read_text(errors="replace") for p in out.rglob("*") if p.is_file()}
        assert "r.json" in " ".join(texts) and "j.xml" in " ".join(texts)
        for where, text in texts.items():
            for secret in secrets:
                assert secret not in text, f"{name}: {secret!r} in {where}"
        assert "remote cache http://***@127.0.0.1:" in texts["stdout"]
        report = json.loads((out / "r.json").read_text())
        assert report["session"]["remote_cache"]["url"] == f"http://***@127.0.0.1:{port}/cache?token=***"


# ---------------------------------------------------------------------- F6: a malformed URL


BAD_URLS = ["http://[::1", "http://h:99999/x", f"http://u:pa/{SECRET}@127.0.0.1:9/c", "https://127.0.0.1:9/c\nx",
            "http://"]


@pytest.mark.parametrize("url", BAD_URLS)
def test_a_malformed_remote_url_is_a_usage_error_naming_the_option(pytester, keys, url):
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest_inprocess(f"--trt-remote-cache={url}",
                                          f"--trt-remote-cache-trust={keys['builder']['public']}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text and "Traceback" not in text
    assert "--trt-remote-cache " in result.stderr.str() and SECRET not in text


def test_a_malformed_url_from_the_environment_names_the_variable(pytester, keys, monkeypatch):
    monkeypatch.setenv("PYTEST_TRT_REMOTE_CACHE", "http://[::1")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest_inprocess(f"--trt-remote-cache-trust={keys['builder']['public']}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*$PYTEST_TRT_REMOTE_CACHE http://[::1: not a valid URL*"])


@pytest.mark.parametrize("url", BAD_URLS)
def test_cli_a_malformed_remote_url_is_exit_2(tmp_path, keys, capsys, url):
    from pytest_trt.cli import main

    rc = main(["compare", str(ENCODER), "--backend", "emulate", "--cache-dir", str(tmp_path / "c"),
               "--remote-cache", url, "--remote-cache-trust", keys["builder"]["public"]])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "--remote-cache " in err and "--trt-" not in err and "Traceback" not in err and SECRET not in err


def test_an_unreachable_remote_at_start_is_a_warning_and_local_builds(pytester, keys):
    """ftp:// connects when its filesystem is created: refused there, it is reported like a
    WebDAV server that is down (once, then local builds), not an internal error."""
    pytester.makepyfile(test_m=TRT_TEST)
    result = pytester.runpytest_inprocess("--trt-backend=emulate", "--trt-remote-cache=ftp://127.0.0.1:9/x",
                                          f"--trt-remote-cache-trust={keys['builder']['public']}",
                                          f"--trt-cache-dir={pytester.path / 'c'}", "-p", "no:cacheprovider",
                                          "-W", "always::pytest_trt.errors.CacheWarning")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*CacheWarning*ftp://127.0.0.1:9/x*Connection*refused*not used for the rest*"])


# ---------------------------------------------------------------------- F9: a killed upload


class Killed(BaseException):
    """The builder process dies (kill -9 in the audit's r18)."""


def test_a_builder_killed_mid_upload_publishes_the_entry_on_its_next_run(tmp_path, remote, keys):
    url, root = remote
    tier = builder(url, keys)
    real_write = tier.transport.write

    def write_then_die(path, source):
        real_write(path, source)
        raise Killed

    tier.transport.write = write_then_die
    with pytest.raises(Killed):
        ArtifactCache(tmp_path / "b", remote=tier).get_or_build("engine", PARTS, Build())
    key = ArtifactCache.key(PARTS)
    assert not published(root, key, keys).exists()

    again = builder(url, keys)  # the next run, with the same (persistent) local cache
    cache = ArtifactCache(tmp_path / "b", remote=again)
    result = cache.get_or_build("engine", PARTS, Build())
    assert result.source == "local" and again.stats.remote_uploads == 1
    assert published(root, key, keys).exists()
    requests = again.stats.remote_requests
    assert cache.get_or_build("engine", PARTS, Build()).source == "local"
    assert again.stats.remote_requests == requests, "one existence check per key and session"

    fresh, build, _, warned = fetch_cold(tmp_path, url, keys)
    assert fresh.source == "remote" and build.calls == 0 and warned == []
    # a local hit fetched from the remote is not uploaded again, nor looked for
    fetched_by_a_builder = builder(url, keys)
    ArtifactCache(tmp_path / "reader-cache", remote=fetched_by_a_builder).get_or_build("engine", PARTS, Build())
    assert fetched_by_a_builder.stats.remote_requests == 0


# ---------------------------------------------------------------------- F12: a deadline per entry


class _Trickle(http.server.BaseHTTPRequestHandler):
    """GET of a manifest: served whole from ``server.store`` when it exists there (a genuine
    store), else 1 MB announced and sent 1 byte per 0.1 s. Any other file: its real length
    announced, sent 1 byte per 0.1 s. Gives up after ``server.trickle_for`` seconds."""

    def do_GET(self):  # noqa: N802 (http.server's name)
        store = self.server.store  # type: ignore[attr-defined]
        local = store / self.path.split("?")[0].removeprefix("/cache/") if store else None
        if local is not None and not local.is_file():
            self.send_error(404)
            return
        body = local.read_bytes() if local is not None else b" " * 1_000_000
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if local is not None and local.name.startswith("manifest."):
            self.wfile.write(body)
            return
        end = time.monotonic() + self.server.trickle_for  # type: ignore[attr-defined]
        for byte in body:
            if time.monotonic() > end:
                return
            try:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
            except OSError:
                return
            time.sleep(0.1)

    def log_message(self, *args):
        pass


@pytest.fixture
def trickle():
    """Start a trickling HTTP server on loopback: ``trickle(store=None)`` -> its cache URL."""
    servers = []

    def start(store: Path | None = None) -> str:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
        server.daemon_threads = True
        server.store, server.trickle_for = store, 8.0  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/cache"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def test_a_trickling_manifest_is_given_up_at_the_deadline(tmp_path, keys, trickle):
    tier = RemoteTier(trickle(), mode="ro", trusted=[keys["builder"]["public"]], timeout=1.0)
    cache = ArtifactCache(tmp_path / "c", remote=tier)
    build = Build()
    t0 = time.monotonic()
    with pytest.warns(CacheWarning, match=r"not delivered within 1 s \(--trt-remote-cache-timeout=1\).*not used "
                                          r"for the rest of this session"):
        result = cache.get_or_build("engine", PARTS, build)
    assert time.monotonic() - t0 < 4, "the reader was held past its deadline"
    assert result.source == "built" and build.calls == 1 and tier.unavailable
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not asked again, no second warning
        cache.get_or_build("engine", dict(PARTS, model="second"), Build())


def test_a_trickling_file_is_given_up_at_the_deadline_plus_its_allowance(tmp_path, keys, trickle):
    store = tmp_path / "store"
    store.mkdir()
    publish(tmp_path, f"file://{store}", keys)  # a genuine entry, served by the trickling server
    tier = RemoteTier(trickle(store), mode="ro", trusted=[keys["builder"]["public"]], timeout=1.0)
    cache = ArtifactCache(tmp_path / "c", remote=tier)
    t0 = time.monotonic()
    with pytest.warns(CacheWarning, match=r"not delivered within 1\.2 s \(--trt-remote-cache-timeout=1 plus 1 s "
                                          r"per MiB of its 0\.2 MiB\)"):
        result = cache.get_or_build("engine", PARTS, Build())
    assert time.monotonic() - t0 < 4 and result.source == "built"
    assert list((tmp_path / "c").rglob("plan.bin"))[0].read_bytes() == Build().files["plan.bin"], "the local build"


def test_the_remote_cache_timeout_option(pytester, keys, trickle):
    pytester.makepyfile(test_m=TRT_TEST)
    t0 = time.monotonic()
    result = pytester.runpytest_inprocess("--trt-backend=emulate", f"--trt-remote-cache={trickle()}",
                                          "--trt-remote-cache-timeout=0.5",
                                          f"--trt-remote-cache-trust={keys['builder']['public']}",
                                          f"--trt-cache-dir={pytester.path / 'c'}", "-p", "no:cacheprovider",
                                          "-W", "always::pytest_trt.errors.CacheWarning")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*not delivered within 0.5 s (--trt-remote-cache-timeout=0.5)*"])
    assert time.monotonic() - t0 < 8
    for bad, why in (("0", "must be more than 0 seconds"), ("inf", "must be finite"), ("x", "could not convert")):
        failed = pytester.runpytest_inprocess(f"--trt-remote-cache-timeout={bad}", "--trt-remote-cache=file:///x",
                                              f"--trt-remote-cache-trust={keys['builder']['public']}")
        assert failed.ret == pytest.ExitCode.USAGE_ERROR
        failed.stderr.fnmatch_lines([f"*--trt-remote-cache-timeout*{why}*"])
        assert "tolerance" not in failed.stderr.str()


def test_the_default_timeout_is_stated_once(capsys):
    from pytest_trt.cache.remote.layout import DEFAULT_TIMEOUT
    from pytest_trt.cli import main
    from pytest_trt.run.settings import OPTIONS_BY_DEST, Settings

    assert OPTIONS_BY_DEST["trt_remote_cache_timeout"].default == Settings().remote_cache_timeout == DEFAULT_TIMEOUT
    assert f"(default: {DEFAULT_TIMEOUT:g})" in OPTIONS_BY_DEST["trt_remote_cache_timeout"].help
    with pytest.raises(SystemExit) as exited:
        main(["compare", "m.onnx", "--remote-cache-timeout", "0"])
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert "--remote-cache-timeout: must be > 0" in err


# ---------------------------------------------------------------------- F13b: the local disk


def test_a_full_local_disk_during_a_download_is_the_local_disks_error(tmp_path, remote, keys, monkeypatch):
    url, _ = remote
    publish(tmp_path, url, keys)
    from pytest_trt.cache.remote import transport

    real_open = open

    def on_a_full_disk(path, mode="r", *args, **kwargs):
        if mode == "xb":  # the local copy of a downloaded file: /dev/full answers every write ENOSPC
            return real_open("/dev/full", "wb")
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr(transport, "open", on_a_full_disk, raising=False)
    tier = reader(url, keys)
    cache = ArtifactCache(tmp_path / "reader", remote=tier)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(CacheError, match=r"No space left on device.*Nothing was stored.*disk is full"):
            cache.get_or_build("engine", PARTS, Build())
    assert not any("remote cache is full" in str(w.message) for w in caught), [str(w.message) for w in caught]
    assert tier.unavailable is None, "the remote is fine: it stays in use"
    assert list((tmp_path / "reader").glob("engine/*")) == [], "nothing was stored"


# ---------------------------------------------------------------------- F7: keygen input


@pytest.mark.parametrize("args, expect", [
    (["--out", "a_file"], "--out a_file: not a directory"),
    (["--out", "/proc/self"], "--out /proc/self: cannot write the key files there"),
    (["--name", "a/b"], "--name 'a/b': it is a path, not a file name; give the folder with --out"),
    (["--name", ""], "--name '': it is empty (the files would be the hidden '.key' and '.pub')"),
    (["--name", "../../x"], "it is a path"),
    (["--name", ".hidden"], "it starts with '.'"),
])
def test_keygen_bad_input_is_a_usage_error(tmp_path, monkeypatch, capsys, args, expect):
    from pytest_trt.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "a_file").write_text("not a directory")
    assert main(["remote-cache", "keygen", *args]) == 2
    err = capsys.readouterr().err
    assert expect in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a_file"], "nothing written"


def test_keygen_bad_input_exits_2_from_the_console_script(tmp_path):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "pytest_trt.cli", "remote-cache", "keygen", "--out", str(tmp_path),
                           "--name", ""], capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "--name ''" in proc.stderr, proc.stderr
    assert list(tmp_path.iterdir()) == []
