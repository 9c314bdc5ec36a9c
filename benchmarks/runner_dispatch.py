"""How a Dask LocalCluster hands out long tasks: the paper grid's eight build tasks as
sleeps (their wall seconds in a measured build, scaled down), in the build's order, on
2 one-thread workers; prints the span from the first start to the last end, each task's
worker and start, and the span of the best possible order for comparison.

    python benchmarks/runner_dispatch.py [--scale 30] [--repeat 3]

Two settings in one run: Dask's default ``distributed.scheduler.worker-saturation``
(1.1: a one-thread worker may hold a second task queued behind the one it runs) and the
project's LocalCluster runner (1.0: a worker takes the next task only when idle;
:func:`treeagent.pipeline.runners.task_runner`). Medians of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

# (task, wall seconds) of the grid's tasks at f19462c, in the build's order
GRID = (("javascript 1M", 238), ("yaml 1M", 361), ("html 1M", 110), ("json 1M", 71),
        ("javascript 8K-512K", 225), ("yaml 8K-512K", 174), ("html 8K-512K", 75),
        ("json 8K-512K", 54))


def _sleep(seconds: float) -> tuple[int, float, float]:
    start = time.time()
    time.sleep(seconds)
    return os.getpid(), start, time.time()


def _run(durations: list[float], saturation: float) -> tuple[float, list[tuple[int, float]]]:
    from treeagent.pipeline.environment import prefect_environment

    prefect_environment()  # before Prefect is imported: no analytics, quiet
    import dask
    from prefect import flow, task
    from prefect.cache_policies import NO_CACHE
    from prefect_dask import DaskTaskRunner

    from treeagent.pipeline.runners import workers_report_here

    runner = {"name": "dask", "address": None, "workers": 2}
    with dask.config.set({"distributed.scheduler.worker-saturation": saturation}):
        sleeper = task(_sleep, name="sleep", cache_policy=NO_CACHE)
        out: list = []

        @flow(name="dispatch", task_runner=DaskTaskRunner(
            cluster_class="distributed.LocalCluster", cluster_kwargs={
                "n_workers": 2, "threads_per_worker": 1, "processes": True,
                "dashboard_address": None}))
        def dispatch() -> None:
            futures = sleeper.map(durations)
            out.extend(f.result() for f in futures)

        with workers_report_here(runner):
            dispatch()
    first = min(s for _, s, _ in out)
    return max(e for _, _, e in out) - first, [(pid, s - first) for pid, s, _ in out]


def _best(durations: list[float]) -> float:
    """The shortest span over 2 workers of any split (every subset tried)."""
    total, best = sum(durations), float("inf")
    for mask in range(1 << len(durations)):
        one = sum(d for i, d in enumerate(durations) if mask >> i & 1)
        best = min(best, max(one, total - one))
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=30.0, help="measured seconds per slept second")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    durations = [s / args.scale for _, s in GRID]
    print(f"{len(durations)} tasks, {sum(durations):.1f} s of sleep; best split over 2 "
          f"workers: {_best(durations):.1f} s")
    spans: dict[float, list[float]] = {1.1: [], 1.0: []}
    for _ in range(args.repeat):
        for saturation in spans:
            span, placed = _run(durations, saturation)
            spans[saturation].append(span)
            pids = sorted({p for p, _ in placed})
            print(f"  worker-saturation {saturation}: span {span:.1f} s; " + ", ".join(
                f"{name} w{pids.index(p)}@{s:.1f}" for (name, _), (p, s) in zip(GRID, placed)))
    base, ours = (statistics.median(spans[s]) for s in (1.1, 1.0))
    print(f"median span: Dask's default {base:.1f} s, the runner's 1.0 {ours:.1f} s "
          f"({ours / base:.2f}x); best {_best(durations):.1f} s")


if __name__ == "__main__":
    main()
