"""Prefect flow ``acquire`` (DVC stage ``acquire``): source payloads into ``raw/``.

Thin over :func:`treeagent.bench.sources.acquire`: ``live`` APIs / git at the
pinned commits, a local ``mirror`` folder, or the ``sample`` the package ships, per
``acquire.*`` in params.yaml. One task per format, run concurrently, retried on failure
(live APIs and git fetches fail transiently).

    python flows/acquire.py [--params params.yaml] [--raw raw]
"""

from __future__ import annotations  # noqa: I001 (_common precedes prefect)

import argparse
from typing import Any

import _common  # first: sets Prefect's environment before Prefect is imported
from prefect import flow, get_run_logger, task
from prefect.task_runners import ThreadPoolTaskRunner


@task(retries=2, retry_delay_seconds=[5, 30], task_run_name="acquire-{fmt}")
def acquire_format(fmt: str, kwargs: dict[str, Any], raw_dir: str) -> Any:
    """Acquire one format's sources (idempotent: rewrites raw/<format>/<source>/); of
    ``acquire.sources`` only this format's are passed."""
    from treeagent.bench.sources import acquire, sources_of

    names = kwargs["sources"]
    if names is not None:
        names = [s.name for s in sources_of(fmt) if s.name in names]
    manifest = acquire(**{**kwargs, "formats": [fmt], "sources": names}, raw_dir=raw_dir,
                       progress=False)  # the flow counts sources done (_chosen)
    get_run_logger().info("%s: %s", fmt, _summary(manifest))
    return manifest


def _summary(manifest: Any) -> str:
    if hasattr(manifest, "summary"):
        return str(manifest.summary())
    if isinstance(manifest, dict):
        return ", ".join(f"{k}: {len(v) if isinstance(v, list | dict) else v}"
                         for k, v in manifest.items())
    return repr(manifest)[:200]


@flow(name="acquire", log_prints=True, task_runner=ThreadPoolTaskRunner(max_workers=4))
def acquire_flow(params: str = _common.PARAMS, raw_dir: str = "raw") -> list[Any]:
    """Acquire every format of ``acquire.formats`` into ``raw_dir``."""
    from treeagent.bench.sources import sources_of

    p = _common.load_params(params)
    kwargs = p.acquire_kwargs()
    known = {s.name for fmt in kwargs["formats"] for s in sources_of(fmt)}
    unknown = sorted(set(kwargs["sources"] or ()) - known)
    if unknown:
        raise ValueError(f"acquire.sources: {', '.join(unknown)} not a source of "
                         f"{', '.join(kwargs['formats'])} (known: {', '.join(sorted(known))})")
    from prefect.futures import as_completed

    from treeagent.pipeline.progress import Progress

    futures = {acquire_format.submit(fmt, kwargs, raw_dir): fmt for fmt in kwargs["formats"]}
    chosen = {fmt: _chosen(fmt, kwargs) for fmt in kwargs["formats"]}
    with Progress("acquire", {"sources": sum(chosen.values())}) as bar:
        for done in as_completed(list(futures)):
            bar.advance("sources", chosen[futures[done]], info=f"{futures[done]} done")
    return [f.result() for f in futures]


def _chosen(fmt: str, kwargs: dict[str, Any]) -> int:
    """How many of ``fmt``'s sources an acquire with ``kwargs`` fetches."""
    from treeagent.bench.sources import sources_of

    return sum(1 for s in sources_of(fmt, kwargs["sources"])
               if kwargs["mode"] == "sample" or not s.extra.get("sample_only"))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", default=_common.PARAMS)
    ap.add_argument("--raw", default="raw")
    args = ap.parse_args(argv)
    p = _common.start(args.params)
    runner = ThreadPoolTaskRunner(max_workers=p["acquire.concurrency"])
    acquire_flow.with_options(task_runner=runner)(args.params, args.raw)


if __name__ == "__main__":
    main()
