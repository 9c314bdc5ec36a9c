"""Evidence integrity: does a method's sectioning keep the records a question needs whole?

The first effect TreeAgent claims (paper Section 1, 3.1) is that fixed-length sections
cut the records a question depends on, while structural sections (Algorithm 1 at the
searched budget B*, A.2) keep them whole. This is measured without any model call:

* the evidence records of an example are its stored ``record_ids`` (the asked records of
  a lookup; for an aggregation every in-scope record of the context, B.1);
* each record is located in the composed context: its unit's text is found in the
  context in recipe order, the record's structural path is re-read from that unit's text
  (:func:`treeagent.bench.sources.records_from_text`) and resolved in the unit's own
  parse tree (:func:`treeagent.formats.parse`), which gives its character span;
* each method sections the context as the evaluation does, with the evaluated model's
  tokenizer (Flat at C; Tree, Tree+Path and TreeAgent at B*, C.1-C.2); a record spans
  the sections holding any non-blank character of its span, and is *whole* when one
  section holds all of it.

Outputs (one Parquet table each, views ``evidence_records`` and ``evidence`` in DuckDB):
one row per (agent, method, example, record) and one per (agent, method, example) with
the share of records split.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

RECORD_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("example_id", pa.string()), ("format", pa.string()), ("task", pa.string()),
    ("length", pa.int64()), ("agent", pa.string()), ("method", pa.string()),
    ("tokenizer", pa.string()), ("record_id", pa.string()), ("start", pa.int64()),
    ("end", pa.int64()), ("sections_spanned", pa.int64()), ("whole", pa.bool_()),
]
EXAMPLE_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("example_id", pa.string()), ("format", pa.string()), ("task", pa.string()),
    ("length", pa.int64()), ("agent", pa.string()), ("method", pa.string()),
    ("tokenizer", pa.string()), ("base_budget", pa.int64()), ("budget", pa.int64()),
    ("sections", pa.int64()), ("flat_sections", pa.int64()), ("aggregation", pa.bool_()),
    ("records", pa.int64()), ("located", pa.int64()), ("split", pa.int64()),
    ("split_share", pa.float64()), ("in_scope_split_share", pa.float64()),
    ("max_sections_spanned", pa.int64()),
]
RECORDS_FILE = "evidence_records.parquet"
EXAMPLES_FILE = "evidence.parquet"


@dataclass(frozen=True, slots=True)
class Located:
    """One evidence record: its character span in the context, or None if not found."""

    record_id: str
    start: int | None
    end: int | None


def unit_offsets(context: str, texts: Sequence[str]) -> list[int | None]:
    """Where each unit text starts in the context, searched in recipe order."""
    out: list[int | None] = []
    pos = 0
    for text in texts:
        at = context.find(text, pos)
        out.append(at if at >= 0 else None)
        if at >= 0:
            pos = at + len(text)
    return out


def owning_unit(record_id: str, unit_ids: Sequence[str]) -> int | None:
    """Index (in the recipe) of the first occurrence of the unit a record id belongs to
    (record ids are ``<unit id>#<local id>``; unit ids may hold ``#`` themselves)."""
    best: tuple[int, int] | None = None
    for i, uid in enumerate(unit_ids):
        if record_id.startswith(uid + "#") and (best is None or len(uid) > best[0]):
            best = (len(uid), i)
    return None if best is None else best[1]


def _path_spans(text: str, fmt: str) -> dict[str, tuple[int, int]]:
    """Structural path -> character span of every node of a unit's own parse tree. A JS
    unit holding one binding also answers paths relative to its value (``$[0]`` for
    ``$.invalid[0]`` of ``const invalid = [...]``), as the record readers name them."""
    from treeagent import formats

    tree = formats.parse(text, fmt)
    spans: dict[str, tuple[int, int]] = {}
    for node in tree.nodes:
        spans.setdefault(tree.path(node), (node.start, node.end))
    if fmt == "javascript" and len(tree.root.children) == 1:
        base = tree.path(tree.root.children[0])
        for path, span in list(spans.items()):
            if path.startswith(base):
                spans.setdefault(tree.root_path + path[len(base):], span)
    return spans


def locate(fmt: str, context: str, unit_ids: Sequence[str], record_ids: Sequence[str],
           units: dict[str, tuple[str, str]]) -> list[Located]:
    """Character spans of ``record_ids`` in ``context`` (module docstring)."""
    from treeagent.bench.sources import records_from_text

    offsets = unit_offsets(context, [units[u][1] if u in units else "\0" for u in unit_ids])
    paths: dict[str, dict[str, str]] = {}  # unit id -> record id -> structural path
    spans: dict[str, dict[str, tuple[int, int]]] = {}
    out = []
    for rid in record_ids:
        i = owning_unit(rid, unit_ids)
        if i is None or offsets[i] is None:
            out.append(Located(rid, None, None))
            continue
        uid = unit_ids[i]
        source, text = units[uid]
        if uid not in paths:
            try:
                paths[uid] = {r.id: r.path for r in records_from_text(fmt, source, text,
                                                                      unit_id=uid)}
                spans[uid] = _path_spans(text, fmt)
            except ValueError:  # ParseError included: the record cannot be located
                paths[uid], spans[uid] = {}, {}
        span = spans[uid].get(paths[uid].get(rid, "\0"))
        if span is None:
            out.append(Located(rid, None, None))
        else:
            out.append(Located(rid, offsets[i] + span[0], offsets[i] + span[1]))
    return out


def sections_spanned(bounds: Sequence[tuple[int, int]], text: str, start: int, end: int
                     ) -> int:
    """Sections (``(start, end)`` character ranges, sorted) holding a non-blank character
    of ``text[start:end]``."""
    starts = [b[0] for b in bounds]
    i = max(bisect.bisect_right(starts, start) - 1, 0)
    n = 0
    for s, e in bounds[i:]:
        if s >= end:
            break
        a, b = max(s, start), min(e, end)
        if a < b and text[a:b].strip():
            n += 1
    return n


def _bounds(doc: Any) -> list[tuple[int, int]]:
    return sorted((s.start, s.end) for s in doc.sections)


def example_rows(ex: Any, unit_ids: Sequence[str], record_ids: Sequence[str],
                 units: dict[str, tuple[str, str]], setups: Sequence[tuple[str, str, Any]],
                 methods: Sequence[str], base_budget: int
                 ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Record rows and example rows of one example for every (agent, tokenizer name,
    tokenizer) in ``setups`` and every method; sections once per tokenizer and mode."""
    from treeagent.agents.observation import prepare

    located = locate(ex.format, ex.context, unit_ids, record_ids, units)
    aggregation = "scope" in ex.spec
    docs: dict[tuple[str, str], Any] = {}
    records: list[dict[str, Any]] = []
    examples: list[dict[str, Any]] = []
    base = {"example_id": ex.id, "format": ex.format, "task": ex.task, "length": ex.length}
    for agent, tok_name, tok in setups:
        for method in methods:
            mode = "flat" if method == "flat" else "structural"
            if (tok_name, mode) not in docs:
                doc = prepare(ex.context, ex.format, tok, "flat" if mode == "flat"
                              else "treeagent", base_budget)
                docs[(tok_name, mode)] = (doc, _bounds(doc))
            doc, bounds = docs[(tok_name, mode)]
            head = {**base, "agent": agent, "method": method, "tokenizer": tok_name}
            spans = []
            for loc in located:
                n = (None if loc.start is None
                     else sections_spanned(bounds, ex.context, loc.start, loc.end))
                spans.append(n)
                records.append({**head, "record_id": loc.record_id, "start": loc.start,
                                "end": loc.end, "sections_spanned": n,
                                "whole": None if n is None else n == 1})
            found = [n for n in spans if n is not None]
            split = sum(1 for n in found if n > 1)
            share = split / len(found) if found else None
            examples.append({
                **head, "base_budget": base_budget, "budget": doc.budget,
                "sections": len(doc), "flat_sections": doc.flat_count,
                "aggregation": aggregation, "records": len(located), "located": len(found),
                "split": split, "split_share": share,
                "in_scope_split_share": share if aggregation else None,
                "max_sections_spanned": max(found) if found else None,
            })
    return records, examples


def write_rows(rows: Sequence[dict[str, Any]], columns: list[tuple[str, pa.DataType]],
               path: str | Path) -> Path:
    """A Parquet table with a fixed schema and writer options (same rows, same bytes)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    schema = pa.schema(columns)
    table = pa.Table.from_pylist([{k: r.get(k) for k, _ in columns} for r in rows],
                                 schema=schema)
    tmp = out.with_name(f".{out.name}.tmp")
    pq.write_table(table, tmp, compression="zstd", write_statistics=False,
                   store_schema=False)
    tmp.replace(out)
    return out


def stored_examples(validated: str | Path, formats: Iterable[str]
                    ) -> Iterator[tuple[Any, list[str], list[str], dict[str, tuple[str, str]]]]:
    """(example, unit ids, record ids, unit table) for every stored example of ``formats``."""
    from treeagent.bench import io

    for fmt in formats:
        path = Path(validated) / "examples" / f"{fmt}.parquet"
        if not path.is_file():
            continue
        units = io.load_units(io.units_path(path, fmt))
        rows = {r["id"]: r for r in pq.read_table(
            path, columns=["id", "unit_ids", "record_ids"]).to_pylist()}
        for ex in io.read_examples(path):
            row = rows[ex.id]
            yield ex, list(row["unit_ids"]), list(row["record_ids"] or []), units


def compute(validated: str | Path, formats: Sequence[str],
            setups: Sequence[tuple[str, str, Any]], methods: Sequence[str], base_budget: int,
            out_dir: str | Path) -> dict[str, Any]:
    """Evidence rows of every stored example, written under ``out_dir``; returns a summary
    (examples, records, share split per method)."""
    records: list[dict[str, Any]] = []
    examples: list[dict[str, Any]] = []
    for ex, unit_ids, record_ids, units in stored_examples(validated, formats):
        r, e = example_rows(ex, unit_ids, record_ids, units, setups, methods, base_budget)
        records += r
        examples += e
    write_rows(records, RECORD_COLUMNS, Path(out_dir) / RECORDS_FILE)
    write_rows(examples, EXAMPLE_COLUMNS, Path(out_dir) / EXAMPLES_FILE)
    return summary(records)


def summary(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Share (%) of located evidence records split, per agent and method."""
    out: dict[str, dict[str, Any]] = {}
    for r in records:
        if r["sections_spanned"] is None:
            continue
        cell = out.setdefault(r["agent"], {}).setdefault(r["method"], [0, 0])
        cell[0] += r["sections_spanned"] > 1
        cell[1] += 1
    return {a: {m: {"records": n, "split_percent": round(100 * s / n, 2)}
                for m, (s, n) in by_m.items()} for a, by_m in out.items()}


@dataclass(frozen=True, slots=True)
class MatchRate:
    """Section-count match (4.5, C.5) of one agent (or ``"mean"``) on one format, at one
    length or every length (``length`` None): of ``examples`` TreeAgent examples,
    ``matched`` have n_x(B*) = T_flat(x, C); ``rate`` in % (None with no example)."""

    agent: str
    format: str
    length: int | None
    examples: int
    matched: int | None  # None for the agent mean (a mean of rates, not a count)
    rate: float | None


def match_rates(rows: Iterable[Mapping[str, Any]], by_length: bool = False
                ) -> list[MatchRate]:
    """The share of examples whose TreeAgent section count equals Flat's, from evidence
    example rows (:data:`EXAMPLE_COLUMNS`): per agent and format (and length with
    ``by_length``), then the agents' mean per format (and length), each agent weighted
    equally as the paper's 74.8% is. Only ``method == "treeagent"`` rows count: their
    ``sections`` is n_x(B*), their ``flat_sections`` T_flat(x, C) (Eq. 2) counted with
    the same tokenizer; a row missing either is left out. Order: agents, then the mean;
    formats and lengths as first seen, lengths ascending."""
    counts: dict[tuple[str, str, int | None], list[int]] = {}
    for r in rows:
        if r.get("method") != "treeagent" or r.get("sections") is None \
                or r.get("flat_sections") is None:
            continue
        key = (str(r["agent"]), str(r["format"]),
               int(r["length"]) if by_length else None)
        cell = counts.setdefault(key, [0, 0])
        cell[0] += int(r["sections"]) == int(r["flat_sections"])
        cell[1] += 1
    agents = list(dict.fromkeys(k[0] for k in counts))
    cells = list(dict.fromkeys((k[1], k[2]) for k in counts))
    fmt_rank = {f: i for i, f in enumerate(dict.fromkeys(f for f, _ in cells))}
    cells.sort(key=lambda c: (fmt_rank[c[0]], c[1] or 0))
    out = [MatchRate(a, f, n, counts[(a, f, n)][1], counts[(a, f, n)][0],
                     100 * counts[(a, f, n)][0] / counts[(a, f, n)][1])
           for a in agents for f, n in cells if (a, f, n) in counts]
    if len(agents) > 1:
        for f, n in cells:
            per = [r for r in out if (r.format, r.length) == (f, n)]
            out.append(MatchRate("mean", f, n, sum(r.examples for r in per), None,
                                 sum(r.rate or 0.0 for r in per) / len(per)))
    return out


def dumps(summary_: dict[str, Any]) -> str:
    return json.dumps(summary_, indent=1, sort_keys=True) + "\n"
