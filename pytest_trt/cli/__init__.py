"""The ``pytest-trt`` console script: the plugin's pipeline outside a test.

Subcommands share the compare flags (spelled like Polygraphy's where they overlap):
``plan``, ``compare``, ``layers``, ``locate``, ``suggest``; ``cache list|prune`` shows and trims
the artifact cache; ``remote-cache keygen`` makes the signing keys of a remote engine cache. Exit status: 0 pass,
1 accuracy or precision failure, 2 usage or input error, 3 internal error, 141 output closed by its reader
(``pytest-trt plan ... | head``: what a shell reports for a command killed by SIGPIPE, 128 + 13).

The parser is built from light modules only (:mod:`~pytest_trt.cli.args`,
:mod:`~pytest_trt.cli.commands`): ``--help`` and usage errors import neither numpy, onnx,
ONNX Runtime nor Polygraphy; the chosen subcommand's module is imported when it runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

from .._version import __version__
from ..errors import AccuracyError, PrecisionError, PytestTrtError
from .args import check_args
from .commands import SUBCOMMANDS, add_subcommands
from .spelling import cli_spelling

__all__ = ["EXIT_FAIL", "EXIT_INTERNAL", "EXIT_OK", "EXIT_PIPE", "EXIT_USAGE", "SUBCOMMANDS", "build_parser", "main"]

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
#: stdout closed by its reader (``| head``): 128 + SIGPIPE, what a shell reports for a command SIGPIPE killed
EXIT_PIPE = 141


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse exits 2 on usage errors, as we do
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="pytest-trt",
        description="TensorRT engine accuracy testing outside pytest: precision plans, engine vs FP32 "
        "baseline comparison, layer reports, divergence localisation and FP32-island suggestions.",
        epilog="Exit status: 0 pass, 1 accuracy or precision failure, 2 usage or input error, "
        "3 internal error (a bug in pytest-trt: please report it with the traceback), "
        "141 standard output closed by its reader (e.g. `| head`; 128 + SIGPIPE, as a shell reports it).",
    )
    parser.add_argument("--version", action="version", version=f"pytest-trt {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    add_subcommands(sub)
    return parser


def main(argv=None) -> int:
    """Run the console script with ``argv`` (default: ``sys.argv[1:]``); returns the exit status.

    A reader that closes standard output early (``pytest-trt plan ... | head``) is no error of
    pytest-trt: the rest of the output is dropped without a traceback and the status is
    :data:`EXIT_PIPE`, as the Python documentation recommends for ``BrokenPipeError`` (signal
    module, "Note on SIGPIPE")."""
    try:
        status = _main(argv)
        sys.stdout.flush()  # inside the try: a pipe closed after the last write breaks here, not at exit
        return status
    except BrokenPipeError:
        _drop_stdout()
        return EXIT_PIPE


def _drop_stdout() -> None:
    """Point standard output at /dev/null, so the interpreter's final flush of what is still buffered
    does not raise again ("Exception ignored ... BrokenPipeError") at exit."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by a stream without a descriptor (a test's capture)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def _main(argv=None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if not getattr(args, "command", None):
        if extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        parser.print_help()
        return EXIT_USAGE
    if extra:  # the subcommand's usage, not the top level's
        args.subparser.error(f"unrecognized arguments: {' '.join(extra)}")
    check_args(args, args.subparser)
    try:
        return int(args.run(args) or 0)
    except (AccuracyError, PrecisionError) as exc:
        print(cli_spelling(str(exc)), file=sys.stderr)
        return EXIT_FAIL
    except PytestTrtError as exc:
        print(f"pytest-trt {args.command}: error: {cli_spelling(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("pytest-trt: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader of stdout is gone (| head): main() ends quietly with EXIT_PIPE
        raise
    except Exception:  # never exit 1 (= "accuracy failure") because of our own bug
        traceback.print_exc()
        print(f"pytest-trt {args.command}: internal error (exit {EXIT_INTERNAL}); please report it with the "
              f"traceback above", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
