"""Sectioning cost against input size (issue 18 item 3): is it linear?

For each input kind (a JSON document holding one one-line string of prose; a JSON array
of real USGS event records) and each size (default 1, 5, 20, 50 MB), a fresh process parses,
tokenizes and sections the input (``section_text``, budget search on) and reports the
median wall time of ``--runs`` runs, the peak memory above the process's warm baseline,
and, as the baseline in the same run, one plain tokenization of the whole text. The
summary gives time per MB and memory per MB, and the largest over smallest of each
(goal: within 2x from 1 MB to 50 MB).

    python benchmarks/scaling.py [--sizes 1 5 20 50] [--runs 3] [--tokenizer qwen3]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[1] / "src" / "treeagent" / "samples" / "usgs_events.json"
PROSE = sorted((SAMPLE.parents[3] / "docs").glob("*.md")) + [SAMPLE.parents[3] / "README.md"]
KINDS = ("one-line-string", "record-array")


def make_input(kind: str, megabytes: float) -> str:
    """A JSON text of about ``megabytes`` MB: real USGS event records, each made unique
    by a ``seq`` field (the tokenizer would otherwise tokenize a repeated line once), or
    one string holding the project's own prose (README and docs) on one line."""
    target = int(megabytes * 2**20)
    if kind == "record-array":
        features = json.loads(SAMPLE.read_text(encoding="utf-8"))["features"]
        parts, n, i = [], 2, 0
        while n < target:
            parts.append(json.dumps({"seq": i, **features[i % len(features)]},
                                    ensure_ascii=False))
            n += len(parts[-1]) + 2
            i += 1
        return "[" + ",\n".join(parts) + "]"
    prose = " ".join(" ".join(p.read_text(encoding="utf-8").split()) for p in PROSE)
    line = (prose + " ") * (target // (len(prose) + 1) + 1)
    return json.dumps({"text": line[: target - 12]}, ensure_ascii=False)


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def measure_one(kind: str, megabytes: float, runs: int, tokenizer: str, budget: int) -> dict:
    """In this process: warm up, then time tokenization and sectioning of one input."""
    from treeagent import tokens
    from treeagent.preprocess import section_text

    tok = tokens.load(tokenizer)
    section_text(make_input(kind, 0.05), "json", tok, budget)  # warm: imports, caches
    text = make_input(kind, megabytes)
    base = _rss_mb()
    token_times, section_times, n_sections = [], [], 0
    for _ in range(runs):
        t0 = time.perf_counter()
        n_tokens = len(tok.token_starts(text))
        token_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        r = section_text(text, "json", tok, budget)
        section_times.append(time.perf_counter() - t0)
        n_sections = len(r.sections)
        del r
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"kind": kind, "mb": len(text.encode()) / 2**20, "tokens": n_tokens,
            "sections": n_sections, "tokenize_s": statistics.median(token_times),
            "section_s": statistics.median(section_times), "peak_mb": peak - base}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=float, nargs="+", default=[1, 5, 20, 50])
    ap.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tokenizer", default="qwen3")
    ap.add_argument("--budget", type=int, default=5000)
    ap.add_argument("--one", nargs=2, metavar=("KIND", "MB"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        row = measure_one(args.one[0], float(args.one[1]), args.runs, args.tokenizer,
                          args.budget)
        print(json.dumps(row))
        return
    print(f"tokenizer {args.tokenizer}, C={args.budget}, median of {args.runs} runs; "
          "peak = process peak RSS above its warm baseline (input text included)")
    print(f"{'input':<16} {'MB':>6} {'tokens':>10} {'sections':>8} {'tokenize s':>10} "
          f"{'section s':>10} {'x tokenize':>10} {'s/MB':>7} {'peak MB':>8} {'MB/MB':>6}")
    for kind in args.kinds:
        rows = []
        for mb in args.sizes:
            out = subprocess.run(
                [sys.executable, __file__, "--one", kind, str(mb), "--runs", str(args.runs),
                 "--tokenizer", args.tokenizer, "--budget", str(args.budget)],
                capture_output=True, text=True, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append(r)
            print(f"{kind:<16} {r['mb']:>6.1f} {r['tokens']:>10} {r['sections']:>8} "
                  f"{r['tokenize_s']:>10.2f} {r['section_s']:>10.2f} "
                  f"{r['section_s'] / r['tokenize_s']:>10.1f} {r['section_s'] / r['mb']:>7.2f} "
                  f"{r['peak_mb']:>8.0f} {r['peak_mb'] / r['mb']:>6.1f}", flush=True)
        per_s = [r["section_s"] / r["mb"] for r in rows]
        per_m = [r["peak_mb"] / r["mb"] for r in rows]
        print(f"{kind}: time/MB {per_s[-1] / per_s[0]:.2f}x and memory/MB "
              f"{per_m[-1] / per_m[0]:.2f}x from {rows[0]['mb']:.0f} to {rows[-1]['mb']:.0f} MB "
              f"(max/min over sizes: {max(per_s) / min(per_s):.2f}x, "
              f"{max(per_m) / min(per_m):.2f}x)")


if __name__ == "__main__":
    main()
