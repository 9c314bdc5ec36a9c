"""Train, development and test splits of a format's benchmark (paper B.2).

The paper's JSON dataset has 19,600 examples "including its training and development
splits", against 3,200 test examples for each other format; it gives no split sizes and
no splitting rule. Here every split is built by the same code as the test grid
(:mod:`treeagent.bench.build`), each from its own part of the format's unit pool, so no
source document of a test context (evidence or distractor) occurs in a train or dev
context, and none of a dev context in a train one:

* the *grain* of the partition is a source document (:func:`unit_groups`): a unit's file
  with its page or interaction index dropped (``libcomcat__dataframes_association__3``
  and ``__11`` are two recordings of one query), joined with every other unit naming a
  record of the same description (one earthquake in two responses);
* groups are dealt in the order of a seeded hash of their key, each to the split
  furthest below its share of the pool's text (:func:`partition`), shares proportional
  to each split's examples (the same text per example in every split): a split's share
  is off by at most one group, which a small pool cannot leave to chance;
* dev and train sizes are totals (``build.splits``), spread over the grid's cells as
  evenly as the total allows (:func:`quotas`); test keeps ``per_cell`` in every cell.

Without ``build.splits`` for a format, its whole pool is the test pool and the build
writes exactly what it wrote before splits existed. Test examples are written where
they always were (``examples/<format>.parquet``); dev and train ones under
``splits/<split>/{examples,units}/<format>.parquet`` with ids ``<format>-<split>-...``,
so whatever reads the test grid (evaluate, plan, evidence) reads the test split only.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from treeagent.bench import tasks
from treeagent.bench.model import Unit

TEST = "test"
SIZED = ("dev", "train")
"""The splits ``build.splits`` sizes (test is the grid of ``per_cell``)."""
SPLITS = (TEST, *SIZED)
"""Every split, in build order."""
HF_SPLIT = {"train": "train", "dev": "validation", "test": "test"}
"""Hugging Face split names: ``validation`` is the paper's development split."""

_PAGE = re.compile(r"__\d+$")
_EXT = re.compile(r"\.[A-Za-z0-9]+$")


def document_key(unit_id: str) -> str:
    """The source document of a unit id: ``<format>/<source>/<file>`` without the part
    inside the file (``#...``), the extension and a trailing page/interaction index
    (``__<n>``)."""
    base = unit_id.split("#", 1)[0]
    return _PAGE.sub("", _EXT.sub("", base))


def unit_groups(units: Iterable[Unit]) -> dict[str, str]:
    """Unit id -> its group: the connected component of units sharing a source document
    (:func:`document_key`) or a record description, named by its smallest document key."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        root = x
        while parent.setdefault(root, root) != root:
            root = parent[root]
        while parent[x] != root:  # path compression
            parent[x], x = root, parent[x]
        return root

    def union(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    docs = {}
    for u in units:
        docs[u.id] = document_key(u.id)
        union("doc:" + docs[u.id], "unit:" + u.id)
        for r in u.records:
            if r.description:
                union("doc:" + docs[u.id], "desc:" + tasks.norm(r.description))
    name: dict[str, str] = {}  # component root -> its smallest document key
    for i, d in docs.items():
        root = find("unit:" + i)
        name[root] = min(name.get(root, d), d)
    return {i: name[find("unit:" + i)] for i in docs}


def position(seed: int | str, key: str) -> float:
    """A stable point in [0, 1) for ``key`` (sha256; independent of PYTHONHASHSEED)."""
    digest = hashlib.sha256(f"{seed}|split|{key}".encode()).hexdigest()
    return int(digest[:15], 16) / 16 ** 15


def partition(group_of: Mapping[str, str], weights: Mapping[str, float],
              seed: int | str, size_of: Mapping[str, int] | None = None) -> dict[str, str]:
    """Unit id -> split. Groups are taken in the order of their :func:`position` (a
    seeded hash of the group key) and each goes whole to the split furthest below its
    share of the pool (held size / weight smallest; ties in ``SPLITS`` order), sizes
    from ``size_of`` (default 1 per unit). So a split is never ahead of another's share
    by more than the largest group, whatever the pool, and the result depends only on
    the groups, their sizes, the weights and the seed."""
    names = [s for s in SPLITS if weights.get(s, 0) > 0]
    bad = [s for s in weights if s not in SPLITS]
    if bad or any(w < 0 for w in weights.values()) or not names:
        raise ValueError(f"split weights {dict(weights)}: give non-negative weights of "
                         f"{', '.join(SPLITS)}, one of them positive")
    size: dict[str, int] = {}
    for unit, group in group_of.items():
        size[group] = size.get(group, 0) + (1 if size_of is None else size_of[unit])
    held = dict.fromkeys(names, 0)
    split_of: dict[str, str] = {}
    for group in sorted(size, key=lambda g: (position(seed, g), g)):
        split = min(names, key=lambda s: held[s] / weights[s])  # first of ties: SPLITS order
        split_of[group] = split
        held[split] += size[group]
    return {u: split_of[g] for u, g in group_of.items()}


def quotas(total: int, task_names: Sequence[str], lengths: Sequence[int]
           ) -> dict[tuple[str, int], int]:
    """``total`` examples over the (task, length) cells as evenly as possible: every cell
    gets ``total // cells``; the remainder goes one each to the cells in diagonal order
    (task i, length (i + d) mod L for d = 0, 1, ...), so each task and, on a square
    grid, each length gets its share of the remainder."""
    cells = [(t, n) for t in task_names for n in lengths]
    if not cells or total < 0:
        raise ValueError("quotas: give tasks, lengths and a non-negative total")
    base, extra = divmod(total, len(cells))
    width = len(lengths)
    order = sorted(((li - ti) % width, ti, li) for ti in range(len(task_names))
                   for li in range(width))
    out = {c: base for c in cells}
    for _, ti, li in order[:extra]:
        out[(task_names[ti], lengths[li])] += 1
    return out


def sizes(per_cell: int, task_names: Sequence[str], lengths: Sequence[int],
          configured: Mapping[str, int]) -> dict[str, int]:
    """Examples per split of a format: the test grid and the configured totals."""
    return {TEST: per_cell * len(task_names) * len(lengths),
            **{s: int(configured.get(s, 0)) for s in SIZED}}


def assign(units: Sequence[Unit], totals: Mapping[str, int], seed: int | str
           ) -> dict[str, list[Unit]]:
    """The units of each split (input order kept), partitioned by source-document group
    with shares of the pool's text (characters, a stand-in for tokens that needs no
    tokenizer) proportional to ``totals`` (:func:`sizes`)."""
    split_of = partition(unit_groups(units), totals, seed, {u.id: len(u.text) for u in units})
    out: dict[str, list[Unit]] = {s: [] for s in SPLITS if totals.get(s, 0) > 0}
    for u in units:
        out[split_of[u.id]].append(u)
    return out


def split_dir(out: str | Path, split: str) -> Path:
    """Where a split's ``examples/`` and ``units/`` live: the test split at the top of
    ``out`` (where the build always wrote it), the others in ``out/splits/<split>``."""
    return Path(out) if split == TEST else Path(out) / "splits" / split


def example_id(fmt: str, split: str, row_id: str) -> str:
    """A row id in its split: test ids as the build makes them, others
    ``<format>-<split>-<task>-<bucket>-f<n>-q<n>``."""
    if split == TEST:
        return row_id
    return f"{fmt}-{split}-{row_id.removeprefix(fmt + '-')}"


def split_of_id(fmt: str, example: str) -> str:
    """The split an example id belongs to (:func:`example_id`)."""
    head = example.removeprefix(fmt + "-").split("-", 1)[0]
    return head if head in SIZED else TEST


def stored(validated: str | Path, fmt: str) -> dict[str, Path]:
    """Split -> the example table of ``fmt`` it has under ``validated`` (those present)."""
    out = {}
    for s in SPLITS:
        path = split_dir(validated, s) / "examples" / f"{fmt}.parquet"
        if path.is_file():
            out[s] = path
    return out


def shortfall_lines(inv_splits: Mapping[str, Any]) -> list[str]:
    """One line per (format, split, task, length) cell holding fewer examples than its
    quota, then each dev/train split's variety shortfalls, from the inventory's
    ``splits`` section; ``[]`` when every cell is full."""
    lines = []
    for fmt, by_split in inv_splits.items():
        for split, entry in by_split.items():
            for cell, want in entry["quotas"].items():
                task, bucket = cell.split("@")
                got = entry["counts"][task][bucket]
                if got < want:
                    lines.append(f"split: {fmt} {split}: {cell} holds {got} of {want} "
                                 f"examples ({entry['units']} units in the {split} pool)")
            lines += [f"variety: {fmt} {split}: {line}"
                      for line in entry.get("variety_shortfalls", [])]
    return lines


def empty_lines(inv_splits: Mapping[str, Any]) -> list[str]:
    """One line per dev/train split with a cell that got no example at all (a build
    fails on these unless empty cells are allowed, as on an empty test cell)."""
    lines = []
    for fmt, by_split in inv_splits.items():
        for split, entry in by_split.items():
            empty = [cell for cell, want in entry["quotas"].items() if want and not
                     entry["counts"][cell.split("@")[0]][cell.split("@")[1]]]
            if split != TEST and empty:
                lines.append(f"{fmt} {split}: {len(empty)} of {len(entry['quotas'])} "
                             f"cells empty ({', '.join(empty[:8])}"
                             f"{', ...' if len(empty) > 8 else ''})")
    return lines


def check_sizes(configured: Any, formats: Sequence[str]) -> dict[str, dict[str, int]]:
    """``build.splits`` as ``{format: {"dev": n, "train": n}}`` for the formats built
    (entries of other formats are not built); ``ValueError`` names what is wrong."""
    if not isinstance(configured, Mapping):
        raise ValueError(f"splits: expected a mapping format -> {{dev: n, train: n}}, "
                         f"got {type(configured).__name__}")
    out: dict[str, dict[str, int]] = {}
    for fmt, by_split in configured.items():
        if not isinstance(by_split, Mapping):
            raise ValueError(f"splits.{fmt}: expected a mapping {{dev: n, train: n}}")
        for name, n in by_split.items():
            if name not in SIZED:
                raise ValueError(f"splits.{fmt}.{name}: not a split that takes a size "
                                 f"(choose from {', '.join(SIZED)}; test is per_cell)")
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise ValueError(f"splits.{fmt}.{name}: expected a count >= 0, got {n!r}")
        if fmt in formats:
            out[fmt] = {s: int(by_split[s]) for s in SIZED if s in by_split}
    return out


def gated_tables(validated: str | Path, formats: Sequence[str],
                 configured: Mapping[str, Mapping[str, int]]
                 ) -> list[tuple[str, Path, list[str]]]:
    """``(split, folder, formats)`` of every dev and train split ``build.splits`` asks
    for: what the examples gate checks besides the test tables."""
    out = []
    for split in SIZED:
        names = [f for f in formats if configured.get(f, {}).get(split)]
        if names:
            out.append((split, split_dir(validated, split), names))
    return out


def test_tables(validated: str | Path, formats: Iterable[str]) -> list[Path]:
    """The example tables an evaluation reads: each format's test split (the paper's
    main text evaluates the held-out test examples only)."""
    return [split_dir(validated, TEST) / "examples" / f"{fmt}.parquet" for fmt in formats]
