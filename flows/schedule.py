"""Scheduled and event-driven reruns of the pipeline (a served Prefect deployment).

``serve`` registers the ``benchmark`` flow (flows/record.py: ``dvc repro``, ``dvc push``,
then the run recorded as a result version on the git branch ``results``) as the
deployment ``benchmark/treeagent`` with a cron schedule and an event trigger on
``model.updated``, then executes its runs in this process until stopped. ``bump`` pins a
new model revision for one agent in params.yaml (comments kept) and emits
``model.updated``; the trigger starts a run, whose ``dvc repro`` reruns exactly that
agent's evaluate/score stages and the report. Every run ends with ``dvc push`` to the
project's default DVC remote, so other hosts and clones ``dvc pull`` its outputs
(``--no-push``: keep them here); with no remote configured, ``serve`` says so at start
and each run says it pushed nothing. ``bump`` and ``emit`` with no
Prefect server to send to (``PREFECT_API_URL`` unset, or nothing answers there) exit 1
with one line, params.yaml unchanged. prefect.yaml declares the same deployment for a
``prefect worker`` that outlives any terminal (docs/pipeline.md).

    prefect server start --host 127.0.0.1 --port 4200            # terminal 1
    export PREFECT_API_URL=http://127.0.0.1:4200/api
    python flows/schedule.py serve --cron "0 3 * * *"             # terminal 2
    python flows/schedule.py bump memagent 3f2c9e1                # terminal 3
    python flows/schedule.py emit memagent                        # event only
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import _common

DEPLOYMENT = "treeagent"
EVENT = "model.updated"


def resource(agent: str) -> dict[str, str]:
    """The event resource naming an agent's model."""
    return {"prefect.resource.id": f"treeagent.model.{agent}", "treeagent.agent": agent}


def trigger(project: str, push: bool = True) -> Any:
    """The deployment trigger: any ``model.updated`` event starts a benchmark run."""
    from prefect.events import DeploymentEventTrigger

    return DeploymentEventTrigger(
        name="rerun on model.updated",
        expect={EVENT},
        match={"prefect.resource.id": "treeagent.model.*"},
        parameters={"project": project, "push": push,
                    "reason": "{{ event.event }} {{ event.resource.id }} "
                              "revision {{ event.payload.revision }}"},
    )


def serve(project: str, cron: str | None, limit: int | None = None,
          push: bool = True) -> None:
    """Serve the ``benchmark`` flow as a deployment with ``cron`` and the event trigger;
    each run pushes its outputs to the default DVC remote (``push``), then records its
    result version (flows/record.py)."""
    import _remote
    from record import benchmark_and_record

    project = str(Path(project).resolve())
    if push:
        remote = _remote.default_remote(project)
        print(f"runs push to DVC remote {remote[0]} ({remote[1]})" if remote
              else f"warning: {_remote.none_configured('push')}", file=sys.stderr)
    benchmark_and_record.serve(name=DEPLOYMENT, cron=cron,
                               triggers=[trigger(project, push)],
                               parameters={"project": project, "push": push}, limit=limit,
                               print_starting_message=True)


class NoServer(RuntimeError):
    """No Prefect server answers where ``model.updated`` would be sent."""


def reachable_api() -> str:
    """The Prefect API URL events go to (``PREFECT_API_URL`` or the active profile's);
    raises :class:`NoServer` when none is set or nothing answers there."""
    import httpx
    from prefect.settings import get_current_settings

    url = get_current_settings().api.url
    if not url:
        raise NoServer(f"PREFECT_API_URL is not set: no Prefect server to send {EVENT} to "
                       "(start one with `prefect server start`, export its /api URL)")
    try:
        httpx.get(f"{url.rstrip('/')}/health", timeout=10)
    except httpx.TransportError as exc:
        raise NoServer(f"no Prefect server answers at PREFECT_API_URL={url} "
                       f"({type(exc).__name__}): {EVENT} not sent") from None
    return url


def emit(agent: str, payload: dict[str, Any]) -> str | None:
    """Emit ``model.updated`` for ``agent``; returns the event id (None if not sent)."""
    from prefect.events import emit_event
    from prefect.events.worker import EventsWorker

    event = emit_event(EVENT, resource=resource(agent), payload=payload)
    EventsWorker.drain_all()
    return str(event.id) if event else None


def bump(agent: str, revision: str, params: str, model: str | None = None,
         send: bool = True) -> dict[str, Any]:
    """Set ``agents.<agent>.revision`` (and ``.model``) in ``params``, then emit the event."""
    from treeagent.pipeline import config

    if send:
        reachable_api()  # before params.yaml changes: no pin that no run picks up
    before = config.load(params)["agents"][agent]
    changes: dict[str, Any] = {f"agents.{agent}.revision": revision}
    if model:
        changes[f"agents.{agent}.model"] = model
    after = config.set_values(params, changes)["agents"][agent]
    payload = {"agent": agent, "model": after["model"], "revision": str(after["revision"]),
               "previous_model": before["model"], "previous_revision": str(before["revision"])}
    if send:
        payload["event_id"] = emit(agent, payload)
    return payload


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("serve", help="serve the deployment (cron + model.updated trigger)")
    p.add_argument("--project", default=".")
    p.add_argument("--cron", default="0 3 * * *", help="cron schedule ('' for none)")
    p.add_argument("--limit", type=int, default=1, help="concurrent runs (default 1)")
    p.add_argument("--no-push", dest="push", action="store_false",
                   help="keep each run's outputs here (default: dvc push at its end)")
    p = sub.add_parser("bump", help="pin a new model revision and emit model.updated")
    p.add_argument("agent")
    p.add_argument("revision")
    p.add_argument("--model", help="also change the model")
    p.add_argument("--params", default=_common.PARAMS)
    p.add_argument("--no-event", dest="send", action="store_false")
    p = sub.add_parser("emit", help="emit model.updated for an agent (no params change)")
    p.add_argument("agent")
    p.add_argument("--params", default=_common.PARAMS)
    args = ap.parse_args(argv)
    from treeagent.pipeline import config

    try:
        if args.cmd == "serve":
            serve(args.project, args.cron or None, args.limit, args.push)
        elif args.cmd == "bump":
            print(bump(args.agent, args.revision, args.params, args.model, args.send))
        else:
            spec = config.load(args.params)["agents"][args.agent]
            reachable_api()
            print(emit(args.agent, {"agent": args.agent, "model": spec["model"],
                                    "revision": str(spec["revision"])}))
    except (config.ParamsError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except NoServer as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
