"""Remote engine cache: a runner with a cold local cache and a warm remote vs fully cold vs fully warm.

Run: ``python bench/remote_cache.py [--rounds 3] [--no-rtx] [--no-suite]``

Needs nginx with WebDAV (``apt-get install -y nginx libnginx-mod-http-dav-ext``; started here on
127.0.0.1 with the tests' configuration) and the ``remote`` extra.

Part 1, real builds (TensorRT-RTX 1.7.1's builder on the CPU: ``pip install
tensorrt-rtx-cu13-libs==1.7.1.116 tensorrt-rtx-cu13-bindings==1.7.1.116 tensorrt-rtx-cu13==1.7.1.116``):
the checked-in models (example suite and tests/data exports) are planned FP16 with LayerNorm kept
FP32, realized strongly typed by pytest-trt and built into serialized engines through
:class:`~pytest_trt.cache.ArtifactCache`, one "session" per scenario, each with a fresh cache
object in this process:

* ``cold, no remote``: empty local cache, no remote tier (every engine built);
* ``cold, remote rw``: empty local cache, empty remote, a builder (builds, uploads, publishes);
* ``cold local, warm remote``: empty local cache, the remote the builder filled, a read-only
  runner (every engine fetched, verified, installed);
* ``warm``: the local cache that run filled, remote configured (every engine a local hit);
* ``cold local, warm remote (file://)``: the same as the third over a shared directory.

Engines are not loaded (no GPU here): the figures are the cache's. Wall seconds are best of
``--rounds`` (the remote and local caches are rebuilt for every round); bytes and HTTP requests
are from nginx's access log (request line + body in, response body out), checked against the
tier's own counters.

Part 2, the example suite as users run it (``pytest example_suite --trt-fp16``, emulate backend,
subprocesses): cold without a remote, cold with a builder remote, cold local with the warm remote
(read-only), warm;
with the JSON report's cache figures. Emulation "builds" take milliseconds, so here the remote
costs time: it shows the overhead of the tier itself, not its benefit.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _machine import machine  # noqa: E402  (bench/ is run as scripts)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "remote_cache"))
from nginx_server import Nginx  # noqa: E402

MODELS = [ROOT / "example_suite" / "models" / n for n in ("encoder_opset14.onnx", "encoder_opset17.onnx",
                                                           "convnet.onnx")]
MODELS += sorted((ROOT / "tests" / "data").glob("*_tiny_opset1[47].onnx"))


def rtx_build_fn(path: Path):
    """A build callback: plan FP16 (LayerNorm FP32), realize strongly typed, build with TensorRT-RTX."""
    import tensorrt_rtx as trt

    from pytest_trt.errors import PatternError
    from pytest_trt.model.load import load_model
    from pytest_trt.plan.policy import PrecisionPolicy
    from pytest_trt.realize import realize_strong

    model = load_model(path)
    for keep in (("*/LayerNorm/*",), ("op:LayerNormalization",), ()):  # whichever spelling the model has
        try:
            plan = PrecisionPolicy(default="fp16", keep_fp32=keep).resolve(model)
            break
        except PatternError:
            continue
    data = realize_strong(plan).SerializeToString()
    parts = {"model": model.sha256, "plan": plan.fingerprint(), "trt": trt.__version__, "bench": "remote_cache"}

    def build(tmp: Path) -> None:
        logger = trt.Logger(trt.Logger.ERROR)
        builder = trt.Builder(logger)
        network = builder.create_network(1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED))
        parser = trt.OnnxParser(network, logger)
        if not parser.parse(data):
            raise RuntimeError(f"{path.name}: {[str(parser.get_error(i)) for i in range(parser.num_errors)]}")
        config = builder.create_builder_config()
        profile = builder.create_optimization_profile()
        for i in range(network.num_inputs):
            t = network.get_input(i)
            shape = [d if d > 0 else (1 if k == 0 else 16) for k, d in enumerate(t.shape)]
            profile.set_shape(t.name, shape, shape, shape)
        config.add_optimization_profile(profile)
        engine = builder.build_serialized_network(network, config)
        if engine is None:
            raise RuntimeError(f"{path.name}: build failed")
        (tmp / "engine.plan").write_bytes(bytes(engine))

    return path.name, parts, build


def traffic(server: Nginx, since: int) -> tuple[int, int]:
    """(requests, bytes) in nginx's access log after line ``since``."""
    lines = server.requests()[since:]
    total = 0
    for line in lines:
        _, _, _, sent, received = line.split()
        total += int(sent) + int(received)
    return len(lines), total


def part1(rounds: int, tmp: Path) -> None:
    from pytest_trt.cache import ArtifactCache
    from pytest_trt.cache.remote import RemoteTier, generate_keypair

    builds = [rtx_build_fn(p) for p in MODELS]
    keys = generate_keypair(tmp / "keys", "bench")
    server = Nginx(tmp / "nginx")
    server.start()
    best: dict[str, dict] = {}
    try:
        for r in range(rounds):
            shutil.rmtree(server.root / "cache" / "pytest-trt-remote-v1", ignore_errors=True)
            shared = tmp / f"shared{r}"
            shared.mkdir()
            scenarios = [
                ("cold, no remote", tmp / f"a{r}", None),
                ("cold, remote rw", tmp / f"b{r}", lambda: RemoteTier(server.url, mode="rw",
                                                                       private_key=keys["private"])),
                ("cold local, warm remote", tmp / f"c{r}", lambda: RemoteTier(server.url, mode="ro",
                                                                               trusted=[keys["public"]])),
                ("warm", tmp / f"c{r}", lambda: RemoteTier(server.url, mode="ro", trusted=[keys["public"]])),
                ("cold, remote rw (file://)", tmp / f"d{r}", lambda shared=shared: RemoteTier(f"file://{shared}", mode="rw",
                                                                                  private_key=keys["private"])),
                ("cold local, warm remote (file://)", tmp / f"e{r}",
                 lambda shared=shared: RemoteTier(f"file://{shared}", mode="ro", trusted=[keys["public"]])),
            ]
            for name, local, make in scenarios:
                tier = make() if make else None
                cache = ArtifactCache(local, remote=tier)
                before = len(server.requests())
                t0 = time.perf_counter()
                sources = [cache.get_or_build("engine", parts, build, label=label).source
                           for label, parts, build in builds]
                wall = time.perf_counter() - t0
                requests, moved = traffic(server, before)
                s = cache.stats
                row = {"wall": wall, "built": sources.count("built"), "remote": sources.count("remote"),
                       "local": sources.count("local"), "requests": requests if "file" not in name else s.remote_requests,
                       "bytes": moved if "file" not in name else s.remote_bytes, "tier_bytes": s.remote_bytes,
                       "tier_requests": s.remote_requests, "engine_bytes": sum(
                           (cache.entry_path("engine", p) / "engine.plan").stat().st_size for _, p, _ in builds),
                       "build_seconds": s.build_seconds}
                if name not in best or wall < best[name]["wall"]:
                    best[name] = row
    finally:
        server.stop()
    import tensorrt_rtx

    print(f"\nPart 1: {len(builds)} engines built by TensorRT-RTX {tensorrt_rtx.__version__} on the CPU "
          f"({', '.join(p.name for p in MODELS)}); best of {rounds}")
    print(f"{'scenario':<36} {'wall s':>7} {'built':>5} {'remote':>6} {'local':>5} {'requests':>8} "
          f"{'bytes moved':>11} {'engine bytes':>12}")
    for name, row in best.items():
        print(f"{name:<36} {row['wall']:>7.2f} {row['built']:>5} {row['remote']:>6} {row['local']:>5} "
              f"{row['requests']:>8} {row['bytes']:>11,} {row['engine_bytes']:>12,}")
        if "file" not in name and row["tier_requests"] != row["requests"]:
            print(f"   (the tier counted {row['tier_requests']} requests, nginx logged {row['requests']})")


def part2(tmp: Path) -> None:
    from pytest_trt.cache.remote import generate_keypair

    keys = generate_keypair(tmp / "keys2", "suite")
    server = Nginx(tmp / "nginx2")
    server.start()
    plain = [sys.executable, "-m", "pytest", "example_suite", "--trt-fp16", "-q", "-p", "no:cacheprovider"]
    runs = [("cold, no remote", "s0", None),
            ("cold, remote rw", "s1", {"PYTEST_TRT_REMOTE_CACHE_KEY": keys["private"]}),
            ("cold local, warm remote", "s2", {"PYTEST_TRT_REMOTE_CACHE_TRUST": keys["public"]}),
            ("warm", "s2", {"PYTEST_TRT_REMOTE_CACHE_TRUST": keys["public"]})]
    print("\nPart 2: pytest example_suite --trt-fp16 (emulate backend), subprocesses")
    print(f"{'scenario':<26} {'wall s':>7} {'outcome':<28} {'local':>5} {'builds':>6} {'remote hits':>11} "
          f"{'uploads':>7} {'requests':>8} {'bytes':>10}")
    try:
        for name, local, env_extra in runs:
            env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_TRT_")}
            env.update(env_extra or {})
            base = plain + (["--trt-remote-cache", server.url] if env_extra is not None else [])
            report = tmp / f"{local}-{name.replace(' ', '_')}.json"
            before = len(server.requests())
            t0 = time.perf_counter()
            proc = subprocess.run(base + [f"--trt-cache-dir={tmp / local}", f"--trt-report={report}"],
                                  cwd=ROOT, env=env, capture_output=True, text=True)
            wall = time.perf_counter() - t0
            requests, moved = traffic(server, before)
            outcome = proc.stdout.strip().splitlines()[-1].strip("= ") if proc.stdout.strip() else proc.stderr[-200:]
            s = json.loads(report.read_text())["summary"]
            print(f"{name:<26} {wall:>7.2f} {outcome[:28]:<28} {s['local_hits']:>5} {s['cache_builds']:>6} "
                  f"{s['remote_hits']:>11} {s['remote_uploads']:>7} {requests:>8} {moved:>10,}")
    finally:
        server.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-rtx", action="store_true", help="skip part 1 (TensorRT-RTX builds)")
    ap.add_argument("--no-suite", action="store_true", help="skip part 2 (the example suite)")
    args = ap.parse_args()
    print(machine())
    with tempfile.TemporaryDirectory(prefix="bench-remote-") as d:
        if not args.no_rtx:
            part1(args.rounds, Path(d))
        if not args.no_suite:
            part2(Path(d))


if __name__ == "__main__":
    main()
