"""The Prefect task runner named by ``params.yaml`` ``runner:``: where the build's cells
and the evaluation's shards run.

* ``thread``: a :class:`prefect.task_runners.ThreadPoolTaskRunner` of ``workers``
  threads in the stage's own process;
* ``dask``: a :class:`prefect_dask.DaskTaskRunner` -- with ``address: null`` a Dask
  ``LocalCluster`` of ``workers`` worker processes (one thread each) on this machine,
  else the Dask scheduler at ``address`` (``tcp://HOST:8786``), whose workers may sit on
  many hosts.

Outputs never depend on the runner: work is split into deterministic pieces and merged
in a fixed order, so the runner is not a DVC parameter of any stage.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from treeagent.pipeline.environment import prefect_environment


class RunnerError(ValueError):
    """A runner that cannot be made (named in the message)."""


def task_runner(name: str = "thread", address: str | None = None, workers: int = 1) -> Any:
    """A Prefect task runner for ``name`` (``thread`` | ``dask``)."""
    if workers < 1:
        raise RunnerError(f"runner workers must be at least 1, got {workers}")
    if name == "thread":
        if address:
            raise RunnerError("a scheduler address needs the dask runner")
        from prefect.task_runners import ThreadPoolTaskRunner

        return ThreadPoolTaskRunner(max_workers=workers)
    if name == "dask":
        try:
            from prefect_dask import DaskTaskRunner
        except ImportError:  # pragma: no cover - the pipeline extra declares it
            raise RunnerError("runner dask needs prefect-dask and distributed "
                              "(pip install 'treeagent[pipeline]')") from None
        if address:
            return DaskTaskRunner(address=address)
        import dask

        # A worker takes the next task only when it is idle. Dask's default (1.1) lets a
        # one-thread worker hold a second task queued behind the one it runs: with tasks
        # of minutes (a build's cells) that task waits there while another worker idles.
        # (A scheduler of one's own at ``address``: set it in its Dask configuration.)
        dask.config.set({"distributed.scheduler.worker-saturation": 1.0})
        return DaskTaskRunner(cluster_class="distributed.LocalCluster", cluster_kwargs={
            "n_workers": workers, "threads_per_worker": 1, "processes": True,
            "dashboard_address": None})
    raise RunnerError(f"unknown runner {name!r} (thread or dask)")


def from_params(runner: Mapping[str, Any]) -> Any:
    """:func:`task_runner` for a ``runner:`` mapping of params.yaml."""
    return task_runner(runner.get("name", "thread"), runner.get("address"),
                       int(runner.get("workers", 1)))


def describe(runner: Mapping[str, Any]) -> str:
    """One line for logs: ``dask LocalCluster of 2 processes``, ``2 threads``, ..."""
    name, workers = runner.get("name", "thread"), int(runner.get("workers", 1))
    if name == "dask":
        where = runner.get("address")
        return f"dask scheduler {where}" if where else f"dask LocalCluster of {workers} processes"
    return f"{workers} thread{'s' * (workers != 1)}"


@contextlib.contextmanager
def workers_report_here(runner: Mapping[str, Any]) -> Iterator[None]:
    """For a dask ``LocalCluster`` in a process without a Prefect API URL: start Prefect's
    temporary server here (as the flow would) and hand its URL to the worker processes
    through the environment they inherit, so that their task runs land in the flow's
    server (each would otherwise start a temporary server of its own, ~10 CPU s, whose
    records vanish with it)."""
    if runner.get("name") != "dask" or runner.get("address") or os.environ.get(
            "PREFECT_API_URL"):
        yield
        return
    from prefect.settings import PREFECT_API_URL

    if PREFECT_API_URL.value():  # a profile's server: the workers read the same profile
        yield
        return
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()  # the one the flow's client starts and shares
    server.start()
    os.environ["PREFECT_API_URL"] = server.api_url
    try:
        yield
    finally:
        os.environ.pop("PREFECT_API_URL", None)


def map_on_runner(fn: Callable[[Any], Any], items: Sequence[Any],
                  runner: Mapping[str, Any], name: str = "map") -> list[Any]:
    """``[fn(x) for x in items]``, mapped as Prefect tasks over ``runner`` (a flow of its
    own, a subflow when called from a flow); one thread runs them in this process without
    Prefect. Results come back in item order; the first failure is raised after all
    tasks have ended."""
    if runner.get("name", "thread") == "thread" and int(runner.get("workers", 1)) == 1:
        return [fn(x) for x in items]
    prefect_environment()
    from prefect import flow, task
    from prefect.cache_policies import NO_CACHE

    mapped_task = task(fn, name=name, cache_policy=NO_CACHE)
    results: list[Any] = []

    @flow(name=name, task_runner=from_params(runner), log_prints=True)
    def mapped() -> None:
        futures = mapped_task.map(list(items))
        for f in futures:  # every task ends before the first failure is raised
            f.wait()
        # handed back beside the flow, not as its return value: Prefect walks a flow's
        # return value object by object (a grid build's cells: ~50 s on one core)
        results.extend(f.result() for f in futures)

    with workers_report_here(runner):
        mapped()
    return results
