"""Build the benchmark: units -> families -> contexts -> questions -> validation (4.1, B.1).

Per format, examples come in *families*. A family fixes a few small *anchor* units
(together at most ``anchor_fraction`` of the smallest bucket), asks its lookup questions
about anchor records, and builds one context per length bucket around the anchors
(same anchors, same relative depth; more distractors for longer buckets): lookups keep
their target fields and supporting units across lengths (B.1). Aggregation questions
are generated on each final context, over every record of the named kind in it (their
answers are recomputed after the distractors are added). Each context carries
``questions_per_context`` questions per task, so a (task, length) cell of ``per_cell``
examples draws on ``per_cell / questions_per_context`` contexts.

Every candidate is validated independently (:mod:`treeagent.bench.validate`); the
GX suite over all candidates decides what is kept; each rejected candidate is written
with its reason. Randomness comes only from ``random.Random`` seeded with strings
derived from ``seed`` (PYTHONHASHSEED-independent), so the same inputs and params give
byte-identical outputs.
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter as Tally
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from treeagent.bench import (
    accepted,
    anchoring,
    contexts,
    examples_gate,
    io,
    second_readers,
    tasks,
    validate,
    variety,
)
from treeagent.bench.model import Record, Unit
from treeagent.formats import FORMATS
from treeagent.registry import FORMATS as FORMAT_RECORDS
from treeagent.scoring import TASKS

Progress = Callable[[str, int, int], None]
BENCH_FORMATS = FORMAT_RECORDS.builtin_names
"""The formats the benchmark builds by default: the paper's four (a live view)."""


@dataclass(slots=True)
class BuildParams:
    """Every knob of construction (``params.yaml`` ``build:``)."""

    formats: tuple[str, ...] = field(default_factory=lambda: tuple(BENCH_FORMATS))
    tasks: tuple[str, ...] = TASKS
    lengths: tuple[int, ...] = tuple(contexts.BUCKETS.values())
    per_cell: int = 50
    questions_per_context: int = 5
    tokenizers: tuple[str, ...] = contexts.DEFAULT_TOKENIZERS
    tolerance: float = contexts.DEFAULT_TOLERANCE
    seed: int = 42
    allow_reuse: bool = False
    anchor_fraction: float = 0.5
    max_families: int = 0  # 0: 16x the families a full grid needs (more are built only
    # while some cell is short, with contexts only at its lengths: the paper grid's HTML
    # and YAML cells at 8K-128K, where small contexts rarely give a unique aggregate)
    recount: bool = True  # validation recounts every context's tokens
    second_reader: bool = True  # false: build formats without a second reader, flagged
    splits: dict[str, dict[str, int]] = field(default_factory=dict)  # format -> dev/train
    # totals (B.2; treeagent.bench.splits); a format without an entry is all test

    def __post_init__(self) -> None:
        bad = [f for f in self.formats if f not in FORMATS]
        if bad:
            raise ValueError(f"unknown format {bad[0]!r} (choose from {', '.join(FORMATS)})")
        bad = second_readers.missing(self.formats) if self.second_reader else []
        if bad:
            raise ValueError(
                f"format {bad[0]!r} has no second reader (entry point group "
                "treeagent.second_reader) to confirm its examples: build it with "
                "--no-second-reader (build.second_reader: false) to keep them, flagged "
                f"{second_readers.UNCONFIRMED!r}")
        bad = [t for t in self.tasks if t not in TASKS]
        if bad:
            raise ValueError(f"unknown task {bad[0]!r} (choose from {', '.join(TASKS)})")
        if not self.lengths or min(self.lengths) < 256:
            raise ValueError("lengths: give at least one bucket of 256 tokens or more")
        if self.per_cell < 1 or self.questions_per_context < 1:
            raise ValueError("per-cell and questions per context must be positive")
        if not 0 < self.tolerance < 1:
            raise ValueError("tolerance must be in (0, 1)")
        self.lengths = tuple(sorted(set(self.lengths)))
        from treeagent.bench.splits import check_sizes

        self.splits = check_sizes(self.splits, self.formats)

    @property
    def families(self) -> int:
        return self.max_families or 16 * math.ceil(self.per_cell / self.questions_per_context)


@dataclass(slots=True)
class BuildResult:
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    rejections: list[dict[str, Any]] = field(default_factory=list)
    inventory: dict[str, Any] = field(default_factory=dict)
    splits: dict[str, dict[str, Any]] = field(default_factory=dict)  # format -> split


# ------------------------------------------------------------------ per format


def _keys(unit: Unit, piece: str) -> frozenset[str]:
    """What may occur once per context: record descriptions and ids, JS binding names."""
    keys = {"d:" + tasks.norm(r.description) for r in unit.records if r.description}
    keys |= {"r:" + r.id for r in unit.records}
    if name := contexts.hooks(unit.format).binding(piece):
        keys.add("n:" + name)
    return frozenset(keys)


def _dedupe(units: Iterable[Unit], fmt: str, stats: Tally) -> list[Unit]:
    seen: set[str] = set()
    out = []
    for u in sorted(units, key=lambda u: u.id):
        digest = validate.sha256(contexts.piece(fmt, u.text))
        if digest in seen:
            stats["duplicate unit text"] += 1
            continue
        seen.add(digest)
        out.append(u)
    return out


@dataclass(slots=True)
class _Support:
    """Which lookup tasks a set of records supports (incremental, for anchor search)."""

    widest: int = 0  # most askable fields of one record
    shared: Tally = field(default_factory=Tally)  # (kind, field) -> records

    def add(self, records: Sequence[Record]) -> None:
        for r in records:
            asked = tasks.lookup_fields(r)
            self.widest = max(self.widest, len(asked))
            self.shared.update((r.kind, k) for k in asked)

    def score(self) -> tuple[int, int, int]:
        """(lookup tasks supported, records sharing a field, fields of one record)."""
        most = max(self.shared.values(), default=0)
        tasks_ = sum(self.widest >= n for n in (1, 2, 4)) + sum(most >= n for n in (2, 4))
        return tasks_, min(most, 4), min(self.widest, 4)


def _anchors(pool: contexts.Pool, units: list[Unit], budget: int, rng: random.Random,
             used: set[int], support: dict[int, _Support], tries: int = 32,
             source: str = "") -> list[int]:
    """Small anchor units whose records support as many lookup tasks as possible (all
    five when the data allow): random first unit holding a record a lookup can ask
    about (from ``source`` when it has one, so the families take their turn through
    every source with records; a list-only unit of it never gave a lookup), then units
    added while they fit."""
    size = pool.cost.max(axis=1)
    cands = [i for i in support if size[i] <= budget]
    rng.shuffle(cands)
    cands.sort(key=lambda i: i in used)  # prefer units no family has anchored yet
    firsts = ([i for i in cands if units[i].source == source and support[i].widest]
              or [i for i in cands if support[i].widest] or cands)  # one a lookup can ask
    best: tuple[tuple[int, int, int], list[int]] = ((0, 0, 0), [])
    for first in firsts[:tries]:
        chosen, total, keys = [first], int(size[first]), set(pool.keys[first])
        sup = _Support(support[first].widest, Tally(support[first].shared))
        for i in cands:
            if sup.score()[0] == 5:
                break
            if i in chosen or total + size[i] > budget or pool.keys[i] & keys:
                continue
            gain = _Support(max(sup.widest, support[i].widest), sup.shared + support[i].shared)
            if gain.score() <= sup.score():
                continue
            chosen.append(i)
            total += int(size[i])
            keys |= pool.keys[i]
            sup = gain
        if sup.score() > best[0]:
            best = (sup.score(), chosen)
        if best[0][0] == 5:
            break
    used.update(best[1])
    return best[1]


def _row(fmt: str, q: tasks.Question, length: int, family: int, j: int,
         ctx: contexts.Context, pool: contexts.Pool, source_ids: list[str],
         flags: list[str], tolerance: float) -> dict[str, Any]:
    spec = json.dumps(q.spec, ensure_ascii=False, sort_keys=True)
    answer = json.dumps(q.answer, ensure_ascii=False)
    chash = validate.sha256(ctx.text)
    bucket = contexts.bucket_label(length)
    return {
        "id": f"{fmt}-{q.task}-{bucket}-f{family:03d}-q{j}", "format": fmt, "task": q.task,
        "length": length, "bucket": bucket, "tolerance": tolerance, "family": family,
        "question": q.question,
        "spec": spec, "answer": answer, "source_ids": source_ids,
        "record_ids": list(q.record_ids), "unit_ids": [pool.ids[u] for u in ctx.order],
        "tokens": json.dumps(ctx.tokens, sort_keys=True), "reused": ctx.reused,
        "flags": flags, "context_hash": chash,
        "content_hash": io.content_hash(q.question, spec, answer, chash),
    }


@dataclass(slots=True)
class Prepared:
    """One format's deduplicated units and their token pool: what every family of the
    format draws on (the same for every length bucket)."""

    fmt: str
    units: list[Unit]
    pool: contexts.Pool
    unit_map: dict[str, tuple[str, str]]
    unit_of_rec: dict[int, str]
    idx: dict[str, int]
    support: dict[int, _Support]
    budget: int
    distinct: int
    notes: Tally

    def info(self) -> dict[str, Any]:
        return {"units": len(self.units), "distinct_tokens": self.distinct,
                "records": sum(len(u.records) for u in self.units),
                "sources_with_records": sorted({u.source for u in self.units if u.records})}

    def unit_rows(self, needed: set[str]) -> list[dict[str, Any]]:
        """Rows of ``units/<format>.parquet`` for the units ``needed``, in unit order."""
        return [
            {"unit_id": u.id, "source": u.source, "text": p, "sha256": validate.sha256(p),
             "provenance": json.dumps(u.provenance, sort_keys=True, default=str),
             "flags": list(u.flags)}
            for u, p in zip(self.units, self.pool.pieces) if u.id in needed]


def prepare_format(fmt: str, units: Iterable[Unit], params: BuildParams,
                   counter: contexts.Counter) -> Prepared:
    """Deduplicate ``units`` and count their pieces once per tokenizer."""
    stats: Tally = Tally()
    units = _dedupe(units, fmt, stats)
    pieces = [contexts.piece(fmt, u.text) for u in units]
    pool = contexts.make_pool(fmt, [u.id for u in units], pieces,
                              [_keys(u, p) for u, p in zip(units, pieces)], counter)
    unit_map = {u.id: (u.source, validate.sha256(p)) for u, p in zip(units, pool.pieces)}
    budget = int(params.anchor_fraction * params.lengths[0])
    size = pool.cost.max(axis=1)
    support: dict[int, _Support] = {}
    for i, u in enumerate(units):
        if u.records and size[i] <= budget:
            support[i] = _Support()
            support[i].add(u.records)
    return Prepared(fmt, units, pool, unit_map, {id(r): u.id for u in units for r in u.records},
                    {u.id: i for i, u in enumerate(units)}, support, budget,
                    int(pool.cost.max(axis=1).sum() + pool.overhead.max()), stats)


def _record_units(ids: Sequence[str], by_id: Mapping[str, list[Record]], prep: Prepared
                  ) -> tuple[list[str], dict[str, set[str]]]:
    """For the records ``ids`` (``by_id``: the context's records by id), their units in
    unit order, and each field name with the units whose records state it: one pass over
    the records, which the questions over them then share whatever fields they ask about."""
    units: set[str] = set()
    fields: dict[str, set[str]] = {}
    for rid in set(ids):
        for r in by_id.get(rid, ()):
            unit = prep.unit_of_rec[id(r)]
            units.add(unit)
            for name in r.fields:
                fields.setdefault(name, set()).add(unit)
    return sorted(units, key=prep.idx.__getitem__), fields


def _stated_in(q: tasks.Question, fields: Mapping[str, set[str]]) -> set[str]:
    """The units whose records state the field an aggregation question asks about (the
    records that decide its answer; other records of the kind state nothing of it);
    ``fields``: the field index :func:`_record_units` gives for the question's records."""
    return set().union(*(fields.get(n, ()) for n in tasks.spec_fields(q.spec)))


def _records_by_id(records: Sequence[Record]) -> dict[str, list[Record]]:
    out: dict[str, list[Record]] = {}
    for r in records:
        out.setdefault(r.id, []).append(r)
    return out


def fill(prep: Prepared, params: BuildParams, counter: contexts.Counter,
         extract: validate.Extractor, lengths: Sequence[int] | None = None,
         progress: Progress | None = None, quota: Mapping[tuple[str, int], int] | None = None
         ) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, int]]:
    """Families of ``prep``'s format until every (task, length) cell of ``lengths``
    (default: all of ``params.lengths``) holds ``per_cell`` (or its ``quota``: a dev or
    train split, :mod:`treeagent.bench.splits`) valid candidates: candidate
    rows (with ``check_*`` columns) in (family, length, task, question) order, fill
    statistics per length and notes.

    Cells of different lengths depend on each other only through the family sequence,
    which is the same for every length (anchors and lookups come from the family's own
    random stream, each context from its (family, length) stream): the rows of a length
    come out the same whether it is filled alone or with the others, so the build can be
    sharded by (format, length) (:func:`build_cell`)."""
    fmt, units, pool = prep.fmt, prep.units, prep.pool
    lengths = tuple(params.lengths if lengths is None else lengths)
    stats: Tally = Tally(prep.notes)
    used: set[int] = set()
    need = {(t, n): params.per_cell if quota is None else quota[(t, n)]
            for t in params.tasks for n in lengths}
    total = sum(need.values())
    rows: list[dict[str, Any]] = []
    cache: dict[str, list[Record]] = {}
    fills: dict[int, list[float]] = {n: [] for n in lengths}
    reuse: Tally = Tally()
    q_per = params.questions_per_context
    unconfirmed = [] if second_readers.available(fmt) else [second_readers.UNCONFIRMED]
    turns = sorted({units[i].source for i, sup in prep.support.items()  # sources whose
                    if sup.widest})  # small units hold a record a lookup can ask about
    # the turn starts at a seeded source, and each lookup cell takes its first questions
    # from a seeded family on (while the caps hold): a grid of few examples a cell draws
    # on every source, not the first few of the alphabet (the offsets depend on the cell
    # alone, so a length filled alone gets the same rows)
    start = random.Random(f"{params.seed}|{fmt}|turns").randrange(len(turns)) if turns else 0
    later = {(t, n): random.Random(f"{params.seed}|{fmt}|{t}|{n}|turn").randrange(len(turns))
             if turns else 0 for t in params.tasks if t in tasks.LOOKUP_TASKS for n in lengths}
    spread = len(params.lengths)  # the whole grid's lengths, whichever this call fills
    caps = variety.Caps(params.per_cell)
    for family in range(params.families):
        if not any(need.values()):
            break
        frng = random.Random(f"{params.seed}|{fmt}|family|{family}")
        anchors = _anchors(pool, units, prep.budget, frng, used, prep.support,
                           source=turns[(start + family) % len(turns)] if turns else "")
        if not anchors:
            stats["no anchor units fit the smallest bucket"] += 1
            break
        depth = frng.random()
        anchor_recs = [r for a in anchors for r in units[a].records]
        anchor_ids = {pool.ids[a] for a in anchors}
        lookups: dict[str, list[tasks.Question]] = {}
        for task in params.tasks:
            if task in tasks.LOOKUP_TASKS:  # dealt out over the lengths: one length each
                seen: set[str] = set()
                qs = [tasks.generate(task, anchor_recs, frng, seen)
                      for _ in range(q_per * spread)]
                lookups[task] = [q for q in qs if q is not None]
        strict = family < params.families // 2  # later families may exceed the caps
        for length in lengths:
            if not any(need[(t, length)] for t in params.tasks):
                continue
            turn = params.lengths.index(length)
            crng = random.Random(f"{params.seed}|{fmt}|context|{family}|{length}")
            ctx = contexts.build_context(pool, counter, anchors, length, crng, depth,
                                         tolerance=params.tolerance,
                                         allow_reuse=params.allow_reuse)
            fills[length].append(ctx.fill)
            reuse[length] += ctx.reused
            checked = None  # the context's own checks, made at its first candidate row
            ctx_recs = [r for u in ctx.order for r in units[u].records]
            flags = sorted({f for u in ctx.order for f in units[u].flags})
            if ctx.reused:
                flags.append("reused-distractors")
            flags += unconfirmed
            ctx_aggs: list[tasks.Aggregate] | None = None  # made once for the context
            by_id = _records_by_id(ctx_recs)
            by_address: dict | None = None  # for the lookups' ambiguity check
            # the units of a question's records, and of those stating its fields: the
            # questions over one kind share its records (thousands in a long context)
            record_units: dict[tuple[str, ...], tuple[list[str], dict[str, set[str]]]] = {}
            for task in params.tasks:
                if not need[(task, length)]:
                    continue
                if task in lookups and strict and family < later[(task, length)]:
                    continue  # the cell's turn through the sources starts later
                if task in lookups:  # a description another record repeats is not asked
                    if by_address is None:
                        by_address = anchoring.by_address(ctx_recs)
                    questions = [q for i, q in enumerate(lookups[task])
                                 if (i + family) % spread == turn
                                 and not tasks.ambiguous(q, ctx_recs, by_address)]
                else:
                    arng = random.Random(f"{params.seed}|{fmt}|{task}|{family}|{length}")
                    seen = set()
                    if ctx_aggs is None:
                        ctx_aggs = tasks.asked(ctx_recs)
                    questions = [q for q in (tasks.generate(task, ctx_recs, arng, seen, ctx_aggs)
                                             for _ in range(q_per)) if q is not None]
                for j, q in enumerate(questions):
                    if not need[(task, length)]:
                        break
                    ids = tuple(q.record_ids)
                    if ids not in record_units:
                        record_units[ids] = _record_units(ids, by_id, prep)
                    q_units, by_field = record_units[ids]
                    src = list(q_units)
                    if task not in lookups:
                        if _stated_in(q, by_field) <= anchor_ids and variety.home(
                                q.question, params.seed, fmt, family, spread) != turn:
                            continue  # on the anchors alone: the same at every length,
                            # asked at one
                    if strict and not caps.allows(task, length, src, q.answer):
                        continue  # a unit or a count value already has its share of the cell
                    row = _row(fmt, q, length, family, j, ctx, pool, src, flags,
                               params.tolerance)
                    row["accepted"] = json.dumps(accepted.question_forms(
                        q.spec, q.record_ids, ctx_recs), ensure_ascii=False)
                    if checked is None:  # a context no question is asked over is never
                        checked = validate.check_context(  # re-parsed or recounted
                            fmt, ctx.text, [pool.ids[u] for u in ctx.order], prep.unit_map,
                            extract, counter.full if params.recount else None, cache)
                    row.update(validate.check_example(row, checked, params.tolerance))
                    rows.append(row)
                    if not any(row[f"check_{c}"] for c in validate.CHECKS):
                        need[(task, length)] -= 1
                        caps.take(task, length, src, q.answer)
                        if progress:
                            progress(fmt, total - sum(need.values()), total)
    short = {contexts.bucket_label(n): {
        "distinct_fill": round(min(1.0, prep.distinct / n), 4),
        "families": len(fills[n]),
        "fill_min": round(min(fills[n]), 4) if fills[n] else None,
        "fill_mean": round(float(np.mean(fills[n])), 4) if fills[n] else None,
        "reused_units": reuse[n],
        "missing_examples": sum(need[(t, n)] for t in params.tasks),
    } for n in lengths}
    return rows, short, dict(stats)


def build_format(fmt: str, units: Iterable[Unit], params: BuildParams, counter: contexts.Counter,
                 extract: validate.Extractor, progress: Progress | None = None
                 ) -> tuple[list[dict[str, Any]], dict[str, Any], Prepared]:
    """Candidate rows (with ``check_*`` columns), the format's fill statistics and its
    prepared units."""
    prep = prepare_format(fmt, units, params, counter)
    rows, short, notes = fill(prep, params, counter, extract, progress=progress)
    return rows, {**prep.info(), "notes": notes, "lengths": short}, prep


# ------------------------------------------------------------------ whole build


def build(params: BuildParams, units_by_format: Mapping[str, Iterable[Unit]], out: Path,
          *, extract: validate.Extractor | None = None,
          progress: Progress | None = None) -> BuildResult:
    """Build, validate and write ``out/{examples,units}/<format>.parquet``,
    ``out/rejections.parquet`` and ``out/inventory.{json,md}``."""
    if extract is None:
        from treeagent.bench.sources import records_from_text as extract
    counter = contexts.Counter(params.tokenizers)
    result = BuildResult()
    infos: dict[str, Any] = {}
    suites: dict[tuple[str, str], tuple[bool, int]] = {}
    out = Path(out)
    sizes: dict[str, int] = {}
    quality: dict[str, Any] = {}
    # one format at a time: build, validate (GX), write, release -- the units' records
    # and the candidates of a format are gone before the next format is built
    for fmt in params.formats:
        if fmt in params.splits:  # train, dev and test from disjoint units (B.2)
            from treeagent.bench import split_build

            split_build.build_format_splits(
                fmt, units_by_format.get(fmt, ()), params, counter, extract, out, result,
                split_build.FinishState(infos, suites, sizes, quality), progress)
            continue
        rows, info, prep = build_format(fmt, units_by_format.get(fmt, ()), params, counter,
                                        extract, progress)
        infos[fmt] = info
        finish_format(fmt, rows, prep.unit_rows, params, out, result, suites, sizes, quality)
        del rows, prep
    finish_build(params, result, infos, suites, sizes, quality, out)
    return result


def finish_build(params: BuildParams, result: BuildResult, infos: dict[str, Any],
                 suites: dict[tuple[str, str], tuple[bool, int]], sizes: dict[str, int],
                 quality: dict[str, Any], out: Path) -> None:
    """The inventory over every format, then ``rejections.parquet`` and ``inventory.*``."""
    if suites:
        result.inventory["expectations"] = [
            {"expectation": t, "column": c, "success": ok, "unexpected": n}
            for (t, c), (ok, n) in suites.items()]
    result.inventory.update(_inventory(params, result, infos))
    result.inventory["variety"] = _variety(quality, infos)
    result.inventory["quality"] = quality
    _write_summary(out, result, sizes)


def finish_format(fmt: str, rows: list[dict[str, Any]],
                   unit_rows: Callable[[set[str]], list[dict[str, Any]]], params: BuildParams,
                   out: Path, result: BuildResult, suites: dict[tuple[str, str], tuple[bool, int]],
                   sizes: dict[str, int], quality: dict[str, Any]) -> None:
    """Gate one format's candidates (GX), keep the valid ones and write its tables."""
    import pandas as pd

    order = {t: i for i, t in enumerate(TASKS)}
    kept: list[dict[str, Any]] = []
    if rows:
        df = pd.DataFrame(rows)
        suite = examples_gate.run(df, params.tolerance)
        result.rejections += examples_gate.rejections(df, suite)
        bad = set(suite.failed)
        kept = [r for i, r in enumerate(rows) if i not in bad]
        for t, c, ok, n in suite.expectations:  # the verdict over all formats
            was_ok, was_n = suites.get((t, c), (True, 0))
            suites[(t, c)] = (was_ok and ok, was_n + n)
        del df, suite
    kept.sort(key=lambda r: (order[r["task"]], r["length"], r["family"], r["id"]))
    quality[fmt] = question_quality(rows, kept, params.tasks)
    cells = variety.by_cell(kept)
    for task, entry in quality[fmt].items():
        entry["cells"] = {k.split("@")[1]: v for k, v in cells.items()
                          if k.split("@")[0] == task}
    quality[fmt]["variety"] = {  # read by finish_build (the format's sources)
        "repeated": sum(1 for r in result.rejections
                        if r["format"] == fmt and r["reason"] == "repeated"),
        "evidence_sources": variety.evidence_sources(kept)}
    result.examples[fmt] = [{k: v for k, v in r.items() if not k.startswith("check_")}
                            for r in kept]
    table = unit_rows({u for r in kept for u in r["unit_ids"]})
    sizes[f"examples/{fmt}.parquet"] = io.write_examples(
        result.examples[fmt], out / "examples" / f"{fmt}.parquet", params.tokenizers)
    sizes[f"units/{fmt}.parquet"] = io.write_table(
        table, io.UNIT_FIELDS, out / "units" / f"{fmt}.parquet")


def question_quality(rows: Sequence[dict[str, Any]], kept: Sequence[dict[str, Any]],
                     task_names: Sequence[str], samples: int = 3) -> dict[str, Any]:
    """Per task: candidates, kept, confirmed by the second reader, rejections by check,
    count answers per length (how often a count is 0, 1, 2, ...), distinct questions per
    length (kept examples asking the same question over other contexts show as fewer) and
    sample questions with their references: what a reader of the inventory
    checks first."""
    out: dict[str, Any] = {}
    for task in task_names:
        mine = [r for r in rows if r["task"] == task]
        ok = [r for r in kept if r["task"] == task]
        reasons: Tally = Tally()
        for r in mine:
            failed = [c for c in validate.CHECKS if r.get(f"check_{c}")]
            if failed:
                reasons[failed[0]] += 1
        entry: dict[str, Any] = {
            "candidates": len(mine), "kept": len(ok),
            "confirmed": sum(1 for r in mine if not r.get("check_independent")),
            "rejected": dict(sorted(reasons.items())),
            "second_reader_disagrees": sum(1 for r in mine if r.get("check_independent")),
            "samples": [{"id": r["id"], "question": r["question"],
                         "answer": json.loads(r["answer"])} for r in ok[:samples]],
            "distinct_questions": _distinct_by_bucket(ok),
        }
        if task == "conditional_count":
            dist: dict[str, Tally] = {}
            for r in ok:
                dist.setdefault(r["bucket"], Tally())[str(json.loads(r["answer"]))] += 1
            entry["count_answers"] = {b: dict(sorted(t.items(), key=lambda kv: int(kv[0])))
                                      for b, t in dist.items()}
        out[task] = entry
    return out


def _distinct_by_bucket(rows: Sequence[dict[str, Any]]) -> dict[str, list[int]]:
    """{length bucket: [distinct question texts, kept examples]}."""
    seen: dict[str, set[str]] = {}
    kept: Tally = Tally()
    for r in rows:
        seen.setdefault(r["bucket"], set()).add(r["question"])
        kept[r["bucket"]] += 1
    return {b: [len(q), kept[b]] for b, q in seen.items()}


def shortfall_lines(result: BuildResult) -> list[str]:
    """What a build left short, one line each: the empty cells with their reasons
    (:func:`treeagent.bench.shortfall.report`), then each cell's variety shortfalls
    (:mod:`treeagent.bench.variety`); ``[]`` when none. The pipeline logs them as
    warnings, ``bench build`` prints them: never silent."""
    from treeagent.bench import shortfall, splits

    test = [r for r in result.rejections if splits.split_of_id(r["format"], r["id"]) == "test"]
    lines = [f"empty: {line}" for line in shortfall.report(result.inventory, test)]
    for v in result.inventory.get("variety", {}).values():
        lines += [f"variety: {line}" for line in v["shortfalls"]]
    return lines + splits.shortfall_lines(result.inventory.get("splits", {}))


def quality_lines(inv: dict[str, Any]) -> list[str]:
    """The question-quality report as text lines (printed at the end of a build)."""
    lines = []
    for fmt, by_task in inv.get("quality", {}).items():
        lines.append(f"{fmt}:")
        for task, q in by_task.items():
            rej = ", ".join(f"{k} {v}" for k, v in q["rejected"].items()) or "none"
            lines.append(f"  {task}: kept {q['kept']} of {q['candidates']}, second reader "
                         f"confirms {q['confirmed']}; rejected: {rej}")
            if q.get("distinct_questions"):
                lines.append("    distinct questions: " + ", ".join(
                    f"{b} {d}/{n}" for b, (d, n) in q["distinct_questions"].items()))
            if "count_answers" in q:
                lines.append(f"    count answers: {q['count_answers']}")
            for s in q["samples"]:
                lines.append(f"    - {s['question']} -> {json.dumps(s['answer'])}")
    for fmt, v in inv.get("variety", {}).items():
        lines.append(f"{fmt} variety: sources used as evidence "
                     f"{len(v['evidence_sources'])} of {len(v['sources_with_records'])} with "
                     f"records; {len(v['shortfalls'])} shortfall(s)")
        lines += [f"  shortfall: {line}" for line in v["shortfalls"]]
    return lines


def _variety(quality: dict[str, Any], infos: dict[str, Any]) -> dict[str, Any]:
    """Per format: the per-cell figures of :mod:`treeagent.bench.variety` (moved out of
    ``quality``), the sources with records and those used as evidence, and the rule
    each cell breaks (``shortfalls``: never silent)."""
    out: dict[str, Any] = {}
    for fmt, by_task in quality.items():
        v = by_task.pop("variety")
        cells = {f"{t}@{b}": f for t, q in by_task.items() for b, f in q.pop("cells").items()}
        with_records = infos.get(fmt, {}).get("sources_with_records", [])
        out[fmt] = {"cells": cells, "repeated": v["repeated"],
                    "sources_with_records": with_records,
                    "evidence_sources": v["evidence_sources"],
                    "shortfalls": variety.shortfalls(fmt, cells, v["repeated"], with_records,
                                                     v["evidence_sources"])}
    return out


def _write_summary(out: Path, result: BuildResult, sizes: dict[str, int]) -> None:
    """``rejections.parquet`` and ``inventory.{json,md}`` (after every format's tables)."""
    sizes["rejections.parquet"] = io.write_table(
        sorted(result.rejections, key=lambda r: r["id"]), io.REJECTION_FIELDS,
        out / "rejections.parquet")
    result.inventory["bytes"] = sizes
    (out / "inventory.json").write_text(
        json.dumps(result.inventory, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
        encoding="utf-8")
    (out / "inventory.md").write_text(markdown(result.inventory), encoding="utf-8")


def _inventory(params: BuildParams, result: BuildResult, infos: dict[str, Any]) -> dict[str, Any]:
    counts = {fmt: {t: {contexts.bucket_label(n): 0 for n in params.lengths} for t in params.tasks}
              for fmt in params.formats}
    for fmt, rows in result.examples.items():
        for r in rows:
            counts[fmt][r["task"]][r["bucket"]] += 1
    reasons = Tally(f"{r['format']}: {r['reason']}" for r in result.rejections)
    kept = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(params).items()}
    if kept["second_reader"]:  # the default: inventories say it only when it was lifted
        del kept["second_reader"]
    if not kept["splits"]:  # no train/dev splits: the inventory of a test-only build
        del kept["splits"]
    inv = {
        "params": kept, "examples": sum(len(r) for r in result.examples.values()),
        "counts": counts, "rejections": dict(sorted(reasons.items())),
        "rejected": len(result.rejections), "formats": infos,
    }
    unconfirmed = {fmt: n for fmt, rows in result.examples.items()
                   if (n := sum(second_readers.UNCONFIRMED in r["flags"] for r in rows))}
    if unconfirmed:  # examples no second reader confirmed (built with --no-second-reader)
        inv["unconfirmed"] = unconfirmed
    if result.splits:  # per split x cell: kept, quota, pool (treeagent.bench.splits)
        inv["splits"] = result.splits
    return inv


def markdown(inv: dict[str, Any]) -> str:
    """The inventory as Markdown tables (format x task x length; shortfalls; rejections)."""
    lines = [f"# Benchmark inventory\n\n{inv['examples']} examples kept, "
             f"{inv['rejected']} candidates rejected.\n"]
    for fmt, tasks_ in inv["counts"].items():
        labels = list(next(iter(tasks_.values())).keys()) if tasks_ else []
        lines += [f"\n## {fmt}\n", "| task | " + " | ".join(labels) + " |",
                  "|---|" + "---:|" * len(labels)]
        lines += [f"| {t} | " + " | ".join(str(c[b]) for b in labels) + " |"
                  for t, c in tasks_.items()]
        info = inv["formats"].get(fmt, {})
        if inv.get("unconfirmed", {}).get(fmt):
            lines += ["", f"{inv['unconfirmed'][fmt]} examples flagged "
                      f"`{second_readers.UNCONFIRMED}`: no second reader confirmed them."]
        lines += ["", f"{info.get('units', 0)} distinct units, "
                  f"{info.get('distinct_tokens', 0):,} tokens.", "",
                  "| length | distinct units fill | contexts | fill min | reused | missing |",
                  "|---|---:|---:|---:|---:|---:|"]
        for b, s in info.get("lengths", {}).items():
            lines.append(f"| {b} | {s['distinct_fill']:.0%} | {s['families']} | "
                         f"{s['fill_min'] if s['fill_min'] is not None else '-'} | "
                         f"{s['reused_units']} | {s['missing_examples']} |")
    if inv.get("quality"):
        lines += ["\n## Question quality\n", "```", *quality_lines(inv), "```"]
    if inv.get("splits"):
        from treeagent.bench.split_build import markdown_lines

        lines += markdown_lines(inv["splits"])
    if inv["rejections"]:
        lines += ["\n## Rejections by reason\n", "| format: reason | count |", "|---|---:|"]
        lines += [f"| {k} | {v} |" for k, v in inv["rejections"].items()]
    return "\n".join(lines) + "\n"
