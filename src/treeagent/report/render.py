"""Write ``reports/``: report.md, index.html, figures/*.png and metrics.json (paper 4.3-4.5).

All numbers are percentages except the Table 3 ratios; a missing value prints as "—" in
the tables and ``null`` in metrics.json.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from treeagent.report import tables as T

MISSING = "—"
MAX_MISSING_LISTED = 40


class Bold(str):
    """A table cell to emphasise (best score within a group and column)."""


def fmt(x: Any, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return MISSING
    return f"{float(x):.{digits}f}"


def _num(x: Any, digits: int = 4) -> float | None:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return None
    return round(float(x), digits)


def _markdown(headers: list[str], rows: list[list[str]]) -> str:
    def cell(c: str) -> str:
        return f"**{c}**" if isinstance(c, Bold) else str(c)

    lines = ["| " + " | ".join(headers) + " |",
             "|" + "|".join(":--" if i == 0 else "--:" for i in range(len(headers))) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _html(headers: list[str], rows: list[list[str]]) -> str:
    def cell(c: str) -> str:
        text = html.escape(str(c))
        return f"<td><b>{text}</b></td>" if isinstance(c, Bold) else f"<td>{text}</td>"

    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(cell(c) for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _group_label(n: int) -> str:
    words = {2: "Two", 3: "Three", 4: "Four", 5: "Five", 6: "Six"}
    return f"{words[n]}-agent mean" if n in words else f"Mean over {n} agents"


def table1_rows(t1: T.Table1, names: dict[str, str]) -> tuple[list[str], list[list[str]]]:
    """Table 1 as header + rows; the best method per agent group and column is Bold."""
    cols = [*t1.datasets, "avg"]
    headers = ["Memory agent", "Method", *[T.DATASET_NAMES.get(d, d) for d in t1.datasets],
               "AVG."]
    rows = []
    for group in [*t1.agents, "mean"]:
        label = _group_label(len(t1.agents)) if group == "mean" else names.get(group, group)
        best = {}
        for col in cols:
            vals = [t1.value(group, m, col) for m in t1.methods]
            vals = [round(v, 2) for v in vals if not math.isnan(v)]
            best[col] = max(vals) if len(vals) > 1 else None
        for i, method in enumerate(t1.methods):
            row = [label if i == 0 else "", T.METHOD_NAMES.get(method, method)]
            for col in cols:
                v = t1.value(group, method, col)
                text = fmt(v)
                row.append(Bold(text) if best[col] is not None and not math.isnan(v)
                           and round(v, 2) == best[col] else text)
            rows.append(row)
    return headers, rows


def _sections(scores: pd.DataFrame, cells: pd.DataFrame, dataset: str,
              names: dict[str, str], figures: dict[str, str]
              ) -> tuple[list[tuple[str, Any]], dict[str, Any]]:
    """Report blocks as (kind, payload) plus metrics.json content."""
    t1 = T.table1(cells)
    ds_name = T.DATASET_NAMES.get(dataset, dataset)
    both = {"flat", "treeagent"} <= set(t1.methods)
    blocks: list[tuple[str, Any]] = [
        ("h2", "Table 1: mean answer scores (%)"),
        ("p", "Mean over examples per (dataset, task, length, agent, method) cell, then "
              "tasks and lengths equally per dataset, datasets equally (AVG.), agents "
              "equally (C.4). Bold: best within each group and column."),
        ("table", table1_rows(t1, names)),
    ]
    metrics: dict[str, Any] = {
        "unit": "percent",
        "rows": int(len(scores)),
        "overall": {a: {m: _num(t1.value(a, m, "avg")) for m in t1.methods} for a in t1.agents},
        "agent_mean": {m: _num(t1.value("mean", m, "avg")) for m in t1.methods},
        "by_dataset": {a: {m: {d: _num(t1.value(a, m, d)) for d in t1.datasets}
                           for m in t1.methods} for a in [*t1.agents, "mean"]},
    }
    if both:
        gains = {a: t1.value(a, "treeagent", "avg") - t1.value(a, "flat", "avg")
                 for a in [*t1.agents, "mean"]}
        metrics["gain"] = {a: _num(g) for a, g in gains.items()}
        blocks.append(("p", "Gain TreeAgent − Flat (AVG.): " + ", ".join(
            f"{names.get(a, a) if a != 'mean' else 'agent mean'} {fmt(g)}"
            for a, g in gains.items())))
        blocks += [("h2", "Figure 2: score (%) vs context length"),
                   ("img", figures.get("figure2")),
                   ("h2", f"Figure 3: per-task gains TreeAgent − Flat on {ds_name} (%)"),
                   ("img", figures.get("figure3"))]
        g = T.task_gains(cells, dataset)
        tasks = T.task_order(g["task"])
        agents = list(dict.fromkeys(g["agent"]))
        rows = [[names.get(a, a) if a != "mean" else "Agent mean"]
                + [fmt(g[(g.agent == a) & (g.task == t)]["gain"].iloc[0]) for t in tasks]
                for a in agents]
        if tasks:
            blocks.append(("table", (["Memory agent", *[T.TASK_NAMES.get(t, t) for t in tasks]],
                                     rows)))
        r = T.computation_ratios(scores, dataset)
        blocks += [("h2", f"Table 3: realized computation on {ds_name} (TreeAgent / Flat)"),
                   ("table", (["Memory agent", "Model calls", "Input tokens", "Matched"],
                              [[names.get(x.agent, x.agent), fmt(x.calls, 3),
                                fmt(x.input_tokens, 3), str(x.n)]
                               for x in r.itertuples()]))]
        metrics["computation"] = {x.agent: {"calls": _num(x.calls),
                                            "input_tokens": _num(x.input_tokens)}
                                  for x in r.itertuples()}
        d = T.paired_differences(scores, dataset)
        blocks += [("h2", f"Table 4: paired differences on {ds_name} (%), 95% CI"),
                   ("p", "Mean TreeAgent − Flat over matched examples ± 1.96·sd/√n."),
                   ("table", (["Memory agent", "Difference", "95% CI", "Matched"],
                              [[names.get(x.agent, x.agent), fmt(x.diff),
                                f"[{fmt(x.lo)}, {fmt(x.hi)}]", str(x.n)]
                               for x in d.itertuples()]))]
        metrics["paired"] = {x.agent: {"diff": _num(x.diff), "lo": _num(x.lo),
                                       "hi": _num(x.hi), "n": int(x.n)}
                             for x in d.itertuples()}
        s = T.section_match_rate(scores, dataset)
        blocks += [("h2", f"Section-count match rate on {ds_name} (%)"),
                   ("p", "Share of examples where TreeAgent's section count equals Flat's "
                         "(4.5; the paper reports 74.8% averaged over agents)."),
                   ("table", (["Memory agent", "Match rate", "Examples"],
                              [[names.get(x.agent, x.agent) if x.agent != "mean"
                                else "Agent mean", fmt(x.rate), str(x.n)]
                               for x in s.itertuples()]))]
        metrics["section_match_rate"] = {x.agent: _num(x.rate) for x in s.itertuples()}
    else:
        blocks.append(("p", "Flat vs TreeAgent comparisons (Figures 2-3, Tables 3-4, "
                            "match rate) need both methods; not available."))
    missing = T.missing_cells(cells)
    metrics["missing_cells"] = int(len(missing))
    blocks.append(("h2", f"Missing cells: {len(missing)}"))
    if len(missing):
        listed = missing.head(MAX_MISSING_LISTED)
        blocks.append(("table", (["Dataset", "Agent", "Method", "Task", "Length"],
                                 [[r.dataset, r.agent, r.method, r.task, T.length_label(r.length)]
                                  for r in listed.itertuples()])))
        if len(missing) > len(listed):
            blocks.append(("p", f"… and {len(missing) - len(listed)} more."))
    return blocks, metrics


def _write_markdown(blocks: list[tuple[str, Any]], title: str) -> str:
    out = [f"# {title}", ""]
    for kind, payload in blocks:
        if kind == "h2":
            out += [f"## {payload}", ""]
        elif kind == "p":
            out += [payload, ""]
        elif kind == "table":
            out += [_markdown(*payload), ""]
        elif kind == "img":
            out += [f"![{Path(payload).stem}]({payload})" if payload else MISSING, ""]
    return "\n".join(out)


def _write_html(blocks: list[tuple[str, Any]], title: str) -> str:
    body = [f"<h1>{html.escape(title)}</h1>"]
    for kind, payload in blocks:
        if kind == "h2":
            body.append(f"<h2>{html.escape(payload)}</h2>")
        elif kind == "p":
            body.append(f"<p>{html.escape(payload)}</p>")
        elif kind == "table":
            body.append(_html(*payload))
        elif kind == "img":
            body.append(f'<img src="{html.escape(payload)}" alt="{html.escape(payload)}">'
                        if payload else f"<p>{MISSING}</p>")
    style = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto}"
             "table{border-collapse:collapse;margin:1em 0}td,th{padding:2px 8px;"
             "border-bottom:1px solid #ddd;text-align:right}td:first-child,th:first-child"
             "{text-align:left}img{max-width:100%}")
    return (f"<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>"
            f"{html.escape(title)}</title><style>{style}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def build_report(scores: pd.DataFrame, out: str | Path, dataset: str = "json",
                 agent_names: dict[str, str] | None = None) -> dict[str, Any]:
    """Write report.md, index.html, figures/ and metrics.json under ``out``; return metrics."""
    from treeagent.report import figures as F

    T.check_scores(scores)
    out_dir = Path(out)
    (out_dir / "figures").mkdir(parents=True, exist_ok=True)
    names = {**T.AGENT_NAMES, **(agent_names or {})}
    cells = T.cell_means(scores)
    figs: dict[str, str] = {}
    if {"flat", "treeagent"} <= set(scores["method"]):
        F.figure2(T.length_curve(cells), out_dir / "figures" / "figure2.png", names)
        figs["figure2"] = "figures/figure2.png"
        gains = T.task_gains(cells, dataset)
        if len(gains):
            F.figure3(gains, out_dir / "figures" / "figure3.png", names)
            figs["figure3"] = "figures/figure3.png"
    blocks, metrics = _sections(scores, cells, dataset, names, figs)
    title = "TreeAgent benchmark report"
    (out_dir / "report.md").write_text(_write_markdown(blocks, title), encoding="utf-8")
    (out_dir / "index.html").write_text(_write_html(blocks, title), encoding="utf-8")
    (out_dir / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n",
                                          encoding="utf-8")
    return metrics
