"""Write ``reports/``: report.md, index.html, figures/*.png and metrics.json (paper 4.3-4.5).

The report is one list of typed blocks (:mod:`treeagent.report.blocks`), built in reading
order and rendered once as Markdown and once as HTML. All numbers are percentages except
the Table 3 ratios; a missing value prints as "—" in the tables and ``null`` in
metrics.json.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from treeagent.report import sections as S
from treeagent.report import tables as T
from treeagent.report import uncertainty as U
from treeagent.report.blocks import (
    MISSING,
    Block,
    Bold,
    Caution,
    Figure,
    Heading,
    LinkList,
    Paragraph,
    Table,
    html_document,
    markdown_document,
    png_size,
)
from treeagent.report.sections import with_interval

__all__ = ["MISSING", "Bold", "build_report", "fmt", "png_size", "table1_rows",
           "table4_warning", "with_interval", "ZERO_GAINS", "ZERO_GAINS_ZERO_SCORES",
           "ZERO_SCORES"]

TITLE = "TreeAgent benchmark report"
MAX_MISSING_LISTED = 40
ZERO_SCORES = "All scores are 0: every point lies on the 0 line (the series overlap)."
ZERO_GAINS_ZERO_SCORES = "All scores are 0, so every gain is 0 (the ticks on the 0 line)."
ZERO_GAINS = ("Every gain is 0: TreeAgent and Flat score the same on every task "
              "(the ticks on the 0 line).")


def fmt(x: Any, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return MISSING
    return f"{float(x):.{digits}f}"


def _num(x: Any, digits: int = 4) -> float | None:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return None
    return round(float(x), digits)


def _group_label(n: int) -> str:
    words = {2: "Two", 3: "Three", 4: "Four", 5: "Five", 6: "Six"}
    if n in words:
        return f"{words[n]}-agent mean"
    return f"Mean over {n} agent{'s' if n != 1 else ''}"


def _groups(agents: list[str]) -> list[str]:
    """The agents, then the agent mean when there are several (with one agent the mean
    only repeats its rows, so the tables leave it out; metrics.json keeps it)."""
    return [*agents, "mean"] if len(agents) > 1 else list(agents)


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


def _table1_section(scores: pd.DataFrame, cells: pd.DataFrame, t1: T.Table1,
                    names: dict[str, str], seed: int, grid: list[tuple[str, str, int]] | None
                    ) -> tuple[list[Block], dict[str, Any]]:
    """Table 1 with its notes and the gain line, and metrics.json's overall numbers."""
    intervals = U.table1_intervals(scores, seed)
    blocks: list[Block] = [
        Heading("Table 1: mean answer scores (%)"),
        Paragraph("Mean over examples per (dataset, task, length, agent, method) cell, then "
                  "tasks and lengths equally per dataset, datasets equally (AVG.), agents "
                  "equally (C.4). Bold: the strictly best method within each group and "
                  "column (no bold on a tie). Each score: [95% interval] and n, the examples "
                  "behind it; per cell: in the per-task tables below."),
        Table(*table1_rows(t1, names, intervals), "table1"),
        Paragraph(U.describe()),
    ]
    blocks += [Caution(n) for n in T.column_notes(cells, grid)]
    metrics: dict[str, Any] = {
        "unit": "percent",
        "rows": int(len(scores)),
        "overall": {a: {m: _num(t1.value(a, m, "avg")) for m in t1.methods} for a in t1.agents},
        "agent_mean": {m: _num(t1.value("mean", m, "avg")) for m in t1.methods},
        "by_dataset": {a: {m: {d: _num(t1.value(a, m, d)) for d in t1.datasets}
                           for m in t1.methods} for a in [*t1.agents, "mean"]},
        "intervals": _interval_metrics(intervals),
    }
    if {"flat", "treeagent"} <= set(t1.methods):
        gains = {a: t1.value(a, "treeagent", "avg") - t1.value(a, "flat", "avg")
                 for a in [*t1.agents, "mean"]}
        metrics["gain"] = {a: _num(g) for a, g in gains.items()}
        blocks.append(Paragraph("Gain TreeAgent − Flat (AVG.): " + ", ".join(
            f"{names.get(a, a) if a != 'mean' else 'agent mean'} {fmt(gains[a])}"
            for a in _groups(t1.agents))))
    return blocks, metrics


def _comparison_section(scores: pd.DataFrame, cells: pd.DataFrame, t1: T.Table1,
                        dataset: str, names: dict[str, str], figures: dict[str, Figure],
                        seed: int, metrics: dict[str, Any],
                        evidence: pd.DataFrame | None = None) -> list[Block]:
    """Figures 2-3, Tables 3-4 and the section-count match rate (Flat vs TreeAgent);
    their numbers go into ``metrics``. Table 3 also gives the match rate per format from
    the ``evidence`` rows (every built example, no model)."""
    if not {"flat", "treeagent"} <= set(t1.methods):
        return [Paragraph("Flat vs TreeAgent comparisons (Figures 2-3, Tables 3-4, match "
                          "rate) need both methods; not available.")]
    ds_name = T.DATASET_NAMES.get(dataset, dataset)
    agents = _groups(t1.agents)
    blocks: list[Block] = [
        Heading("Figure 2: score (%) vs context length"),
        figures.get("figure2", Figure(None, "figure2")),
        Heading(f"Figure 3: per-task gains TreeAgent − Flat on {ds_name} (%)"),
        figures.get("figure3", Figure(None, "figure3"))]
    g = T.task_gains(cells, dataset)
    tasks = T.task_order(g["task"])
    if tasks:
        rows = [[names.get(a, a) if a != "mean" else "Agent mean"]
                + [fmt(g[(g.agent == a) & (g.task == t)]["gain"].iloc[0]) for t in tasks]
                for a in dict.fromkeys(g["agent"]) if a in agents]
        blocks.append(Table(["Memory agent", *[T.TASK_NAMES.get(t, t) for t in tasks]],
                            rows, "figure3-data"))
    r = T.computation_ratios(scores, dataset)
    match_heads, match_cells, match_note, by_format = S.match_rate_columns(evidence)
    blocks += [Heading(f"Table 3: realized computation on {ds_name} (TreeAgent / Flat)"),
               Table(["Memory agent", "Model calls", "Input tokens", "Matched", *match_heads],
                     [[names.get(x.agent, x.agent), fmt(x.calls, 3), fmt(x.input_tokens, 3),
                       str(x.n), *match_cells.get(x.agent, [MISSING] * len(match_heads))]
                      for x in r.itertuples()], "table3"), *match_note]
    if by_format:
        metrics["section_match_by_format"] = by_format
    metrics["computation"] = {x.agent: {"calls": _num(x.calls),
                                        "input_tokens": _num(x.input_tokens)}
                              for x in r.itertuples()}
    d = T.paired_differences(scores, dataset, seed=seed)
    few = [x for x in d.itertuples() if x.n < U.MIN_N]
    blocks += [Heading(f"Table 4: paired differences on {ds_name} (%), 95% CI"),
               Paragraph("Mean TreeAgent − Flat over matched examples; 95% CI: paired "
                         f"bootstrap ({T.BOOTSTRAP_RESAMPLES} resamples of the matched "
                         f"pairs, seed {seed})."),
               Table(["Memory agent", "Difference", "95% CI", "Matched"],
                     [[names.get(x.agent, x.agent), fmt(x.diff), f"[{fmt(x.lo)}, {fmt(x.hi)}]",
                       f"{x.n}{U.FLAG if x.n < U.MIN_N else ''}"] for x in d.itertuples()],
                     "table4", notes=[table4_warning(few, names)] if few else [])]
    metrics["paired"] = {x.agent: {"diff": _num(x.diff), "lo": _num(x.lo), "hi": _num(x.hi),
                                   "n": int(x.n)} for x in d.itertuples()}
    s = T.section_match_rate(scores, dataset)
    blocks += [Heading(f"Section-count match rate on {ds_name} (%)"),
               Paragraph("Share of examples where TreeAgent's section count equals Flat's "
                         "(4.5; the paper reports 74.8% averaged over agents)."),
               Table(["Memory agent", "Match rate", "Examples"],
                     [[names.get(x.agent, x.agent) if x.agent != "mean" else "Agent mean",
                       fmt(x.rate), str(x.n)]
                      for x in s.itertuples() if x.agent in agents], "match-rate")]
    metrics["section_match_rate"] = {x.agent: _num(x.rate) for x in s.itertuples()}
    return blocks


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
                  ) -> tuple[list[Block], dict[str, Any]]:
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
    blocks: list[Block] = [
        Heading("Prompts clipped to fit the request limit"), Paragraph(CLIP_NOTE),
        Table(["Memory agent", "Method", "Examples", "Examples clipped", "Cuts",
               "Prompts clipped to fit"], rows, "clipped")]
    return blocks, metrics


def _missing_section(cells: pd.DataFrame, grid: list[tuple[str, str, int]] | None
                     ) -> tuple[list[Block], int]:
    """The grid cells with no scored example (the first MAX_MISSING_LISTED listed), and
    how many there are."""
    missing = T.missing_cells(cells, grid)
    blocks: list[Block] = [Heading(f"Missing cells: {len(missing)}")]
    if len(missing):
        listed = missing.head(MAX_MISSING_LISTED)
        blocks.append(Table(["Dataset", "Agent", "Method", "Task", "Length", "Why"],
                            [[r.dataset, r.agent, r.method, r.task, T.length_label(r.length),
                              r.why] for r in listed.itertuples()], "missing"))
        if len(missing) > len(listed):
            blocks.append(Paragraph(f"… and {len(missing) - len(listed)} more."))
    return blocks, int(len(missing))


def _draw_figures(scores: pd.DataFrame, cells: pd.DataFrame, dataset: str, out_dir: Path,
                  names: dict[str, str]) -> dict[str, Figure]:
    """Figures 2 and 3 drawn under ``out_dir``/figures (where both Flat and TreeAgent
    were scored), each with the caption that says when all its points lie on 0."""
    from treeagent.report import figures as F

    figs: dict[str, Figure] = {}
    if not {"flat", "treeagent"} <= set(scores["method"]):
        return figs
    curve = T.length_curve(cells)
    F.figure2(curve, out_dir / "figures" / "figure2.png", names)
    figs["figure2"] = Figure("figures/figure2.png", "figure2",
                             ZERO_SCORES if F.all_zero(curve["score"]) else None)
    gains = T.task_gains(cells, dataset)
    if len(gains):
        note = None
        if F.all_zero(gains.loc[gains["agent"] != "mean", "gain"]):
            note = ZERO_GAINS_ZERO_SCORES if F.all_zero(
                cells.loc[cells["dataset"] == dataset, "score"]) else ZERO_GAINS
        F.figure3(gains, out_dir / "figures" / "figure3.png", names)
        figs["figure3"] = Figure("figures/figure3.png", "figure3", note)
    return figs


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
    :mod:`treeagent.pipeline.evidence`; ``provenance``: :func:`treeagent.report.provenance.collect`;
    ``validation``: gate result files to link; ``seed``: the bootstraps'; ``note``: a
    sentence shown under the title; ``grid``: the build's (format, task, length) cells,
    so that a cell with no example is listed under Missing cells; ``viewer``: example id ->
    page and question of the per-example viewer written under ``out``/examples
    (:func:`treeagent.report.viewer.write_examples`), linked from the report."""
    from treeagent.report import figures as F

    T.check_scores(scores)
    out_dir = Path(out)
    (out_dir / "figures").mkdir(parents=True, exist_ok=True)
    names = {**T.AGENT_NAMES, **(agent_names or {})}
    cells = T.cell_means(scores)
    figures = _draw_figures(scores, cells, dataset, out_dir, names)
    t1 = T.table1(cells)
    blocks: list[Block] = [Heading(TITLE, level=1)]
    if note:
        blocks.append(Caution(note))
    if provenance:
        blocks += S.provenance_blocks(provenance)
    table1, metrics = _table1_section(scores, cells, t1, names, seed, grid)
    clipped, metrics["clipped"] = _clip_section(scores, names)
    blocks += table1 + clipped
    blocks += _comparison_section(scores, cells, t1, dataset, names, figures, seed, metrics,
                                  evidence)
    missing, metrics["missing_cells"] = _missing_section(cells, grid)
    blocks += S.task_length_blocks(
        cells, names, {k: U.cell_interval(v, seed) for k, v in U.cell_values(scores).items()})
    if evidence is not None and len(evidence):
        table = T.evidence_integrity(evidence)
        F.evidence_figure(table, out_dir / "figures" / "evidence.png")
        blocks += S.evidence_blocks(table, "figures/evidence.png")
        metrics["evidence_records_split"] = {
            m: _num(100 * g["split"].sum() / g["records"].sum()) if g["records"].sum()
            else None for m, g in table.groupby("method", sort=False)}
    if viewer:
        blocks.append(LinkList([S.VIEWER_LINK]))
    blocks += S.sample_blocks(scores, evidence_records, names, viewer)
    blocks += S.validation_blocks(validation or [], out_dir)
    from treeagent.report.changes import change_blocks  # the results branch of the cwd

    blocks += change_blocks(scores, names, seed)
    blocks += missing
    (out_dir / "report.md").write_text(markdown_document(blocks), encoding="utf-8")
    (out_dir / "index.html").write_text(html_document(TITLE, blocks, out_dir),
                                        encoding="utf-8")
    (out_dir / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n",
                                          encoding="utf-8")
    return metrics
