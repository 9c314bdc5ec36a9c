"""Figures 2 and 3 (paper 4.3) as static PNGs, drawn with matplotlib's Agg backend.

Missing points (NaN) are left out of the plot, never drawn as zero.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from treeagent.report.tables import METHOD_NAMES, TASK_NAMES, length_label, task_order

COLORS = {"flat": "#7f7f7f", "tree": "#9ecae1", "tree+path": "#4292c6", "treeagent": "#d62728"}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _grid(n: int) -> tuple[int, int]:
    cols = min(n, 4)
    return math.ceil(n / cols), cols


def figure2(curve: pd.DataFrame, path: str | Path, agent_names: dict[str, str] | None = None
            ) -> Path:
    """Figure 2: score (%) vs context length, one panel per agent, one line per method."""
    plt = _pyplot()
    agent_names = agent_names or {}
    agents = list(dict.fromkeys(curve["agent"]))
    rows, cols = _grid(max(len(agents), 1))
    fig, axes = plt.subplots(rows, cols, figsize=(3.4 * cols, 2.8 * rows), squeeze=False)
    lengths = sorted(set(int(n) for n in curve["length"]))
    for ax, agent in zip(axes.flat, agents):
        for method in dict.fromkeys(curve["method"]):
            g = curve[(curve["agent"] == agent) & (curve["method"] == method)].sort_values("length")
            g = g.dropna(subset=["score"])
            ax.plot(g["length"], g["score"], marker="o", ms=3.5, label=METHOD_NAMES.get(
                method, method), color=COLORS.get(method))
        ax.set_xscale("log", base=2)
        ax.set_xticks(lengths, [length_label(n) for n in lengths], fontsize=7)
        ax.minorticks_off()
        ax.set_title(agent_names.get(agent, agent), fontsize=9)
        ax.set_ylabel("score (%)", fontsize=8)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(agents):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="upper center", ncol=len(labels), frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.92))
    return _save(fig, plt, path)


def figure3(gains: pd.DataFrame, path: str | Path, agent_names: dict[str, str] | None = None
            ) -> Path:
    """Figure 3: TreeAgent - Flat gain (%) per task, one panel per agent (own y-range)."""
    plt = _pyplot()
    agent_names = agent_names or {}
    agents = [a for a in dict.fromkeys(gains["agent"]) if a != "mean"]
    tasks = task_order(gains["task"])
    rows, cols = _grid(max(len(agents), 1))
    fig, axes = plt.subplots(rows, cols, figsize=(3.4 * cols, 3.0 * rows), squeeze=False)
    colors = plt.get_cmap("tab10").colors
    for ax, agent in zip(axes.flat, agents):
        g = gains[gains["agent"] == agent].set_index("task").reindex(tasks)
        values = g["gain"].astype(float)
        xs = [i for i, v in enumerate(values) if not math.isnan(v)]
        ax.bar(xs, [values.iloc[i] for i in xs], color=[colors[i % 10] for i in xs])
        for i in range(len(tasks)):
            if math.isnan(values.iloc[i]):
                ax.text(i, 0, "—", ha="center", va="bottom", fontsize=8)
        ax.axhline(0, color="black", lw=0.6)
        ax.set_xticks(range(len(tasks)), [TASK_NAMES.get(t, t) for t in tasks],
                      rotation=60, ha="right", fontsize=7)
        ax.set_title(agent_names.get(agent, agent), fontsize=9)
        ax.set_ylabel("gain (%)", fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    for ax in list(axes.flat)[len(agents):]:
        ax.axis("off")
    fig.tight_layout()
    return _save(fig, plt, path)


def _save(fig, plt, path: str | Path) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=150, format="png")
    plt.close(fig)
    return out
