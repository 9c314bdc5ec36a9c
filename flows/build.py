"""Prefect flow ``build`` (DVC stage ``build``): validated examples from ``raw/``.

Thin over :func:`treeagent.bench.build.build` over the parser units of
:func:`treeagent.bench.sources.units` (issue 4): records -> eight tasks ->
contexts at the length buckets under the construction tokenizers -> validation; writes
``validated/examples/<format>.parquet`` and ``validated/inventory.json`` (counts and
rejections by reason). Deterministic for fixed params (seed 42, PYTHONHASHSEED=0).

    python flows/build.py [--params params.yaml] [--raw raw] [--out validated]
"""

from __future__ import annotations  # noqa: I001 (_common precedes prefect)

import argparse
import json
from pathlib import Path
from typing import Any

import _common  # first: sets Prefect's environment before Prefect is imported
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE


@task(name="build", retries=0, cache_policy=NO_CACHE)
def build_examples(kwargs: dict[str, Any], raw_dir: str, out_dir: str) -> dict[str, Any]:
    """Build and validate every format of ``build.formats``; returns the inventory."""
    from treeagent.bench.build import BuildParams, build
    from treeagent.bench.sources import units

    log = get_run_logger()
    params = BuildParams(**kwargs)
    by_format = {fmt: units(fmt, raw_dir=raw_dir) for fmt in params.formats}
    last: dict[str, int] = {}

    def progress(stage: str, done: int, total: int) -> None:
        if total and (done == total or done - last.get(stage, 0) >= max(1, total // 10)):
            last[stage] = done
            log.info("%s: %d/%d", stage, done, total)

    result = build(params, by_format, Path(out_dir), progress=progress)
    inv = result.inventory
    log.info("kept %s examples, rejected %s: %s", inv.get("examples"), inv.get("rejected"),
             json.dumps(inv.get("rejections", {}))[:400])
    return {k: inv.get(k) for k in ("examples", "rejected", "rejections")}


@flow(name="build", log_prints=True)
def build_flow(params: str = _common.PARAMS, raw_dir: str = "raw",
               out_dir: str = "validated") -> dict[str, Any]:
    """Build the benchmark examples of ``build.*`` into ``out_dir``."""
    p = _common.load_params(params)
    return build_examples(p.build_kwargs(), raw_dir, out_dir)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", default=_common.PARAMS)
    ap.add_argument("--raw", default="raw")
    ap.add_argument("--out", default="validated")
    args = ap.parse_args(argv)
    _common.start(args.params)
    build_flow(args.params, args.raw, args.out)


if __name__ == "__main__":
    main()
