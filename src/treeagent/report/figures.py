"""Figures 2 and 3 (paper 4.3) as static PNGs, drawn with matplotlib's Agg backend.

Missing points (NaN) are left out of the plot, never drawn as zero. Points and bars at
0 stay visible: markers are drawn over the axis (not clipped by it) and a bar of height 0
is marked by a tick at 0. No caption or note is drawn into an image: the report writes
each caption once, as text under its figure. Panels wrap at :data:`MAX_COLUMNS`, so every
figure is between 960 and 1020 pixels wide and the report shows it at its native size.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from treeagent.report.tables import METHOD_NAMES, TASK_NAMES, length_label, task_order

COLORS = {"flat": "#7f7f7f", "tree": "#9ecae1", "tree+path": "#4292c6", "treeagent": "#d62728"}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


MIN_WIDTH_IN = 6.4  # inches at DPI: figures are at least 960 px wide (print size)
DPI = 150
MAX_COLUMNS = 2  # 2 panels of 3.4 in at 150 dpi: 1020 px, within the report's page


def _grid(n: int) -> tuple[int, int]:
    cols = min(n, MAX_COLUMNS)
    return math.ceil(n / cols), cols


def _figure(plt, n: int, panel_w: float, panel_h: float):
    rows, cols = _grid(max(n, 1))
    width = max(MIN_WIDTH_IN, panel_w * cols)
    return plt.subplots(rows, cols, figsize=(width, panel_h * rows), squeeze=False)


def _series(ax, groups: list[tuple[str, pd.DataFrame]], y: str, lengths: list[int]) -> None:
    """One series per method over lengths: lines where there are >= 2 lengths, else
    grouped bars at the one length (a single point drawn as a line says nothing)."""
    if len(lengths) >= 2:
        for method, g in groups:
            g = g.dropna(subset=[y]).sort_values("length")
            ax.plot(g["length"], g[y], marker="o", ms=4, lw=1.6, clip_on=False, zorder=3,
                    label=METHOD_NAMES.get(method, method), color=COLORS.get(method))
        ax.set_xscale("log", base=2)
        ax.set_xticks(lengths, [length_label(n) for n in lengths], fontsize=8)
        ax.minorticks_off()
        ax.set_xlabel("context length (tokens)", fontsize=8)
        return
    width = 0.8 / max(len(groups), 1)
    for i, (method, g) in enumerate(groups):
        v = g[y].dropna()
        if len(v):
            ax.bar(i * width, float(v.iloc[0]), width=width * 0.9,
                   label=METHOD_NAMES.get(method, method), color=COLORS.get(method))
            if float(v.iloc[0]) == 0:
                _zero_tick(ax, i * width, COLORS.get(method))
    ax.set_xticks([(len(groups) - 1) * width / 2],
                  [length_label(lengths[0]) if lengths else ""], fontsize=8)
    ax.set_xlabel("context length (tokens)", fontsize=8)


def _zero_tick(ax, x: float, color: str | None) -> None:
    """A bar of height 0 drawn as a short thick tick on the 0 line (visible over it)."""
    ax.plot([x], [0], marker="_", ms=14, mew=3, color=color or "black", clip_on=False,
            zorder=4)


def all_zero(values: Any) -> bool:
    """Whether ``values`` has a number and every number is 0 (NaN ignored)."""
    v = pd.Series(values, dtype=float).dropna()
    return bool(len(v)) and bool((v == 0).all())


def figure2(curve: pd.DataFrame, path: str | Path, agent_names: dict[str, str] | None = None
            ) -> Path:
    """Figure 2: score (%) vs context length, one panel per agent, one series per method;
    score axes from 0 to 100."""
    plt = _pyplot()
    agent_names = agent_names or {}
    agents = list(dict.fromkeys(curve["agent"]))
    fig, axes = _figure(plt, len(agents), 3.4, 3.0)
    lengths = sorted(set(int(n) for n in curve["length"]))
    methods = list(dict.fromkeys(curve["method"]))
    for ax, agent in zip(axes.flat, agents):
        groups = [(m, curve[(curve["agent"] == agent) & (curve["method"] == m)])
                  for m in methods]
        _series(ax, groups, "score", lengths)
        ax.set_ylim(0, 100)
        ax.set_title(agent_names.get(agent, agent), fontsize=10)
        ax.set_ylabel("score (%)", fontsize=9)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(agents):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="upper center", ncol=len(labels), frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    return _save(fig, plt, path)


def evidence_figure(table: pd.DataFrame, path: str | Path) -> Path:
    """Evidence integrity: share (%) of evidence records split per method, one panel per
    format, over context lengths (axis from 0 to 100)."""
    from treeagent.report.tables import DATASET_NAMES

    plt = _pyplot()
    formats = list(dict.fromkeys(table["format"]))
    fig, axes = _figure(plt, len(formats), 3.4, 3.0)
    methods = list(dict.fromkeys(table["method"]))
    for ax, fmt in zip(axes.flat, formats):
        t = table[table["format"] == fmt]
        lengths = sorted(set(int(n) for n in t["length"]))
        _series(ax, [(m, t[t["method"] == m]) for m in methods], "records_split", lengths)
        ax.set_ylim(0, 100)
        ax.set_title(DATASET_NAMES.get(fmt, fmt), fontsize=10)
        ax.set_ylabel("evidence records split (%)", fontsize=9)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(formats):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="upper center", ncol=len(labels), frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    return _save(fig, plt, path)


def figure3(gains: pd.DataFrame, path: str | Path, agent_names: dict[str, str] | None = None
            ) -> Path:
    """Figure 3: TreeAgent - Flat gain (%) per task, one panel per agent (own y-range;
    -1 to 1 when every gain of the panel is 0)."""
    plt = _pyplot()
    agent_names = agent_names or {}
    agents = [a for a in dict.fromkeys(gains["agent"]) if a != "mean"]
    tasks = task_order(gains["task"])
    fig, axes = _figure(plt, len(agents), 3.4, 3.2)
    colors = plt.get_cmap("tab10").colors
    for ax, agent in zip(axes.flat, agents):
        g = gains[gains["agent"] == agent].set_index("task").reindex(tasks)
        values = g["gain"].astype(float)
        xs = [i for i, v in enumerate(values) if not math.isnan(v)]
        ax.bar(xs, [values.iloc[i] for i in xs], color=[colors[i % 10] for i in xs])
        for i in range(len(tasks)):
            if math.isnan(values.iloc[i]):
                ax.text(i, 0, "—", ha="center", va="bottom", fontsize=8)
            elif values.iloc[i] == 0:
                _zero_tick(ax, i, colors[i % 10])
        ax.axhline(0, color="black", lw=0.6)
        if all_zero(values):
            ax.set_ylim(-1, 1)
        ax.set_xticks(range(len(tasks)), [TASK_NAMES.get(t, t) for t in tasks],
                      rotation=60, ha="right", fontsize=7)
        ax.set_title(agent_names.get(agent, agent), fontsize=9)
        ax.set_ylabel("gain (%)", fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    for ax in list(axes.flat)[len(agents):]:
        ax.axis("off")
    fig.tight_layout(rect=(0, 0, 1, 1))
    return _save(fig, plt, path)


def _save(fig, plt, path: str | Path) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=DPI, format="png", metadata={"Software": None})
    plt.close(fig)
    return out
