"""Sharded evaluation: one (agent, method) run split into deterministic shards that a
task runner maps over threads, processes or hosts, then merged into the outputs one
unsharded run writes.

* Shard ``k`` of ``n`` holds the examples at positions ``i`` with ``i % n == k`` in the
  order of ``build.formats`` and each format's file (interleaved, so every shard gets
  every length); the merged rows come back in that order, so ``predictions.parquet``
  and ``summary.json`` do not depend on which worker ran what, or when.
* Each shard drives one endpoint of its agent's servers, chosen by its index
  (:func:`shard_options`), and builds its own engine.
* Each shard journals its calls into its own cache file beneath the run's main cache
  (:func:`treeagent.llm.cache.shard_path`): a killed shard resumes from its file; the
  driver merges the files into the main cache when every shard is done
  (:func:`merge_shards`), and concatenates the shards' traces in shard order.

A shard reads its examples from ``validated/`` itself (only their ids travel), so a
worker on another host needs the same ``validated/`` (a shared folder, or ``dvc pull``).
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SHARD_TRACES = "trace.shards"
"""Folder (under a run's output folder) of the shards' traces until they are merged."""


@dataclass(frozen=True)
class ShardSpec:
    """Everything one shard needs (plain values: it travels to Dask workers)."""

    agent: str
    method: str
    shard: int
    shards: int
    example_files: tuple[str, ...]  # validated/examples/<format>.parquet, in build order
    engine: str
    engine_options: dict[str, Any]
    kwargs: dict[str, Any]  # evaluate() keyword arguments (cache: the main cache path)
    out_dir: str
    progress: bool = True

    @property
    def run(self) -> str:
        """The run's name: its journal rows and its shard files' folder."""
        return f"{self.agent}/{self.method}"


@dataclass
class ShardResult:
    """One shard's rows with their positions in the unsharded order."""

    shard: int
    positions: list[int]
    rows: list[dict[str, Any]]
    model: str
    revision: str


def positions(count: int, shard: int, shards: int) -> list[int]:
    """Positions ``i`` of ``range(count)`` that belong to ``shard`` of ``shards``."""
    if not 0 <= shard < shards:
        raise ValueError(f"shard {shard} is not in 0..{shards - 1}")
    return list(range(shard, count, shards))


def example_ids(files: Sequence[str | Path]) -> list[str]:
    """Every example id of ``files`` in order (reads only the ``id`` column; a table that
    cannot be read raises :class:`treeagent.bench.io.ArtifactError` naming it)."""
    from treeagent.bench.io import read_table

    ids: list[str] = []
    for f in files:
        ids += read_table(f, columns=["id"]).column("id").to_pylist()
    return ids


def shard_options(options: dict[str, Any], shard: int, shards: int) -> dict[str, Any]:
    """Engine options of ``shard``: with several ``base_urls`` and at least as many
    shards as servers, shard ``k`` drives server ``k mod servers`` only (with its share of
    ``concurrency``); with fewer shards than servers each shard spreads its calls over all
    of them (least in flight)."""
    urls = options.get("base_urls")
    if isinstance(urls, str) or not urls or len(urls) < 2 or shards < len(urls):
        return dict(options)
    picked = {**options, "base_urls": [urls[shard % len(urls)]]}
    if isinstance(options.get("concurrency"), int):  # requests in flight over all servers
        picked["concurrency"] = max(1, options["concurrency"] // len(urls))
    return picked


def shard_trace(out_dir: str | Path, shard: int, shards: int) -> Path:
    return Path(out_dir) / SHARD_TRACES / f"{shard}-of-{shards}.jsonl"


def evaluate_shard(spec: ShardSpec) -> ShardResult:
    """Evaluate the examples of one shard (agents.evaluate.evaluate over its own engine
    and its own cache file); its trace goes to :func:`shard_trace`."""
    from treeagent.agents.evaluate import evaluate
    from treeagent.bench.io import read_examples
    from treeagent.llm import make_engine
    from treeagent.llm.cache import CallCache, shard_path
    from treeagent.pipeline.progress import planned_calls

    ids = example_ids(spec.example_files)
    mine = positions(len(ids), spec.shard, spec.shards)
    wanted = {ids[i] for i in mine}
    examples = []
    for f in spec.example_files:
        examples += list(read_examples(f, ids=wanted))
    by_id = {ex.id: ex for ex in examples}
    ordered = [by_id[ids[i]] for i in mine]
    kwargs = dict(spec.kwargs)
    main = kwargs.pop("cache", None)
    cache = None
    if main:
        cache = CallCache(shard_path(main, spec.run, spec.shard, spec.shards),
                          run_id=spec.run, base=main)
    trace = shard_trace(spec.out_dir, spec.shard, spec.shards)
    trace.parent.mkdir(parents=True, exist_ok=True)
    trace.unlink(missing_ok=True)
    engine = make_engine(spec.engine, **shard_options(spec.engine_options, spec.shard,
                                                      spec.shards))
    try:
        rows = evaluate(ordered, agent=spec.agent, method=spec.method, engine=engine,
                        cache=cache, trace=trace, run_id=spec.run, progress=spec.progress,
                        calls_total=planned_calls(spec.agent, spec.method, len(ordered))
                        if spec.progress else None, **kwargs)
    finally:
        asyncio.run(engine.aclose())
        if cache is not None:
            cache.close()
    return ShardResult(spec.shard, mine, rows, engine.model, engine.revision)


def merge_shards(results: Sequence[ShardResult], specs: Sequence[ShardSpec]
                 ) -> list[dict[str, Any]]:
    """The rows of every shard in the unsharded order; the shards' cache files merged
    into the main cache and their traces concatenated (shard order) into
    ``trace.jsonl``. Raises when a position is missing or twice."""
    from treeagent.llm.cache import CallCache, shard_folder

    placed: dict[int, dict[str, Any]] = {}
    for res in results:
        for i, row in zip(res.positions, res.rows, strict=True):
            if i in placed:
                raise ValueError(f"example position {i} came from two shards")
            placed[i] = row
    if sorted(placed) != list(range(len(placed))):
        raise ValueError("a shard's examples are missing from the merged run")
    spec = specs[0]
    main = spec.kwargs.get("cache")
    if main:  # every shard file of this run, also those a run with other shards left
        with CallCache(main) as cache:
            for part in sorted(shard_folder(main, spec.run).glob("*-of-*.sqlite")):
                cache.merge(part)
    out = Path(spec.out_dir)
    with open(out / "trace.jsonl", "w", encoding="utf-8") as sink:
        for s in sorted(specs, key=lambda s: s.shard):
            part = shard_trace(out, s.shard, s.shards)
            if part.exists():
                with open(part, encoding="utf-8") as src:
                    shutil.copyfileobj(src, sink)
    shutil.rmtree(out / SHARD_TRACES, ignore_errors=True)
    return [placed[i] for i in range(len(placed))]
