"""Command line: ``treeagent sections|run|bench|score|query|report ...``.

Heavy imports stay inside the command functions to keep start-up fast.
"""

from __future__ import annotations

import argparse
import sys

_COMMAND_MODULES = (
    "treeagent.cli_sections",  # treeagent sections
    "treeagent.report.cli",  # treeagent score | query | report
    "treeagent.cli_run",  # treeagent run
    "treeagent.bench.cli",  # treeagent bench build | show
)
"""Each module has ``register(subparsers)``; heavy imports stay in its command functions."""


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="treeagent", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    import importlib

    for name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:  # a command module not (yet) in this build
            if exc.name != name:
                raise
            continue
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
