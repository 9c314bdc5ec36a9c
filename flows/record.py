"""Prefect flow ``benchmark`` as scheduled (prefect.yaml, ``flows/schedule.py serve``): the
pipeline brought up to date (flows/benchmark.py: ``dvc repro``, then ``dvc push`` when
``push``), then the run recorded as a result version on the git branch ``results``
(:mod:`treeagent.report.versions`: models.lock, dvc.lock, metrics.json and the
per-example scores), so every rerun keeps its results. A project that is no git
repository runs as before and says in one line that no version was kept; a run identical
to the latest version records nothing.

    python flows/record.py [--project .] [--no-push] [--no-record]
"""

from __future__ import annotations  # noqa: I001 (_common precedes prefect)

import argparse
import sys
from pathlib import Path
from typing import Any

import _common  # first: sets Prefect's environment before Prefect is imported
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE


@task(name="record-version", cache_policy=NO_CACHE)
def record_version(project: str) -> str:
    """Record the finished run; returns the line that says what was kept."""
    from treeagent.report import versions as V

    log = get_run_logger()
    try:
        done = V.record(project, _common.PARAMS)
    except V.NotARepository as exc:
        line = f"no result version kept: {exc}"
        log.warning(line)
        return line
    v = done.version
    line = (f"recorded version {v.number} ({v.short}) on branch {V.BRANCH!r}" if done.created
            else f"unchanged: version {v.number} ({v.short}) already records this run")
    log.info(line)
    return line


@flow(name="benchmark", log_prints=True)
def benchmark_and_record(project: str = ".", stages: list[str] | None = None,
                         force: bool = False, pull: bool = False, push: bool | None = None,
                         use_dvc: bool = True, reason: str = "",
                         record: bool = True) -> dict[str, Any]:
    """``flows/benchmark.py``'s run (same parameters), then the record step after a
    successful run (``record``). Returns ``reports/metrics.json``."""
    from benchmark import benchmark_flow

    project = str(Path(project).resolve())
    metrics = benchmark_flow.fn(project, stages, force, pull, push, use_dvc, reason)
    if record:
        record_version(project)
    return metrics


def main(argv: list[str] | None = None) -> int:
    from treeagent.report.versions import VersionError

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--project", default=".")
    ap.add_argument("--push", action=argparse.BooleanOptionalAction, default=True,
                    help="dvc push to the default DVC remote after the run")
    ap.add_argument("--no-record", dest="record", action="store_false")
    args = ap.parse_args(argv)
    try:
        benchmark_and_record(args.project, push=args.push, record=args.record)
    except (RuntimeError, VersionError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
