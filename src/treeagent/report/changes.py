"""The report's "Change against the previous version" (docs/pipeline.md, "Rerun when a
model changes").

* :func:`changes` compares the current scores with a recorded version
  (:mod:`treeagent.report.versions`) on the examples both scored: the delta of the
  means (%) with a paired percentile bootstrap 95% interval (the matched examples
  resampled together, seeded, as Table 4; paper 4.3, C.5).
* :func:`change_blocks` lists each agent x method whose model revision or scores
  changed. The previous version is the latest one unless that one records exactly the
  current scores (the report of a run already recorded), then the one before it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from treeagent.report import versions as V

TITLE = "Change against the previous version"


@dataclass(frozen=True)
class Change:
    """One agent x method against the previous version: scores (%) of each version over
    its own examples, and the paired delta (%) over the ``n`` examples both scored."""

    agent: str
    method: str
    old_revision: str
    new_revision: str
    old_score: float
    new_score: float
    delta: float
    lo: float
    hi: float
    n: int


def _revision(rows: Any) -> str:
    values = sorted({str(r) for r in rows["model_revision"].dropna()})
    return ",".join(values) if values else "—"


def changes(previous: Any, current: Any, seed: int = 42,
            resamples: int | None = None) -> list[Change]:
    """Each agent x method of ``current`` whose model revision, examples or scores
    differ from ``previous`` (both with the scored-row columns ``dataset, example_id,
    agent, method, model_revision, score``)."""
    from treeagent.report import tables as T

    key = ["dataset", "example_id"]
    out = []
    for (agent, method), new in current.groupby(["agent", "method"], sort=True):
        old = previous[(previous["agent"] == agent) & (previous["method"] == method)]
        pairs = new[key + ["score"]].merge(old[key + ["score"]], on=key,
                                           suffixes=("_new", "_old"))
        diff = 100 * (pairs["score_new"] - pairs["score_old"]).to_numpy(dtype=float)
        same = (_revision(old) == _revision(new) and len(pairs) == len(new) == len(old)
                and not diff.any())
        if same:
            continue
        lo, hi = T.bootstrap_ci(diff, seed, resamples or T.BOOTSTRAP_RESAMPLES)
        out.append(Change(
            str(agent), str(method), _revision(old) if len(old) else "—", _revision(new),
            100 * float(old["score"].mean()) if len(old) else math.nan,
            100 * float(new["score"].mean()), float(diff.mean()) if len(diff) else math.nan,
            lo, hi, len(pairs)))
    return out


def previous_version(project: str | Path, current: Any,
                     branch: str = V.BRANCH) -> V.Version | None:
    """The version to compare ``current`` with (rule in the module docstring)."""
    found = V.list_versions(project, branch)
    if found and V.read_file(project, found[-1], V.SCORES_FILE) == V.scores_csv(current):
        found = found[:-1]
    return found[-1] if found else None


def change_blocks(scores: Any, names: dict[str, str], seed: int = 42,
                  project: str | Path = ".") -> list[Any]:
    """The report's blocks comparing ``scores`` with the previous recorded version of
    ``project`` (a sentence when there is none)."""
    from treeagent.report.blocks import Heading, Paragraph, Table
    from treeagent.report.render import MISSING, fmt
    from treeagent.report.tables import BOOTSTRAP_RESAMPLES, METHOD_NAMES
    from treeagent.report.uncertainty import FLAG, MIN_N

    blocks: list[Any] = [Heading(TITLE)]
    try:
        version = previous_version(project, scores)
    except V.VersionError:
        version = None
    if version is None:
        return blocks + [Paragraph("No previous result version is recorded: nothing to compare "
                               "with (`treeagent history record` keeps one per rerun).")]
    found = changes(V.read_scores(project, version), scores, seed)
    where = f"version {version.number} ({version.short}, recorded {version.recorded})"
    if not found:
        return blocks + [Paragraph(f"Against {where}: no agent × method changed its model "
                               "revision or any example score.")]
    blocks.append(Paragraph(f"Against {where}: each agent × method whose model revision or "
                        "scores changed. Scores (%): each version's mean over its own "
                        "examples; Δ: mean new − old over the examples both scored "
                        f"(Matched), 95% CI: paired bootstrap ({BOOTSTRAP_RESAMPLES} "
                        f"resamples of the matched examples, seed {seed})."))
    rows = [[names.get(c.agent, c.agent), METHOD_NAMES.get(c.method, c.method),
             f"{c.old_revision} → {c.new_revision}",
             f"{fmt(c.old_score)} → {fmt(c.new_score)}", fmt(c.delta),
             MISSING if math.isnan(c.lo) else f"[{fmt(c.lo)}, {fmt(c.hi)}]",
             f"{c.n}{FLAG if c.n < MIN_N else ''}"] for c in found]
    blocks.append(Table(["Memory agent", "Method", "Revision (old → new)",
                         "Score (old → new)", "Δ", "95% CI", "Matched"], rows, "change"))
    return blocks
