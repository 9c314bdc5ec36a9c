"""``treeagent view``: open the per-example viewer the report stage wrote
(``reports/examples/``, :mod:`treeagent.report.viewer`) in the default browser."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``view`` subcommand."""
    p = sub.add_parser("view", help="open the per-example viewer (reports/examples/) in a "
                                    "browser: each example's context, sections, steps and memory")
    p.add_argument("example", nargs="?",
                   help="an example id: open its page (default: the index of examples)")
    p.add_argument("--run", help="the run to open the example at, as agent/method "
                                 "(e.g. memagent/treeagent); default: the first")
    p.add_argument("--reports", default="reports",
                   help="the report folder whose examples/ to open")
    p.add_argument("--print", action="store_true", dest="print_only",
                   help="print the page's file:// address instead of opening a browser")
    p.set_defaults(func=run_view)


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def run_view(args: argparse.Namespace) -> int:
    import webbrowser
    from urllib.parse import quote

    from treeagent.report.viewer import INDEX, page_name

    folder = Path(args.reports) / "examples"
    target = folder / INDEX
    if not target.is_file():
        return _fail(f"{target}: no viewer here; the report stage writes it "
                     "(dvc repro report, or python flows/report.py)")
    if args.example:
        target = folder / page_name(args.example)
        if not target.is_file():
            return _fail(f"{args.example}: no page in {folder} (its index lists the examples)")
    elif args.run:
        return _fail("--run: name an example too (the index lists every run)")
    url = target.resolve().as_uri() + (f"#{quote(args.run, safe='/')}" if args.run else "")
    print(url)
    if not args.print_only and not webbrowser.open(url):
        print("no browser found: open the address above", file=sys.stderr)
    return 0
