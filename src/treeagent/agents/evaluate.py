"""Evaluate one (agent, method) over benchmark examples: one program per example, all
driven by the scheduler (batched, cached, resumable), one scored-row dict per example.

Rows have the columns of :data:`treeagent.report.schema.SCORED_SCHEMA` except ``score``
(added by :func:`treeagent.report.schema.score_rows`), plus ``error`` (why an example
has no prediction; None when it has one) and ``clipped`` (how many prompt fields were
cut to fit the request limit; a run's summary sums it). A program that raises (e.g. a context that
does not parse) gives a row with ``prediction`` None, so it scores 0 and the run goes on.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from treeagent.agents import setup
from treeagent.agents.runner import Result, program, with_calls
from treeagent.agents.templates import Prompts
from treeagent.bench.model import Example
from treeagent.llm.base import Engine
from treeagent.tokenizers.tokens import Tokenizer


def resolve_tokenizer(engine: Engine, tokenizer: Tokenizer | str | None = None,
                      agent: str | None = None) -> Tokenizer:
    """The evaluated model's tokenizer (C.1) by the rules of
    :mod:`treeagent.agents.setup`: ``tokenizer`` if given (an object, a built-in name or
    a folder), else the engine's ``tokenizer`` option, else the one beside the engine's
    local weights; :class:`~treeagent.agents.setup.SetupError` naming ``agent`` and the
    setting to give otherwise."""
    return setup.resolve_tokenizer(agent, engine.model, tokenizer, engine)[0]


def model_context_window(engine: Engine) -> int | None:
    """The model's context length, when it can be known: the engine's
    ``context_window`` (or ``max_model_len``), else the local weights' metadata."""
    return setup.context_window(engine.model, engine)


def clip_totals(values: Iterable[Any]) -> dict[str, int]:
    """Prompt cuts of one run from its rows' ``clipped`` values: ``examples``
    (rows), ``recorded`` (rows that carry a count; older scored files lack the column),
    ``clipped_examples`` (rows with at least one cut) and ``cuts`` (their sum)."""
    values = list(values)
    counts = [int(v) for v in values if v is not None and v == v]  # None/NaN: not recorded
    return {"examples": len(values), "recorded": len(counts),
            "clipped_examples": sum(c > 0 for c in counts), "cuts": sum(counts)}


def clip_summary(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Prompt cuts of the run: ``clipped`` fields cut to fit the request limit
    over all calls, in ``clipped_examples`` examples (zeros when nothing was cut)."""
    totals = clip_totals(r.get("clipped") for r in rows)
    return {"clipped": totals["cuts"], "clipped_examples": totals["clipped_examples"]}


def _write_parquet(rows: list[dict[str, Any]], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    tmp = path.with_name(f".{path.name}.tmp")
    pq.write_table(pa.Table.from_pylist(rows), tmp)
    os.replace(tmp, path)


def write_run(rows: list[dict[str, Any]], out_dir: str | Path, *, agent: str, method: str,
              model: str, model_revision: str, pinned_revision: str) -> dict[str, Any]:
    """Write one run's outputs into ``out_dir`` and return its summary.

    ``timing.json``: wall-clock seconds per example and their total (they vary run to
    run, so they stay out of the DVC outputs and tracked metrics: a fresh clone must
    compute the committed dvc.lock); ``predictions.parquet``: the rows with ``seconds``
    None; ``summary.json`` (a DVC metric): examples, unavailable responses, errors,
    calls, tokens and prompt cuts."""
    out = Path(out_dir)
    timing = {r["example_id"]: r["seconds"] for r in rows}
    (out / "timing.json").write_text(json.dumps({"seconds": round(sum(
        v or 0.0 for v in timing.values()), 3), "examples": timing}, indent=1) + "\n",
        encoding="utf-8")
    rows = [{**r, "seconds": None} for r in rows]
    _write_parquet(rows, out / "predictions.parquet")
    summary = {
        "agent": agent, "method": method, "model": model,
        "model_revision": model_revision, "pinned_revision": pinned_revision,
        "examples": len(rows),
        "unavailable": sum(r["prediction"] is None for r in rows),
        "errors": sum(bool(r.get("error")) for r in rows),
        "calls": sum(r["calls"] or 0 for r in rows),
        "input_tokens": sum(r["input_tokens"] or 0 for r in rows),
        "output_tokens": sum(r["output_tokens"] or 0 for r in rows),
        **clip_summary(rows),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def row(example: Example, result: Result | None, engine: Engine, agent: str, method: str,
        error: str | None = None, calls: int = 0, seconds: float = 0.0) -> dict[str, Any]:
    """The scored-row dict of one example (``score`` is added by ``score_rows``)."""
    base = {
        "example_id": example.id, "dataset": example.format, "task": example.task,
        "length": example.length, "agent": agent, "method": method,
        "model": engine.model, "model_revision": engine.revision,
        "reference": json.dumps(example.answer, ensure_ascii=False),
        "accepted": json.dumps(example.accepted, ensure_ascii=False),
    }
    if result is None:
        return {**base, "prediction": None, "calls": calls, "input_tokens": 0,
                "output_tokens": 0, "sections": 0, "flat_sections": None,
                "seconds": seconds, "error": error, "clipped": 0}
    return {
        **base, "prediction": result.prediction, "calls": result.calls,
        "input_tokens": result.input_tokens, "output_tokens": result.output_tokens,
        "sections": result.sections, "flat_sections": result.flat_sections,
        "seconds": result.seconds, "error": result.error,
        "clipped": int(result.details.get("clipped", 0)),
    }


def write_trace(out: IO[str], example_id: str, result: Result) -> None:
    """One JSON line per call: example, call kind, prompt hash and the prompt itself
    (messages, chat-template arguments), reply, tokens, latency; a call that carried a
    reading step has ``step`` (pass, section index t, path, link sources, spans with
    their source state and text) and a cut call ``clipped`` (field, tokens, kept)."""
    for call in result.trace:
        out.write(json.dumps({"example_id": example_id, "agent": result.agent,
                              "method": result.method, **call}, ensure_ascii=False) + "\n")


def evaluate(
    examples: Iterable[Example],
    *,
    agent: str,
    method: str,
    engine: Engine,
    cache: Any = None,
    base_budget: int = 5000,
    concurrency: int = 64,
    tokenizer: Tokenizer | str | None = None,
    prompts: Prompts | str | Path | None = None,
    context_window: int | None = None,
    options: dict[str, Any] | None = None,
    progress: bool = False,
    trace: str | Path | None = None,
    run_id: str | None = None,
    calls_total: int | None = None,
) -> list[dict[str, Any]]:
    """Run ``agent`` in ``method`` mode on every example; rows in input order.

    ``cache`` is a :class:`treeagent.llm.CallCache` or a path (calls are journaled
    before use; a rerun reuses them). ``tokenizer`` defaults as :mod:`treeagent.agents.setup` says;
    ``context_window`` to :func:`model_context_window`. ``trace`` appends one JSON
    line per call to that file. ``progress`` shows examples done of their count (when
    ``examples`` has a length) and calls (of ``calls_total``, the plan's, where given).
    """
    from treeagent.llm.scheduler import Meter, run_programs

    agent_setup = setup.resolve(agent, engine=engine, tokenizer=tokenizer, options=options,
                                window=context_window)
    tok, window = agent_setup.tokenizer, agent_setup.context_window
    templates = prompts if isinstance(prompts, Prompts) else Prompts(prompts)
    seen: list[Example] = []  # without their contexts: rows need only the metadata

    def programs() -> Iterator[tuple[str, Any]]:
        for ex in examples:
            gen = program(agent, method, ex.context, ex.format, ex.question, tok,
                          base_budget=base_budget, task=ex.task, prompts=templates,
                          context_window=window, options=options)
            seen.append(dataclasses.replace(ex, context=""))
            yield ex.id, gen

    count = len(examples) if hasattr(examples, "__len__") else None  # type: ignore[arg-type]
    meter = Meter(f"evaluate {agent}/{method}", "examples", count, calls_total)
    outcomes = run_programs(programs(), engine, cache=cache, concurrency=concurrency,
                            progress=meter if progress else False, run_id=run_id,
                            keep_requests=trace is not None)
    rows = []
    sink = open(trace, "a", encoding="utf-8") if trace else None  # noqa: SIM115
    try:
        for ex in seen:
            out = outcomes[ex.id]
            result = (with_calls(out.result, out.trace) if isinstance(out.result, Result)
                      else None)
            rows.append(row(ex, result, engine, agent, method, error=out.error,
                            calls=len(out.trace), seconds=out.seconds))
            if sink is not None and result is not None:
                write_trace(sink, ex.id, result)
    finally:
        if sink is not None:
            sink.close()
    return rows
