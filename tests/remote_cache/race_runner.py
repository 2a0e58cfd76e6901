"""One runner of the two-runner race (run as a subprocess by test_remote_cache.py).

Builds an entry of random bytes for a fixed key, uploads it, and waits at a barrier just
before publishing, so both runners have uploaded every file before either writes the
published manifest: the write-if-absent step alone decides the winner.

argv: URL PRIVATE_KEY PUBLIC_KEY LOCAL_CACHE BARRIER_DIR NAME
"""

import hashlib
import json
import os
import sys
import time
from pathlib import Path

from pytest_trt.cache import ArtifactCache
from pytest_trt.cache.remote import RemoteTier

url, private, public, local, barrier, name = sys.argv[1:7]
tier = RemoteTier(url, mode="rw", private_key=private, trusted=[public])
publish = tier.transport.publish_if_absent


def at_barrier(*args, **kwargs):
    Path(barrier, name).touch()
    deadline = time.monotonic() + 60
    while len(os.listdir(barrier)) < 2:
        if time.monotonic() > deadline:
            raise SystemExit("the other runner never reached the barrier")
        time.sleep(0.01)
    return publish(*args, **kwargs)


tier.transport.publish_if_absent = at_barrier
data = {"plan.bin": os.urandom(300_000), "sub/timing.cache": os.urandom(1000)}


def build(tmp):
    for rel, blob in data.items():
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / rel).write_bytes(blob)


result = ArtifactCache(local, remote=tier).get_or_build("engine", {"model": "race"}, build)
print(json.dumps({"source": result.source, "uploads": tier.stats.remote_uploads,
                  "lost": tier.stats.remote_lost_races,
                  "files": {rel: hashlib.sha256(blob).hexdigest() for rel, blob in data.items()}}))
