"""Sectioning benchmark (issue 2, item 7): ~1M-token JSON, HTML and YAML inputs.

Prints, per input: one whole-text tokenization, full TreeAgent preprocessing (parse +
tokenize + search + sections + paths + links), their ratio, Flat vs Tree counts, peak
memory, and chonkie's RecursiveChunker / LangChain's RecursiveJsonSplitter on the same
input (time, chunks, max tokens per chunk, fitting records split). Median of --runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import tracemalloc
from pathlib import Path

from treeagent import formats, tokens
from treeagent.preprocess import section_tree

ROOTS = [Path(__file__).resolve().parents[2] / "shared" / "sources", Path("/work/shared/sources")]
SAMPLE = Path(__file__).resolve().parents[1] / "src" / "treeagent" / "samples" / "usgs_events.json"


def build_input(fmt: str, target_chars: int) -> str:
    root = next((r for r in ROOTS if r.is_dir()), None)
    if fmt == "json":
        files = []
        if root:
            files = sorted((root / "json" / "usgs").glob("*.json")) + sorted(
                (root / "json" / "nvd").glob("*.json"))
        parts, n = [], 0
        for f in files or [SAMPLE] * 400:
            t = f.read_text(encoding="utf-8")
            parts.append(t)
            n += len(t)
            if n >= target_chars:
                break
        return "[" + ",\n".join(parts) + "]"
    folder = {"html": "html/mozilla-readability-test-pages", "yaml": "yaml/apis-guru-openapi-directory"}[fmt]
    files = sorted((root / folder).rglob("*.html" if fmt == "html" else "*.yaml")) if root else []
    parts, n = [], 0
    for f in files:
        t = f.read_text(encoding="utf-8", errors="replace")
        parts.append(t if fmt == "html" else t.lstrip("\ufeff").replace("\n...\n", "\n"))
        n += len(t)
        if n >= target_chars:
            break
    return ("\n" if fmt == "html" else "\n---\n").join(parts)


CPU: dict[str, float] = {}  # label -> median process CPU time (all threads) of the last call


def median_time(fn, runs: int, label: str = ""):
    """Median wall time of ``runs`` calls (and, under ``label``, median CPU time: on a
    shared machine the CPU time is the steadier comparison)."""
    times, cpu, out = [], [], None
    for _ in range(runs):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    if label:
        CPU[label] = statistics.median(cpu)
    return statistics.median(times), out


def fitting_records_split(tree, chunks: list[tuple[int, int]], tk, budget: int) -> tuple[int, int]:
    """Records = children of the largest arrays/mappings; count those <= budget that a
    chunker split across chunks."""
    recs = [c for n in tree.nodes if len(n.children) >= 5 for c in n.children]
    fitting = [r for r in recs if r.end - r.start < 40 * budget
               and tk.count(tree.text[r.start:r.end]) <= budget]
    starts = sorted(a for a, _ in chunks)
    import bisect
    split = 0
    for r in fitting:
        i = bisect.bisect_right(starts, r.start)
        if i < len(starts) and starts[i] < r.end:
            split += 1
    return split, len(fitting)


def locate(text: str, pieces: list[str]) -> list[tuple[int, int]]:
    out, pos = [], 0
    for p in pieces:
        i = text.find(p[:200], pos)
        if i < 0:
            continue
        out.append((i, i + len(p)))
        pos = i + 1
    return out


def explain_atomic(r, base_budget: int) -> None:
    """Atomic sections above B* are not budget violations (A.1: an atomic leaf is kept
    whole, never cut); report them apart, with what they do to the section count."""
    big = [s for s in r.sections if s.atomic and s.tokens > r.budget]
    if not big:
        print("atomic sections over B*: none")
        return
    kinds: dict[str, int] = {}
    for s in big:
        node = s.node
        label = node.label if node is not None and isinstance(node.label, str) else "?"
        name = f"<{label}>" if r.tree.format == "html" and node is not None and \
            node.kind == "element" else (node.kind if node is not None else "?")
        kinds[name] = kinds.get(name, 0) + 1
    atomic_tokens = sum(s.tokens for s in big)
    rest = r.tokens - atomic_tokens
    print(f"atomic sections over B*: {len(big)} ("
          + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1]))
          + f"), max {max(s.tokens for s in big):,} tokens, {atomic_tokens:,} tokens "
          f"({100 * atomic_tokens / r.tokens:.1f}% of the input) kept whole (A.1)")
    tops = r.tree.root.children
    big_tops = sum(1 for c in tops if r.index.count(c.start, c.end) > r.budget)
    print(f"  Tree without them: {len(r.sections) - len(big)} sections over the other "
          f"{rest:,} tokens (Flat on those: {-(-rest // base_budget)}). Each atomic leaf "
          f"closes the sibling group before it and starts a new one after it (Algorithm 1 "
          f"lines 6-8); likewise each of the {big_tops} of {len(tops)} top-level "
          f"documents above B* ends in a partly filled section: structure boundaries "
          f"Flat ignores, so Tree may exceed Flat here")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=1_000_000)
    ap.add_argument("--budget", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--formats", nargs="+", default=["json", "html", "yaml"])
    ap.add_argument("--tokenizer", default="qwen3")
    args = ap.parse_args()
    tk = tokens.load(args.tokenizer)
    prepare = getattr(tk, "prepare", None)
    if prepare is not None:  # part of loading the tokenizer (the tiktoken twin), untimed
        prepare()
    print("chonkie RecursiveChunker: same tokenizer object; it splits at line breaks first "
          "(then sentences, pauses, words, tokens), counts every split with the tokenizer "
          "(lru_cache of 4,096 splits) and adds counts when merging splits; 'max tokens' "
          "below re-counts each chunk whole. Timings: median of --runs, tokenizer loading "
          "excluded for all.")
    for fmt in args.formats:
        bench_format(fmt, args, tk)


def bench_format(fmt: str, args: argparse.Namespace, tk) -> None:
    text = build_input(fmt, int(args.tokens * (2.0 if fmt == "json" else 3.5)))
    n_tok = tk.count(text)
    t_encode, _ = median_time(lambda: tk.encode(text), args.runs, "encode")

    def full():
        return section_tree(formats.parse(text, fmt), tk, args.budget)

    t_full, r = median_time(full, args.runs, "ours")
    tracemalloc.start()
    full()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    over = sum(1 for s in r.sections if s.tokens > r.budget and not s.atomic)
    ours = [(s.start, s.end) for s in r.sections]
    split, fitting = fitting_records_split(r.tree, ours, tk, r.budget)
    print(f"\n== {fmt}: {len(text):,} chars, {n_tok:,} tokens ({tk.name}), C={args.budget}")
    print(f"one whole-text encode        {t_encode:7.2f} s  (CPU {CPU['encode']:.2f} s)")
    print(f"TreeAgent preprocessing      {t_full:7.2f} s  (CPU {CPU['ours']:.2f} s)  ratio "
          f"{t_full / t_encode:5.2f}x  peak {peak / 2**20:,.0f} MiB")
    print(f"Flat sections {r.flat_count}, Tree sections {len(r.sections)} at B*={r.budget}; "
          f"budget violations {over}; fitting records split {split}/{fitting}; "
          f"max tokens {max(s.tokens for s in r.sections)}")
    explain_atomic(r, args.budget)
    try:
        from chonkie import RecursiveChunker

        chunker = RecursiveChunker(tokenizer=tk._tok, chunk_size=args.budget) \
            if hasattr(tk, "_tok") else RecursiveChunker(chunk_size=args.budget)
        t_c, chunks = median_time(lambda: chunker.chunk(text), args.runs, "chonkie")
        spans = [(c.start_index, c.end_index) for c in chunks]
        mx = max(tk.count(c.text) for c in chunks)
        s_c, _ = fitting_records_split(r.tree, spans, tk, r.budget)
        print(f"chonkie RecursiveChunker     {t_c:7.2f} s  (CPU {CPU['chonkie']:.2f} s)  chunks "
              f"{len(chunks)}  max tokens {mx}  fitting records split {s_c}/{fitting}  "
              f"(ours/chonkie wall {t_full / t_c:.2f}x, CPU {CPU['ours'] / CPU['chonkie']:.2f}x)")
    except Exception as exc:  # report, keep going
        print(f"chonkie RecursiveChunker     unavailable: {exc}")
    if fmt == "json":
        try:
            from langchain_text_splitters import RecursiveJsonSplitter

            data = json.loads(text)
            splitter = RecursiveJsonSplitter(max_chunk_size=args.budget * 4)
            t_l, pieces = median_time(
                lambda: splitter.split_text({"records": data}, convert_lists=True), args.runs)
            mx = max(tk.count(p) for p in pieces)
            print(f"LangChain RecursiveJsonSplitter {t_l:5.2f} s  chunks {len(pieces)}  "
                  f"max tokens {mx}  (re-serialized: record positions not comparable)")
        except Exception as exc:
            print(f"LangChain RecursiveJsonSplitter unavailable: {exc}")


if __name__ == "__main__":
    main()
