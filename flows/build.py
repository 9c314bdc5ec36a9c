"""Prefect flow ``build`` (DVC stage ``build``): validated examples from ``raw/``.

Thin over :func:`treeagent.bench.build.build` over the parser units of
:func:`treeagent.bench.sources.units`: records -> eight tasks ->
contexts at the length buckets under the construction tokenizers -> validation; writes
``validated/examples/<format>.parquet`` and ``validated/inventory.json`` (counts and
rejections by reason). Deterministic for fixed params (seed 42, PYTHONHASHSEED=0).

    python flows/build.py [--params params.yaml] [--raw raw] [--out validated]
"""

from __future__ import annotations  # noqa: I001 (_common precedes prefect)

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import _common  # first: sets Prefect's environment before Prefect is imported
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE


@task(name="build", retries=0, cache_policy=NO_CACHE)
def build_examples(kwargs: dict[str, Any], raw_dir: str, out_dir: str) -> dict[str, Any]:
    """Build and validate every format of ``build.formats``; returns the inventory."""
    from treeagent.bench.build import BuildParams, build, shortfall_lines
    from treeagent.bench.sources import units
    from treeagent.pipeline.progress import Progress

    log = get_run_logger()
    params = BuildParams(**kwargs)
    by_format = {fmt: units(fmt, raw_dir=raw_dir) for fmt in params.formats}
    need = params.per_cell * len(params.tasks) * len(params.lengths)
    with Progress("build", dict.fromkeys(params.formats, need)) as bar:  # examples kept
        result = build(params, by_format, Path(out_dir), progress=bar.count)
    inv = result.inventory
    log.info("kept %s examples, rejected %s: %s", inv.get("examples"), inv.get("rejected"),
             json.dumps(inv.get("rejections", {}))[:400])
    for line in shortfall_lines(result):  # empty cells and variety shortfalls
        log.warning(line)
    return {k: inv.get(k) for k in ("examples", "rejected", "rejections")}


@task(name="build-cell", retries=0, cache_policy=NO_CACHE,
      task_run_name="build-{spec.fmt}-{spec.lengths}")
def build_cell(spec: Any) -> Any:
    """Fill one format's (format, length) cells of the grid at ``spec.lengths``."""
    from treeagent.bench.cells import build_cell as fill_cell

    result = fill_cell(spec)
    get_run_logger().info("%s %s: %d candidates", spec.fmt, spec.lengths, len(result.rows))
    return result


def _on_runner(fn: Any, specs: list[Any]) -> list[Any]:
    """The cells as tasks of this flow on its task runner, results in cell order; cell
    tasks done of their number, with rate and ETA, in the flow's log."""
    from prefect.futures import as_completed

    from treeagent.pipeline.progress import Progress

    futures = build_cell.map(specs)
    with Progress("build", {"cell tasks": len(futures)}) as bar:
        for _ in as_completed(list(futures)):
            bar.advance("cell tasks")
    return [f.result() for f in futures]


@flow(name="build", log_prints=True)
def build_flow(params: str = _common.PARAMS, raw_dir: str = "raw",
               out_dir: str = "validated") -> dict[str, Any]:
    """Build the benchmark examples of ``build.*`` into ``out_dir``: in this process with
    ``runner.workers: 1`` and the thread runner, else one task per (format, length) cell
    on the runner (the same files either way)."""
    p = _common.load_params(params)
    runner = p["runner"]
    if runner["name"] == "thread" and runner["workers"] == 1:
        return build_examples(p.build_kwargs(), raw_dir, out_dir)
    from treeagent.bench.build import BuildParams, shortfall_lines
    from treeagent.bench.cells import build_sharded
    from treeagent.pipeline.runners import describe

    log = get_run_logger()
    log.info("build: one task per (format, length) cell on %s", describe(runner))
    result = build_sharded(BuildParams(**p.build_kwargs()), raw_dir, out_dir, _on_runner,
                           workers=runner["workers"])
    inv = result.inventory
    log.info("kept %s examples, rejected %s: %s", inv.get("examples"), inv.get("rejected"),
             json.dumps(inv.get("rejections", {}))[:400])
    for line in shortfall_lines(result):  # empty cells and variety shortfalls
        log.warning(line)
    return {k: inv.get(k) for k in ("examples", "rejected", "rejections")}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", default=_common.PARAMS)
    ap.add_argument("--raw", default="raw")
    ap.add_argument("--out", default="validated")
    args = ap.parse_args(argv)
    p = _common.start(args.params)
    from treeagent.bench.build import BuildParams
    from treeagent.pipeline.runners import from_params, workers_report_here

    try:  # refused before any work: e.g. a format without a second reader
        BuildParams(**p.build_kwargs())
    except ValueError as exc:
        print(f"error: {args.params}: build: {exc}", file=sys.stderr)
        raise SystemExit(2) from None

    with _common.artifact_errors(), workers_report_here(p["runner"]):
        build_flow.with_options(task_runner=from_params(p["runner"]))(args.params, args.raw,
                                                                      args.out)


if __name__ == "__main__":
    main()
