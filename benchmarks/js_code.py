"""Whole JavaScript files: treeagent's sectioning against code splitters.

For the JavaScript sample files shipped in the package, at one token budget: the time to
split all of them (median of ``--runs``) and how many functions and classes (tree-sitter
function/class/method nodes, nested ones included) no single chunk holds whole. Baselines
in the same run: chonkie's ``CodeChunker`` where it can run (it needs
``tree-sitter-language-pack``, which fetches its parsers over the network: offline it
cannot start, and the script says why) and LangChain's
``RecursiveCharacterTextSplitter.from_language(Language.JS)``, both counting tokens with
the same tokenizer; chunk overlap 0.

    python benchmarks/js_code.py [--budget 300] [--runs 5] [--tokenizer qwen3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from tree_sitter import Parser

from treeagent import formats
from treeagent.algorithm.preprocess import section_tree
from treeagent.formats.js_syntax import LANGUAGE
from treeagent.tokenizers import tokens

SAMPLES = Path(__file__).resolve().parents[1] / "src" / "treeagent" / "samples" / "bench"
_UNITS = {"function_declaration", "generator_function_declaration", "function_expression",
          "function", "generator_function", "arrow_function", "method_definition",
          "class_declaration", "class"}

Spans = list[tuple[int, int]]


def code_units(text: str) -> Spans:
    """Character spans of every function, method and class (arrow functions with a block
    body only: a one-expression arrow is an expression, not a unit of code)."""
    data = text.encode("utf-8")
    root = Parser(LANGUAGE).parse(data).root_node
    out: Spans = []
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type in _UNITS and not (n.type == "arrow_function" and
                                     n.child_by_field_name("body").type != "statement_block"):
            out.append((len(data[:n.start_byte].decode()), len(data[:n.end_byte].decode())))
        stack.extend(n.children)
    return out


def split_units(units: Spans, chunks: Spans) -> int:
    """How many units no single chunk holds whole."""
    return sum(not any(a <= s and e <= b for a, b in chunks) for s, e in units)


def treeagent_chunks(text: str, tokenizer, budget: int) -> Spans:
    tree = formats.parse(text, "javascript")
    result = section_tree(tree, tokenizer, budget, search=False)
    return [(s.start, s.end) for s in result.sections]


def langchain_splitter(tokenizer, budget: int) -> Callable[[str], Spans]:
    from langchain_text_splitters import Language, RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter.from_language(
        Language.JS, chunk_size=budget, chunk_overlap=0, length_function=tokenizer.count,
        add_start_index=True)

    def run(text: str) -> Spans:
        docs = splitter.create_documents([text])
        return [(d.metadata["start_index"], d.metadata["start_index"] + len(d.page_content))
                for d in docs]

    return run


def chonkie_splitter(tokenizer, budget: int) -> Callable[[str], Spans]:
    """chonkie's CodeChunker counting with the same tokenizer; raises where it cannot run."""
    from chonkie import CodeChunker

    class _Count:  # chonkie takes a callable counting tokens
        def __call__(self, text: str) -> int:
            return tokenizer.count(text)

    chunker = CodeChunker(tokenizer=_Count(), chunk_size=budget, language="javascript")

    def run(text: str) -> Spans:
        return [(c.start_index, c.end_index) for c in chunker.chunk(text)]

    return run


def measure(name: str, split: Callable[[str], Spans], texts: dict[str, str],
            units: dict[str, Spans], runs: int) -> tuple[float, int, int]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        chunks = {f: split(t) for f, t in texts.items()}
        times.append(time.perf_counter() - t0)
    n_split = sum(split_units(units[f], chunks[f]) for f in texts)
    return statistics.median(times), n_split, sum(len(c) for c in chunks.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=int, default=300, help="chunk size in tokens")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tokenizer", default="qwen3")
    args = ap.parse_args()
    tokenizer = tokens.load(args.tokenizer)
    files = sorted(p for p in (SAMPLES / "javascript").rglob("*") if p.suffix in (".js", ".mjs"))
    texts = {str(p.relative_to(SAMPLES)): p.read_text(encoding="utf-8") for p in files}
    units = {f: code_units(t) for f, t in texts.items()}
    total_units = sum(len(u) for u in units.values())
    print(f"{len(texts)} JavaScript sample files, {sum(map(len, texts.values()))} characters, "
          f"{sum(tokenizer.count(t) for t in texts.values())} tokens ({tokenizer.name}), "
          f"{total_units} functions/methods/classes; budget {args.budget} tokens, "
          f"median of {args.runs} runs")
    rows: list[tuple[str, float, int, int]] = []
    splitters: list[tuple[str, Callable[[], Callable[[str], Spans]]]] = [
        ("treeagent sections", lambda: lambda t: treeagent_chunks(t, tokenizer, args.budget)),
        ("chonkie CodeChunker", lambda: chonkie_splitter(tokenizer, args.budget)),
        ("LangChain RecursiveCharacterTextSplitter (JS)",
         lambda: langchain_splitter(tokenizer, args.budget)),
    ]
    for name, make in splitters:
        try:
            split = make()
            split(next(iter(texts.values())))
        except Exception as exc:  # noqa: BLE001 - a baseline that cannot run is reported
            print(f"{name}: cannot run here: {type(exc).__name__}: {str(exc)[:160]}")
            continue
        t, n_split, n_chunks = measure(name, split, texts, units, args.runs)
        rows.append((name, t, n_split, n_chunks))
    base = rows[0][1]
    print(f"{'splitter':<48} {'time (s)':>9} {'x treeagent':>11} {'chunks':>7} "
          f"{'units split':>12}")
    for name, t, n_split, n_chunks in rows:
        print(f"{name:<48} {t:>9.4f} {t / base:>11.2f} {n_chunks:>7} "
              f"{n_split:>5} of {total_units}")


if __name__ == "__main__":
    main()
