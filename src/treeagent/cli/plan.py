"""``treeagent plan``: what the configured evaluation will cost, before any call.

Prints a table per agent x method x format x length (sections, calls, input and output
tokens, GPU-hours), then the wall clock under the pipeline's sharding
(:mod:`treeagent.pipeline.plan_wall`: ``evaluate.shards`` over each agent's GPUs, ``serve``'s
replicas or ``--gpus`` spread over the agents) with the rates it assumes and their
source; writes ``reports/plan.json`` and ``reports/plan.md`` (:mod:`treeagent.pipeline.plan`).
Rates: ``--prompt-tps``/``--output-tps``/``--sequence-tps`` (tokens per second) and
``--call-latency`` (seconds), or
``--measure`` (the configured engine of the first agent, on fixed prompts); any rate not
given is a stated default, printed as such. A bad params file or a missing grid is one
``error:`` line and exit 2.
"""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan", help="sections, calls, tokens and GPU-hours of the "
                       "configured evaluation, before any call")
    p.add_argument("--params", default="params.yaml",
                   help="pipeline parameters: agents, methods, models, budgets")
    p.add_argument("--validated", default="validated", help="the built grid (default: %(default)s)")
    p.add_argument("--out", default="reports", help="folder for plan.json and plan.md")
    p.add_argument("--prompt-tps", type=float, help="prompt tokens/s per GPU")
    p.add_argument("--output-tps", type=float, help="output tokens/s per GPU")
    p.add_argument("--sequence-tps", type=float,
                   help="decode tokens/s of one sequence (bounds an example's chain of calls)")
    p.add_argument("--call-latency", type=float, metavar="SECONDS",
                   help="a call's latency before its prefill (round trip, wait for a batch)")
    p.add_argument("--gpus", type=int, help="GPUs spread over the agents (default: serve's "
                   "replicas x tensor_parallel per agent when serve.enabled, else 1)")
    p.add_argument("--measure", action="store_true",
                   help="measure the throughput of the configured engine first")
    p.add_argument("--measure-prompt-tokens", type=int, default=3000,
                   help="prompt length of each --measure call")
    p.add_argument("--measure-calls", type=int, default=32,
                   help="calls --measure times against the engine")
    p.add_argument("--tokenizer", help="tokenizer every agent is counted with (default: "
                   "each agent's tokenizer setting, else its model's own)")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=run)


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    import json

    from treeagent.agents.setup import SetupError
    from treeagent.llm.models import ModelError
    from treeagent.pipeline import config, plan, plan_wall

    if (args.prompt_tps is None) != (args.output_tps is None):
        return _fail("give both --prompt-tps and --output-tps (or --measure)")
    if (args.gpus is not None and args.gpus < 1) or any(
            v is not None and v <= 0
            for v in (args.prompt_tps, args.output_tps, args.sequence_tps)):
        return _fail("--gpus, --prompt-tps, --output-tps and --sequence-tps must be positive")
    if args.call_latency is not None and args.call_latency < 0:
        return _fail("--call-latency must be at least 0 seconds")
    try:
        params = config.load(args.params)
    except config.ParamsError as exc:
        return _fail(str(exc))
    throughput = None
    if args.prompt_tps is not None:
        throughput = plan.Throughput(args.prompt_tps, args.output_tps)
    elif args.measure:
        try:
            throughput = _measure(params, args)
        except ModelError as exc:
            return _fail(str(exc))
    try:
        rows, setups = plan.plan_params(params, args.validated, args.tokenizer)
    except (FileNotFoundError, ModelError) as exc:  # ModelError: e.g. no local extra
        return _fail(str(exc))
    except SetupError as exc:  # e.g. a served model without a tokenizer setting
        return _fail(f"{args.params}: {exc}")
    except ValueError as exc:  # a stored example that does not re-materialize
        return _fail(f"{args.validated}: {exc}")
    wall, gpus = plan_wall.from_params(params, rows, throughput, args.sequence_tps, args.gpus,
                                       args.call_latency)
    doc = plan.document(rows, setups, throughput, gpus, wall)
    plan.write(doc, args.out)
    print(json.dumps(doc, indent=2) if args.json else plan.table(doc))
    return 0


def _measure(params, args: argparse.Namespace):
    import asyncio

    from treeagent.llm import make_engine
    from treeagent.pipeline import plan

    name, options = params.engine_spec(params.agents[0])
    engine = make_engine(name, **options)
    try:
        return plan.measure(engine, args.measure_prompt_tokens, args.measure_calls)
    finally:
        asyncio.run(engine.aclose())
