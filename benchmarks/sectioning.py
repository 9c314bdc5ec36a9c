"""Sectioning benchmark: ~1M-token JSON, HTML and YAML inputs, a ~125K-token JavaScript one.

Prints, per input: one whole-text tokenization, full TreeAgent preprocessing (parse +
tokenize + search + sections + paths + links), their ratio, Flat vs Tree counts, peak
memory, and chonkie's RecursiveChunker / LangChain's RecursiveJsonSplitter on the same
input (time, chunks, max tokens per chunk, fitting records split). Median of --runs.
The JavaScript input is also parsed with the ``mixed`` cross-check (json5 reads each
literal's non-JSON skeleton) for comparison with the default ``twin`` one. A closing
table gives the CPU-time ratios against one encode and against chonkie, with the
targets: JavaScript <= 1x one encode and <= 2x chonkie, YAML <= 0.5x chonkie.

``--against SRC`` also times this checkout's preprocessing against another checkout's
(``SRC`` is its ``src/`` folder, e.g. a ``git worktree`` of an earlier commit) on the same
inputs: each side in fresh processes, alternating, ``--rounds`` times; it prints both
medians of CPU time and their ratio (the "not slower than before" check).

``--digest`` times nothing: it prints, per input, a sha256 over the sections (index,
kind, span, path, token count, text), B* and the residual links, to show that a change
of the code leaves the sections as they were (run it before and after).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from treeagent import formats
from treeagent.algorithm.preprocess import section_tree
from treeagent.formats import javascript
from treeagent.tokenizers import tokens

ROOTS = [Path(os.environ.get("TREEAGENT_MIRROR", "mirror"))]  # the real sources' mirror
SAMPLES = Path(__file__).resolve().parents[1] / "src" / "treeagent" / "samples"
SAMPLE = SAMPLES / "usgs_events.json"
JS_SAMPLES = SAMPLES / "bench" / "javascript"


def js_literals() -> list[str]:
    """The static initializers of the shipped JavaScript samples, as sample mode cuts them
    into units (top-level bindings' values and nested literals)."""
    from treeagent.bench.sources.js_records import file_candidates

    out = []
    for f in sorted(JS_SAMPLES.rglob("*")):
        if f.suffix not in (".js", ".mjs", ".cjs"):
            continue
        text = f.read_text(encoding="utf-8")
        out += [text[i.value_start:i.value_end] for i in javascript.find_initializers(text)[0]]
        out += [c.text for c in file_candidates(text, lambda *a: None, nested=True) if c.col]
    return out


def build_js_input(target_chars: int) -> str:
    """A module of ``const entry_NNNN = <literal>;`` bindings, as a composed JavaScript
    context holds them. The samples hold ~30 literals: copy k of a literal gets k more
    spaces of indentation on each line and after its opening bracket, so that every
    literal and line is new text (a corpus's literals do not repeat: neither the json5
    memo nor chonkie's token-count cache may hide their cost)."""
    lits = js_literals()
    out, n, i = [], 0, 0
    while n < target_chars:
        lit = lits[i % len(lits)]
        k = i // len(lits)
        pad = " " * k
        out.append(f"const entry_{i:04d} = {lit[0]}{pad}{lit[1:].replace(chr(10), chr(10) + pad)};")
        n += len(out[-1]) + 1
        i += 1
    return "\n".join(out) + "\n"


def build_input(fmt: str, target_chars: int) -> str:
    if fmt == "javascript":
        return build_js_input(target_chars)
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
    folder = MIRRORED[fmt]
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
    ap.add_argument("--js-tokens", type=int, default=125_000,
                    help="size of the JavaScript input (the samples' literals, repeated)")
    ap.add_argument("--formats", nargs="+", default=["json", "html", "yaml", "javascript"])
    ap.add_argument("--tokenizer", default="qwen3")
    ap.add_argument("--against", metavar="SRC",
                    help="another checkout's src/ folder to time against, in the same run")
    ap.add_argument("--rounds", type=int, default=3,
                    help="with --against: alternating fresh-process rounds per side")
    ap.add_argument("--time-file", help=argparse.SUPPRESS)  # one side of --against
    ap.add_argument("--digest", action="store_true",
                    help="print a sha256 of each input's sections instead of timings")
    args = ap.parse_args()
    tk = tokens.load(args.tokenizer)
    prepare = getattr(tk, "prepare", None)
    if prepare is not None:  # part of loading the tokenizer (the tiktoken twin), untimed
        prepare()
    if args.time_file:
        print(json.dumps(time_file(args.time_file, args.formats[0], args, tk)))
        return
    if args.digest:
        for fmt in args.formats:
            print(sections_digest(fmt, args, tk), flush=True)
        return
    print("chonkie RecursiveChunker: same tokenizer object; it splits at line breaks first "
          "(then sentences, pauses, words, tokens), counts every split with the tokenizer "
          "(lru_cache of 4,096 splits, cleared before each run) and adds counts when merging "
          "splits; 'max tokens' "
          "below re-counts each chunk whole. Timings: median of --runs, tokenizer loading "
          "excluded for all.")
    rows = [bench_format(fmt, args, tk) for fmt in with_input(args.formats)]
    print("\n== CPU-time medians of --runs (one encode and chonkie on the same input)")
    print(f"{'format':<11}{'tokens':>11}{'encode':>9}{'ours':>8}{'chonkie':>9}"
          f"{'ours/encode':>13}{'ours/chonkie':>14}  target")
    targets = {"javascript": "<= 1x encode, <= 2x chonkie", "yaml": "<= 0.5x chonkie"}
    for fmt, n_tok, enc, ours, chonkie in rows:
        vs_c = f"{ours / chonkie:13.2f}x" if chonkie else f"{'-':>14}"
        c_s = f"{chonkie:8.2f}s" if chonkie else f"{'-':>9}"
        print(f"{fmt:<11}{n_tok:>11,}{enc:8.2f}s{ours:7.2f}s{c_s}{ours / enc:12.2f}x{vs_c}  "
              f"{targets.get(fmt, 'not slower than before')}")
    if args.against:
        compare_against(args)


MIRRORED = {"html": "html/mozilla-readability-test-pages",
            "yaml": "yaml/apis-guru-openapi-directory"}  # inputs only a mirror holds


def with_input(fmts: list[str]) -> list[str]:
    """``fmts`` less those whose input needs the sources' mirror where there is none (a
    line says so: a fresh clone benchmarks JSON, from the shipped samples, and JavaScript)."""
    root = next((r for r in ROOTS if r.is_dir()), None)
    kept = []
    for fmt in fmts:
        if fmt in MIRRORED and (root is None or not (root / MIRRORED[fmt]).is_dir()):
            print(f"{fmt}: skipped, its input is {MIRRORED[fmt]}/ of the sources' mirror: "
                  f"set TREEAGENT_MIRROR to a mirror folder (acquire.mode: mirror)")
        else:
            kept.append(fmt)
    return kept


def input_text(fmt: str, args: argparse.Namespace) -> str:
    """The input of ``fmt`` at the sizes asked (``--tokens``, ``--js-tokens``)."""
    chars = {"json": 2.0, "javascript": 4.7}.get(fmt, 3.5)
    n_target = args.js_tokens if fmt == "javascript" else args.tokens
    return build_input(fmt, int(n_target * chars))


def time_file(path: str, fmt: str, args: argparse.Namespace, tk) -> dict[str, float]:
    """Median CPU and wall seconds of parse + sectioning of the text in ``path`` by the
    treeagent this process imports."""
    text = Path(path).read_text(encoding="utf-8", errors="surrogatepass")
    wall, _ = median_time(lambda: section_tree(formats.parse(text, fmt), tk, args.budget),
                          args.runs, "ours")
    return {"cpu": CPU["ours"], "wall": wall}


def compare_against(args: argparse.Namespace) -> None:
    """Time this checkout's preprocessing and that of the ``src/`` folder in
    ``args.against`` on the same inputs, alternating fresh processes (``--rounds`` each),
    and print the medians of their CPU times and the ratio."""
    own = str(Path(__file__).resolve().parents[1] / "src")
    sides = {"this checkout": own, "against": str(Path(args.against).resolve())}
    print(f"\n== against {sides['against']}: CPU medians of {args.rounds} fresh processes "
          f"per side, each the median of --runs {args.runs}")
    print(f"{'format':<11}{'this':>9}{'against':>9}{'this/against':>14}")
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in args.formats:
            path = Path(tmp) / f"input.{fmt}"
            path.write_text(input_text(fmt, args), encoding="utf-8", errors="surrogatepass")
            cpu: dict[str, list[float]] = {k: [] for k in sides}
            for _ in range(args.rounds):
                for name, src in sides.items():
                    env = dict(os.environ, PYTHONPATH=src)
                    out = subprocess.run(
                        [sys.executable, __file__, "--time-file", str(path), "--formats", fmt,
                         "--runs", str(args.runs), "--budget", str(args.budget),
                         "--tokenizer", args.tokenizer],
                        env=env, capture_output=True, text=True, check=True).stdout
                    cpu[name].append(json.loads(out.strip().splitlines()[-1])["cpu"])
            this, other = (statistics.median(cpu[k]) for k in sides)
            print(f"{fmt:<11}{this:8.2f}s{other:8.2f}s{this / other:13.2f}x", flush=True)


def sections_digest(fmt: str, args: argparse.Namespace, tk) -> str:
    """``fmt chars sections B* sha256``: the sha256 over every section's index, kind,
    span, path, token count and text, then B* and the residual links."""
    text = input_text(fmt, args)
    r = section_tree(formats.parse(text, fmt), tk, args.budget)
    h = hashlib.sha256()
    for s in r.sections:
        h.update(json.dumps([s.index, s.kind, s.start, s.end, s.path, s.tokens,
                             s.text(text)]).encode("utf-8", "surrogatepass"))
    h.update(json.dumps([r.budget, r.links]).encode())
    return f"{fmt} {len(text)} chars, {len(r.sections)} sections, B*={r.budget}: {h.hexdigest()}"


def bench_format(fmt: str, args: argparse.Namespace, tk) -> tuple[str, int, float, float,
                                                                 float | None]:
    """Print one input's figures; return (format, tokens, CPU of one encode, of ours, of
    chonkie or None)."""
    text = input_text(fmt, args)
    n_tok = tk.count(text)
    # the ids are dropped at once: a kept list of ~1M ints would weigh on every
    # allocation that follows (ours and chonkie's alike)
    t_encode, _ = median_time(lambda: len(tk.encode(text)), args.runs, "encode")

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
    if fmt == "javascript":
        t_mixed, _ = median_time(
            lambda: section_tree(javascript.parse(text, crosscheck="mixed"), tk, args.budget),
            args.runs, "mixed")
        print(f"  with crosscheck='mixed'    {t_mixed:7.2f} s  (CPU {CPU['mixed']:.2f} s)  ratio "
              f"{t_mixed / t_encode:5.2f}x  (json5 reads each literal's non-JSON skeleton)")
    print(f"Flat sections {r.flat_count}, Tree sections {len(r.sections)} at B*={r.budget}; "
          f"budget violations {over}; fitting records split {split}/{fitting}; "
          f"max tokens {max(s.tokens for s in r.sections)}")
    explain_atomic(r, args.budget)
    try:
        from chonkie import RecursiveChunker

        chunker = RecursiveChunker(tokenizer=tk._tok, chunk_size=args.budget) \
            if hasattr(tk, "_tok") else RecursiveChunker(chunk_size=args.budget)
        def chonkie_cold():  # its lru_cache of split counts outlives a run: clear it
            type(chunker)._estimate_token_count.cache_clear()
            return chunker.chunk(text)

        t_c, chunks = median_time(chonkie_cold, args.runs, "chonkie")
        chonkie_cpu = CPU["chonkie"]
        spans = [(c.start_index, c.end_index) for c in chunks]
        mx = max(tk.count(c.text) for c in chunks)
        s_c, _ = fitting_records_split(r.tree, spans, tk, r.budget)
        print(f"chonkie RecursiveChunker     {t_c:7.2f} s  (CPU {CPU['chonkie']:.2f} s)  chunks "
              f"{len(chunks)}  max tokens {mx}  fitting records split {s_c}/{fitting}  "
              f"(ours/chonkie wall {t_full / t_c:.2f}x, CPU {CPU['ours'] / CPU['chonkie']:.2f}x)")
    except Exception as exc:  # report, keep going
        chonkie_cpu = None
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
    return fmt, n_tok, CPU["encode"], CPU["ours"], chonkie_cpu


if __name__ == "__main__":
    main()
