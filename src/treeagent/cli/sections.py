"""``treeagent sections FILE``: print a document's TreeAgent sections."""

from __future__ import annotations

import argparse
import json
import sys

from treeagent.registry import FORMATS, lazy_choices


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sections", help="section a JSON/HTML/YAML/JS/Markdown file "
                       "(Algorithm 1 + A.2)")
    p.add_argument("file", help="input file, or - for standard input")
    lazy_choices(p.add_argument("--format", help="input format (default: from the extension, "
                                "else the content; text of no known format is refused)"),
                 FORMATS.names)
    p.add_argument("--tokenizer", default="qwen3", help="qwen3, qwen2.5, cl100k_base, "
                   "o200k_base, or a folder holding tokenizer.json")
    p.add_argument("--budget", type=int, default=5000, help="base budget C (tokens)")
    p.add_argument("--no-search", action="store_true", help="use B = C (no budget search)")
    p.add_argument("--on-error", choices=("raise", "fallback"), default="raise",
                   help="raise: a document that does not parse is an error (status 2); "
                   "fallback: warn and section it as plain text (default: raise)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--text", action="store_true",
                   help="with --json: add each section's text (as the agent reads it)")
    p.add_argument("--max-input-mb", type=float, default=256, metavar="MB",
                   help="refuse a larger input (a folder, pipe or device file is refused)")
    p.set_defaults(func=run)


def read_input(file: str, max_bytes: int | None = None) -> str:
    """The text of ``file``, or of standard input for ``-`` (named ``<stdin>`` in errors);
    raises ``formats.ReadError`` naming the place of bad bytes, or an input over
    ``max_bytes`` (default ``formats.MAX_INPUT_BYTES``)."""
    from treeagent import formats

    cap = formats.MAX_INPUT_BYTES if max_bytes is None else max_bytes
    if file != "-":
        return formats.read_document(file, cap)
    raw = sys.stdin.buffer.read(cap + 1)
    if len(raw) > cap:
        raise formats.ReadError(f"<stdin>: over the input cap of {cap} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        head = raw[: exc.start]
        line, col = head.count(b"\n") + 1, exc.start - (head.rfind(b"\n") + 1) + 1
        raise formats.ReadError(f"<stdin>:{line}:{col}: not valid UTF-8") from None
    return text  # a BOM stays U+FEFF, as formats.read_document keeps it


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    from treeagent import formats
    from treeagent.algorithm.preprocess import section_tree
    from treeagent.algorithm.tree import ParseError
    from treeagent.tokenizers import tokens

    name = "<stdin>" if args.file == "-" else args.file
    problem: str | None = None  # why the document is sectioned as plain text (fallback)
    if not 0 < args.max_input_mb < float("inf"):
        return _fail("--max-input-mb: must be a positive number")
    try:
        text = read_input(args.file, int(args.max_input_mb * 2**20))
    except formats.ReadError as exc:
        return _fail(str(exc))
    if args.budget < 1:
        return _fail("--budget: must be a positive number of tokens")
    try:
        fmt = args.format or formats.detect(name, text)  # <stdin>: from the content
    except ValueError as exc:
        if args.on_error != "fallback":
            return _fail(str(exc))
        fmt, problem = None, str(exc)
    try:
        tokenizer = tokens.load(args.tokenizer)
    except tokens.TokenizerError as exc:
        return _fail(f"--tokenizer: {exc}")
    try:
        tree = formats.parse(text, fmt) if problem is None else None
    except ParseError as exc:
        problem = f"{name}:{exc.line}:{exc.col}: {exc.message}"
        if args.on_error != "fallback":
            return _fail(problem)
    if problem is not None:
        from treeagent.cli.fallback import print_fallback

        return print_fallback(args, name, fmt, tokenizer, text, problem)
    result = section_tree(tree, tokenizer, args.budget, search=not args.no_search)
    if args.json:
        out = _as_json(name, fmt, tokenizer.name, result)
        if args.text:
            for entry, s in zip(out["sections"], result.sections, strict=True):
                entry["text"] = result.section_text(s)
        print(json.dumps(out, ensure_ascii=False))
    else:
        _print_human(name, fmt, tokenizer.name, result)
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


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _print_human(file: str, fmt: str, tokenizer: str, r) -> None:
    width = max((len(s.path or "") for s in r.sections), default=4)
    for s in r.sections:
        flag = "  atomic" if s.atomic and s.tokens > r.budget else ""
        print(f"{s.index:>5}  {s.kind:<8}  {s.path or '':<{width}}  {s.tokens:>7} tokens{flag}")
    print(
        f"{file}: {fmt}, {r.tokens} input tokens ({tokenizer}); Flat at C={r.base_budget}: "
        f"{_n(r.flat_count, 'section')}; B*={r.budget}: {_n(len(r.sections), 'section')}, "
        f"{_n(len(r.links), 'residual link')}"
    )
