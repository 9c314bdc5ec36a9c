"""Write ``reports/``: report.md, index.html, figures/*.png and metrics.json (paper 4.3-4.5).

All numbers are percentages except the Table 3 ratios; a missing value prints as "—" in
the tables and ``null`` in metrics.json.
"""

from __future__ import annotations

import base64
import html
import json
import math
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pandas as pd

from treeagent.report import tables as T
from treeagent.report import uncertainty as U

MISSING = "—"
_NUMERIC = re.compile(r"^[-−+\[\]()\d.,%\s—n=†]*$")
MAX_MISSING_LISTED = 40
ZERO_SCORES = "All scores are 0: every point lies on the 0 line (the series overlap)."
ZERO_GAINS_ZERO_SCORES = "All scores are 0, so every gain is 0 (the ticks on the 0 line)."
ZERO_GAINS = ("Every gain is 0: TreeAgent and Flat score the same on every task "
              "(the ticks on the 0 line).")


class Bold(str):
    """A table cell to emphasise (the strictly best score within a group and column)."""


def fmt(x: Any, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return MISSING
    return f"{float(x):.{digits}f}"


def _num(x: Any, digits: int = 4) -> float | None:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return None
    return round(float(x), digits)


_MD_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_MD_PUNCT = re.compile(r"([\\`*_\[\]|#~])")


def md_text(text: Any) -> str:
    """Text for report.md that a CommonMark renderer shows as written: ``&``, ``<``,
    ``>`` as entities (no raw HTML, so a ``<script>`` in a question or prediction stays
    text), emphasis, link, code, table and heading marks backslash-escaped, line breaks
    as spaces."""
    out = "".join(_MD_ENTITIES.get(ch, ch) for ch in str(text))
    return " ".join(_MD_PUNCT.sub(r"\\\1", out).splitlines())


def _markdown(headers: list[str], rows: list[list[str]], table_id: str = "") -> str:
    def cell(c: str) -> str:
        text = md_text(c)
        if getattr(c, "href", None):
            text = f"[{text}]({quote(c.href, safe='/:#%')})"
        return f"**{text}**" if isinstance(c, Bold) else text

    lines = ["| " + " | ".join(md_text(h) for h in headers) + " |",
             "|" + "|".join(":--" if i == 0 else "--:" for i in range(len(headers))) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _html(headers: list[str], rows: list[list[str]], table_id: str = "") -> str:
    def cell(c: str) -> str:
        text = html.escape(str(c))
        if getattr(c, "href", None):
            text = f'<a href="{html.escape(c.href)}">{text}</a>'
        cls = ' class="num"' if _NUMERIC.match(str(c)) else ""
        return (f"<td{cls}><b>{text}</b></td>" if isinstance(c, Bold)
                else f"<td{cls}>{text}</td>")

    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(cell(c) for c in row) + "</tr>" for row in rows)
    attr = f' id="{html.escape(table_id)}"' if table_id else ""
    return f"<table{attr}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _group_label(n: int) -> str:
    words = {2: "Two", 3: "Three", 4: "Four", 5: "Five", 6: "Six"}
    if n in words:
        return f"{words[n]}-agent mean"
    return f"Mean over {n} agent{'s' if n != 1 else ''}"


def _groups(agents: list[str]) -> list[str]:
    """The agents, then the agent mean when there are several (with one agent the mean
    only repeats its rows, so the tables leave it out; metrics.json keeps it)."""
    return [*agents, "mean"] if len(agents) > 1 else list(agents)


def with_interval(text: str, iv: U.Interval | None, digits: int = 1) -> str:
    """``text`` (a score) followed by its 95% interval (in %), n and the small-n flag."""
    if iv is None or text == MISSING:
        return text
    bounds = f" [{100 * iv.lo:.{digits}f}, {100 * iv.hi:.{digits}f}]" if iv.known else ""
    return f"{text}{bounds} n={iv.n}{U.FLAG if iv.small else ''}"


def table1_rows(t1: T.Table1, names: dict[str, str],
                intervals: dict[tuple[str, str], dict[str, U.Interval]] | None = None
                ) -> tuple[list[str], list[list[str]]]:
    """Table 1 as header + rows, each score with its interval and n where ``intervals``
    are given; the best method per agent group and column is Bold."""
    cols = [*t1.datasets, "avg"]
    headers = ["Memory agent", "Method", *[T.DATASET_NAMES.get(d, d) for d in t1.datasets],
               "AVG."]
    rows = []
    for group in _groups(t1.agents):
        label = _group_label(len(t1.agents)) if group == "mean" else names.get(group, group)
        best = {}
        for col in cols:
            vals = [t1.value(group, m, col) for m in t1.methods]
            vals = [round(v, 2) for v in vals if not math.isnan(v)]
            top = max(vals) if len(vals) > 1 else None
            best[col] = top if top is not None and vals.count(top) == 1 else None  # strict
        for i, method in enumerate(t1.methods):
            row = [label if i == 0 else "", T.METHOD_NAMES.get(method, method)]
            for col in cols:
                v = t1.value(group, method, col)
                iv = intervals.get((group, method), {}).get(col) if intervals else None
                text = with_interval(fmt(v), iv)
                row.append(Bold(text) if best[col] is not None and not math.isnan(v)
                           and round(v, 2) == best[col] else text)
            rows.append(row)
    return headers, rows


def _interval_metrics(intervals: dict[tuple[str, str], dict[str, U.Interval]]
                      ) -> dict[str, Any]:
    """metrics.json's ``intervals``: group -> method -> column -> lo, hi (%), n, method."""
    out: dict[str, Any] = {}
    for (group, method), row in intervals.items():
        out.setdefault(group, {})[method] = {
            col: {"lo": _num(100 * iv.lo), "hi": _num(100 * iv.hi), "n": iv.n,
                  "method": iv.method or None, "small": iv.small}
            for col, iv in row.items()}
    return out


def _sections(scores: pd.DataFrame, cells: pd.DataFrame, dataset: str,
              names: dict[str, str], figures: dict[str, str], seed: int = 42,
              grid: list[tuple[str, str, int]] | None = None
              ) -> tuple[list[tuple[str, Any]], dict[str, Any]]:
    """Report blocks as (kind, payload) plus metrics.json content."""
    t1 = T.table1(cells)
    intervals = U.table1_intervals(scores, seed)
    ds_name = T.DATASET_NAMES.get(dataset, dataset)
    both = {"flat", "treeagent"} <= set(t1.methods)
    blocks: list[tuple[str, Any]] = [
        ("h2", "Table 1: mean answer scores (%)"),
        ("p", "Mean over examples per (dataset, task, length, agent, method) cell, then "
              "tasks and lengths equally per dataset, datasets equally (AVG.), agents "
              "equally (C.4). Bold: the strictly best method within each group and column "
              "(no bold on a tie). Each score: [95% interval] and n, the examples behind "
              "it; per cell: in the per-task tables below."),
        ("table", (*table1_rows(t1, names, intervals), "table1")),
        ("p", U.describe()),
    ]
    blocks += [("note", n) for n in T.column_notes(cells, grid)]
    metrics: dict[str, Any] = {
        "unit": "percent",
        "rows": int(len(scores)),
        "overall": {a: {m: _num(t1.value(a, m, "avg")) for m in t1.methods} for a in t1.agents},
        "agent_mean": {m: _num(t1.value("mean", m, "avg")) for m in t1.methods},
        "by_dataset": {a: {m: {d: _num(t1.value(a, m, d)) for d in t1.datasets}
                           for m in t1.methods} for a in [*t1.agents, "mean"]},
        "intervals": _interval_metrics(intervals),
    }
    if both:
        gains = {a: t1.value(a, "treeagent", "avg") - t1.value(a, "flat", "avg")
                 for a in [*t1.agents, "mean"]}
        metrics["gain"] = {a: _num(g) for a, g in gains.items()}
        blocks.append(("p", "Gain TreeAgent − Flat (AVG.): " + ", ".join(
            f"{names.get(a, a) if a != 'mean' else 'agent mean'} {fmt(gains[a])}"
            for a in _groups(t1.agents))))
    clip_blocks, metrics["clipped"] = _clip_section(scores, names)
    blocks += clip_blocks
    if both:
        blocks += [("h2", "Figure 2: score (%) vs context length"),
                   ("img", (figures.get("figure2"), "figure2", figures.get("figure2_note")))]
        blocks += [("h2", f"Figure 3: per-task gains TreeAgent − Flat on {ds_name} (%)"),
                   ("img", (figures.get("figure3"), "figure3", figures.get("figure3_note")))]
        g = T.task_gains(cells, dataset)
        tasks = T.task_order(g["task"])
        agents = [a for a in dict.fromkeys(g["agent"]) if a in _groups(t1.agents)]
        rows = [[names.get(a, a) if a != "mean" else "Agent mean"]
                + [fmt(g[(g.agent == a) & (g.task == t)]["gain"].iloc[0]) for t in tasks]
                for a in agents]
        if tasks:
            blocks.append(("table", (["Memory agent", *[T.TASK_NAMES.get(t, t) for t in tasks]],
                                     rows, "figure3-data")))
        r = T.computation_ratios(scores, dataset)
        blocks += [("h2", f"Table 3: realized computation on {ds_name} (TreeAgent / Flat)"),
                   ("table", (["Memory agent", "Model calls", "Input tokens", "Matched"],
                              [[names.get(x.agent, x.agent), fmt(x.calls, 3),
                                fmt(x.input_tokens, 3), str(x.n)]
                               for x in r.itertuples()], "table3"))]
        metrics["computation"] = {x.agent: {"calls": _num(x.calls),
                                            "input_tokens": _num(x.input_tokens)}
                                  for x in r.itertuples()}
        d = T.paired_differences(scores, dataset, seed=seed)
        blocks += [("h2", f"Table 4: paired differences on {ds_name} (%), 95% CI"),
                   ("p", "Mean TreeAgent − Flat over matched examples; 95% CI: paired "
                         f"bootstrap ({T.BOOTSTRAP_RESAMPLES} resamples of the matched "
                         f"pairs, seed {seed})."),
                   ("table", (["Memory agent", "Difference", "95% CI", "Matched"],
                              [[names.get(x.agent, x.agent), fmt(x.diff),
                                f"[{fmt(x.lo)}, {fmt(x.hi)}]",
                                f"{x.n}{U.FLAG if x.n < U.MIN_N else ''}"]
                               for x in d.itertuples()], "table4"))]
        few = [x for x in d.itertuples() if x.n < U.MIN_N]
        if few:
            blocks.append(("note", table4_warning(few, names)))
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
                               for x in s.itertuples() if x.agent in _groups(t1.agents)],
                              "match-rate"))]
        metrics["section_match_rate"] = {x.agent: _num(x.rate) for x in s.itertuples()}
    else:
        blocks.append(("p", "Flat vs TreeAgent comparisons (Figures 2-3, Tables 3-4, "
                            "match rate) need both methods; not available."))
    missing = T.missing_cells(cells, grid)
    metrics["missing_cells"] = int(len(missing))
    blocks.append(("h2", f"Missing cells: {len(missing)}"))
    if len(missing):
        listed = missing.head(MAX_MISSING_LISTED)
        blocks.append(("table", (["Dataset", "Agent", "Method", "Task", "Length", "Why"],
                                 [[r.dataset, r.agent, r.method, r.task,
                                   T.length_label(r.length), r.why]
                                  for r in listed.itertuples()], "missing")))
        if len(missing) > len(listed):
            blocks.append(("p", f"… and {len(missing) - len(listed)} more."))
    return blocks, metrics


def table4_warning(few: list[Any], names: dict[str, str]) -> str:
    """The warning under Table 4 when an agent has fewer than MIN_N matched pairs."""
    listed = ", ".join(f"{names.get(x.agent, x.agent)} {x.n}" for x in few)
    return (f"{U.FLAG} Too few matched pairs to mean anything ({listed}; the rule: fewer "
            f"than {U.MIN_N}). A bootstrap of so few pairs can only resample the few "
            "differences there are: its interval is as narrow or as wide as they happen "
            "to be, not a statement about the method.")


CLIP_NOTE = (
    "A call whose prompt would exceed the agent's request limit (Table 2, clamped to the "
    "model's context window) is cut to fit: the section text first, then the memory and "
    "the other long fields; a section's path and retrieved spans are never cut. Per agent "
    "and method: the cuts over all calls and the examples with at least one cut.")


def _clip_section(scores: pd.DataFrame, names: dict[str, str]
                  ) -> tuple[list[tuple[str, Any]], dict[str, Any]]:
    """The prompt-cut table (zeros shown) and its metrics.json entry (agent ->
    method -> cuts and clipped examples, null where the rows record no count)."""
    c = T.clip_counts(scores)
    rows, metrics = [], {}
    last = None
    for x in c.itertuples():
        known = x.recorded > 0
        line = (f"{x.cuts} cut{'s' if x.cuts != 1 else ''} in {x.clipped_examples} of "
                f"{x.examples} example{'s' if x.examples != 1 else ''}" if known
                else "not recorded")
        rows.append([names.get(x.agent, x.agent) if x.agent != last else "",
                     T.METHOD_NAMES.get(x.method, x.method), str(x.examples),
                     str(x.clipped_examples) if known else MISSING,
                     str(x.cuts) if known else MISSING, line])
        last = x.agent
        metrics.setdefault(x.agent, {})[x.method] = {
            "cuts": int(x.cuts) if known else None,
            "examples": int(x.clipped_examples) if known else None}
    blocks: list[tuple[str, Any]] = [
        ("h2", "Prompts clipped to fit the request limit"), ("p", CLIP_NOTE),
        ("table", (["Memory agent", "Method", "Examples", "Examples clipped", "Cuts",
                    "Prompts clipped to fit"], rows, "clipped"))]
    return blocks, metrics


def _img(payload: Any) -> tuple[str | None, str, str | None]:
    """An ``img`` block's (path, id, caption): the caption is written once, under the
    figure (never drawn into the image)."""
    parts = tuple(payload) if isinstance(payload, tuple) else (payload,)
    return (parts[0], parts[1] if len(parts) > 1 else "",
            parts[2] if len(parts) > 2 else None)


def png_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) in pixels from a PNG's IHDR chunk; None if ``data`` is no PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        return None
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def _figure_html(src: str | None, fig_id: str, caption: str | None, base: Path) -> str:
    """A figure embedded as a data: URI (the page alone keeps it) shown at its native
    pixel size, with its caption once below; a missing file keeps its relative path."""
    if not src:
        return f"<p>{MISSING}</p>"
    path = base / src
    ref, size = src, None
    if path.is_file():
        data = path.read_bytes()
        size = png_size(data)
        if size:
            ref = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
    dims = f' width="{size[0]}" height="{size[1]}"' if size else ""
    cap = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
    return (f'<figure id="{html.escape(fig_id)}"><img src="{html.escape(ref)}"{dims} '
            f'alt="{html.escape(fig_id or src)}" data-file="{html.escape(src)}">{cap}'
            f"</figure>")


def _write_markdown(blocks: list[tuple[str, Any]], title: str) -> str:
    out = [f"# {md_text(title)}", ""]
    for kind, payload in blocks:
        if kind == "h2":
            out += [f"## {md_text(payload)}", ""]
        elif kind == "p":
            out += [md_text(payload), ""]
        elif kind == "note":
            out += [f"> {md_text(payload)}", ""]
        elif kind == "table":
            out += [_markdown(*payload), ""]
        elif kind == "kv":
            out += [_markdown(["", ""], payload[0]), ""]
        elif kind == "links":
            out += [f"- [{md_text(text)}]({quote(href, safe='/:#%')})"
                    for text, href in payload] + [""]
        elif kind == "img":
            src, _, caption = _img(payload)
            out += [f"![{md_text(Path(src).stem)}]({quote(src, safe='/:#%')})"
                    if src else MISSING, ""]
            out += [md_text(caption), ""] if caption else []
    return "\n".join(out)


STYLE = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;
  color:#1d1d1f;max-width:1180px;margin:2em auto;padding:0 1.5em;background:#fff}
h1{font-size:1.7em;margin-bottom:.2em}h2{font-size:1.25em;margin-top:1.8em;
  border-bottom:2px solid #e4e4e7;padding-bottom:.2em}
p.note{background:#fff8e1;border-left:4px solid #f0b400;padding:.6em .9em}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-variant-numeric:tabular-nums}
th{background:#f4f4f5;font-weight:600}td,th{padding:4px 10px;border:1px solid #e4e4e7;
  text-align:left;vertical-align:top}td.num{text-align:right}
tbody tr:nth-child(even){background:#fafafa}td b{color:#b00020}
table.kv td{text-align:left}table.kv td:first-child{font-weight:600;white-space:nowrap}
figure{margin:1em 0;overflow-x:auto}figure img{max-width:none;border:1px solid #e4e4e7}
figcaption{font-style:italic;margin-top:.3em}
ul.links li{margin:.2em 0}
"""


def _write_html(blocks: list[tuple[str, Any]], title: str, base: Path) -> str:
    body = [f"<h1>{html.escape(title)}</h1>"]
    for kind, payload in blocks:
        if kind == "h2":
            body.append(f"<h2>{html.escape(payload)}</h2>")
        elif kind == "p":
            body.append(f"<p>{html.escape(payload)}</p>")
        elif kind == "note":
            body.append(f'<p class="note">{html.escape(payload)}</p>')
        elif kind == "table":
            body.append(_html(*payload))
        elif kind == "kv":
            rows, table_id = payload
            cells = "".join(f"<tr><td>{html.escape(str(k))}</td><td>{html.escape(str(v))}"
                            f"</td></tr>" for k, v in rows)
            body.append(f'<section id="{html.escape(table_id)}"><table class="kv">'
                        f"<tbody>{cells}</tbody></table></section>")
        elif kind == "links":
            items = "".join(f'<li><a href="{html.escape(href)}">{html.escape(text)}</a></li>'
                            for text, href in payload)
            body.append(f'<ul class="links">{items}</ul>')
        elif kind == "img":
            body.append(_figure_html(*_img(payload), base))
    return (f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width\"><title>"
            f"{html.escape(title)}</title><style>{STYLE}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def build_report(scores: pd.DataFrame, out: str | Path, dataset: str = "json",
                 agent_names: dict[str, str] | None = None, *,
                 evidence: pd.DataFrame | None = None,
                 evidence_records: pd.DataFrame | None = None,
                 provenance: dict[str, Any] | None = None,
                 validation: list[str] | None = None, seed: int = 42,
                 note: str | None = None,
                 grid: list[tuple[str, str, int]] | None = None,
                 viewer: dict[str, dict[str, str]] | None = None) -> dict[str, Any]:
    """Write report.md, index.html (one list of blocks), figures/ and metrics.json under
    ``out``; return metrics. ``evidence``/``evidence_records``: the rows of
    :mod:`treeagent.evidence`; ``provenance``: :func:`treeagent.report.provenance.collect`;
    ``validation``: gate result files to link; ``seed``: the bootstraps'; ``note``: a
    sentence shown under the title; ``grid``: the build's (format, task, length) cells,
    so that a cell with no example is listed under Missing cells; ``viewer``: example id ->
    page and question of the per-example viewer written under ``out``/examples
    (:func:`treeagent.report.viewer.write_examples`), linked from the report."""
    from treeagent.report import blocks as B
    from treeagent.report import figures as F

    T.check_scores(scores)
    out_dir = Path(out)
    (out_dir / "figures").mkdir(parents=True, exist_ok=True)
    names = {**T.AGENT_NAMES, **(agent_names or {})}
    cells = T.cell_means(scores)
    figs: dict[str, str] = {}
    if {"flat", "treeagent"} <= set(scores["method"]):
        curve = T.length_curve(cells)
        if F.all_zero(curve["score"]):
            figs["figure2_note"] = ZERO_SCORES
        F.figure2(curve, out_dir / "figures" / "figure2.png", names)
        figs["figure2"] = "figures/figure2.png"
        gains = T.task_gains(cells, dataset)
        if len(gains):
            if F.all_zero(gains.loc[gains["agent"] != "mean", "gain"]):
                figs["figure3_note"] = ZERO_GAINS_ZERO_SCORES if F.all_zero(
                    cells.loc[cells["dataset"] == dataset, "score"]) else ZERO_GAINS
            F.figure3(gains, out_dir / "figures" / "figure3.png", names)
            figs["figure3"] = "figures/figure3.png"
    blocks, metrics = _sections(scores, cells, dataset, names, figs, seed, grid)
    head: list[tuple[str, Any]] = [("note", note)] if note else []
    if provenance:
        head += B.provenance_blocks(provenance)
    tail: list[tuple[str, Any]] = B.task_length_blocks(
        cells, names, {k: U.cell_interval(v, seed) for k, v in U.cell_values(scores).items()})
    if evidence is not None and len(evidence):
        table = T.evidence_integrity(evidence)
        F.evidence_figure(table, out_dir / "figures" / "evidence.png")
        tail += B.evidence_blocks(table, "figures/evidence.png")
        metrics["evidence_records_split"] = {
            m: _num(100 * g["split"].sum() / g["records"].sum()) if g["records"].sum()
            else None for m, g in table.groupby("method", sort=False)}
    if viewer:
        tail.append(("links", [B.VIEWER_LINK]))
    tail += B.sample_blocks(scores, evidence_records, names, viewer)
    tail += B.validation_blocks(validation or [], out_dir)
    missing_at = next(i for i, b in enumerate(blocks) if b[0] == "h2"
                      and str(b[1]).startswith("Missing cells"))
    blocks = head + blocks[:missing_at] + tail + blocks[missing_at:]
    title = "TreeAgent benchmark report"
    (out_dir / "report.md").write_text(_write_markdown(blocks, title), encoding="utf-8")
    (out_dir / "index.html").write_text(_write_html(blocks, title, out_dir),
                                        encoding="utf-8")
    (out_dir / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n",
                                          encoding="utf-8")
    return metrics
