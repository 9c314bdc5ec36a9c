"""Sectioning cost and peak memory against input size: linear, and <= 10 MB per MB?

For each input kind and size (default 1, 5, 20 MB; JavaScript 1, 2, 5 MB), ``--runs``
fresh processes each tokenize, parse and section the input (``section_text``, budget
search on) once, after one plain tokenization of the whole text (the time baseline of
the same run). Kinds: ``json``, ``yaml``, ``html``, ``javascript`` (the inputs of
``benchmarks/sectioning.py``: shared sources where present, else the shipped samples),
``one-line-string`` (a JSON document holding one string of prose) and ``record-array``
(a JSON array of unique USGS event records). Reported, as medians over the processes:
the time of each, and the peak RSS of sectioning above the process's warm baseline
(input text loaded; the peak is reset there through ``/proc/self/clear_refs``; the
plain tokenization runs after the sectioning), also per MB of input (goal: <= 10). The summary gives the
largest over smallest time and memory per MB (goal: within 2x).

    python benchmarks/scaling.py [--sizes 1 5 20] [--kinds json yaml] [--runs 3]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

SAMPLE = Path(__file__).resolve().parents[1] / "src" / "treeagent" / "samples" / "usgs_events.json"
PROSE = sorted((SAMPLE.parents[3] / "docs").glob("*.md")) + [SAMPLE.parents[3] / "README.md"]
KINDS = ("json", "yaml", "html", "javascript", "one-line-string", "record-array")
FORMAT = {"yaml": "yaml", "html": "html", "javascript": "javascript"}  # others: json


def make_input(kind: str, megabytes: float) -> str:
    """A JSON text of about ``megabytes`` MB: real USGS event records, each made unique
    by a ``seq`` field (the tokenizer would otherwise tokenize a repeated line once), or
    one string holding the project's own prose (README and docs) on one line."""
    target = int(megabytes * 2**20)
    if kind in ("json", "yaml", "html", "javascript"):
        from sectioning import build_input  # benchmarks/sectioning.py

        return build_input(kind, target)
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


def _release_free_memory() -> None:
    """Hand freed heap back to the system (glibc), so that the baseline holds no free
    memory that sectioning could reuse unseen."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _reset_peak() -> bool:
    """Reset this process's peak RSS (Linux); False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_mb() -> float:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure_one(kind: str, megabytes: float, tokenizer: str, budget: int) -> dict:
    """In this (fresh) process: warm up, then time one tokenization and one sectioning
    of one input; peak RSS of the sectioning above the warm baseline."""
    from treeagent.algorithm.preprocess import section_text
    from treeagent.tokenizers import tokens

    fmt = FORMAT.get(kind, "json")
    tok = tokens.load(tokenizer)
    if hasattr(tok, "prepare"):
        tok.prepare()  # part of loading (the tiktoken twin)
    section_text(make_input(kind, 0.05), fmt, tok, budget)  # warm: imports, caches
    text = make_input(kind, megabytes)
    _release_free_memory()
    base = _rss_mb()
    reset = _reset_peak()
    t0 = time.perf_counter()
    r = section_text(text, fmt, tok, budget)
    section_s = time.perf_counter() - t0
    peak = _peak_mb() - base
    n_sections = len(r.sections)
    del r
    t0 = time.perf_counter()
    n_tokens = len(tok.token_starts(text))
    tokenize_s = time.perf_counter() - t0
    return {"kind": kind, "mb": len(text.encode()) / 2**20, "tokens": n_tokens,
            "sections": n_sections, "tokenize_s": tokenize_s, "section_s": section_s,
            "peak_mb": peak, "peak_reset": reset}


def measure(kind: str, mb: float, args: argparse.Namespace) -> dict:
    """Medians over ``args.runs`` fresh processes."""
    rows = []
    for _ in range(args.runs):
        out = subprocess.run(
            [sys.executable, __file__, "--one", kind, str(mb), "--tokenizer", args.tokenizer,
             "--budget", str(args.budget)],
            capture_output=True, text=True, check=True)  # fmt: skip
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    row = dict(rows[0])
    for key in ("tokenize_s", "section_s", "peak_mb"):
        row[key] = statistics.median(r[key] for r in rows)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=float, nargs="+", default=[1, 5, 20])
    ap.add_argument("--js-sizes", type=float, nargs="+", default=[1, 2, 5],
                    help="sizes for javascript (its sectioning is the slowest)")
    ap.add_argument("--kinds", nargs="+", choices=KINDS, default=["json", "yaml", "html",
                                                                  "javascript"])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tokenizer", default="qwen3")
    ap.add_argument("--budget", type=int, default=5000)
    ap.add_argument("--one", nargs=2, metavar=("KIND", "MB"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(measure_one(args.one[0], float(args.one[1]), args.tokenizer,
                                     args.budget)))  # fmt: skip
        return
    print(f"tokenizer {args.tokenizer}, C={args.budget}, medians over {args.runs} fresh "
          "processes; peak = peak RSS of sectioning above the warm baseline (input loaded)")
    print(f"{'input':<16} {'MB':>6} {'tokens':>10} {'sections':>8} {'tokenize s':>10} "
          f"{'section s':>10} {'x tokenize':>10} {'s/MB':>7} {'peak MB':>8} {'MB/MB':>6}")
    worst = 0.0
    for kind in args.kinds:
        rows = []
        for mb in args.js_sizes if kind == "javascript" else args.sizes:
            r = measure(kind, mb, args)
            if not r["peak_reset"]:
                print("  (peak not resettable here: it includes the warm-up)")
            rows.append(r)
            worst = max(worst, r["peak_mb"] / r["mb"])
            print(f"{kind:<16} {r['mb']:>6.1f} {r['tokens']:>10} {r['sections']:>8} "
                  f"{r['tokenize_s']:>10.2f} {r['section_s']:>10.2f} "
                  f"{r['section_s'] / r['tokenize_s']:>10.1f} {r['section_s'] / r['mb']:>7.2f} "
                  f"{r['peak_mb']:>8.0f} {r['peak_mb'] / r['mb']:>6.1f}", flush=True)
        per_s = [r["section_s"] / r["mb"] for r in rows]
        per_m = [max(r["peak_mb"], 0.0) / r["mb"] for r in rows]
        print(f"{kind}: time/MB {per_s[-1] / per_s[0]:.2f}x and memory/MB "
              f"{per_m[-1] / max(per_m[0], 1e-9):.2f}x from {rows[0]['mb']:.0f} to "
              f"{rows[-1]['mb']:.0f} MB (max/min over sizes: {max(per_s) / min(per_s):.2f}x, "
              f"{max(per_m) / max(min(per_m), 1e-9):.2f}x)")
    print(f"largest peak per MB of input: {worst:.1f} MB (goal <= 10)")


if __name__ == "__main__":
    main()
