"""Prefect flow ``evaluate`` (DVC stages ``evaluate@<agent>-<method>``): one memory agent in
one mode over every validated example.

Thin over :func:`treeagent.agents.evaluate.evaluate` (issue 3) and
:func:`treeagent.agents.evaluate.write_run` (the outputs and the summary): examples run
concurrently as state machines, every ready call batched to the engine, every call
journaled in the durable cache (``evaluate.cache``) before use -- so a retried or killed
run resumes without repeating a call, and a new model revision recomputes only that
model's calls. Writes ``runs/<agent>/<method>/predictions.parquet`` (scored-row columns
without ``score``, plus ``error``), ``trace.jsonl`` (one line per call) and
``summary.json`` (calls, tokens, unavailable responses, prompt cuts: a DVC metric).

    python flows/evaluate.py --agent memagent --method treeagent [--params params.yaml]
"""

from __future__ import annotations  # noqa: I001 (_common precedes prefect)

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

import _common  # first: sets Prefect's environment before Prefect is imported
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE


@task(name="load-examples", cache_policy=NO_CACHE)
def load_examples(formats: list[str], validated_dir: str) -> list[Any]:
    """Every validated example of ``formats``, in file order."""
    from treeagent.bench.io import read_examples

    examples = []
    for fmt in formats:
        examples += list(read_examples(Path(validated_dir) / "examples" / f"{fmt}.parquet"))
    get_run_logger().info("%d examples from %s", len(examples), ", ".join(formats))
    return examples


@task(name="evaluate", retries=1, retry_delay_seconds=10, cache_policy=NO_CACHE,
      task_run_name="evaluate-{agent}-{method}")
def run_agent(examples: list[Any], agent: str, method: str, engine_name: str,
              engine_options: dict[str, Any], pinned: str, kwargs: dict[str, Any],
              out_dir: str) -> dict[str, Any]:
    """Evaluate, then write predictions, trace and summary (a retry reuses cached calls)."""
    from treeagent.agents.evaluate import evaluate, write_run
    from treeagent.llm import make_engine

    log = get_run_logger()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    trace = out / "trace.jsonl"
    trace.unlink(missing_ok=True)
    engine = make_engine(engine_name, **engine_options)
    log.info("%s/%s: %d examples on %s %s (revision %s)", agent, method, len(examples),
             engine_name, engine.model, engine.revision)
    if pinned not in ("auto", engine.revision):
        log.warning("params pin revision %s; the engine reports %s (recorded in the rows)",
                    pinned, engine.revision)
    cache = kwargs.pop("cache", None)
    if cache:
        Path(cache).parent.mkdir(parents=True, exist_ok=True)
    try:
        rows = evaluate(examples, agent=agent, method=method, engine=engine, cache=cache,
                        progress=True, trace=trace, run_id=f"{agent}/{method}", **kwargs)
    finally:
        asyncio.run(engine.aclose())
    summary = write_run(rows, out, agent=agent, method=method, model=engine.model,
                        model_revision=engine.revision, pinned_revision=pinned)
    log.info("%s/%s: %s", agent, method, json.dumps(summary))
    return summary


@flow(name="evaluate", log_prints=True)
def evaluate_flow(agent: str, method: str, params: str = _common.PARAMS,
                  validated_dir: str = "validated", runs_dir: str = "runs") -> dict[str, Any]:
    """Run ``agent`` in ``method`` mode over ``build.formats``' examples."""
    p = _common.load_params(params)
    if agent not in p.agents or method not in p.methods:
        raise ValueError(f"{agent}/{method} is not in evaluate.agents x evaluate.methods")
    examples = load_examples(p["build.formats"], validated_dir)
    name, options = p.engine_spec(agent)
    pinned = str(p[f"agents.{agent}.revision"])
    return run_agent(examples, agent, method, name, options, pinned, p.evaluate_kwargs(agent),
                     str(Path(runs_dir) / agent / method))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agent", required=True)
    ap.add_argument("--method", required=True)
    ap.add_argument("--params", default=_common.PARAMS)
    args = ap.parse_args(argv)
    _common.start(args.params)
    evaluate_flow(args.agent, args.method, args.params)


if __name__ == "__main__":
    main()
