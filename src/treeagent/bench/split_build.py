"""Building a format's train, dev and test splits (paper B.2) with the build's own code.

:func:`build_format_splits` partitions the format's units (:func:`treeagent.bench.splits.
assign`), then for each split prepares its pool, fills its cells (test: ``per_cell`` each;
dev and train: :func:`treeagent.bench.splits.quotas`) and gates and writes it with
:func:`treeagent.bench.build.finish_format`: the same validation, second reader and GX
suite as the test grid. :func:`finish_split` is shared with the sharded build
(:mod:`treeagent.bench.cells`). What each split holds per cell goes to the inventory's
``splits`` section; a cell below its quota is named there and in the build's warnings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from treeagent.bench import build as B
from treeagent.bench import contexts, splits
from treeagent.bench.model import Unit


@dataclass(slots=True)
class FinishState:
    """What :func:`treeagent.bench.build.finish_build` collects over the formats (the
    build's own dicts, shared)."""

    infos: dict[str, Any]
    suites: dict[tuple[str, str], tuple[bool, int]]
    sizes: dict[str, int]
    quality: dict[str, Any]


def totals(params: B.BuildParams, fmt: str) -> dict[str, int]:
    """Examples per split of ``fmt`` (test: the grid of ``per_cell``)."""
    return splits.sizes(params.per_cell, params.tasks, params.lengths,
                        params.splits.get(fmt, {}))


def present(params: B.BuildParams, fmt: str) -> tuple[str, ...]:
    """The splits ``fmt`` builds, in build order: test alone without ``build.splits``."""
    if fmt not in params.splits:
        return (splits.TEST,)
    sized = totals(params, fmt)
    return tuple(s for s in splits.SPLITS if s == splits.TEST or sized[s] > 0)


def for_split(params: B.BuildParams, fmt: str, split: str
              ) -> tuple[B.BuildParams, dict[tuple[str, int], int] | None]:
    """The params a split is filled with and its per-cell quotas (``None``: ``per_cell``
    in every cell, the test grid)."""
    if split == splits.TEST:
        return params, None
    quota = splits.quotas(totals(params, fmt)[split], params.tasks, params.lengths)
    return dataclasses.replace(params, per_cell=max(1, max(quota.values()))), quota


def units_of(params: B.BuildParams, fmt: str, units: Iterable[Unit], split: str
             ) -> list[Unit]:
    """The units of ``split`` (all of them for a format without splits)."""
    units = list(units)
    if fmt not in params.splits:
        return units
    return splits.assign(units, totals(params, fmt), params.seed).get(split, [])


def _named(progress: B.Progress | None, split: str) -> B.Progress | None:
    """Progress of a dev or train fill under ``<format> <split>``."""
    if progress is None or split == splits.TEST:
        return progress
    return lambda fmt, done, total: progress(f"{fmt} {split}", done, total)


def build_format_splits(fmt: str, units: Iterable[Unit], params: B.BuildParams,
                        counter: contexts.Counter, extract: Any, out: Path,
                        result: B.BuildResult, state: FinishState,
                        progress: B.Progress | None = None) -> None:
    """Every split of ``fmt``: partition, fill, gate and write each in turn."""
    parts = splits.assign(list(units), totals(params, fmt), params.seed)
    for split in present(params, fmt):
        sub, quota = for_split(params, fmt, split)
        prep = B.prepare_format(fmt, parts.get(split, []), sub, counter)
        rows, short, notes = B.fill(prep, sub, counter, extract,
                                    progress=_named(progress, split), quota=quota)
        info = {**prep.info(), "notes": notes, "lengths": short}
        finish_split(fmt, split, rows, prep.unit_rows, info, params, out, result, state)
        del rows, prep


def finish_split(fmt: str, split: str, rows: list[dict[str, Any]],
                 unit_rows: Callable[[set[str]], list[dict[str, Any]]], info: dict[str, Any],
                 params: B.BuildParams, out: Path, result: B.BuildResult,
                 state: FinishState) -> None:
    """Gate and write one split of ``fmt`` (test: exactly what a build without splits
    writes); record its counts in ``result.splits``."""
    if split == splits.TEST:
        state.infos[fmt] = info
        B.finish_format(fmt, rows, unit_rows, params, out, result, state.suites,
                        state.sizes, state.quality)
        if fmt in params.splits:
            result.splits.setdefault(fmt, {})[split] = _entry(
                result.examples[fmt], None, params, info, None)
        return
    for r in rows:
        r["id"] = splits.example_id(fmt, split, r["id"])
    sub = B.BuildResult()
    sizes: dict[str, int] = {}
    quality: dict[str, Any] = {}
    B.finish_format(fmt, rows, unit_rows, params, splits.split_dir(out, split), sub,
                    state.suites, sizes, quality)
    result.rejections += sub.rejections
    state.sizes.update({f"splits/{split}/{k}": v for k, v in sizes.items()})
    variety = B._variety(quality, {fmt: info})[fmt]
    _, quota = for_split(params, fmt, split)
    result.splits.setdefault(fmt, {})[split] = _entry(sub.examples[fmt], quota, params,
                                                      info, variety["shortfalls"])


def _entry(rows: list[dict[str, Any]], quota: dict[tuple[str, int], int] | None,
           params: B.BuildParams, info: dict[str, Any],
           variety: list[str] | None) -> dict[str, Any]:
    """A split's inventory entry: kept examples per (task, bucket), quotas, its pool."""
    label = contexts.bucket_label
    counts = {t: {label(n): 0 for n in params.lengths} for t in params.tasks}
    for r in rows:
        counts[r["task"]][r["bucket"]] += 1
    entry: dict[str, Any] = {
        "examples": len(rows), "counts": counts,
        "quotas": {f"{t}@{label(n)}": (quota[(t, n)] if quota else params.per_cell)
                   for t in params.tasks for n in params.lengths},
        "units": info.get("units", 0), "distinct_tokens": info.get("distinct_tokens", 0),
    }
    if variety is not None:  # dev and train (the test split's are the format's own)
        entry["formats"] = info
        entry["variety_shortfalls"] = variety
    return entry


def markdown_lines(inv_splits: dict[str, Any]) -> list[str]:
    """The inventory's ``## Splits`` section: kept of quota per split, task and length."""
    lines = ["\n## Splits\n",
             "Train / dev / test are built from disjoint source documents (docs/pipeline.md, "
             "\"Train and dev splits\"); each cell shows kept of its quota. The examples "
             "count above is the test split's; rejections count every split's.\n"]
    for fmt, by_split in inv_splits.items():
        labels = list(next(iter(next(iter(by_split.values()))["counts"].values())).keys())
        lines += [f"\n### {fmt}\n", "| split | task | " + " | ".join(labels) + " |",
                  "|---|---|" + "---:|" * len(labels)]
        for split, e in by_split.items():
            for task, c in e["counts"].items():
                lines.append(f"| {split} | {task} | " + " | ".join(
                    f"{c[b]} of {e['quotas'][f'{task}@{b}']}" for b in labels) + " |")
        lines += ["", ", ".join(f"{s}: {e['examples']} examples from {e['units']} units"
                                for s, e in by_split.items()) + "."]
    return lines
