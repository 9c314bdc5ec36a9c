"""The per-example viewer: ``reports/examples/`` (static, self-contained, works from file://).

One page per example (``<page name>.html``) and an index. A page holds everything it
shows as JSON inside the page (no fetch, no server, no network): the context with each
method's sections drawn over it (Algorithm 1 at B*, Flat at C; paper 3.1-3.2, C.1-C.2),
the evidence records highlighted (split ones marked), every model call of each agent ×
method run with the reading step it carried (section index t, path, link sources,
retrieved spans; Eq. 16), the prompt, the memory after the step (the call's reply), and
the final answer against the reference with its score. Text is placed with
``textContent`` only, so text from the data never becomes markup.

Inputs: :class:`treeagent.bench.model.Example` (question, answer, context), the scored
rows, each run's ``trace.jsonl`` lines (:func:`treeagent.agents.evaluate.write_trace`),
the evidence records of :mod:`treeagent.pipeline.evidence`, and a function giving a method's
sections of an example as ``(start, end, path)``.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from treeagent.report import tables as T
from treeagent.report.viewer_assets import INDEX_SCRIPT, PAGE_SCRIPT, STYLE

INDEX = "index.html"
MESSAGE_CHARS = 12_000  # a prompt message longer than this is cut in the page (the section
# it carries is in the context pane; the trace keeps it whole)
PER_CELL = 5  # pages per (format, task, length) cell written by the report stage
Sections = Callable[[Any, str, str], list[tuple[int, int, str | None]]]


def page_name(example_id: str) -> str:
    """A file name for an example's page: the id where it is a safe name, else the id's
    safe characters and a short hash (two ids never share a page)."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", example_id)[:80].lstrip(".") or "example"
    if safe == example_id:
        return f"{safe}.html"
    return f"{safe}-{hashlib.sha256(example_id.encode()).hexdigest()[:8]}.html"


def read_traces(runs_dir: str | Path, agents: Iterable[str], methods: Iterable[str]
                ) -> dict[tuple[str, str, str], list[dict[str, Any]]]:
    """(example, agent, method) -> its calls in order, from ``runs/<agent>/<method>/
    trace.jsonl`` (a run without one gives none; a line that is not JSON is skipped with
    its place named in the ``error`` of a stand-in call)."""
    out: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for agent in agents:
        for method in methods:
            path = Path(runs_dir) / agent / method / "trace.jsonl"
            if not path.is_file():
                continue
            with path.open(encoding="utf-8") as fh:
                for n, line in enumerate(fh, 1):
                    if not line.strip():
                        continue
                    try:
                        call = json.loads(line)
                    except json.JSONDecodeError as exc:
                        call = {"example_id": None, "error": f"{path}:{n}: {exc.msg}"}
                    key = (str(call.get("example_id")), agent, method)
                    out.setdefault(key, []).append(call)
    return out


def _clean(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _cut(text: Any) -> Any:
    if not isinstance(text, str) or len(text) <= MESSAGE_CHARS:
        return text
    return (text[:MESSAGE_CHARS] + f" … [{len(text) - MESSAGE_CHARS} more characters, "
            "in the trace; the section is in the context pane]")


def _step(call: dict[str, Any]) -> dict[str, Any]:
    step = call.get("step") or {}
    return {
        "call": call.get("call"), "kind": call.get("kind"), "pass": step.get("pass"),
        "t": step.get("t"), "path": step.get("path"), "links": step.get("links") or [],
        "spans": step.get("spans") or [],
        "messages": [{"role": m.get("role"), "content": _cut(m.get("content"))}
                     for m in call.get("messages") or []],
        "reply": call.get("reply"), "input_tokens": call.get("input_tokens"),
        "output_tokens": call.get("output_tokens"), "cached": call.get("cached"),
        "error": call.get("error"), "clipped": call.get("clipped") or [],
    }


def example_data(ex: Any, scores: pd.DataFrame, traces: dict, sections: Sections | None,
                 records: pd.DataFrame | None) -> dict[str, Any]:
    """Everything one example's page shows (JSON-ready)."""
    rows = scores[scores["example_id"] == ex.id]
    runs = []
    for agent in T.ordered(rows["agent"], T.AGENTS):
        for method in T.ordered(rows.loc[rows["agent"] == agent, "method"], T.METHODS):
            r = rows[(rows["agent"] == agent) & (rows["method"] == method)].iloc[0]
            bounds = sections(ex, agent, method) if sections else []
            recs = []
            if records is not None and len(records):
                mine = records[(records["example_id"] == ex.id) & (records["agent"] == agent)
                               & (records["method"] == method)]
                recs = [{"id": x.record_id, "start": int(x.start), "end": int(x.end),
                         "spanned": _clean(x.sections_spanned)}
                        for x in mine.itertuples() if pd.notna(x.start)]
            runs.append({
                "agent": agent, "method": method,
                "title": f"{T.AGENT_NAMES.get(agent, agent)} / "
                         f"{T.METHOD_NAMES.get(method, method)}",
                "prediction": _clean(r.get("prediction")), "score": float(r["score"]),
                "sections": [{"start": int(s), "end": int(e), "path": p}
                             for s, e, p in bounds],
                "records": recs,
                "steps": [_step(c) for c in traces.get((ex.id, agent, method), [])],
            })
    return {"id": ex.id, "format": ex.format, "task": ex.task, "length": int(ex.length),
            "question": ex.question, "reference": json.dumps(ex.answer, ensure_ascii=False),
            "context": ex.context, "runs": runs}


def _json_for_script(data: Any) -> str:
    """JSON safe inside ``<script type="application/json">`` (no ``<`` at all)."""
    return (json.dumps(data, ensure_ascii=False, allow_nan=False)
            .replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _page(title: str, data: Any, script: str) -> str:
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width"><title>{html.escape(title)}'
            f"</title><style>{STYLE}</style></head><body>\n"
            f'<script type="application/json" id="data">{_json_for_script(data)}</script>\n'
            f'<main id="app"></main>\n<script>{script}</script>\n</body></html>\n')


def write_examples(out_dir: str | Path, examples: Iterable[Any], scores: pd.DataFrame,
                   traces: dict | None = None, sections: Sections | None = None,
                   records: pd.DataFrame | None = None, report: str = "../index.html",
                   per_cell: int | None = None) -> dict[str, dict[str, str]]:
    """Write one page per scored example (at most ``per_cell`` per format, task and
    length, in the order given) and the index under ``out_dir``; return example id ->
    {"page": file name, "question": text} (for the report's links)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    scored = set(scores["example_id"])
    listed: dict[str, dict[str, str]] = {}
    index_rows = []
    per: dict[tuple[str, str, int], int] = {}
    for ex in examples:
        cell = (ex.format, ex.task, int(ex.length))
        if ex.id not in scored or (per_cell is not None and per.get(cell, 0) >= per_cell):
            continue
        per[cell] = per.get(cell, 0) + 1
        data = example_data(ex, scores, traces or {}, sections, records)
        name = page_name(ex.id)
        data["links"] = {"index": INDEX, "report": report}
        (out / name).write_text(_page(f"{ex.id}: step by step", data, PAGE_SCRIPT),
                                encoding="utf-8")
        listed[ex.id] = {"page": name, "question": ex.question}
        index_rows.append({"id": ex.id, "page": name, "format": ex.format, "task": ex.task,
                           "length": T.length_label(ex.length), "question": ex.question,
                           "runs": [{"title": r["title"], "agent": r["agent"],
                                     "method": r["method"], "score": r["score"],
                                     "steps": len(r["steps"])} for r in data["runs"]]})
    note = (f"{len(index_rows)} of {len(scored)} scored examples"
            + (f" (at most {per_cell} per format × task × length)." if per_cell else "."))
    (out / INDEX).write_text(_page("Examples, step by step",
                                   {"examples": index_rows, "report": report, "note": note},
                                   INDEX_SCRIPT),
                             encoding="utf-8")
    written = {INDEX, *(v["page"] for v in listed.values())}
    for stale in out.glob("*.html"):  # pages of examples no longer scored
        if stale.name not in written:
            stale.unlink()
    return listed


def sections_by_method(tokenizers: dict[str, Any], base_budget: int) -> Sections:
    """A :data:`Sections` function sectioning as the evaluation does (Flat at C, the
    structural modes at B*) with each agent's tokenizer; once per tokenizer, mode and
    example. A context that does not parse has no sections (its run has no steps either)."""
    from treeagent.agents.observation import prepare

    cache: dict[tuple[int, str, str], list[tuple[int, int, str | None]]] = {}

    def sections(ex: Any, agent: str, method: str) -> list[tuple[int, int, str | None]]:
        tok = tokenizers[agent]
        mode = "flat" if method == "flat" else "treeagent"  # the structural modes share B*
        key = (id(tok), mode, ex.id)
        if key not in cache:
            try:
                doc = prepare(ex.context, ex.format, tok, mode, base_budget)
                cache[key] = [(s.start, s.end, s.path) for s in doc.sections]
            except Exception:  # noqa: BLE001 (the run's own row already says why)
                cache[key] = []
        return cache[key]

    return sections


def write_from_pipeline(p: Any, runs_dir: str | Path, validated_dir: str | Path,
                        out_dir: str | Path, scores: pd.DataFrame,
                        records: pd.DataFrame | None) -> dict[str, dict[str, str]]:
    """The report stage's viewer: examples from ``validated/``, traces from ``runs/``,
    sections with each evaluated agent's tokenizer (as :mod:`treeagent.pipeline.evidence` does)."""
    from treeagent.agents.setup import from_params
    from treeagent.bench import io

    agents = list(dict.fromkeys(scores["agent"]))
    methods = list(dict.fromkeys(scores["method"]))
    toks = {agent: from_params(p, agent).tokenizer for agent in agents}

    def examples() -> Iterable[Any]:
        for fmt in p["build.formats"]:
            path = Path(validated_dir) / "examples" / f"{fmt}.parquet"
            if path.is_file():
                yield from io.read_examples(path)

    return write_examples(out_dir, examples(), scores, read_traces(runs_dir, agents, methods),
                          sections_by_method(toks, int(p["sectioning.base_budget"])), records,
                          per_cell=PER_CELL)
