"""A real nginx WebDAV server on 127.0.0.1 for the remote cache tests and bench/remote_cache.py.

Needs nginx and its WebDAV PROPFIND module from the system packages
(``apt-get install -y nginx libnginx-mod-http-dav-ext``). The configuration, pid file, logs and
temporary directories are written under the directory given, so it runs as any user.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path


class NginxMissing(Exception):
    """nginx or its dav-ext module is not installed; the message is the exact reason and the fix."""


NGINX_HINT = "apt-get install -y nginx libnginx-mod-http-dav-ext"
DAV_EXT_MODULE = "ngx_http_dav_ext_module.so"
MODULE_DIRS = ("/usr/lib/nginx/modules", "/usr/lib64/nginx/modules", "/usr/share/nginx/modules")


def _find_nginx() -> tuple[str, str]:
    nginx = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx", "/sbin/nginx") if os.path.exists(p)), None)
    if nginx is None:
        raise NginxMissing(f"nginx not found: {NGINX_HINT}")
    module = next((os.path.join(d, DAV_EXT_MODULE) for d in MODULE_DIRS if os.path.exists(os.path.join(d, DAV_EXT_MODULE))),
                  None)
    if module is None:
        raise NginxMissing(f"nginx's WebDAV PROPFIND module ({DAV_EXT_MODULE}) not found: {NGINX_HINT}")
    return nginx, module


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


CONFIG = """
daemon off;
worker_processes 1;
{user}
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
load_module {module};
events {{ worker_connections 64; }}
http {{
    log_format counted '$request_method $uri $status $body_bytes_sent $request_length';
    access_log {tmp}/access.log counted;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    server {{
        listen 127.0.0.1:{port};
        root {root};
        client_max_body_size 1g;
        location / {{
            dav_methods PUT DELETE MKCOL COPY MOVE;
            dav_ext_methods PROPFIND OPTIONS;
            create_full_put_path on;
            dav_access user:rw group:rw all:r;
        }}
        # a full disk: every write answers 507 Insufficient Storage, reads work
        location /full/ {{
            if ($request_method ~ ^(PUT|MKCOL|MOVE|COPY)$) {{ return 507; }}
            dav_ext_methods PROPFIND OPTIONS;
        }}
        # WebDAV without create_full_put_path: a PUT under a missing collection answers 409
        location /plain/ {{
            dav_methods PUT DELETE MKCOL COPY MOVE;
            dav_ext_methods PROPFIND OPTIONS;
        }}
        # a read-only share: PROPFIND and GET only (PUT answers 405)
        location /ro/ {{
            dav_ext_methods PROPFIND OPTIONS;
        }}
    }}
}}
"""


class Nginx:
    """A real nginx WebDAV server on 127.0.0.1, its files under ``root`` (what the server stores)."""

    def __init__(self, tmp: Path):
        self.binary, self.module = _find_nginx()
        self.tmp = tmp
        self.root = tmp / "dav"
        # the base collections of the URLs below (a WebDAV client creates what is under a base, not the base)
        for base in ("cache", "full/cache", "ro/cache", "plain/cache"):
            (self.root / base).mkdir(parents=True, exist_ok=True)
        self.port = _free_port()
        # As root, nginx's workers switch to `user` (default nobody, who cannot write tmp_path): keep
        # them root. As another user the directive is ignored and the workers run as that user.
        user = "user root root;" if os.geteuid() == 0 else ""
        (tmp / "nginx.conf").write_text(CONFIG.format(user=user, tmp=tmp, module=self.module, port=self.port,
                                                      root=self.root))
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/cache"

    @property
    def full_url(self) -> str:
        """The same server where every write answers 507 Insufficient Storage."""
        return f"http://127.0.0.1:{self.port}/full/cache"

    @property
    def plain_url(self) -> str:
        """The same server where PUT does not create missing collections (409 Conflict)."""
        return f"http://127.0.0.1:{self.port}/plain/cache"

    @property
    def ro_url(self) -> str:
        """The same server where writes are not allowed (405)."""
        return f"http://127.0.0.1:{self.port}/ro/cache"

    def start(self) -> None:
        self.proc = subprocess.Popen([self.binary, "-c", str(self.tmp / "nginx.conf"), "-p", str(self.tmp)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nginx exited at start: {self.proc.stderr.read().decode()} "
                                   f"{(self.tmp / 'error.log').read_text() if (self.tmp / 'error.log').exists() else ''}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError("nginx did not start listening within 20 s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None and self.proc.stderr is not None:
            self.proc.stderr.close()
        self.proc = None

    def requests(self) -> list[str]:
        """The access log's lines (``METHOD URI STATUS BYTES_SENT REQUEST_LENGTH``).

        nginx logs a request after answering it, so a client may see the answer before the
        line exists: wait until the log has not grown for 0.2 s (at most 5 s).
        """
        log = self.tmp / "access.log"
        deadline = time.monotonic() + 5
        size = -1
        while time.monotonic() < deadline:
            now = log.stat().st_size if log.exists() else 0
            if now == size:
                break
            size = now
            time.sleep(0.2)
        return log.read_text().splitlines() if log.exists() else []


