"""``treeagent plan``: what the configured evaluation will cost, before any call (issue 21).

Prints a table per agent x method x format x length (sections, calls, input and output
tokens, GPU-hours) and writes ``reports/plan.json`` and ``reports/plan.md``
(:mod:`treeagent.plan`). Throughput: ``--prompt-tps``/``--output-tps`` (tokens per
second per GPU), or ``--measure`` (the configured engine of the first agent, on fixed
prompts). A bad params file or a missing grid is one ``error:`` line and exit 2.
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
    p.add_argument("--gpus", type=int, default=1, help="GPUs in parallel (wall time)")
    p.add_argument("--measure", action="store_true",
                   help="measure the throughput of the configured engine first")
    p.add_argument("--measure-prompt-tokens", type=int, default=3000,
                   help="prompt length of each --measure call")
    p.add_argument("--measure-calls", type=int, default=32,
                   help="calls --measure times against the engine")
    p.add_argument("--tokenizer", help="tokenizer for served models without local files "
                   "(default: qwen3)")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=run)


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    import json

    from treeagent import config, plan

    if (args.prompt_tps is None) != (args.output_tps is None):
        return _fail("give both --prompt-tps and --output-tps (or --measure)")
    if args.gpus < 1 or any(v is not None and v <= 0 for v in (args.prompt_tps, args.output_tps)):
        return _fail("--gpus, --prompt-tps and --output-tps must be positive")
    try:
        params = config.load(args.params)
    except config.ParamsError as exc:
        return _fail(str(exc))
    throughput = None
    if args.prompt_tps is not None:
        throughput = plan.Throughput(args.prompt_tps, args.output_tps)
    elif args.measure:
        throughput = _measure(params, args)
    try:
        rows, setups = plan.plan_params(params, args.validated, args.tokenizer)
    except FileNotFoundError as exc:
        return _fail(str(exc))
    except ValueError as exc:  # a stored example that does not re-materialize
        return _fail(f"{args.validated}: {exc}")
    doc = plan.document(rows, setups, throughput, args.gpus)
    plan.write(doc, args.out)
    print(json.dumps(doc, indent=2) if args.json else plan.table(doc))
    return 0


def _measure(params, args: argparse.Namespace):
    import asyncio

    from treeagent import plan
    from treeagent.llm import make_engine

    name, options = params.engine_spec(params.agents[0])
    engine = make_engine(name, **options)
    try:
        return plan.measure(engine, args.measure_prompt_tokens, args.measure_calls)
    finally:
        asyncio.run(engine.aclose())
