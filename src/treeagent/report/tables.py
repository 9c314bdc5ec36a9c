"""Aggregations behind Tables 1, 3, 4 and Figures 2-3 (paper 4.3-4.5, Appendix C.4-C.5).

Input is a pandas DataFrame of scored rows (:mod:`treeagent.report.schema`); scores are
in [0, 1] and every table returns percentages. Aggregation is exactly C.4: the mean over
examples in each (dataset, task, length, agent, method) cell, then each dataset's score
averages its (task, length) cells equally, then datasets equally, then agents equally.

Missing data stays missing (NaN, rendered "—"): an aggregate is NaN unless every cell
it averages is present. The cells an aggregate needs are those observed for that dataset
under any agent and method, and the datasets and agents are those observed anywhere.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from treeagent import registry

# Canonical order and titles (the paper's spelling) come from the registries: live views,
# so plug-in agents and formats are ordered after the paper's and titled as they declare.
METHODS = registry.METHODS.names
METHOD_NAMES = registry.METHODS.titles
DATASETS = registry.FORMATS.names
DATASET_NAMES = registry.FORMATS.titles
AGENTS = registry.AGENTS.names
AGENT_NAMES = registry.AGENTS.titles
TASK_NAMES = registry.TASKS.titles
KEY = ["dataset", "task", "length", "agent", "method"]
BOOTSTRAP_RESAMPLES = 2000


def ordered(values: Any, canonical: Sequence[str]) -> list[Any]:
    """Distinct values, canonical ones first in canonical order, the rest sorted."""
    present = set(values)
    return [v for v in canonical if v in present] + sorted(present - set(canonical), key=str)


def task_order(values: Any) -> list[str]:
    return ordered(values, registry.TASKS.names)


def length_label(n: int) -> str:
    """8192 -> "8K", 1048576 -> "1M"."""
    n = int(n)
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20}M"
    if n >= 1 << 10 and n % (1 << 10) == 0:
        return f"{n >> 10}K"
    return str(n)


def _mean_or_nan(values: list[float]) -> float:
    """Equal-weight mean; NaN if empty or any value is missing."""
    if not values or any(v is None or math.isnan(v) for v in values):
        return math.nan
    return sum(values) / len(values)


def _sql(query: str, params: dict[str, Any] | None = None, **frames: pd.DataFrame
         ) -> pd.DataFrame:
    """Run DuckDB SQL over the given DataFrames (registered under their keyword names)."""
    import duckdb

    con = duckdb.connect()
    try:
        for name, frame in frames.items():
            con.register(name, frame)
        return con.execute(query, params or {}).df()
    finally:
        con.close()


def check_scores(scores: pd.DataFrame) -> None:
    """Refuse inputs that would be averaged wrongly: duplicate rows, mixed model revisions."""
    dup = scores.duplicated(["dataset", "example_id", "agent", "method"], keep=False)
    if dup.any():
        row = scores[dup].iloc[0]
        raise ValueError(
            f"{int(dup.sum())} duplicate scored rows, e.g. {row['dataset']}/{row['example_id']}"
            f" {row['agent']}/{row['method']}"
        )
    if {"model", "model_revision"} <= set(scores.columns):
        models = scores[["agent", "model", "model_revision"]].drop_duplicates()
        counts = models.groupby("agent", dropna=False).size()
        mixed = counts[counts > 1]
        if len(mixed):
            raise ValueError(
                f"agent {mixed.index[0]!r} mixes {int(mixed.iloc[0])} model revisions;"
                " select one revision per agent"
            )


def cell_means(scores: pd.DataFrame) -> pd.DataFrame:
    """C.4 step 1: mean score and example count per (dataset, task, length, agent, method)."""
    return _sql(
        """SELECT dataset, task, length, agent, method,
                  avg(score) AS score, count(*) AS n
           FROM scores GROUP BY ALL ORDER BY ALL""",
        scores=scores[KEY + ["score"]],
    )


def _cell_dict(cells: pd.DataFrame) -> dict[tuple, float]:
    return {tuple(r[:5]): float(r[5]) for r in cells[KEY + ["score"]].itertuples(index=False)}


@dataclass
class Design:
    """What was observed: the cells each dataset needs, and the agents/methods present."""

    datasets: list[str]
    agents: list[str]
    methods: list[str]
    grid: dict[str, list[tuple[str, int]]]  # dataset -> observed (task, length) pairs

    @classmethod
    def of(cls, cells: pd.DataFrame) -> Design:
        grid: dict[str, list[tuple[str, int]]] = {}
        for ds, group in cells.groupby("dataset"):
            seen = {(t, int(n)) for t, n in zip(group["task"], group["length"])}
            rank = {t: i for i, t in enumerate(task_order({t for t, _ in seen}))}
            grid[str(ds)] = sorted(seen, key=lambda p: (rank[p[0]], p[1]))
        return cls(
            datasets=ordered(cells["dataset"], DATASETS),
            agents=ordered(cells["agent"], AGENTS),
            methods=ordered(cells["method"], METHODS),
            grid=grid,
        )

    @property
    def tasks(self) -> list[str]:
        return task_order({t for pairs in self.grid.values() for t, _ in pairs})

    @property
    def lengths(self) -> list[int]:
        return sorted({n for pairs in self.grid.values() for _, n in pairs})


def dataset_score(cells: dict[tuple, float], design: Design, dataset: str, agent: str,
                  method: str) -> float:
    """C.4 step 2 (fraction): equal mean over the dataset's (task, length) cells."""
    values = [cells.get((dataset, t, n, agent, method), math.nan)
              for t, n in design.grid.get(dataset, [])]
    return _mean_or_nan(values)


@dataclass
class Table1:
    """Mean answer scores (%) by agent x method x dataset, AVG., and the agent-mean group."""

    datasets: list[str]
    methods: list[str]
    agents: list[str]
    scores: dict[tuple[str, str], dict[str, float]]  # (agent | "mean", method) -> column -> %

    def value(self, agent: str, method: str, column: str) -> float:
        return self.scores.get((agent, method), {}).get(column, math.nan)


def table1(cells: pd.DataFrame) -> Table1:
    """Table 1 (4.3): dataset scores, AVG. over datasets, then the mean over agents."""
    design = Design.of(cells)
    lookup = _cell_dict(cells)
    scores: dict[tuple[str, str], dict[str, float]] = {}
    for method in design.methods:
        for agent in design.agents:
            row = {ds: 100 * dataset_score(lookup, design, ds, agent, method)
                   for ds in design.datasets}
            row["avg"] = _mean_or_nan([row[ds] for ds in design.datasets])
            scores[(agent, method)] = row
        scores[("mean", method)] = {
            col: _mean_or_nan([scores[(a, method)][col] for a in design.agents])
            for col in [*design.datasets, "avg"]
        }
    return Table1(design.datasets, design.methods, design.agents, scores)


def length_curve(cells: pd.DataFrame, methods: tuple[str, ...] = ("flat", "treeagent")
                 ) -> pd.DataFrame:
    """Figure 2 data (%): per agent, method and length, tasks equally then datasets equally."""
    design = Design.of(cells)
    lookup = _cell_dict(cells)
    rows = []
    for agent in design.agents:
        for method in [m for m in methods if m in design.methods]:
            for n in design.lengths:
                per_ds = []
                for ds in design.datasets:
                    tasks = [t for t, m in design.grid[ds] if m == n]
                    if tasks:
                        per_ds.append(_mean_or_nan(
                            [lookup.get((ds, t, n, agent, method), math.nan) for t in tasks]))
                rows.append({"agent": agent, "method": method, "length": n,
                             "score": 100 * _mean_or_nan(per_ds)})
    return pd.DataFrame(rows, columns=["agent", "method", "length", "score"])


def task_gains(cells: pd.DataFrame, dataset: str = "json") -> pd.DataFrame:
    """Figure 3 data (%): TreeAgent - Flat per agent and task, lengths weighted equally.

    Includes an ``agent == "mean"`` row per task (agents weighted equally).
    """
    design = Design.of(cells)
    lookup = _cell_dict(cells)
    grid = design.grid.get(dataset, [])
    rows = []
    for task in task_order({t for t, _ in grid}):
        lengths = [n for t, n in grid if t == task]
        gains = []
        for agent in design.agents:
            means = [_mean_or_nan([lookup.get((dataset, task, n, agent, m), math.nan)
                                   for n in lengths]) for m in ("treeagent", "flat")]
            gains.append(100 * (means[0] - means[1]))
            rows.append({"agent": agent, "task": task, "gain": gains[-1]})
        rows.append({"agent": "mean", "task": task, "gain": _mean_or_nan(gains)})
    return pd.DataFrame(rows, columns=["agent", "task", "gain"])


def pairs(scores: pd.DataFrame, dataset: str = "json", a: str = "treeagent",
          b: str = "flat") -> pd.DataFrame:
    """Matched examples: one row per (agent, example) scored under both methods ``a``, ``b``."""
    cols = ["dataset", "example_id", "task", "length", "agent", "method", "score", "calls",
            "input_tokens", "sections", "flat_sections"]
    frame = scores.reindex(columns=cols)
    return _sql(
        """SELECT x.agent, x.example_id, x.task, x.length,
                  x.score AS score_a, y.score AS score_b,
                  x.calls AS calls_a, y.calls AS calls_b,
                  x.input_tokens AS input_tokens_a, y.input_tokens AS input_tokens_b,
                  x.sections AS sections_a,
                  coalesce(x.flat_sections, y.sections) AS flat_sections
           FROM s x JOIN s y USING (dataset, example_id, agent)
           WHERE x.dataset = $ds AND x.method = $a AND y.method = $b
           ORDER BY x.agent, x.example_id""",
        {"ds": dataset, "a": a, "b": b},
        s=frame,
    )


def computation_ratios(scores: pd.DataFrame, dataset: str = "json") -> pd.DataFrame:
    """Table 3 (C.5): sum over matched examples of TreeAgent / Flat calls and input tokens."""
    p = pairs(scores, dataset)
    rows = []
    for agent in ordered(scores["agent"], AGENTS):
        g = p[p["agent"] == agent]
        row: dict[str, Any] = {"agent": agent, "n": len(g)}
        for q in ("calls", "input_tokens"):
            ok = g[[f"{q}_a", f"{q}_b"]].dropna()
            den = float(ok[f"{q}_b"].sum())
            row[q] = float(ok[f"{q}_a"].sum()) / den if len(ok) and den else math.nan
        rows.append(row)
    return pd.DataFrame(rows, columns=["agent", "n", "calls", "input_tokens"])


def bootstrap_ci(values: Any, seed: int = 42, resamples: int = BOOTSTRAP_RESAMPLES,
                 level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of ``values`` (resampled with replacement,
    ``numpy.random.default_rng(seed)``); NaN bounds with fewer than two values."""
    import numpy as np

    x = np.asarray(values, dtype=float)
    if len(x) < 2:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, len(x), size=(resamples, len(x)))].mean(axis=1)
    tail = 100 * (1 - level) / 2
    lo, hi = np.percentile(means, [tail, 100 - tail])
    return float(lo), float(hi)


def paired_differences(scores: pd.DataFrame, dataset: str = "json", seed: int = 42,
                       resamples: int = BOOTSTRAP_RESAMPLES) -> pd.DataFrame:
    """Table 4 (C.5): mean TreeAgent - Flat (%) over matched examples with a paired
    bootstrap 95% CI (the matched pairs resampled together, seeded: :func:`bootstrap_ci`)."""
    p = pairs(scores, dataset)
    rows = []
    for agent in ordered(scores["agent"], AGENTS):
        d = 100 * (p.loc[p["agent"] == agent, "score_a"] - p.loc[p["agent"] == agent, "score_b"])
        n = len(d)
        mean = float(d.mean()) if n else math.nan
        lo, hi = bootstrap_ci(d.to_numpy(), seed, resamples)
        rows.append({"agent": agent, "n": n, "diff": mean, "lo": lo, "hi": hi})
    return pd.DataFrame(rows, columns=["agent", "n", "diff", "lo", "hi"])


def task_length_scores(cells: pd.DataFrame, dataset: str) -> pd.DataFrame:
    """Per (agent, method, task, length) of one dataset: mean score (%) and n examples."""
    c = cells[cells["dataset"] == dataset]
    design = Design.of(cells)
    rank = {t: i for i, t in enumerate(task_order(c["task"]))}
    out = c.assign(score=100 * c["score"],
                   _a=c["agent"].map({a: i for i, a in enumerate(design.agents)}),
                   _m=c["method"].map({m: i for i, m in enumerate(design.methods)}),
                   _t=c["task"].map(rank))
    out = out.sort_values(["_a", "_m", "_t", "length"])
    return out[["agent", "method", "task", "length", "score", "n"]].reset_index(drop=True)


def evidence_integrity(rows: pd.DataFrame) -> pd.DataFrame:
    """Per tokenizer, format, length and method (one row per example and tokenizer even
    when several agents share it): examples, located records, share (%) of records
    split, share of examples with a split record, and for aggregation tasks the share of
    in-scope records split."""
    r = rows.drop_duplicates(["tokenizer", "example_id", "method"])
    r = r.assign(agg_split=r["split"].where(r["aggregation"], 0),
                 agg_located=r["located"].where(r["aggregation"], 0),
                 any_split=(r["split"] > 0).astype(int))
    g = r.groupby(["tokenizer", "format", "length", "method"], sort=False).agg(
        examples=("example_id", "count"), records=("located", "sum"),
        split=("split", "sum"), any_split=("any_split", "sum"),
        agg_split=("agg_split", "sum"), agg_located=("agg_located", "sum"),
        sections=("sections", "mean")).reset_index()
    g["records_split"] = 100 * g["split"] / g["records"].where(g["records"] > 0)
    g["examples_split"] = 100 * g["any_split"] / g["examples"]
    g["in_scope_split"] = 100 * g["agg_split"] / g["agg_located"].where(g["agg_located"] > 0)
    fmt_rank = {f: i for i, f in enumerate(ordered(g["format"], DATASETS))}
    m_rank = {m: i for i, m in enumerate(ordered(g["method"], METHODS))}
    g = g.assign(_f=g["format"].map(fmt_rank), _m=g["method"].map(m_rank))
    g = g.sort_values(["tokenizer", "_f", "length", "_m"]).drop(columns=["_f", "_m"])
    return g.reset_index(drop=True)


def section_match_rate(scores: pd.DataFrame, dataset: str = "json") -> pd.DataFrame:
    """4.5 / C.5: share (%) of TreeAgent examples whose section count equals Flat's.

    Flat's count is the row's ``flat_sections`` (T_flat), else the matched Flat row's
    ``sections``; examples where either count is unknown are left out. ``agent ==
    "mean"`` weights agents equally (the paper's 74.8%).
    """
    frame = scores.reindex(columns=["dataset", "example_id", "agent", "method", "sections",
                                    "flat_sections"])
    t = _sql(
        """SELECT x.agent, x.sections AS s, coalesce(x.flat_sections, y.sections) AS f
           FROM s x LEFT JOIN s y ON y.dataset = x.dataset AND y.example_id = x.example_id
                AND y.agent = x.agent AND y.method = 'flat'
           WHERE x.method = 'treeagent' AND x.dataset = $ds""",
        {"ds": dataset},
        s=frame,
    ).dropna()
    rows = []
    for agent in ordered(scores["agent"], AGENTS):
        g = t[t["agent"] == agent]
        rate = 100 * float((g["s"] == g["f"]).mean()) if len(g) else math.nan
        rows.append({"agent": agent, "n": len(g), "rate": rate})
    rows.append({"agent": "mean", "n": int(sum(r["n"] for r in rows)),
                 "rate": _mean_or_nan([r["rate"] for r in rows])})
    return pd.DataFrame(rows, columns=["agent", "n", "rate"])


def missing_cells(cells: pd.DataFrame, grid: Sequence[tuple[str, str, int]] | None = None
                  ) -> pd.DataFrame:
    """Every (dataset, agent, method, task, length) cell the design needs but lacks, with
    ``why``: first, for each cell of the build's ``grid`` (format, task, length) with no
    example at all, one row with agent and method "all" and "no examples built"; then
    "not scored" (the cell has examples under another agent or method)."""
    design = Design.of(cells)
    have = set(_cell_dict(cells))
    rows = [
        {"dataset": ds, "agent": agent, "method": method, "task": t, "length": n,
         "why": "not scored"}
        for ds in design.datasets for agent in design.agents for method in design.methods
        for t, n in design.grid[ds] if (ds, t, n, agent, method) not in have
    ]
    observed = {(ds, t, n) for ds, pairs in design.grid.items() for t, n in pairs}
    empty = [(str(d), str(t), int(n)) for d, t, n in grid or []
             if (str(d), str(t), int(n)) not in observed]
    rank = {d: i for i, d in enumerate(ordered({d for d, _, _ in empty}, DATASETS))}
    trank = {t: i for i, t in enumerate(task_order({t for _, t, _ in empty}))}
    built = [{"dataset": d, "agent": "all", "method": "all", "task": t, "length": n,
              "why": "no examples built"}
             for d, t, n in sorted(set(empty), key=lambda c: (rank[c[0]], trank[c[1]], c[2]))]
    return pd.DataFrame(built + rows, columns=["dataset", "agent", "method", "task", "length", "why"])


def column_notes(cells: pd.DataFrame, grid: Sequence[tuple[str, str, int]] | None = None
                 ) -> list[str]:
    """Where Table 1's columns average different (task, length) sets: one sentence per
    dataset column that lacks cells of the build's ``grid`` (without a grid: of the cells
    any dataset has), and one for a dataset of the grid with no column at all."""
    design = Design.of(cells)
    every = {(t, n) for pairs in design.grid.values() for t, n in pairs}
    wanted: dict[str, set[tuple[str, int]]] = {}
    for d, t, n in grid or []:
        wanted.setdefault(str(d), set()).add((str(t), int(n)))
    notes, partial = [], False
    for ds in ordered(set(design.datasets) | set(wanted), DATASETS):
        need = wanted.get(ds, every) if grid else every
        have = set(design.grid.get(ds, []))
        name = DATASET_NAMES.get(ds, ds)
        if not have:
            notes.append(f"{name} has no scored examples: no column, and AVG. leaves it out.")
            continue
        rank = {t: i for i, t in enumerate(task_order({t for t, _ in need - have}))}
        lacking = sorted(need - have, key=lambda p: (rank[p[0]], p[1]))
        if lacking:
            partial = True
            listed = ", ".join(f"{TASK_NAMES.get(t, t)} at {length_label(n)}"
                               for t, n in lacking)
            notes.append(f"{name} averages {len(have)} of {len(need)} task × length cells "
                         f"(no examples: {listed}).")
    if partial:
        notes.append("These columns average different task sets, and so does AVG. over "
                     "them: compare them with care.")
    elif notes:
        notes.append("AVG. averages the datasets shown only.")
    return notes


def clip_counts(scores: pd.DataFrame) -> pd.DataFrame:
    """:func:`~treeagent.agents.evaluate.clip_totals` per agent x method (canonical
    order), zeros included."""
    from treeagent.agents.evaluate import clip_totals

    frame = scores.reindex(columns=["agent", "method", "clipped"])
    rows = []
    for agent in ordered(frame["agent"], AGENTS):
        for method in ordered(frame.loc[frame["agent"] == agent, "method"], METHODS):
            g = frame[(frame["agent"] == agent) & (frame["method"] == method)]
            rows.append({"agent": agent, "method": method,
                         **clip_totals(g["clipped"].astype(object).tolist())})
    return pd.DataFrame(rows, columns=["agent", "method", "examples", "recorded",
                                       "clipped_examples", "cuts"])
