"""Variety in every cell of the benchmark (B.1): the rules a build holds each (format,
task, length) cell to, and the per-cell figures its inventory reports.

* No repeated (question, answer) within a format and task, across lengths: a family's
  lookups are dealt out over the lengths (one length each), an aggregation asked over the
  anchor units alone (the same at every length) is asked at one length
  (:func:`home`), and the examples gate rejects any repeat left
  (:func:`treeagent.bench.examples_gate.repeats`).
* One unit supplies at most 10% of a cell, and no count value is more than half of a
  cell's answers (:class:`Caps`, at least one example each; a unit's share is taken of
  the cell less the tenth the gate may still reject): construction skips a
  candidate over a cap while the first half of the families are built; later families
  may exceed it where the sources give nothing else, and the inventory names every cell
  over a cap (:func:`shortfalls`).
* Every source with records is used as evidence: the families' first anchor unit comes
  from each source with anchor units in turn.

Every decision depends on the family and the cell's own length only, so a build sharded
by (format, length) gives the serial build's rows.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

UNIT_SHARE = 0.10
"""Most of a cell one unit may supply."""
COUNT_SHARE = 0.5
"""Most of a cell's count answers one value may be."""
KEPT_MARGIN = 0.1
"""Share of a cell's examples construction assumes the examples gate may still reject
when it holds a unit to its share (50 per cell: 4 examples a unit, 10% of 40 kept)."""


def most(share: float, size: int) -> int:
    """Examples of a cell of ``size`` one unit (or one count value) may have: ``share``
    of it, at least one."""
    return max(1, int(share * size))


def home(question: str, seed: int, fmt: str, family: int, spread: int) -> int:
    """The one length (index into the grid's lengths) a question asked over a family's
    anchor units alone is asked at: a stable hash of the question and the family."""
    digest = hashlib.sha256(f"{seed}|{fmt}|{family}|{question}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % max(1, spread)


def _count_value(answer: Any) -> str:
    return json.dumps(answer, sort_keys=True)


@dataclass(slots=True)
class Caps:
    """What each (task, length) cell of one format holds so far: examples per evidence
    unit, and count answers per value."""

    per_cell: int
    units: dict[tuple[str, int], Counter] = field(default_factory=dict)
    counts: dict[int, Counter] = field(default_factory=dict)

    def allows(self, task: str, length: int, unit_ids: Sequence[str], answer: Any) -> bool:
        """Whether one more example of the cell may use ``unit_ids`` and, for a count,
        give ``answer``. A unit's share is counted against the cell less a tenth
        (:data:`KEPT_MARGIN`): the examples gate may still reject a few of a cell's rows
        (a (question, answer) repeated at another length), and the share must hold for
        the rows it keeps."""
        used = self.units.get((task, length), Counter())
        room = most(UNIT_SHARE, self.per_cell - int(KEPT_MARGIN * self.per_cell))
        if any(used[u] >= room for u in unit_ids):
            return False
        if task == "conditional_count":
            given = self.counts.get(length, Counter())
            return given[_count_value(answer)] < most(COUNT_SHARE, self.per_cell)
        return True

    def take(self, task: str, length: int, unit_ids: Sequence[str], answer: Any) -> None:
        self.units.setdefault((task, length), Counter()).update(set(unit_ids))
        if task == "conditional_count":
            self.counts.setdefault(length, Counter())[_count_value(answer)] += 1


def cell_figures(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One cell's kept rows: examples, distinct (question, answer), the unit supplying
    most of them and how many, and (counts) the most frequent answer and how many."""
    units = Counter(u for r in rows for u in set(r["source_ids"]))
    top, top_n = min(units.items(), key=lambda kv: (-kv[1], kv[0])) if units else ("", 0)
    out: dict[str, Any] = {
        "kept": len(rows), "distinct": len({(r["question"], r["answer"]) for r in rows}),
        "top_unit": top, "top_unit_examples": top_n}
    if rows and rows[0]["task"] == "conditional_count":
        value, n = min(Counter(r["answer"] for r in rows).items(),
                       key=lambda kv: (-kv[1], kv[0]))
        out |= {"top_count": json.loads(value), "top_count_examples": n}
    return out


def by_cell(kept: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``task@bucket`` -> :func:`cell_figures` for one format's kept rows."""
    cells: dict[str, list[dict[str, Any]]] = {}
    for r in kept:
        cells.setdefault(f"{r['task']}@{r['bucket']}", []).append(r)
    return {k: cell_figures(v) for k, v in cells.items()}


def evidence_sources(kept: Sequence[dict[str, Any]]) -> list[str]:
    """The sources whose units a format's kept examples use as evidence."""
    return sorted({u.split("/")[1] for r in kept for u in r["source_ids"] if u.count("/") >= 2})


def no_evidence(fmt: str, name: str) -> str:
    """Why a source's data cannot supply evidence, as its registry entry declares it
    (:attr:`~treeagent.bench.sources.registry.Source.no_evidence`; "" when it can)."""
    from treeagent.bench.sources.vocabulary import source

    src = source(fmt, name)
    return getattr(src, "no_evidence", "") if src is not None else ""


def shortfalls(fmt: str, cells: dict[str, dict[str, Any]], repeated: int,
               with_records: Sequence[str], used: Sequence[str],
               why: Mapping[str, str] | None = None) -> list[str]:
    """One line per rule a format's cells break (``[]`` when none): a repeated (question,
    answer), a unit over its share of a cell, a count value over half a cell, a source
    with records never used as evidence (where the format kept at least one example per
    source), each with the reason in words where one is known (``why``, else the
    source's declared :func:`no_evidence`)."""
    lines = []
    if repeated:
        lines.append(f"{fmt}: {repeated} repeated (question, answer) rejected by the gate")
    for cell, f in cells.items():
        if f["top_unit_examples"] > most(UNIT_SHARE, f["kept"]):
            lines.append(f"{fmt} {cell}: one unit supplies {f['top_unit_examples']} of "
                         f"{f['kept']} examples ({f['top_unit']})")
        if f.get("top_count_examples", 0) > most(COUNT_SHARE, f["kept"]):
            lines.append(f"{fmt} {cell}: count {f['top_count']} answers "
                         f"{f['top_count_examples']} of {f['kept']}")
    unused = sorted(set(with_records) - set(used))
    if unused and sum(f["kept"] for f in cells.values()) >= len(with_records):
        reasons = {s: (why or {}).get(s) or no_evidence(fmt, s) for s in unused}
        lines.append(f"{fmt}: sources with records never used as evidence: "
                     + "; ".join(f"{s} ({reasons[s]})" if reasons[s] else s for s in unused))
    return lines
