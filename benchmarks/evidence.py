"""Evidence integrity of a built grid: records split per format x length x method.

No model call: every stored example is sectioned as the evaluation would (Flat at C;
Tree, Tree+Path and TreeAgent at B*, with the given tokenizer) and each evidence record
is counted as split when its content spans more than one section
(:mod:`treeagent.pipeline.evidence`). Prints one table (records, % split per method, and for
aggregation tasks the in-scope share) and writes the Parquet rows under ``--out``.

Then the section-count match rate (4.5, C.5; :func:`treeagent.pipeline.evidence.match_rates`)
per format x length and per format, the paper's 74.8% beside JSON, and how the
mismatches fall: TreeAgent above or below T_flat, and where the searched budget B* sits
in [C, 2C-1] (at C, at 2C-1, between).

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
PAPER_MATCH = {"json": 74.8}  # 4.5 / C.5: JSON, mean over the four agents


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--validated", required=True, help="a built grid (bench build --out)")
    ap.add_argument("--formats", nargs="+", default=["json", "html", "yaml", "javascript"])
    ap.add_argument("--tokenizer", default="qwen3", help="tokenizer name (paper: qwen3)")
    ap.add_argument("--budget", type=int, default=5000, help="C (paper: 5000)")
    ap.add_argument("--out", default="/tmp/evidence-grid", help="folder for the Parquet rows")
    ap.add_argument("--reuse", action="store_true",
                    help="read the rows already under --out instead of computing them")
    ap.add_argument("--explain", action="store_true",
                    help="section every example whose counts differ again: can any budget "
                         "in [C, 2C-1] reach T_flat, and how many small sections it has")
    ap.add_argument("--small", type=int, default=100,
                    help="a section under this many tokens counts as small (--explain)")
    args = ap.parse_args(argv)

    from treeagent.pipeline import evidence
    from treeagent.tokenizers import tokens

    tok = tokens.load(args.tokenizer)
    started = time.perf_counter()
    if args.reuse:
        summary = evidence.summary(pq.read_table(Path(args.out) / evidence.RECORDS_FILE)
                                   .to_pylist())
    else:
        summary = evidence.compute(args.validated, args.formats,
                                   [("any", args.tokenizer, tok)], METHODS, args.budget,
                                   args.out)
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
    example_rows = pq.read_table(Path(args.out) / evidence.EXAMPLES_FILE).to_pylist()
    print_match_rates(example_rows, args.budget)
    if args.explain:
        print_mismatches(args.validated, args.formats, example_rows, tok, args.budget,
                         args.small)
    return 0


def print_match_rates(rows: list[dict], budget: int) -> None:
    """The match rate per format x length and per format, the paper's figure beside it,
    and where the mismatches lie (count above/below T_flat; B* at C, at 2C-1, between)."""
    from treeagent.pipeline.evidence import match_rates

    ta = [r for r in rows if r["method"] == "treeagent" and r["sections"] is not None
          and r["flat_sections"] is not None]
    print(f"\nsection counts equal (TreeAgent n(B*) = Flat T_flat), C = {budget}, "
          f"B* in [{budget}, {2 * budget - 1}]")
    print(f"{'format':<11}{'length':>8}{'examples':>9}{'equal':>7}{'match %':>9}"
          f"{'paper %':>9}{'above':>7}{'below':>7}{'B*=C':>7}{'B*=2C-1':>9}{'between':>9}")
    per_length = [r for r in match_rates(ta, by_length=True) if r.agent != "mean"]
    per_format = [r for r in match_rates(ta) if r.agent != "mean"]
    for r in [*per_length, *per_format]:
        cell = [x for x in ta if x["format"] == r.format and x["agent"] == r.agent
                and (r.length is None or x["length"] == r.length)]
        miss = [x for x in cell if x["sections"] != x["flat_sections"]]
        at_c = sum(x["budget"] == budget for x in cell)
        at_top = sum(x["budget"] == 2 * budget - 1 for x in cell)
        paper = PAPER_MATCH.get(r.format) if r.length is None else None
        print(f"{r.format:<11}{r.length if r.length else 'all':>8}{r.examples:>9}"
              f"{r.matched:>7}{r.rate:>9.1f}{paper if paper else '':>9}"
              f"{sum(x['sections'] > x['flat_sections'] for x in miss):>7}"
              f"{sum(x['sections'] < x['flat_sections'] for x in miss):>7}"
              f"{at_c:>7}{at_top:>9}{len(cell) - at_c - at_top:>9}")


def print_mismatches(validated: str, formats: list[str], rows: list[dict], tok, budget: int,
                     small: int) -> None:
    """For every TreeAgent example whose count differs from T_flat, sectioned again with
    the same tokenizer: whether the top of the search range already exceeds T_flat
    (n(2C-1) > T_flat: no budget of [C, 2C-1] can match), the excess n(B*) - T_flat, and
    the sections under ``small`` tokens at B* (a record set's own small fields, cut off
    from its records when the record set exceeds B*: Algorithm 1 sections an oversized
    child on its own)."""
    from treeagent import formats as fmts
    from treeagent.algorithm.sectioning import Sectioner, count
    from treeagent.bench import io
    from treeagent.tokenizers.tokens import TokenIndex

    miss = {r["example_id"]: r for r in rows if r["method"] == "treeagent"
            and r["sections"] is not None and r["sections"] != r["flat_sections"]}
    cells: dict[tuple[str, int], list[tuple[int, int, int]]] = defaultdict(list)
    for fmt in formats:
        path = Path(validated) / "examples" / f"{fmt}.parquet"
        if not path.is_file():
            continue
        for ex in io.read_examples(path):
            r = miss.get(ex.id)
            if r is None:
                continue
            tree = fmts.parse(ex.context, ex.format)
            sectioner = Sectioner(tree, TokenIndex(tree.text, tok))
            parts = sectioner.finalize(sectioner.partition(tree.root, r["budget"]),
                                       r["budget"])
            cells[(fmt, ex.length)].append((
                int(count(sectioner, 2 * budget - 1) > r["flat_sections"]),
                r["sections"] - r["flat_sections"],
                sum(1 for p in parts if p.tokens < small)))
    print(f"\nexamples whose counts differ, sectioned again (small: < {small} tokens)")
    print(f"{'format':<11}{'length':>8}{'differ':>7}{'n(2C-1)>T_flat':>16}"
          f"{'mean excess':>13}{'mean small':>12}{'excess<=small':>15}")
    for key in sorted(cells):
        c = cells[key]
        print(f"{key[0]:<11}{key[1]:>8}{len(c):>7}{sum(x[0] for x in c):>16}"
              f"{sum(x[1] for x in c) / len(c):>13.2f}{sum(x[2] for x in c) / len(c):>12.2f}"
              f"{sum(x[1] <= x[2] for x in c):>15}")


if __name__ == "__main__":
    raise SystemExit(main())
