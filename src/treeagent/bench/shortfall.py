"""What a benchmark build left empty, and why (for ``bench build`` and ``bench export``).

A requested format or (format, task, length) cell that holds no example is reported in
one line per format with its reasons: the rejected candidates by reason (with one
rejection's detail), the format's construction notes, or that no candidate was made.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from treeagent.bench.contexts import bucket_label


def empty_cells(inventory: dict[str, Any]) -> dict[str, tuple[list[tuple[str, str]], int]]:
    """format -> (its empty (task, bucket) cells, its number of cells), from the
    inventory's ``counts`` (format -> task -> bucket -> examples)."""
    out = {}
    for fmt, by_task in inventory.get("counts", {}).items():
        cells = [(t, b) for t, by_bucket in by_task.items() for b, n in by_bucket.items()]
        empty = [(t, b) for t, by_bucket in by_task.items()
                 for b, n in by_bucket.items() if not n]
        if empty:
            out[fmt] = (empty, len(cells))
    return out


def _reasons(fmt: str, empty: set[tuple[str, str]], inventory: dict[str, Any],
             rejections: Iterable[dict[str, Any]]) -> str:
    reasons: Counter[str] = Counter()
    detail: dict[str, str] = {}
    for r in rejections:
        if r.get("format") != fmt or (r.get("task"), bucket_label(r.get("length") or 0)) \
                not in empty:
            continue
        reasons[r["reason"]] += 1
        if r.get("detail"):
            detail.setdefault(r["reason"], r["detail"])
    parts = [f"{n} candidate(s) rejected for {reason}"
             + (f" (e.g. {detail[reason]})" if reason in detail else "")
             for reason, n in reasons.most_common()]
    notes = inventory.get("formats", {}).get(fmt, {}).get("notes", {})
    parts += [f"{note} ({n}x)" for note, n in notes.items()]
    return "; ".join(parts) or "no candidate question was made for these cells " \
        "(the sources hold no records these tasks can ask about)"


def _cells(cells: list[tuple[str, str]]) -> str:
    shown = ", ".join(f"{t}@{b}" for t, b in cells[:6])
    return shown + (f", ... {len(cells) - 6} more" if len(cells) > 6 else "")


def report(inventory: dict[str, Any], rejections: Iterable[dict[str, Any]]) -> list[str]:
    """One line per format with an empty cell, saying which and why ([] when none)."""
    rejections = list(rejections)
    lines = []
    for fmt, (empty, total) in empty_cells(inventory).items():
        why = _reasons(fmt, set(empty), inventory, rejections)
        if len(empty) == total:
            lines.append(f"{fmt}: 0 examples (all {total} requested cells empty): {why}")
        else:
            lines.append(f"{fmt}: {len(empty)} of {total} requested cells empty "
                         f"({_cells(empty)}): {why}")
    return lines


def report_stored(validated: str | Path, formats: Iterable[str]) -> list[str]:
    """One line per format in ``formats`` (those found without examples) saying why,
    from a build's ``inventory.json`` and ``rejections.parquet`` where they exist."""
    import pyarrow.parquet as pq

    validated = Path(validated)
    formats = list(formats)
    path = validated / "inventory.json"
    inventory = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    counts = inventory.get("counts", {})
    inventory = {**inventory, "counts": {f: counts[f] for f in formats if f in counts}}
    rej_path = validated / "rejections.parquet"
    rejections = pq.read_table(rej_path).to_pylist() if rej_path.is_file() else []
    found = {line.split(":", 1)[0]: line for line in report(inventory, rejections)}
    return [found[f] if f in found and ": 0 examples" in found[f]
            else f"{f}: 0 examples under {validated}/examples (not built for this format)"
            for f in formats]
