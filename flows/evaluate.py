"""Prefect flow ``evaluate`` (DVC stages ``evaluate@<agent>-<method>``): one memory agent in
one mode over every validated example.

Thin over :mod:`treeagent.agents.shards` and :func:`treeagent.agents.evaluate.write_run`:
the examples are split into ``evaluate.shards`` deterministic shards, mapped as Prefect
tasks over the task runner of ``runner:`` (threads, a Dask LocalCluster, or a Dask
scheduler's workers on many hosts) and merged in example order, so the outputs do not
depend on the runner. In a shard, examples run concurrently as state machines, every
ready call batched to the engine, every call journaled in the shard's cache file before
use -- so a retried or killed shard resumes without repeating a call, and a new model
revision recomputes only that model's calls. Writes ``runs/<agent>/<method>/``
``predictions.parquet`` (scored-row columns without ``score``, plus ``error``),
``trace.jsonl`` (one line per call) and ``summary.json`` (calls, tokens, unavailable
responses, prompt cuts: a DVC metric).

    python flows/evaluate.py --agent memagent --method treeagent [--params params.yaml]
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


@task(name="evaluate-shard", retries=1, retry_delay_seconds=10, cache_policy=NO_CACHE,
      task_run_name="evaluate-{spec.agent}-{spec.method}-{spec.shard}-of-{spec.shards}")
def run_shard(spec: Any) -> Any:
    """Evaluate one shard (a retry, or a rerun after a killed worker, resumes from the
    shard's cache file)."""
    from treeagent.agents.shards import evaluate_shard

    log = get_run_logger()
    result = evaluate_shard(spec)
    log.info("%s/%s shard %d of %d: %d examples on %s (revision %s)", spec.agent,
             spec.method, spec.shard + 1, spec.shards, len(result.rows), result.model,
             result.revision)
    return result


@flow(name="evaluate", log_prints=True)
def evaluate_flow(agent: str, method: str, params: str = _common.PARAMS,
                  validated_dir: str = "validated", runs_dir: str = "runs") -> dict[str, Any]:
    """Run ``agent`` in ``method`` mode over ``build.formats``' examples: ``evaluate.shards``
    shards mapped over the flow's task runner (``runner:``), merged in example order."""
    from treeagent.agents.evaluate import write_run
    from treeagent.agents.shards import ShardSpec, merge_shards
    from treeagent.llm.lock import locked_entry, locked_options
    from treeagent.llm.serve import served_context_window, served_engine_spec
    from treeagent.pipeline.runners import describe

    log = get_run_logger()
    p = _common.load_params(params)
    if agent not in p.agents or method not in p.methods:
        raise ValueError(f"{agent}/{method} is not in evaluate.agents x evaluate.methods")
    from treeagent.bench import splits

    files = tuple(str(f) for f in splits.test_tables(validated_dir, p["build.formats"]))
    name, options = p.engine_spec(agent)
    kwargs = p.evaluate_kwargs(agent)
    served = served_engine_spec(p, agent)  # serve.enabled: the servers the pipeline started
    if served is not None:
        name, options = served
        kwargs["context_window"] = served_context_window(p, agent)
    options = locked_options(name, options, locked_entry(p, agent))  # models.lock's revision
    pinned = str(p[f"agents.{agent}.revision"])
    out = Path(runs_dir) / agent / method
    out.mkdir(parents=True, exist_ok=True)
    (out / "trace.jsonl").unlink(missing_ok=True)
    if kwargs.get("cache"):
        Path(kwargs["cache"]).parent.mkdir(parents=True, exist_ok=True)
    n = p["evaluate.shards"]
    specs = [ShardSpec(agent, method, k, n, files, name, options, kwargs, str(out))
             for k in range(n)]
    log.info("%s/%s: %d shard(s) on %s", agent, method, n, describe(p["runner"]))
    futures = run_shard.map(specs)
    results = [f.result() for f in futures]
    rows = merge_shards(results, specs)
    model, revision = results[0].model, results[0].revision
    if pinned not in ("auto", revision):
        log.warning("params pin revision %s; the engine reports %s (recorded in the rows)",
                    pinned, revision)
    summary = write_run(rows, out, agent=agent, method=method, model=model,
                        model_revision=revision, pinned_revision=pinned)
    log.info("%s/%s: %s", agent, method, json.dumps(summary))
    return summary


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agent", required=True)
    ap.add_argument("--method", required=True)
    ap.add_argument("--params", default=_common.PARAMS)
    args = ap.parse_args(argv)
    p = _common.start(args.params)
    from treeagent.agents.setup import SetupError, check_params
    from treeagent.llm.lock import LockError, locked_entry
    from treeagent.llm.serve import ServeError, served_engine_spec
    from treeagent.pipeline.runners import from_params, workers_report_here

    try:  # the servers' URLs, the models lock, the tokenizer: checked before any work
        served_engine_spec(p, args.agent)
        locked_entry(p, args.agent)
        check_params(p, [args.agent])
    except (ServeError, LockError, SetupError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    with _common.artifact_errors():
        from treeagent.agents.shards import example_ids
        from treeagent.bench import splits

        example_ids(splits.test_tables("validated", p["build.formats"]))  # the test split
        with workers_report_here(p["runner"]):
            evaluate_flow.with_options(task_runner=from_params(p["runner"]))(
                args.agent, args.method, args.params)


if __name__ == "__main__":
    main()
