"""Prefect flow ``plan`` (DVC stage ``plan``): what the configured evaluation will cost,
before any call (:mod:`treeagent.pipeline.plan`).

Reads the built grid (``validated/``) and the parameters; writes ``reports/plan.json``
(a DVC metric: sections, calls, input/output token bounds per agent x method x format
x length) and ``reports/plan.md`` (the table), with the wall clock under the params'
sharding and serving (:mod:`treeagent.pipeline.plan_wall`). GPU-hours appear when a throughput is
given (``--prompt-tps``/``--output-tps``, tokens/s per GPU); the wall clock uses the
stated default rates for any rate not given (``treeagent plan --measure`` measures them).

    python flows/plan.py [--params params.yaml] [--prompt-tps 20000 --output-tps 1500]
                         [--sequence-tps 100] [--call-latency 0.05] [--gpus 8]
"""

from __future__ import annotations  # noqa: I001 (_common precedes prefect)

import argparse
import sys
from typing import Any

import _common  # first: sets Prefect's environment before Prefect is imported
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE


@task(name="plan", cache_policy=NO_CACHE)
def make_plan(params_path: str, validated_dir: str, out_dir: str,
              prompt_tps: float | None, output_tps: float | None, gpus: int | None,
              sequence_tps: float | None = None, call_latency: float | None = None
              ) -> dict[str, Any]:
    """Plan rows for every agent x method x built format x length and the wall-clock
    estimate; written to ``out_dir``."""
    from treeagent.pipeline import plan, plan_wall

    params = _common.load_params(params_path)
    rows, setups = plan.plan_params(params, validated_dir)
    throughput = plan.Throughput(prompt_tps, output_tps) if prompt_tps and output_tps else None
    wall, used = plan_wall.from_params(params, rows, throughput, sequence_tps, gpus,
                                       call_latency)
    doc = plan.document(rows, setups, throughput, used, wall)
    json_path, md_path = plan.write(doc, out_dir)
    log = get_run_logger()
    log.info("plan: %d rows -> %s, %s", len(rows), json_path, md_path)
    log.info("totals: %s", doc["totals"])
    return doc["totals"]


@flow(name="plan", log_prints=True)
def plan_flow(params: str = _common.PARAMS, validated_dir: str = "validated",
              out_dir: str = "reports", prompt_tps: float | None = None,
              output_tps: float | None = None, gpus: int | None = None,
              sequence_tps: float | None = None,
              call_latency: float | None = None) -> dict[str, Any]:
    return make_plan(params, validated_dir, out_dir, prompt_tps, output_tps, gpus,
                     sequence_tps, call_latency)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", default=_common.PARAMS)
    ap.add_argument("--validated", default="validated")
    ap.add_argument("--out", default="reports")
    ap.add_argument("--prompt-tps", type=float)
    ap.add_argument("--output-tps", type=float)
    ap.add_argument("--sequence-tps", type=float)
    ap.add_argument("--call-latency", type=float)
    ap.add_argument("--gpus", type=int)
    args = ap.parse_args(argv)
    p = _common.start(args.params)
    from treeagent.agents.setup import SetupError, check_params

    try:  # every agent's tokenizer is known before any work starts
        check_params(p)
    except SetupError as exc:
        print(f"error: {args.params}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    plan_flow(args.params, args.validated, args.out, args.prompt_tps, args.output_tps,
              args.gpus, args.sequence_tps, args.call_latency)


if __name__ == "__main__":
    main()
