"""Report sections beyond Tables 1/3/4 and Figures 2/3, as typed blocks
(:mod:`treeagent.report.blocks`): provenance, per-task x length tables for every
dataset, evidence integrity, sample predictions and the gate results.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pandas as pd

from treeagent.report import tables as T
from treeagent.report import uncertainty as U
from treeagent.report.blocks import (
    MISSING,
    Block,
    Figure,
    Heading,
    KeyValues,
    Link,
    LinkList,
    Paragraph,
    Table,
)

SAMPLES_PER_METHOD = 5
PREDICTION_CHARS = 160
VIEWER_DIR = "examples"
VIEWER_LINK = ("Every example, step by step: the context with each method's sections, each "
               "step's prompt and memory (examples/index.html)", f"{VIEWER_DIR}/index.html")


def _pct(x: Any) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return MISSING
    return f"{float(x):.1f}%"


def with_interval(text: str, iv: U.Interval | None, digits: int = 1) -> str:
    """``text`` (a score) followed by its 95% interval (in %), n and the small-n flag."""
    if iv is None or text == MISSING:
        return text
    bounds = f" [{100 * iv.lo:.{digits}f}, {100 * iv.hi:.{digits}f}]" if iv.known else ""
    return f"{text}{bounds} n={iv.n}{U.FLAG if iv.small else ''}"


def provenance_blocks(prov: dict[str, Any]) -> list[Block]:
    """The provenance (:func:`treeagent.report.provenance.collect`) as key/value rows."""
    rows = [(f"model ({T.AGENT_NAMES.get(a, a)})", f"{m} @ {r}") for a, m, r in prov["models"]]
    rows += [(f"tokenizer ({T.AGENT_NAMES.get(a, a)})", t)
             for a, t in prov.get("tokenizers", {}).items()]
    rows += [("engine", prov["engine"]), ("preset", prov["preset"]),
             ("params hash (sha256)", prov["params_hash"])]
    diff = prov.get("params_diff") or []
    rows.append(("params differing from the preset",
                 "; ".join(f"{k} = {json.dumps(v)} (preset {json.dumps(p)})"
                           for k, v, p in diff) or "none"))
    rows += [("git commit", prov["commit"]), ("date", prov["date"]),
             ("treeagent", prov["treeagent"])]
    return [Heading("Provenance"), KeyValues(rows, "provenance")]


def task_length_blocks(cells: pd.DataFrame, names: dict[str, str],
                       intervals: dict[tuple, U.Interval] | None = None
                       ) -> list[Block]:
    """One table per dataset: rows agent x method x task, columns lengths, each cell
    'score [95% interval] n=...' (the interval where ``intervals`` has the cell)."""
    out: list[Block] = [
        Heading("Scores per task and length (%, [95% interval], n examples)"),
        Paragraph(U.describe())]
    for ds in T.ordered(cells["dataset"], T.DATASETS):
        t = T.task_length_scores(cells, ds)
        lengths = sorted(set(int(n) for n in t["length"]))
        lookup = {(r.agent, r.method, r.task, int(r.length)): (r.score, int(r.n))
                  for r in t.itertuples()}
        rows = []
        for (agent, method, task), _ in t.groupby(["agent", "method", "task"], sort=False):
            row = [names.get(agent, agent), T.METHOD_NAMES.get(method, method),
                   T.TASK_NAMES.get(task, task)]
            for n in lengths:
                v = lookup.get((agent, method, task, n))
                iv = (intervals or {}).get((ds, task, n, agent, method)) or U.Interval(
                    math.nan, math.nan, v[1] if v else 0)
                row.append(MISSING if v is None else with_interval(f"{v[0]:.1f}", iv))
            rows.append(row)
        out.append(Table(["Memory agent", "Method", "Task",
                          *[T.length_label(n) for n in lengths]], rows, f"tasks-{ds}",
                         caption=f"{T.DATASET_NAMES.get(ds, ds)}:"))
    return out


def evidence_blocks(table: pd.DataFrame, figure: str | None) -> list[Block]:
    """The evidence-integrity table (:func:`treeagent.report.tables.evidence_integrity`),
    its totals and ``figure``, the plot of the split records."""
    tokenizers = list(dict.fromkeys(table["tokenizer"]))
    out: list[Block] = [
        Heading("Evidence integrity: records split by each method's sections"),
        Paragraph("For every example, the records its answer depends on (the asked records; "
              "for aggregations every in-scope record) located in the context, and the "
              "sections each method reads counted with the evaluated model's tokenizer "
              f"({', '.join(tokenizers)}): Flat at C, Tree/Tree+Path/TreeAgent at B*. A "
              "record is split when its content spans more than one section. No model "
              "call is involved."),
    ]
    several = len(tokenizers) > 1
    rows = []
    for r in table.itertuples():
        rows.append([*([r.tokenizer] if several else []), T.DATASET_NAMES.get(r.format, r.format),
                     T.length_label(r.length), T.METHOD_NAMES.get(r.method, r.method),
                     str(r.examples), str(int(r.records)), f"{r.sections:.1f}",
                     _pct(r.records_split), _pct(r.examples_split), _pct(r.in_scope_split)])
    out.append(Table([*(["Tokenizer"] if several else []), "Format", "Length", "Method",
                      "Examples", "Records", "Sections", "Records split",
                      "Examples with a split record", "In-scope records split "
                      "(aggregations)"], rows, "evidence"))
    totals = table.groupby("method", sort=False)[["split", "records"]].sum()
    out.append(Paragraph("Records split over all examples: " + ", ".join(
        f"{T.METHOD_NAMES.get(m, m)} {_pct(100 * r.split / r.records if r.records else None)}"
        for m, r in totals.iterrows()) + "."))
    if figure:
        out += [Heading("Figure E: evidence records split (%) per format and length"),
                Figure(figure, "figure-evidence")]
    return out


PAPER_MATCH_NOTE = "the paper: 74.8% on JSON, C.5"


def match_rate_columns(evidence: pd.DataFrame | None
                       ) -> tuple[list[str], dict[str, list[str]], list[Block], dict[str, Any]]:
    """Table 3's section-count columns (4.5, C.5), from the evidence example rows
    (:func:`treeagent.pipeline.evidence.match_rates`): one header per format, the cells of each
    agent ('rate% n=N'), a paragraph with the agents' mean (equal weight, as the paper's
    74.8%) and metrics.json's ``section_match_by_format`` (format -> agent or ``mean`` ->
    rate, n). Nothing without evidence rows."""
    from treeagent.pipeline.evidence import match_rates

    if evidence is None or not len(evidence):
        return [], {}, [], {}
    rates = match_rates(evidence.to_dict("records"))
    formats = list(dict.fromkeys(r.format for r in rates))
    headers = [f"Equal section counts, {T.DATASET_NAMES.get(f, f)}" for f in formats]
    by = {(r.agent, r.format): r for r in rates}
    cells = {a: [f"{_pct(by[(a, f)].rate)} n={by[(a, f)].examples}" if (a, f) in by
                 else MISSING for f in formats] for a in dict.fromkeys(r.agent for r in rates)}
    metrics = {f: {r.agent: {"rate": None if r.rate is None else round(r.rate, 4),
                             "n": r.examples} for r in rates if r.format == f}
               for f in formats}
    text = ("Equal section counts: the share of examples whose TreeAgent section count "
            "n(B*) equals Flat's T_flat at C, counted with each agent's tokenizer "
            f"(evidence rows, every built example; {PAPER_MATCH_NOTE}).")
    if "mean" in cells:
        text += " Agent mean (agents weighted equally): " + ", ".join(
            f"{T.DATASET_NAMES.get(f, f)} {c}" for f, c in zip(formats, cells.pop("mean"))
        ) + "."
    return headers, cells, [Paragraph(text)], metrics


def _evidence_note(records: pd.DataFrame | None, example: str, agent: str, method: str
                   ) -> str:
    if records is None or not len(records):
        return "—"
    r = records[(records["example_id"] == example) & (records["agent"] == agent)
                & (records["method"] == method)]
    if not len(r):
        return "—"
    spans = [f"chars {int(a)}–{int(b)}: {int(n)} section{'s' if n != 1 else ''}"
             for a, b, n in zip(r["start"], r["end"], r["sections_spanned"]) if pd.notna(a)]
    split = int((r["sections_spanned"] > 1).sum())
    head = f"{len(r)} record{'s' if len(r) != 1 else ''}, {split} split"
    return head + ("; " + "; ".join(spans[:2]) + (" …" if len(spans) > 2 else "")
                   if spans else "")


def _short(text: Any) -> str:
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return "(no response)"
    one = " ".join(str(text).split())
    return one if len(one) <= PREDICTION_CHARS else one[:PREDICTION_CHARS - 1] + "…"


def sample_examples(scores: pd.DataFrame, k: int = SAMPLES_PER_METHOD) -> list[str]:
    """``k`` example ids scored under every method, taken in turn from each dataset."""
    methods = set(scores["method"])
    per = scores.groupby("example_id")["method"].agg(set)
    common = sorted(e for e, ms in per.items() if ms == methods)
    by_ds: dict[str, list[str]] = {}
    ds_of = dict(zip(scores["example_id"], scores["dataset"]))
    for e in common:
        by_ds.setdefault(ds_of[e], []).append(e)
    order = [by_ds[d] for d in T.ordered(by_ds, T.DATASETS)]
    picked: list[str] = []
    while len(picked) < k and any(order):
        for lst in order:
            if lst and len(picked) < k:
                picked.append(lst.pop(0))
    return picked


def sample_blocks(scores: pd.DataFrame, records: pd.DataFrame | None,
                  names: dict[str, str], viewer: dict[str, dict[str, str]] | None = None
                  ) -> list[Block]:
    """Sample predictions; with ``viewer`` (example id -> its page and question, from
    :func:`treeagent.report.viewer.write_examples`) each example links to its page at
    that run, and the question is shown."""
    ids = sample_examples(scores)
    viewer = viewer or {}
    out: list[Block] = [
        Heading(f"Sample predictions ({len(ids)} examples per method)"),
        Paragraph("The same examples under every method: the reference, the final response "
              "(whitespace collapsed, cut at 160 characters), its score and where the "
              "evidence sits in that method's sections."
              + (" Each example opens its page of the viewer at that run." if viewer else "")),
    ]
    if viewer:
        out.append(LinkList([VIEWER_LINK]))
    agents = T.ordered(scores["agent"], T.AGENTS)
    for agent in agents:
        for method in T.ordered(scores["method"], T.METHODS):
            s = scores[(scores["agent"] == agent) & (scores["method"] == method)
                       ].set_index("example_id")
            rows = [[_example_cell(e, viewer, agent, method),
                     *([_short(viewer.get(e, {}).get("question"))] if viewer else []),
                     _short(s.at[e, "reference"]), _short(s.at[e, "prediction"]),
                     f"{100 * float(s.at[e, 'score']):.0f}",
                     _evidence_note(records, e, agent, method)]
                    for e in ids if e in s.index]
            out.append(Table(["Example", *(["Question"] if viewer else []), "Reference",
                              "Prediction", "Score", "Evidence"],
                             rows, f"samples-{agent}-{method}",
                             caption=f"{names.get(agent, agent)} / "
                                     f"{T.METHOD_NAMES.get(method, method)}:"))
    return out


def _example_cell(example: str, viewer: dict[str, dict[str, str]], agent: str,
                  method: str) -> str:
    page = viewer.get(example, {}).get("page")
    if not page:
        return example
    return Link(example, f"{VIEWER_DIR}/{quote(page)}#{quote(agent, safe='')}/"
                         f"{quote(method, safe='')}")


def validation_blocks(files: list[str], out_dir: Path) -> list[Block]:
    """Links to the Great Expectations results (``reports/validation/<gate>.json``)."""
    rows = []
    for f in files:
        path = Path(f)
        ok = "—"
        try:
            ok = "passed" if json.loads(path.read_text())["success"] else "FAILED"
        except (OSError, ValueError, KeyError):
            pass
        try:
            href = path.resolve().relative_to(out_dir.resolve()).as_posix()
        except ValueError:
            href = path.resolve().as_uri()
        rows.append((f"{path.stem} gate: {ok}", href))
    return [Heading("Great Expectations gates"), LinkList(rows)] if rows else []
