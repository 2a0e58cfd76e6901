"""The real TensorRT Python bindings of every supported version, imported on a CPU machine.

Measured (shared/GROUND_TRUTH.md section 1, re-checked for every version below): the bindings
wheels (``tensorrt-cu12-bindings``, ``tensorrt-rtx-cu13-bindings``; about 1.2 MB each) contain
``tensorrt_bindings/tensorrt.so`` (``tensorrt_rtx_bindings/tensorrt_rtx.so``), which needs only
nine C entry points from TensorRT's libraries. Stub libraries built from ``stub_trt.c`` with the
system C compiler under every name the bindings load (``libnvinfer.so.10``, ...,
``libtensorrt_rtx.so.1``, ``libtensorrt_onnxparser_rtx.so.1``) let ``import tensorrt_bindings``
succeed; no object can be constructed, but every class, enum value, property and docstring
signature is the real one.

Wheels are downloaded once (``pip download --no-deps --only-binary=:all:``, the package index
is the only network used) into the cache directory, ``$PYTEST_TRT_API_CACHE`` or
``~/.cache/pytest-trt/trt-api``; never into the repository. The dumped surface of each version
is cached beside it (keyed by the dumper's and the adapter's source, so a code change redumps).
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CACHE_ENV = "PYTEST_TRT_API_CACHE"
STUB_SOURCE = HERE / "stub_trt.c"
DUMPER = HERE / "dump_surface.py"
#: every library name a bindings module of the matrix loads (readelf -d ... NEEDED)
STUB_NAMES = (
    "libnvinfer.so.10", "libnvonnxparser.so.10", "libnvinfer_plugin.so.10",
    "libnvinfer.so.11", "libnvonnxparser.so.11", "libnvinfer_plugin.so.11",
    "libtensorrt_rtx.so.1", "libtensorrt_onnxparser_rtx.so.1",
)


@dataclass(frozen=True)
class Release:
    """One version of the matrix: the package on the index and the module inside it."""

    version: str
    package: str = "tensorrt-cu12-bindings"
    module: str = "tensorrt_bindings"
    alias: str = "tensorrt"

    @property
    def rtx(self) -> bool:
        return self.alias == "tensorrt_rtx"

    @property
    def id(self) -> str:
        return ("rtx-" if self.rtx else "trt-") + self.version

    @property
    def short(self) -> str:
        """The version as the fake is configured: ``10.13.3.9`` -> ``10.13.3.9``; RTX keeps its own."""
        return self.version


#: The supported versions (issue 17): the first and last 10.x, the 10.x releases where the API
#: changed (10.8 before the debug-tensor additions, 10.12 deprecating weak typing, 10.13 with the
#: cu13 wheels), the first and last 11.x, and TensorRT-RTX.
MATRIX = (
    Release("10.0.1"),
    Release("10.8.0.43"),
    Release("10.12.0.36"),
    Release("10.13.3.9"),
    Release("10.16.1.11"),
    Release("11.0.0.114"),
    Release("11.4.0.106"),
    Release("1.7.1.116", "tensorrt-rtx-cu13-bindings", "tensorrt_rtx_bindings", "tensorrt_rtx"),
)


class Unavailable(Exception):
    """What the tier needs from outside Python is missing; ``str()`` is the exact skip reason."""


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "pytest-trt" / "trt-api")


def _lock(path: Path):
    from filelock import FileLock

    path.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(str(path) + ".lock")


def build_stubs(root: Path) -> Path:
    """Compile ``stub_trt.c`` once under every name in :data:`STUB_NAMES`; returns the directory."""
    digest = hashlib.sha256(STUB_SOURCE.read_bytes()).hexdigest()[:12]
    out = root / f"stubs-{digest}"
    with _lock(out):
        if all((out / n).exists() for n in STUB_NAMES):
            return out
        cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
        if not cc:
            raise Unavailable("no C compiler (cc) on PATH: install gcc to build the stub TensorRT libraries")
        out.mkdir(parents=True, exist_ok=True)
        for name in STUB_NAMES:
            tmp = out / f"{name}.tmp"
            proc = subprocess.run([cc, "-shared", "-fPIC", "-o", str(tmp), f"-Wl,-soname,{name}", str(STUB_SOURCE)],
                                  capture_output=True, text=True, check=False)
            if proc.returncode:
                raise RuntimeError(f"{cc} failed to build {name}: {proc.stderr.strip()}")
            os.replace(tmp, out / name)
    return out


_OFFLINE = ("NewConnectionError", "Max retries", "Temporary failure in name resolution", "Network is unreachable",
            "ConnectTimeout", "ProxyError", "No route to host", "Name or service not known")


def fetch(release: Release, root: Path) -> Path:
    """Download and unzip the bindings wheel once; returns the directory to put on ``PYTHONPATH``."""
    target = root / "wheels" / f"{release.package}-{release.version}"
    with _lock(target):
        if (target / release.module).is_dir():
            return target
        dl = root / "downloads"
        dl.mkdir(parents=True, exist_ok=True)
        wheels = sorted(dl.glob(f"{release.package.replace('-', '_')}-{release.version}-*.whl"))
        if not wheels:
            proc = subprocess.run(
                [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
                 "--only-binary=:all:", "-d", str(dl), f"{release.package}=={release.version}"],
                capture_output=True, text=True, check=False, timeout=600)
            said = (proc.stderr or proc.stdout).strip()
            if proc.returncode:
                if any(s in said for s in _OFFLINE):
                    raise Unavailable(f"package index not reachable: pip download {release.package}=="
                                      f"{release.version} failed ({said.splitlines()[-1]})")
                raise RuntimeError(f"pip download {release.package}=={release.version} failed:\n{said}")
            wheels = sorted(dl.glob(f"{release.package.replace('-', '_')}-{release.version}-*.whl"))
            if not wheels:
                raise RuntimeError(f"pip download {release.package}=={release.version} left no wheel in {dl}")
        tmp = target.with_name(target.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        with zipfile.ZipFile(wheels[-1]) as zf:
            zf.extractall(tmp)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
    return target


def _dump_key() -> str:
    h = hashlib.sha256()
    for p in (DUMPER, REPO / "pytest_trt" / "backends" / "tensorrt" / "compat.py",
              REPO / "pytest_trt" / "backends" / "tensorrt" / "versions.py", STUB_SOURCE):
        h.update(p.read_bytes())
    return h.hexdigest()[:12]


def subprocess_env(release: Release, root: Path) -> dict[str, str]:
    stubs = build_stubs(root)
    site = fetch(release, root)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(stubs), env.get("LD_LIBRARY_PATH", "")) if p)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


def surface(release: Release, root: Path | None = None) -> dict:
    """The real surface of ``release`` (see ``dump_surface.py``), from the cache or a fresh dump."""
    root = root or cache_dir()
    out = root / "surfaces" / f"{release.id}-{_dump_key()}.json"
    if out.exists():
        return json.loads(out.read_text())
    env = subprocess_env(release, root)
    proc = subprocess.run([sys.executable, str(DUMPER), release.module, release.alias], env=env,
                          capture_output=True, text=True, check=False, timeout=300)
    if proc.returncode:
        raise RuntimeError(f"importing the real {release.module} {release.version} against the stub libraries "
                           f"failed:\n{proc.stderr.strip()[-3000:]}")
    data = json.loads(proc.stdout)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, sort_keys=True))
    os.replace(tmp, out)
    return data


def all_surfaces(root: Path | None = None) -> dict[str, dict]:
    """Every version of the matrix, downloaded and dumped in parallel: ``{release.id: surface}``.

    Raises :class:`Unavailable` (the exact skip reason) when no compiler or no index is there.
    """
    root = root or cache_dir()
    build_stubs(root)
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(MATRIX)) as pool:
        futures = {r.id: pool.submit(surface, r, root) for r in MATRIX}
        out, errors = {}, []
        for rid, fut in futures.items():
            try:
                out[rid] = fut.result()
            except Unavailable:
                raise
            except Exception as exc:  # collect all, report together
                errors.append(f"{rid}: {exc}")
    if errors:
        raise RuntimeError("\n".join(errors))
    return out
