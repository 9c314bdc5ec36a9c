"""Check a built benchmark's train / dev / test splits from its files alone.

Reads ``<validated>/examples``, ``units`` and ``splits/<split>/{examples,units}`` with
pyarrow only (none of the build's own code, so it cannot share a bug with the
partition), prints kept examples per split x (task, length) cell and checks that no two
splits' contexts share a unit, a source document (the unit's file with its page index
dropped) or a unit text (sha256). Exit 1 when any of them is shared.

    python benchmarks/splits_check.py validated [--format json]
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq


def document(unit_id: str) -> str:
    return re.sub(r"(__\d+)?(\.\w+)?$", "", unit_id.split("#")[0])


def tables(root: Path, fmt: str) -> dict[str, tuple[Path, Path]]:
    found = {"test": root}
    for folder in sorted((root / "splits").glob("*")) if (root / "splits").is_dir() else []:
        found[folder.name] = folder
    return {s: (d / "examples" / f"{fmt}.parquet", d / "units" / f"{fmt}.parquet")
            for s, d in found.items() if (d / "examples" / f"{fmt}.parquet").is_file()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("validated", type=Path)
    ap.add_argument("--format", default="json")
    args = ap.parse_args(argv)
    used: dict[str, dict[str, set[str]]] = {}
    print(f"{'split':<6} {'task':<18} {'bucket':<8} kept")
    for split, (examples, units) in tables(args.validated, args.format).items():
        rows = pq.read_table(examples, columns=["id", "task", "bucket", "unit_ids"]).to_pylist()
        text = dict(zip(*pq.read_table(units, columns=["unit_id", "text"]).to_pydict().values()))
        cells = Counter((r["task"], r["bucket"]) for r in rows)
        for (task, bucket), n in sorted(cells.items()):
            print(f"{split:<6} {task:<18} {bucket:<8} {n}")
        ids = {u for r in rows for u in r["unit_ids"]}
        used[split] = {"units": ids, "documents": {document(u) for u in ids},
                       "texts": {hashlib.sha256(text[u].encode()).hexdigest() for u in ids}}
        print(f"{split:<6} {'(all)':<18} {'':<8} {len(rows)} examples, {len(ids)} units, "
              f"{len(used[split]['documents'])} documents")
    shared = 0
    names = list(used)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            for what in ("units", "documents", "texts"):
                both = used[a][what] & used[b][what]
                shared += len(both)
                print(f"{a} & {b}: {len(both)} shared {what}"
                      + (f" (e.g. {sorted(both)[0]})" if both else ""))
    return 1 if shared else 0


if __name__ == "__main__":
    sys.exit(main())
