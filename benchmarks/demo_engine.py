"""Demo engine settings: the demo's own calls replayed on the transformers engine.

The calls are read from the ``trace.jsonl`` files of a finished demo run (``runs/`` of a
clone where ``make demo`` ran: every call's messages, template arguments and token cap;
calls that share a prompt are replayed once). They are grouped as the demo batches them
(one agent step of every example: same method, same call index), and ``--batches``
groups spread over the run are replayed, each group as one ``generate_sync`` batch, under
each candidate setting:

* ``fp32``: float32 weights (the baseline);
* ``bf16``: bfloat16 weights (AMX / avx512_bf16 matrix units where the CPU has them);
* ``bf16-b4``, ``bf16-b2``, ``bf16-b1``, ``fp32-b1``: batches of at most 4, 2, 1 (the
  engine's length order cutting padding; 1: no padding at all);
* ``bf16-padded``, ``fp32-padded``: the batch prefilled as one padded forward pass (the
  CPU default prefills each prompt apart, then decodes the batch together);
* ``bf16-eager``: bf16 with transformers' eager attention instead of PyTorch SDPA;
* ``int8``: fp32 with ``torch.ao.quantization.quantize_dynamic`` on every Linear layer;
* ``auto``: the engine's ``dtype="auto"`` (what it picks on this CPU).

Printed per setting: calls/s (median of ``--repeats`` runs; the settings interleave within
a run, so machine load falls on all of them alike), the speed ratio against fp32 in the
same run (median of the per-run ratios), the same two per CPU second of the process (on a
busy machine, with ``--threads 1``, a measure of the work that waiting does not blur), and the agreement of its greedy replies with
fp32's on the same calls: the share of identical replies and the share whose extracted
answer (``treeagent.scoring.extract_answer``) is identical. ``fp32 vs trace`` compares
fp32 here with the replies the demo recorded (batches formed differently there: the
padding alone can change a greedy reply).

``--against OTHER_RUNS`` compares two whole demo runs instead (no model is loaded), e.g.
one made in fp32 and one in bf16 from the same validated examples: over the calls whose
prompts both runs made (a call's prompt carries the earlier replies, so the runs share
a prompt until their replies part), the share of identical replies and of identical
extracted answers; and per (method, example) the share of identical predictions and of
identical scores (``scores.parquet`` of the score stage). ``--against-cache SQLITE ...
--revision REV`` compares with the replies another run committed to its call cache
(a run still going, e.g. ``.cache/calls.shards/*/*/*.sqlite``), over the calls of
``--runs`` found there.

    git clone . /tmp/demoB0 && (cd /tmp/demoB0 && make demo)
    .venv/bin/python benchmarks/demo_engine.py --runs /tmp/demoB0/runs --batches 3 --repeats 3
    .venv/bin/python benchmarks/demo_engine.py --runs /tmp/demoB0/runs --against /tmp/demoB/runs
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from treeagent.llm import Message, Request, Sampling
from treeagent.llm.transformers_engine import TransformersEngine
from treeagent.scoring import extract_answer


@dataclass(frozen=True)
class Call:
    """One distinct call of the demo and the reply the demo recorded for it."""

    method: str
    index: int
    example: str
    prompt: str  # sha256 of the rendered prompt (the trace's prompt_sha256)
    request: Request
    recorded: str


def read_calls(runs: Path) -> list[Call]:
    """Distinct calls (by prompt hash) of every ``runs/<agent>/<method>/trace.jsonl``."""
    seen: set[str] = set()
    calls = []
    for trace in sorted(runs.glob("*/*/trace.jsonl")):
        for number, line in enumerate(trace.read_text(encoding="utf-8").splitlines(), 1):
            try:
                row = json.loads(line)
                key = row["prompt_sha256"]
                messages = tuple(Message(m["role"], m["content"]) for m in row["messages"])
                sampling = Sampling(max_tokens=int(row["max_tokens"]))
            except (ValueError, KeyError, TypeError) as exc:
                raise SystemExit(f"error: {trace}:{number}: not a trace row ({exc})") from None
            if key in seen or row.get("error"):
                continue
            seen.add(key)
            request = Request(messages, sampling, kind=row["kind"],
                              template_kwargs=row.get("template_kwargs") or {})
            calls.append(Call(row["method"], int(row["call"]), row["example_id"], key,
                              request, row.get("reply") or ""))
    if not calls:
        raise SystemExit(f"error: {runs}: no */*/trace.jsonl with calls (run make demo)")
    return calls


def demo_batches(calls: list[Call], count: int, min_size: int = 4) -> list[list[Call]]:
    """``count`` groups of one step of every example (same method and call index), spread
    evenly over the run's groups of at least ``min_size`` calls."""
    groups: dict[tuple[str, int], list[Call]] = {}
    for c in calls:
        groups.setdefault((c.method, c.index), []).append(c)
    full = [g for _, g in sorted(groups.items()) if len(g) >= min_size]
    if count >= len(full):
        return full
    step = len(full) / count
    return [full[int(i * step + step / 2)] for i in range(count)]


@dataclass(frozen=True)
class Setting:
    name: str
    options: dict[str, Any]
    transform: Callable[[Any], Any] | None = None


def int8_dynamic(model: Any) -> Any:
    """Every ``nn.Linear`` as a dynamically quantized int8 layer (weights int8, activations
    quantized per batch)."""
    import warnings

    import torch
    from torch.ao.quantization import quantize_dynamic

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao.quantization's deprecation notice
        return quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)


SETTINGS = {
    "fp32": Setting("fp32", {"dtype": "float32"}),
    "bf16": Setting("bf16", {"dtype": "bfloat16"}),
    "bf16-padded": Setting("bf16-padded", {"dtype": "bfloat16", "prefill": "batch"}),
    "fp32-padded": Setting("fp32-padded", {"dtype": "float32", "prefill": "batch"}),
    "bf16-b4": Setting("bf16-b4", {"dtype": "bfloat16", "max_batch": 4}),
    "bf16-b2": Setting("bf16-b2", {"dtype": "bfloat16", "max_batch": 2}),
    "bf16-b1": Setting("bf16-b1", {"dtype": "bfloat16", "max_batch": 1}),
    "fp32-b1": Setting("fp32-b1", {"dtype": "float32", "max_batch": 1}),
    "bf16-eager": Setting("bf16-eager", {"dtype": "bfloat16", "attention": "eager"}),
    "int8": Setting("int8", {"dtype": "float32"}, int8_dynamic),
    "auto": Setting("auto", {"dtype": "auto"}),
}


class Runner:
    """One engine per setting, loaded once; ``run`` replays the batches."""

    def __init__(self, setting: Setting, max_batch: int, threads: int | None = None) -> None:
        self.setting = setting
        options = {"device": "cpu", "max_batch": max_batch, "threads": threads,
                   **setting.options}
        started = time.perf_counter()
        self.engine = TransformersEngine(**options)
        self.engine._load()
        if setting.transform is not None:
            import copy

            # the fp32 model object is shared (load_model caches it): transform a copy
            self.engine._model = setting.transform(copy.deepcopy(self.engine._model))
        self.load_seconds = time.perf_counter() - started

    def run(self, batches: list[list[Call]]) -> tuple[float, float, list[str]]:
        """(wall seconds, CPU seconds of this process, replies)."""
        replies: list[str] = []
        cpu = time.process_time()
        started = time.perf_counter()
        for batch in batches:
            out = self.engine.generate_sync([c.request for c in batch])
            bad = [r.error for r in out if r.error]
            if bad:
                raise SystemExit(f"error: {self.setting.name}: {bad[0]}")
            replies.extend(r.text or "" for r in out)
        return time.perf_counter() - started, time.process_time() - cpu, replies


def agreement(replies: list[str], reference: list[str]) -> tuple[float, float]:
    """(share of identical replies, share with identical extracted answers)."""
    same = sum(a == b for a, b in zip(replies, reference))
    answers = sum(extract_answer(a) == extract_answer(b) for a, b in zip(replies, reference))
    n = max(1, len(reference))
    return same / n, answers / n


def compare_runs(runs: Path, other: Path) -> None:
    """Print the agreement of two whole demo runs (module docstring, ``--against``)."""
    import pandas as pd

    mine = {c.prompt: c for c in read_calls(runs)}
    theirs = {c.prompt: c for c in read_calls(other)}
    shared = [r for r in mine if r in theirs]
    same, answers = agreement([mine[r].recorded for r in shared],
                              [theirs[r].recorded for r in shared])
    print(f"calls: {len(mine)} distinct in {runs}, {len(theirs)} in {other}, {len(shared)} "
          f"prompts in both: same reply {same:.1%}, same answer {answers:.1%}")
    rows = []
    for path in sorted(runs.glob("*/*/scores.parquet")):
        twin = other / path.relative_to(runs)
        if not twin.is_file():
            continue
        cols = ["example_id", "method", "prediction", "score"]
        both = pd.read_parquet(path, columns=cols).merge(
            pd.read_parquet(twin, columns=cols), on=["example_id", "method"])
        rows.append(both)
    if not rows:
        raise SystemExit(f"error: no */*/scores.parquet in both {runs} and {other}")
    table = pd.concat(rows)
    print(f"predictions: {len(table)} (method, example) pairs: same prediction "
          f"{(table.prediction_x == table.prediction_y).mean():.1%}, same extracted answer "
          f"{(table.prediction_x.map(extract_answer) == table.prediction_y.map(extract_answer)).mean():.1%}, "
          f"same score {(table.score_x == table.score_y).mean():.1%} "
          f"(mean score {100 * table.score_x.mean():.1f} vs {100 * table.score_y.mean():.1f})")
    for method, part in table.groupby("method", sort=False):
        print(f"  {method:<10} same prediction {(part.prediction_x == part.prediction_y).mean():.1%}"
              f" of {len(part)}")


def compare_cache(runs: Path, caches: list[Path], revision: str, model: str) -> None:
    """Agreement of the replies in ``runs``' traces with the replies another run (still
    running, or without traces) committed to its call cache files under ``revision``,
    over the calls found there (module docstring, ``--against-cache``)."""
    import sqlite3

    from treeagent.llm.cache import call_key

    found: dict[str, str] = {}
    for path in caches:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            found.update(db.execute("SELECT key, text FROM responses").fetchall())
    pairs = [(c.recorded, found[k]) for c in read_calls(runs)
             if (k := call_key("transformers", model, revision, c.request)) in found]
    same, answers = agreement([a for a, _ in pairs], [b for _, b in pairs])
    print(f"{len(pairs)} calls of {runs} answered in {len(caches)} cache file(s) at revision "
          f"{revision}: same reply {same:.1%}, same answer {answers:.1%}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=Path, required=True,
                   help="runs/ of a finished demo (its */*/trace.jsonl)")
    p.add_argument("--against", type=Path, metavar="OTHER_RUNS",
                   help="compare the demo run of --runs with this one (no model loaded)")
    p.add_argument("--against-cache", type=Path, nargs="+", metavar="SQLITE",
                   help="compare with the replies in these call cache files (--revision)")
    p.add_argument("--revision", help="--against-cache: the revision of its replies "
                   "(e.g. the weights' hash + -bf16)")
    p.add_argument("--model-id", default="SmolLM2-135M-Instruct")
    p.add_argument("--batches", type=int, default=3, help="demo batches replayed per run")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--max-batch", type=int, default=8, help="the demo's engine max_batch")
    p.add_argument("--calls", type=int, default=None,
                   help="only the first N calls of the chosen batches (a shorter run)")
    p.add_argument("--threads", type=int, default=None,
                   help="torch threads (1: CPU seconds measure work, not waiting on a busy "
                   "machine)")
    p.add_argument("--settings", default="fp32,bf16,bf16-b4,int8",
                   help=f"comma-separated, fp32 first: {', '.join(SETTINGS)}")
    args = p.parse_args()
    if args.against:
        compare_runs(args.runs, args.against)
        return
    if args.against_cache:
        if not args.revision:
            raise SystemExit("error: --against-cache needs --revision")
        compare_cache(args.runs, args.against_cache, args.revision, args.model_id)
        return
    names = [n.strip() for n in args.settings.split(",") if n.strip()]
    unknown = [n for n in names if n not in SETTINGS]
    if unknown or not names or names[0] != "fp32":
        raise SystemExit(f"error: --settings: fp32 first, then any of {', '.join(SETTINGS)}"
                         + (f" (unknown: {', '.join(unknown)})" if unknown else ""))
    calls = read_calls(args.runs)
    batches = demo_batches(calls, args.batches)
    if args.calls:
        batches = [b[: max(0, args.calls - sum(len(x) for x in batches[:i]))]
                   for i, b in enumerate(batches)]
        batches = [b for b in batches if b]
    chosen = [c for b in batches for c in b]
    print(f"{len(calls)} distinct calls in {args.runs}; replaying {len(batches)} batches "
          f"({len(chosen)} calls: " + ", ".join(f"{b[0].method} call {b[0].index} x{len(b)}"
                                                 for b in batches) + ")")
    import torch

    print(f"torch {torch.__version__}, {args.threads or torch.get_num_threads()} threads, "
          f"CPU capability {torch.backends.cpu.get_cpu_capability()}")
    runners = {}
    for name in names:
        runners[name] = Runner(SETTINGS[name], args.max_batch, args.threads)
        print(f"  {name}: loaded in {runners[name].load_seconds:.1f} s "
              f"(dtype {runners[name].engine.dtype})")
    seconds: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    replies: dict[str, list[str]] = {}
    for r in range(args.repeats):
        for name in names:
            took, used, out = runners[name].run(batches)
            seconds[name].append(took)
            cpu[name].append(used)
            replies.setdefault(name, out)
            print(f"run {r + 1} {name}: {len(chosen) / took:.3f} calls/s ({took:.1f} s, "
                  f"{used:.1f} CPU s)", flush=True)
        summary(names, seconds, cpu, replies, chosen)  # after every run: a cut-short run says


def summary(names: list[str], seconds: dict[str, list[float]], cpu: dict[str, list[float]],
            replies: dict[str, list[str]], chosen: list[Call]) -> None:
    """The table: median calls/s (wall and per CPU second), median ratios to fp32,
    agreement with fp32."""
    runs = len(seconds["fp32"])
    reference = replies["fp32"]
    print(f"\nmedian of {runs} run(s), {len(chosen)} calls each:\n"
          f"{'setting':<11} {'calls/s':>8} {'vs fp32':>8} {'calls/CPU s':>12} {'vs fp32':>8} "
          f"{'same reply':>11} {'same answer':>12}")
    for name in names:
        rate = statistics.median(len(chosen) / s for s in seconds[name])
        ratio = statistics.median(f / s for f, s in zip(seconds["fp32"], seconds[name]))
        per_cpu = statistics.median(len(chosen) / s for s in cpu[name])
        cpu_ratio = statistics.median(f / s for f, s in zip(cpu["fp32"], cpu[name]))
        same, answers = agreement(replies[name], reference)
        print(f"{name:<11} {rate:>8.3f} {ratio:>7.2f}x {per_cpu:>12.4f} {cpu_ratio:>7.2f}x "
              f"{same:>10.1%} {answers:>11.1%}")
    same, answers = agreement(reference, [c.recorded for c in chosen])
    print(f"fp32 vs trace: same reply {same:.1%}, same answer {answers:.1%}\n", flush=True)


if __name__ == "__main__":
    main()
