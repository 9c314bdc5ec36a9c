"""``treeagent serve``: the vLLM servers ``params.yaml``'s ``serve`` block asks for
(:mod:`treeagent.llm.serve`; docs/pipeline.md, "vLLM servers run by the pipeline").

``--dry-run`` prints the exact command lines, one per server (environment assignments
first), and starts nothing. Otherwise the servers run in the foreground: once every
``/health`` answers, the command prints each agent's URLs and the ``export
TREEAGENT_SERVERS=...`` line that hands them to ``dvc repro``/``flows/evaluate.py`` in
another shell, and stops them all on Ctrl-C or SIGTERM (exit 0). A bad params file, too
few GPUs, a busy port or a server that does not come up is one ``error:`` line, exit 2
(a server that fails to start: exit 1, its log named).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from treeagent.llm.serve import Server, ServerSet


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="start the vLLM servers of params.yaml's serve block "
                       "(--dry-run: print their command lines)")
    p.add_argument("--params", default="params.yaml", help="pipeline parameters")
    p.add_argument("--dry-run", action="store_true",
                   help="print the command lines and start nothing")
    p.add_argument("--start-timeout", type=float, default=1800.0,
                   help="seconds every server has to answer /health")
    p.set_defaults(func=run)


def _fail(message: str, status: int = 2) -> int:
    print(f"error: {message}", file=sys.stderr)
    return status


def run(args: argparse.Namespace) -> int:
    from treeagent.llm import serve
    from treeagent.pipeline import config

    if not args.start_timeout > 0:
        return _fail("--start-timeout must be positive seconds")
    try:
        params = config.load(args.params)
        servers = serve.plan(params)
    except config.ParamsError as exc:
        return _fail(str(exc))
    except serve.ServeError as exc:
        return _fail(f"{args.params}: {exc}")
    except ValueError as exc:  # a model spec that does not resolve (models.ModelError)
        return _fail(f"{args.params}: agents: {exc}")
    if args.dry_run:
        for server in servers:
            print(server.shell())
        return 0

    running = serve.ServerSet(servers, start_timeout=args.start_timeout)
    with serve.sigterm_as_interrupt():
        return _serve(running, servers, args.params)


def _serve(running: ServerSet, servers: list[Server], params: str) -> int:
    """Start, print the URLs, wait for Ctrl-C/SIGTERM or a server that exits; stop all."""
    import json
    import shlex
    import time

    from treeagent.llm import serve

    try:
        try:
            table = running.start()
        except serve.ServeError as exc:
            status = 1 if exc.log is not None else 2
            return _fail(str(exc) if exc.log else f"{params}: {exc}", status)
        for agent, urls in table.items():
            print(f"{agent}: {' '.join(urls)}")
        print(f"export {serve.SERVERS_ENV}={shlex.quote(json.dumps(table))}", flush=True)
        print("serving; Ctrl-C stops every server", file=sys.stderr, flush=True)
        while len(running.running) == len(servers):
            time.sleep(1.0)
        gone = next(s for s in servers if s not in running.running)
        return _fail(f"vllm serve for {gone.name} exited; its log: "
                     f"{running.log_path(gone)}", 1)
    except KeyboardInterrupt:
        print("stopping the servers", file=sys.stderr, flush=True)
    finally:
        running.stop()
    return 0
