"""The benchmark build sharded by (format, length) cell (4.1, B.1): each cell is filled
on a worker of the task runner (:mod:`treeagent.pipeline.runners`), the driver merges the cells
of a format in the serial build's order, gates them and writes the same files
:func:`treeagent.bench.build.build` writes -- byte for byte.

Why this is exact: a format's families are one sequence whatever the lengths (anchors
and lookups come from each family's own random stream, each context from its (family,
length) stream), so filling one length alone gives the rows a full build gives for it
(:func:`treeagent.bench.build.fill`); the merged rows are put back in (family, length,
task, question) order before the gate, which sees exactly the serial build's candidates.

A worker reads the format's units from ``raw/`` itself (only the cell's name travels),
so workers on other hosts need the same ``raw/`` (a shared folder, or ``dvc pull raw``).
Reading and tokenizing a format's units costs more than filling most cells, so a task
fills a *group* of one format's cells (:func:`cells`: as many groups per format as it
takes to give every worker one), a worker keeps the format it prepared last, and when a
format has several groups the first worker to prepare it leaves the result in a scratch
folder of the build (inside ``raw/`` when it can write there, so that workers on other
hosts see it too): a worker that finds it there loads it instead of preparing the format
again (the same units, so the same rows).
"""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from treeagent import signed_pickle
from treeagent.bench import build as B
from treeagent.bench import contexts, split_build

Mapper = Callable[[Callable[[Any], Any], Sequence[Any]], list[Any]]
"""Runs a function over items (in any order, anywhere) and returns the results in item
order: :func:`treeagent.pipeline.runners.map_on_runner` bound to a runner, or a plain loop."""


@dataclass(frozen=True)
class CellSpec:
    """One format's cells at ``lengths`` to fill (plain values: it travels to workers)."""

    fmt: str
    lengths: tuple[int, ...]
    params: dict[str, Any]  # BuildParams as a dict
    raw_dir: str
    split: str = "test"  # test, dev or train (treeagent.bench.splits)
    scratch: Scratch | None = None  # where prepared formats are shared (None: nowhere)


@dataclass
class CellResult:
    fmt: str
    lengths: tuple[int, ...]
    rows: list[dict[str, Any]]  # candidates with check_* columns, (family, length, task, j)
    short: dict[str, dict[str, Any]]  # fill statistics per length bucket
    notes: dict[str, int]
    info: dict[str, Any]  # the format's units, distinct tokens, records
    units: dict[str, tuple[int, dict[str, Any]]]  # unit id -> (unit order, table row)
    split: str = "test"


_LAST: dict[tuple, tuple[B.Prepared, contexts.Counter]] = {}
_LOCK = threading.Lock()


def _prepared(fmt: str, params: B.BuildParams, raw_dir: str, split: str = "test",
              scratch: Scratch | None = None) -> tuple[B.Prepared, contexts.Counter]:
    """The format's prepared units (of ``split``), made once per process (the last
    format and split are kept) and, with a ``scratch`` folder, once per build: loaded
    from there when another worker left them, else made and left there."""
    from treeagent.bench import sources

    key = (fmt, str(Path(raw_dir).resolve()), params.tokenizers, params.anchor_fraction,
           params.lengths[0], split, tuple(sorted(params.splits.get(fmt, {}).items())))
    with _LOCK:
        if key not in _LAST:
            _LAST.clear()
            counter = contexts.Counter(params.tokenizers)
            path = _shared_path(scratch, key)
            prep = load_prepared(path, scratch.key) if path and scratch else None
            if prep is None:
                pool = split_build.units_of(params, fmt, sources.units(fmt, raw_dir=raw_dir),
                                            split)
                prep = B.prepare_format(fmt, pool, params, counter)
                if path and scratch:
                    save_prepared(prep, path, scratch.key)
            _LAST[key] = (prep, counter)
        return _LAST[key]


@dataclass(frozen=True)
class Scratch:
    """A build's shared folder and the key its files are signed with
    (:mod:`treeagent.signed_pickle`): the key travels with each task, never through the
    folder, so a file someone else put there is never unpickled."""

    folder: str
    key: str


def _shared_path(scratch: Scratch | None, key: tuple) -> Path | None:
    """The file of ``scratch`` for the prepared format ``key`` (its raw folder left out:
    hosts may mount the shared ``raw/`` at other paths)."""
    if scratch is None:
        return None
    digest = hashlib.sha256(repr((key[0], *key[2:])).encode()).hexdigest()[:32]
    return Path(scratch.folder) / f"{key[0]}-{digest}.pickle"


def save_prepared(prep: B.Prepared, path: Path, key: str) -> bool:
    """Leave ``prep`` at ``path``, signed with ``key`` (written whole, then renamed: a
    reader sees all of it or nothing); False when the folder cannot be written (the
    build goes on)."""
    return signed_pickle.dump(dataclasses.replace(prep, unit_of_rec={}), path, key)


def load_prepared(path: Path, key: str) -> B.Prepared | None:
    """The prepared format :func:`save_prepared` left at ``path`` with ``key`` (None when
    there is none, or its signature is not this build's), its record index rebuilt for
    the records loaded."""
    prep = signed_pickle.load(path, key)
    if prep is None:
        return None
    prep.unit_of_rec = {id(r): u.id for u in prep.units for r in u.records}
    return prep


@contextmanager
def shared_scratch(raw_dir: str | Path) -> Iterator[Scratch]:
    """A fresh folder for the workers to share prepared formats in, and a fresh key,
    removed at the end: inside ``raw_dir`` (every worker reads it), else a local
    temporary folder (workers on other hosts then prepare for themselves)."""
    try:
        where = tempfile.mkdtemp(prefix=".cells-", dir=raw_dir)
    except OSError:
        where = tempfile.mkdtemp(prefix="treeagent-cells-")
    try:
        yield Scratch(where, signed_pickle.new_key())
    finally:
        shutil.rmtree(where, ignore_errors=True)


def build_cell(spec: CellSpec) -> CellResult:
    """Fill the (format, length) cells of ``spec``."""
    from treeagent.bench import independent
    from treeagent.bench.sources import records_from_text
    from treeagent.pipeline.progress import Progress

    params = B.BuildParams(**spec.params)
    if spec.scratch is None:  # the second reader's readings, of its own
        independent.share_readings(None)
    else:
        independent.share_readings(spec.scratch.folder, spec.scratch.key)
    prep, counter = _prepared(spec.fmt, params, spec.raw_dir, spec.split, spec.scratch)
    sub, quota = split_build.for_split(params, spec.fmt, spec.split)
    need = sum(sub.per_cell if quota is None else quota[(t, n)]
               for t in params.tasks for n in spec.lengths)
    name = spec.fmt if spec.split == "test" else f"{spec.fmt} {spec.split}"
    with Progress(f"build {name} {'/'.join(map(str, spec.lengths))}", {spec.fmt: need}) as bar:
        rows, short, notes = B.fill(prep, sub, counter, records_from_text,
                                    lengths=spec.lengths, progress=bar.count, quota=quota)
    needed = {u for r in rows for u in r["unit_ids"]}
    table = {row["unit_id"]: (prep.idx[row["unit_id"]], row) for row in prep.unit_rows(needed)}
    return CellResult(spec.fmt, spec.lengths, rows, short, notes, prep.info(), table,
                      spec.split)


def cells(params: B.BuildParams, raw_dir: str | Path, workers: int = 1) -> list[CellSpec]:
    """The grid's (format, length) cells in tasks: each format's lengths in
    ``ceil(workers / formats)`` groups, at least two when there are two workers (at most
    one per length), so that ``workers`` workers all get a task, the workers share each
    format's work and a format is read and tokenized by as few of them as that allows. A
    cell costs about its length (its contexts' tokens): lengths are dealt, longest first,
    to the group with the fewest tokens so far (:func:`balanced`). Tasks come
    group-major, each format's costliest group first: the first tasks the workers take
    are of different formats, so that no two of them prepare one format at once. Within
    a group, formats come costliest first (``BenchFormat.build_cost``): a worker that
    ends early then takes a cheap task, not the build's longest one (runners hand tasks
    out in this order as workers free up)."""
    kw = {k: (tuple(v) if isinstance(v, list) else v) for k, v in asdict(params).items()}
    n = len(params.lengths)
    want = -(-workers // max(1, len(params.formats)))
    groups = max(1, min(n, max(want, 2 if workers > 1 else 1)))
    dealt = balanced(params.lengths, groups)
    costliest = sorted(params.formats, key=lambda f: -contexts.hooks(f).build_cost)
    return [CellSpec(fmt, group, kw, str(raw_dir), split)
            for group in dealt
            for fmt in costliest for split in split_build.present(params, fmt)]


def balanced(lengths: Sequence[int], groups: int) -> list[tuple[int, ...]]:
    """``lengths`` in ``groups`` groups of about equal total (longest first to the
    lightest group, ties to the first), each group ascending, heaviest group first."""
    load = [0] * groups
    out: list[list[int]] = [[] for _ in range(groups)]
    for n in sorted(lengths, reverse=True):
        g = min(range(groups), key=lambda i: (load[i], i))
        out[g].append(n)
        load[g] += n
    order = sorted(range(groups), key=lambda i: -load[i])
    return [tuple(sorted(out[i])) for i in order if out[i]]


def _merge_notes(results: Sequence[CellResult]) -> dict[str, int]:
    merged: dict[str, int] = {}
    for r in results:  # each cell counts the format's notes once; a full build does too
        for k, v in r.notes.items():
            merged[k] = max(merged.get(k, 0), v)
    return merged


def build_sharded(params: B.BuildParams, raw_dir: str | Path, out: str | Path,
                  mapper: Mapper, workers: int = 1, scratch: Scratch | None = None
                  ) -> B.BuildResult:
    """:func:`treeagent.bench.build.build` with the (format, length) cells filled by
    ``mapper`` in tasks for ``workers`` workers (:func:`cells`); the same files, byte for
    byte, whatever ``workers``. The workers share prepared formats and the second
    reader's readings in ``scratch`` (the caller's, kept), else in a folder of their
    own (:func:`shared_scratch`) when a format has several tasks."""
    specs = cells(params, raw_dir, workers)
    if scratch is not None:
        results: list[CellResult] = mapper(
            build_cell, [dataclasses.replace(s, scratch=scratch) for s in specs])
    elif len(specs) > len({(s.fmt, s.split) for s in specs}):  # a format in several tasks
        from treeagent.bench import independent

        with shared_scratch(raw_dir) as where:
            try:
                results = mapper(build_cell,
                                 [dataclasses.replace(s, scratch=where) for s in specs])
            finally:  # tasks run in this process (threads) leave it set
                independent.share_readings(None)
    else:
        results = mapper(build_cell, specs)
    out = Path(out)
    result = B.BuildResult()
    infos: dict[str, Any] = {}
    suites: dict[tuple[str, str], tuple[bool, int]] = {}
    sizes: dict[str, int] = {}
    quality: dict[str, Any] = {}
    where = {n: i for i, n in enumerate(params.lengths)}
    state = split_build.FinishState(infos, suites, sizes, quality)
    for fmt, split in ((f, s) for f in params.formats for s in split_build.present(params, f)):
        mine = [r for r in results if r.fmt == fmt and r.split == split]
        rows = [row for r in mine for row in r.rows]
        rows.sort(key=lambda row: (row["family"], where[row["length"]]))  # stable
        short = {k: v for r in mine for k, v in r.short.items()}
        info = {**mine[0].info, "notes": _merge_notes(mine),
                "lengths": {contexts.bucket_label(n): short[contexts.bucket_label(n)]
                            for n in params.lengths}}
        ordered = [row for _, row in sorted(
            {u: v for r in mine for u, v in r.units.items()}.values(), key=lambda v: v[0])]

        def unit_rows(needed: set[str], ordered=ordered) -> list[dict[str, Any]]:
            return [row for row in ordered if row["unit_id"] in needed]

        split_build.finish_split(fmt, split, rows, unit_rows, info, params, out, result, state)
    B.finish_build(params, result, infos, suites, sizes, quality, out)
    return result
