"""``pytest-trt remote-cache keygen``: the Ed25519 key pair of a fleet's remote engine cache."""

from __future__ import annotations

from ..cache.remote import generate_keypair
from .common import emit_json


def add_parser(sub) -> None:
    p = sub.add_parser("remote-cache", help="manage the signing keys of a remote engine cache",
                       description="Keys of the remote engine cache (--trt-remote-cache). Builders hold the "
                       "private key ($PYTEST_TRT_REMOTE_CACHE_KEY); every runner trusts the public key "
                       "(--trt-remote-cache-trust).")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=type(p))
    keygen = actions.add_parser("keygen", help="make an Ed25519 key pair",
                                description="Write NAME.key (private, mode 0600: give it to builders only) "
                                "and NAME.pub (the 'ed25519:...' public key: give it to every runner) into DIR. "
                                "Never overwrites a key.")
    keygen.add_argument("--out", default=".", metavar="DIR", help="directory of the key files (default: .)")
    keygen.add_argument("--name", default="pytest-trt-cache", help="file name stem (default: pytest-trt-cache)")
    keygen.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    keygen.set_defaults(run=run_keygen)


def run_keygen(args) -> int:
    made = generate_keypair(args.out, args.name)
    if args.json:
        emit_json(made)
        return 0
    print(f"private key (builders only; set PYTEST_TRT_REMOTE_CACHE_KEY to it): {made['private']}")
    print(f"public key (every runner: --trt-remote-cache-trust): {made['public']}")
    print(f"  {made['public_key']}")
    print(f"key id: {made['key_id']}")
    return 0
