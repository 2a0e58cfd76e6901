"""``pytest-trt remote-cache keygen``: the Ed25519 key pair of a fleet's remote engine cache."""

from __future__ import annotations

from ..cache.remote import generate_keypair
from .common import emit_json


def run_keygen(args) -> int:
    made = generate_keypair(args.out, args.name, directory_flag="--out", name_flag="--name")
    if args.json:
        emit_json(made)
        return 0
    print(f"private key (builders only; set PYTEST_TRT_REMOTE_CACHE_KEY to it): {made['private']}")
    print(f"public key (every runner: --trt-remote-cache-trust): {made['public']}")
    print(f"  {made['public_key']}")
    print(f"key id: {made['key_id']}")
    return 0
