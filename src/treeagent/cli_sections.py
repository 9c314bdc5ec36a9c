"""``treeagent sections FILE``: print a document's TreeAgent sections (issue 2)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sections", help="section a JSON/HTML/YAML/JS file (Algorithm 1 + A.2)")
    p.add_argument("file")
    p.add_argument("--format", choices=["json", "html", "yaml", "javascript"])
    p.add_argument("--tokenizer", default="qwen3")
    p.add_argument("--budget", type=int, default=5000, help="base budget C (tokens)")
    p.add_argument("--no-search", action="store_true", help="use B = C (no budget search)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    from treeagent import formats, tokens
    from treeagent.preprocess import section_tree
    from treeagent.tree import ParseError

    path = Path(args.file)
    try:
        text = formats.read_document(path)
    except formats.ReadError as exc:
        return _fail(str(exc))
    if args.budget < 1:
        return _fail("--budget: must be a positive number of tokens")
    fmt = args.format or formats.detect(path, text)
    try:
        tokenizer = tokens.load(args.tokenizer)
    except tokens.TokenizerError as exc:
        return _fail(f"--tokenizer: {exc}")
    try:
        tree = formats.parse(text, fmt)
    except ParseError as exc:
        return _fail(f"{args.file}:{exc.line}:{exc.col}: {exc.message}")
    result = section_tree(tree, tokenizer, args.budget, search=not args.no_search)
    if args.json:
        print(json.dumps(_as_json(args.file, fmt, tokenizer.name, result), ensure_ascii=False))
    else:
        _print_human(args.file, fmt, tokenizer.name, result)
    return 0


def _as_json(file: str, fmt: str, tokenizer: str, r) -> dict:
    return {
        "file": file,
        "format": fmt,
        "tokenizer": tokenizer,
        "tokens": r.tokens,
        "base_budget": r.base_budget,
        "flat_count": r.flat_count,
        "budget": r.budget,
        "sections": [
            {
                "index": s.index, "kind": s.kind, "path": s.path, "start": s.start,
                "end": s.end, "tokens": s.tokens, "atomic": s.atomic,
            }
            for s in r.sections
        ],
        "links": [[i, t] for i, t in r.links],
    }


def _print_human(file: str, fmt: str, tokenizer: str, r) -> None:
    width = max((len(s.path or "") for s in r.sections), default=4)
    for s in r.sections:
        flag = "  atomic" if s.atomic and s.tokens > r.budget else ""
        print(f"{s.index:>5}  {s.kind:<8}  {s.path or '':<{width}}  {s.tokens:>7} tokens{flag}")
    print(
        f"{file}: {fmt}, {r.tokens} input tokens ({tokenizer}); Flat at C={r.base_budget}: "
        f"{r.flat_count} sections; B*={r.budget}: {len(r.sections)} sections, "
        f"{len(r.links)} residual links"
    )
