"""Prefect flow ``serve``: the vLLM servers of ``params.yaml``'s ``serve`` block as
pipeline machinery (:mod:`treeagent.llm.serve`; docs/pipeline.md, "vLLM servers run by
the pipeline").

``flows/benchmark.py`` runs :func:`serving` around ``dvc repro`` when ``serve.enabled``:
the ``start-servers`` task starts one ``vllm serve`` per agent replica and waits for
every ``/health``; ``$TREEAGENT_SERVERS`` (``{agent: [base_url, ...]}``) hands the URLs
to the evaluate stages (their engine is then ``openai`` over those URLs:
:func:`treeagent.llm.serve.served_engine_spec`); the ``stop-servers`` task stops them
all afterwards, also when a stage fails or the run is interrupted. Run alone, the flow
serves in the foreground until Ctrl-C (as ``treeagent serve``):

    python flows/serve.py [--params params.yaml] [--start-timeout 1800]
"""

from __future__ import annotations  # noqa: I001 (_common precedes prefect)

import argparse
import contextlib
import json
import logging
import sys
import time
from collections.abc import Iterator
from typing import Any

import _common  # first: sets Prefect's environment before Prefect is imported
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from treeagent.llm import serve as vllm_servers


def _log() -> Any:
    try:
        return get_run_logger()
    except Exception:  # outside a flow or task run
        return logging.getLogger("treeagent.serve")


@task(name="start-servers", cache_policy=NO_CACHE, persist_result=False)
def start_servers(params_path: str, start_timeout: float = 1800.0) -> vllm_servers.ServerSet:
    """Start and health-check the servers (all stopped again if one fails to start)."""
    servers = vllm_servers.ServerSet(vllm_servers.plan(_common.load_params(params_path)),
                              start_timeout=start_timeout)
    for s in servers.servers:
        _log().info("$ %s", s.shell())
    table = servers.start()
    _log().info("serving: %s", json.dumps(table))
    return servers


@task(name="stop-servers", cache_policy=NO_CACHE, persist_result=False)
def stop_servers(servers: vllm_servers.ServerSet) -> None:
    """Stop every server (SIGTERM, then SIGKILL after the grace period)."""
    servers.stop()
    _log().info("stopped %d servers", len(servers.servers))


@contextlib.contextmanager
def serving(params_path: str, start_timeout: float = 1800.0) -> Iterator[dict[str, list[str]]]:
    """The servers up, ``$TREEAGENT_SERVERS`` set in this process (so every stage it
    starts, and every in-process flow, reads it) for the duration; afterwards both are
    undone, also on failure, Ctrl-C and SIGTERM."""
    with vllm_servers.sigterm_as_interrupt():
        servers = start_servers(params_path, start_timeout)
        try:
            table = vllm_servers.urls(servers.servers)
            with _common.environ(vllm_servers.SERVERS_ENV, json.dumps(table)):
                yield table
        finally:
            try:
                stop_servers(servers)
            finally:
                servers.stop()  # a no-op after stop_servers; the fallback if it failed


@flow(name="serve", log_prints=True)
def serve_flow(params: str = _common.PARAMS, start_timeout: float = 1800.0) -> None:
    """Serve in the foreground until interrupted; a server that exits is an error."""
    with serving(params, start_timeout) as table:
        print(f"export {vllm_servers.SERVERS_ENV}='{json.dumps(table)}'")
        while all(_healthy(url) for urls in table.values() for url in urls):
            time.sleep(5.0)
        raise vllm_servers.ServeError("a vllm server stopped answering /health: "
                                      f"{json.dumps(table)}")


def _healthy(url: str) -> bool:
    import httpx

    try:
        reply = httpx.get(url.removesuffix("/v1") + "/health", timeout=10, trust_env=False)
        return reply.status_code == 200
    except httpx.HTTPError:
        return False


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", default=_common.PARAMS)
    ap.add_argument("--start-timeout", type=float, default=1800.0)
    args = ap.parse_args(argv)
    try:
        serve_flow(args.params, args.start_timeout)
    except KeyboardInterrupt:
        return 0
    except vllm_servers.ServeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
