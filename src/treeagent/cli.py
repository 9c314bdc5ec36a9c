"""Command line: ``treeagent sections|score|query|report ...``.

Heavy imports stay inside the command functions to keep start-up fast.
"""

from __future__ import annotations

import argparse
import sys


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="treeagent", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    from treeagent import cli_sections

    cli_sections.register(sub)
    try:
        from treeagent.report import cli as report_cli
    except ImportError:  # scoring/report commands not installed in this build
        return parser
    report_cli.register(sub)
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
