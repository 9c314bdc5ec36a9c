"""Prefect flow ``benchmark``: the whole DAG (acquire -> validate_raw -> build ->
validate_examples -> evidence, evaluate x (agent, method) -> score -> report).

By default it runs ``dvc repro`` as one task: DVC decides which stages are stale (a new
model revision reruns only that agent's evaluate/score stages and the report) and each
stage runs its own Prefect flow. This process exports its Prefect API URL (its temporary
server, or ``PREFECT_API_URL``) to the stages, so they all report to one server and no
stage pays for starting its own. ``--no-dvc`` runs the same flows in this process as
subflows instead, every stage of dvc.yaml in its file order (no staleness check:
everything runs).

    python flows/benchmark.py [--project .] [--force] [--pull] [--push] [--no-dvc] [STAGE ...]
"""

from __future__ import annotations  # noqa: I001 (_common precedes prefect)

import argparse
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _common  # first: sets Prefect's environment before Prefect is imported
import _remote
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE


def _api_url() -> str | None:
    """The API this process talks to (starting its temporary server if none is set)."""
    from prefect.client.orchestration import get_client

    return str(get_client(sync_client=True).api_url)


def _stage_env(api_url: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if api_url:
        env["PREFECT_API_URL"] = api_url
    bindir = str(Path(sys.executable).parent)  # the stages' `python` is this interpreter
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    return env


@task(name="dvc", cache_policy=NO_CACHE, task_run_name="dvc-{args[0]}")
def dvc(args: list[str], project: str, api_url: str | None) -> list[str]:
    """Run one ``dvc`` command in ``project``, streaming its output; the stages it runs
    report to ``api_url``. Raises with the last lines on failure."""
    log = get_run_logger()
    cmd = [str(Path(sys.executable).parent / "dvc"), *args]
    if not Path(cmd[0]).exists():
        cmd[0] = "dvc"
    log.info("$ %s (in %s)", " ".join(["dvc", *args]), project)
    proc = subprocess.Popen(cmd, cwd=project, env=_stage_env(api_url), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=1)
    lines: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        lines.append(line.rstrip("\n"))
        if line.startswith(("Running stage", "Stage '", "ERROR", "error:")):
            log.info(line.rstrip())
    rc = proc.wait()
    if rc:
        why = [x for x in lines if x.startswith(("ERROR", "error:"))] or lines[-1:]
        raise RuntimeError(f"dvc {' '.join(args)} failed (exit {rc}): {why[-1] if why else ''}")
    return lines


@task(name="metrics", cache_policy=NO_CACHE)
def read_metrics(project: str) -> dict[str, Any]:
    """``reports/metrics.json`` of the finished run."""
    path = Path(project) / "reports" / "metrics.json"
    metrics = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    get_run_logger().info("agent mean (%%): %s", metrics.get("agent_mean"))
    return metrics


def stage_order(dvc_yaml: str | os.PathLike[str] = "dvc.yaml"
                ) -> list[tuple[str, str, list[str]]]:
    """The stages of ``dvc_yaml`` as DVC itself lists them (``dvc stage list``: file
    order, a ``matrix`` stage expanded by DVC's resolver over the params file beside it,
    ``stage@<v1>-<v2>``), as ``(name, flow, args)``: ``flow`` is the stem of the
    ``flows/<flow>.py`` script its resolved ``cmd`` runs and ``args`` what follows it
    (leading ``VAR=value`` assignments dropped)."""
    import shlex

    from dvc.repo import Repo

    path = Path(dvc_yaml).resolve()
    with Repo(str(path.parent), uninitialized=True) as repo:
        stages = [(s.name, s.cmd) for s in repo.stage.collect(str(path))]
    order = []
    for name, cmd in stages:
        words = shlex.split(cmd if isinstance(cmd, str) else " ".join(cmd))
        while words and "=" in words[0]:
            words.pop(0)  # an environment assignment (the build's PYTHONHASHSEED)
        script = next(i for i, w in enumerate(words) if w.endswith(".py"))
        order.append((name, Path(words[script]).stem, words[script + 1:]))
    return order


def _call(flow_fn: Any, args: list[str], params: str) -> Any:
    """``flow_fn`` with a stage command's arguments: positionals in order, ``--key
    value`` as keyword ``key``, and ``params`` where the flow takes it."""
    import inspect

    positional: list[str] = []
    keywords: dict[str, str] = {}
    rest = list(args)
    while rest:
        word = rest.pop(0)
        if word.startswith("--"):
            keywords[word[2:].replace("-", "_")] = rest.pop(0)
        else:
            positional.append(word)
    if "params" in inspect.signature(getattr(flow_fn, "fn", flow_fn)).parameters:
        keywords.setdefault("params", params)
    return flow_fn(*positional, **keywords)


def _in_process(params: str) -> None:
    """The DAG as subflows of this flow run, in dvc.yaml's stage order (``--no-dvc``):
    each stage's flow function ``<flow>_flow`` of ``flows/<flow>.py``, the matrix stages
    as DVC expands them (over params.yaml, as ``dvc repro`` does)."""
    import importlib

    _common.load_params(params)  # bad parameters: one line, exit 2, before any stage
    for name, script, args in stage_order():
        print(f"stage {name}")  # the benchmark flow logs prints
        _call(getattr(importlib.import_module(script), f"{script}_flow"), args, params)


@contextlib.contextmanager
def _source_state(project: str) -> Iterator[str]:
    """The tree's state now (commit, and whether code or parameters differ from it) in
    ``$TREEAGENT_SOURCE_STATE`` for the stages while the run lasts: the report names the
    state the run started from, not the tree after DVC has rewritten ``dvc.lock``."""
    from treeagent.report import provenance

    state = provenance.source_state(project)
    with _common.environ(provenance.STATE_ENV, state):
        yield state


def _served(project: str) -> contextlib.AbstractContextManager[Any]:
    """With ``serve.enabled``: the vLLM servers up around the stages (flows/serve.py),
    their URLs in ``$TREEAGENT_SERVERS`` for the evaluate stages, all stopped after,
    also on failure. Servers already named in ``$TREEAGENT_SERVERS`` (started on GPU
    hosts by ``treeagent serve``) are used as they are. Otherwise nothing."""
    params = str(Path(project) / _common.PARAMS)
    if not _common.load_params(params)["serve.enabled"]:
        return contextlib.nullcontext()
    from treeagent.llm.serve import SERVERS_ENV

    if os.environ.get(SERVERS_ENV):
        get_run_logger().info("serve: the servers of $%s (started elsewhere)", SERVERS_ENV)
        return contextlib.nullcontext()
    import serve

    return serve.serving(params)


@flow(name="benchmark", log_prints=True)
def benchmark_flow(project: str = ".", stages: list[str] | None = None, force: bool = False,
                   pull: bool = False, push: bool | None = None, use_dvc: bool = True,
                   reason: str = "") -> dict[str, Any]:
    """Bring ``project``'s pipeline up to date and return ``reports/metrics.json``.

    ``reason`` is recorded in the logs (the schedule passes the triggering event).
    ``push``: ``dvc push`` to the default remote at the end (None: when the run spans
    hosts, ``runner.address`` set; flows/_remote.py)."""
    log = get_run_logger()
    project = str(Path(project).resolve())
    if reason:
        log.info("triggered by: %s", reason)
    with _source_state(project) as state:
        log.info("source: %s", state)
        return _reproduce(project, stages, force, pull, push, use_dvc)


def _reproduce(project: str, stages: list[str] | None, force: bool, pull: bool,
               push: bool | None, use_dvc: bool) -> dict[str, Any]:
    """The body of :func:`benchmark_flow`: ``dvc repro`` (or the flows in this process)."""
    if not use_dvc:
        cwd = os.getcwd()
        os.chdir(project)
        try:
            with _served(project):
                _in_process(_common.PARAMS)
        finally:
            os.chdir(cwd)
        return read_metrics(project)
    api_url = _api_url()
    if pull:
        _with_remote(["pull", "--allow-missing"], project, api_url)
    with _served(project):
        dvc(["repro", *(["--force"] if force else []), *(stages or [])], project, api_url)
    if _remote.push_wanted(push, _common.load_params(str(Path(project) / _common.PARAMS))):
        _with_remote(["push"], project, api_url)
    return read_metrics(project)


def _with_remote(args: list[str], project: str, api_url: str | None) -> None:
    """``dvc pull``/``dvc push`` to the default remote; with none, say so (no failure)."""
    remote = _remote.default_remote(project)
    if remote is None:
        message = _remote.none_configured(args[0])
        get_run_logger().warning(message)
        print(f"warning: {message}", file=sys.stderr)
        return
    get_run_logger().info("dvc %s: remote %s (%s)", args[0], *remote)
    dvc(args, project, api_url)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stages", nargs="*", help="DVC stages/targets (default: the whole DAG)")
    ap.add_argument("--project", default=".")
    ap.add_argument("--force", action="store_true", help="rerun every stage")
    ap.add_argument("--pull", action="store_true",
                    help="dvc pull from the default DVC remote before")
    ap.add_argument("--push", action=argparse.BooleanOptionalAction, default=None,
                    help="dvc push to the default DVC remote after (default: when "
                    "runner.address names a Dask scheduler, a run over many hosts)")
    ap.add_argument("--no-dvc", dest="use_dvc", action="store_false",
                    help="run the flows in this process instead of through dvc repro")
    args = ap.parse_args(argv)
    try:
        benchmark_flow(args.project, args.stages or None, args.force, args.pull, args.push,
                       args.use_dvc)
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
