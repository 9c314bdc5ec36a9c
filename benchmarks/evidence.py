"""Evidence integrity of a built grid (issue 17): records split per format x length x method.

No model call: every stored example is sectioned as the evaluation would (Flat at C;
Tree, Tree+Path and TreeAgent at B*, with the given tokenizer) and each evidence record
is counted as split when its content spans more than one section
(:mod:`treeagent.evidence`). Prints one table (records, % split per method, and for
aggregation tasks the in-scope share) and writes the Parquet rows under ``--out``.

    python benchmarks/evidence.py --validated /tmp/grid/out [--budget 5000] [--tokenizer qwen3]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq

METHODS = ("flat", "tree", "tree+path", "treeagent")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--validated", required=True, help="a built grid (bench build --out)")
    ap.add_argument("--formats", nargs="+", default=["json", "html", "yaml", "javascript"])
    ap.add_argument("--tokenizer", default="qwen3", help="tokenizer name (paper: qwen3)")
    ap.add_argument("--budget", type=int, default=5000, help="C (paper: 5000)")
    ap.add_argument("--out", default="/tmp/evidence-grid", help="folder for the Parquet rows")
    args = ap.parse_args(argv)

    from treeagent import evidence, tokens

    tok = tokens.load(args.tokenizer)
    started = time.perf_counter()
    summary = evidence.compute(args.validated, args.formats, [("any", args.tokenizer, tok)],
                               METHODS, args.budget, args.out)
    seconds = time.perf_counter() - started
    rows = pq.read_table(Path(args.out) / evidence.RECORDS_FILE).to_pylist()
    cells: dict[tuple[str, int], dict[str, list[int]]] = defaultdict(
        lambda: defaultdict(lambda: [0, 0]))
    examples: dict[tuple[str, int], set[str]] = defaultdict(set)
    unlocated = 0
    for r in rows:
        if r["sections_spanned"] is None:
            unlocated += 1
            continue
        key = (r["format"], r["length"])
        examples[key].add(r["example_id"])
        cell = cells[key][r["method"]]
        cell[0] += r["sections_spanned"] > 1
        cell[1] += 1
    head = f"{'format':<11}{'length':>8}{'examples':>9}{'records':>9}" + "".join(
        f"{m + ' %':>14}" for m in METHODS)
    print(f"records split, tokenizer {args.tokenizer}, C = {args.budget} "
          f"(structural modes at B*), {seconds:.0f} s")
    print(head)
    for key in sorted(cells):
        by_m = cells[key]
        n = by_m["flat"][1]
        print(f"{key[0]:<11}{key[1]:>8}{len(examples[key]):>9}{n:>9}" + "".join(
            f"{100 * by_m[m][0] / by_m[m][1]:>14.2f}" if by_m[m][1] else f"{'-':>14}"
            for m in METHODS))
    print("all:", {m: f"{v['split_percent']}% of {v['records']}"
                   for m, v in summary.get("any", {}).items()})
    if unlocated:
        print(f"records not located: {unlocated}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
