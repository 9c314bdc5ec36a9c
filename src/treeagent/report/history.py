"""Scores over the recorded result versions (docs/pipeline.md, "Rerun when a model
changes").

:func:`create_history` adds to a DuckDB connection the table ``history_versions`` (the
per-example scores of every version on the ``results`` branch,
:mod:`treeagent.report.versions`) and the view ``history``: one row per version x agent
x method x model revision with the mean score (%) over its examples and n. ``treeagent
history`` prints that view; the report's change against the previous version is
:mod:`treeagent.report.changes`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from treeagent.report import versions as V

_TABLE = "history_versions"
_SCHEMA = ("version INTEGER, commit VARCHAR, recorded VARCHAR, dataset VARCHAR, "
           "example_id VARCHAR, task VARCHAR, length BIGINT, agent VARCHAR, "
           "method VARCHAR, model VARCHAR, model_revision VARCHAR, score DOUBLE")
HISTORY_SQL = f"""SELECT version, commit, recorded, agent, method, model,
                         model_revision AS revision, 100 * avg(score) AS score,
                         count(*) AS n
                  FROM {_TABLE} GROUP BY ALL
                  ORDER BY version, agent, method, revision NULLS FIRST"""


def version_rows(project: str | Path, branch: str = V.BRANCH) -> Any:
    """The per-example scores of every version, with its number, commit and time."""
    import pandas as pd

    frames = []
    for version in V.list_versions(project, branch):
        frame = V.read_scores(project, version)
        frame.insert(0, "recorded", version.recorded)
        frame.insert(0, "commit", version.short)
        frame.insert(0, "version", version.number)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else None


def create_history(con: Any, project: str | Path, branch: str = V.BRANCH) -> list[str]:
    """Create ``history_versions`` and ``history`` on ``con`` from ``project``'s
    versions (empty when none is recorded); nothing, [], when it is no git repository."""
    try:
        rows = version_rows(project, branch)
    except V.NotARepository:
        return []
    con.execute(f"CREATE OR REPLACE TABLE {_TABLE} ({_SCHEMA})")
    if rows is not None:
        con.register("_history_rows", rows)
        con.execute(f"INSERT INTO {_TABLE} SELECT version, commit, recorded, dataset, "
                    "example_id, task, length, agent, method, model, model_revision, "
                    "score FROM _history_rows")
        con.unregister("_history_rows")
    con.execute(f"CREATE OR REPLACE VIEW history AS {HISTORY_SQL}")
    return [_TABLE, "history"]
