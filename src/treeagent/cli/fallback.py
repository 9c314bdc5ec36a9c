"""``treeagent sections --on-error fallback``: a document that does not parse, or whose
format cannot be told, printed as plain-text sections (:mod:`treeagent.algorithm.text_split`) after
one ``warning:`` line naming it (docs/library.md "Conventions")."""

from __future__ import annotations

import argparse
import json
import sys

from treeagent.algorithm.text_split import recursive_spans
from treeagent.tokenizers.tokens import Tokenizer


def print_fallback(args: argparse.Namespace, name: str, fmt: str | None,
                   tokenizer: Tokenizer, text: str, problem: str) -> int:
    """Warn naming the document, print its plain-text sections (as ``sections`` prints
    structural ones, kind ``text``, no path) and return status 0."""
    print(f"warning: {problem}; sectioned as plain text", file=sys.stderr)
    spans = recursive_spans(text, args.budget, tokenizer.count) if text.strip() else []
    counts = tokenizer.count_batch([text[a:b] for a, b in spans])
    if args.json:
        sections = []
        for i, ((a, b), n) in enumerate(zip(spans, counts, strict=True)):
            entry = {"index": i, "kind": "text", "path": None, "start": a, "end": b,
                     "tokens": n, "atomic": False}
            if args.text:
                entry["text"] = text[a:b]
            sections.append(entry)
        print(json.dumps({
            "file": name, "format": fmt, "tokenizer": tokenizer.name,
            "tokens": sum(counts), "base_budget": args.budget, "budget": args.budget,
            "fallback": True, "parse_error": problem, "sections": sections, "links": [],
        }, ensure_ascii=False))
        return 0
    for i, n in enumerate(counts):
        print(f"{i:>5}  {'text':<8}  {'':<4}  {n:>7} tokens")
    print(f"{name}: plain text (fallback: {problem}), {sum(counts)} input tokens "
          f"({tokenizer.name}); {len(spans)} sections of at most {args.budget} tokens")
    return 0
