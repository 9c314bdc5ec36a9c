"""95% intervals beside the report's scores (Table 1, the per-task tables; paper 4.3, C.4).

A score of the report is a weighted mean of example scores: C.4 averages each
(dataset, task, length, agent, method) cell over its examples, then cells equally,
datasets equally and agents equally, so every example carries the weight that chain
gives it. The interval is of exactly that weighted mean:

* every score 0 or 1 (exact match): the Wilson score interval with Kish's effective
  sample size n_eff = (sum w)^2 / sum w^2 (n_eff = n when every example weighs the
  same, as in one cell or a grid with equal cells; then it is Wilson's own interval);
* otherwise (partial scores): a percentile bootstrap that resamples examples within
  each cell (:data:`RESAMPLES` resamples, seeded) and recomputes the weighted mean.

:data:`MIN_N` is the rule for "too few to mean anything": a score resting on fewer
examples is flagged (at n = 20 a Wilson interval around 50% is already 40 points wide).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Z95 = 1.959963984540054  # the standard normal's 97.5% quantile
RESAMPLES = 2000
MIN_N = 20
FLAG = "†"
WILSON = "Wilson"
BOOTSTRAP = "bootstrap"


@dataclass(frozen=True)
class Interval:
    """A 95% interval of a score in [0, 1]: bounds (NaN when none), examples behind it
    and the method that gave it."""

    lo: float
    hi: float
    n: int
    method: str = ""

    @property
    def small(self) -> bool:
        """Fewer than :data:`MIN_N` examples: too few for the interval to mean anything."""
        return self.n < MIN_N

    @property
    def known(self) -> bool:
        return not (math.isnan(self.lo) or math.isnan(self.hi))


NONE = Interval(math.nan, math.nan, 0)


def wilson(successes: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion (``n`` may be an effective, fractional n)."""
    if n <= 0:
        return math.nan, math.nan
    p = min(max(successes / n, 0.0), 1.0)
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo = 0.0 if p == 0.0 else max(0.0, centre - half)  # exact at the ends, not 1 - 1e-16
    hi = 1.0 if p == 1.0 else min(1.0, centre + half)
    return lo, hi


def kish_n(weights: Sequence[float] | np.ndarray) -> float:
    """Kish's effective sample size of a weighted mean: (sum w)^2 / sum w^2."""
    w = np.asarray(weights, dtype=float)
    return float(w.sum() ** 2 / (w * w).sum()) if len(w) and (w * w).sum() > 0 else 0.0


def weighted_interval(strata: Sequence[tuple[float, Sequence[float]]], seed: int = 42,
                      resamples: int = RESAMPLES) -> Interval:
    """The 95% interval of ``sum_c W_c * mean(values_c) / sum_c W_c`` over strata (cells)
    given as (weight W_c, example scores); rules in the module docstring."""
    cells = [(float(w), np.asarray(v, dtype=float)) for w, v in strata if len(v)]
    n = sum(len(v) for _, v in cells)
    if not cells or any(np.isnan(v).any() for _, v in cells):
        return Interval(math.nan, math.nan, n)
    total = sum(w for w, _ in cells)
    if all(np.isin(v, (0.0, 1.0)).all() for _, v in cells):
        example_w = np.concatenate([np.full(len(v), w / len(v)) for w, v in cells])
        p = sum(w * float(v.mean()) for w, v in cells) / total
        n_eff = kish_n(example_w)
        lo, hi = wilson(p * n_eff, n_eff)
        return Interval(lo, hi, n, WILSON)
    rng = np.random.default_rng(seed)
    means = np.zeros(resamples)
    for w, v in cells:
        means += w * v[rng.integers(0, len(v), size=(resamples, len(v)))].mean(axis=1)
    lo, hi = np.percentile(means / total, [2.5, 97.5])
    return Interval(float(lo), float(hi), n, BOOTSTRAP)


def describe() -> str:
    """The methods and the small-n rule, as one paragraph for the report."""
    return (f"95% intervals: where every score is 0 or 1 (exact match), the Wilson score "
            f"interval, with Kish's effective sample size where C.4's weights differ "
            f"between examples; otherwise a percentile bootstrap resampling examples "
            f"within each cell ({RESAMPLES} resamples; zero width when every example "
            f"scored the same, which is no certainty). n: examples behind the score. "
            f"{FLAG}: fewer than {MIN_N} examples, too few for the interval to mean "
            f"anything (at n = {MIN_N} a Wilson interval around 50% is already 40 points "
            f"wide); do not read a difference into it.")


Cell = tuple[str, str, int, str, str]  # dataset, task, length, agent, method


def cell_values(scores) -> dict[Cell, np.ndarray]:
    """Example scores per (dataset, task, length, agent, method) cell."""
    key = ["dataset", "task", "length", "agent", "method"]
    return {(str(d), str(t), int(n), str(a), str(m)): g["score"].to_numpy(dtype=float)
            for (d, t, n, a, m), g in scores.groupby(key, sort=False)}


def _of(strata: list[tuple[float, np.ndarray | None]], seed: int) -> Interval:
    present = [(w, v) for w, v in strata if v is not None]
    if len(present) < len(strata):  # a cell it averages is missing: so is the score
        return Interval(math.nan, math.nan, sum(len(v) for _, v in present))
    return weighted_interval(present, seed)


def table1_intervals(scores, seed: int = 42) -> dict[tuple[str, str], dict[str, Interval]]:
    """Intervals of Table 1's scores: (agent | "mean", method) -> column (dataset or
    "avg") -> :class:`Interval`, each example weighted as C.4 weighs it."""
    from treeagent.report import tables as T

    design = T.Design.of(T.cell_means(scores))
    values = cell_values(scores)
    out: dict[tuple[str, str], dict[str, Interval]] = {}

    def strata(agents: list[str], datasets: list[str], method: str):
        return [(1 / (len(agents) * len(datasets) * len(design.grid[ds])),
                 values.get((ds, t, n, a, method)))
                for a in agents for ds in datasets for t, n in design.grid[ds]]

    for method in design.methods:
        for group in [*design.agents, "mean"]:
            agents = design.agents if group == "mean" else [group]
            row = {ds: _of(strata(agents, [ds], method), seed) for ds in design.datasets}
            row["avg"] = _of(strata(agents, design.datasets, method), seed)
            out[(group, method)] = row
    return out


def cell_interval(values: Sequence[float] | np.ndarray, seed: int = 42) -> Interval:
    """The interval of one cell's mean (its examples weighted equally)."""
    return weighted_interval([(1.0, values)], seed)
