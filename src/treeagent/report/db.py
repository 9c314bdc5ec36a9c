"""The DuckDB layout: views over the Parquet outputs under ``runs/`` and ``validated/``.

* Every Parquet file under ``runs/`` and ``validated/`` belongs to one view named after
  its file stem (lower-cased, non-identifier characters -> ``_``, a trailing shard number
  such as ``-000`` dropped; ``part-0.parquet``/``data_0.parquet``, files named after a
  format (``json.parquet``, ...) and hive ``k=v`` folders take the name of the folder
  above: ``validated/examples/<format>.parquet`` form the ``examples`` view and
  ``validated/units/<format>.parquet`` the ``units`` view, each with a ``format`` column
  (from the file name where the table has none). Files whose stem starts with
  ``scores`` form the ``scores`` view (scored rows, :mod:`treeagent.report.schema`). A
  name found under both roots becomes ``runs_<name>`` and ``validated_<name>``. Files of
  one view are read with ``union_by_name``.
* When ``scores`` exists two derived views follow: ``cells`` (C.4 step 1: mean score
  and count per dataset, task, length, agent, method) and ``paired`` (TreeAgent vs Flat
  on matched examples with ``diff`` = score difference).
* In a git repository, ``history`` (scores per version x agent x method x model
  revision) over the table ``history_versions`` (the example scores of every result
  version on the ``results`` branch; :mod:`treeagent.report.history`), empty when none
  is recorded.
* ``treeagent query`` without ``--db`` builds these views in memory over the files that
  exist now (never stale). ``treeagent report`` also saves them to
  ``reports/treeagent.duckdb``: views over absolute paths (the file stays valid when
  moved, while the Parquet files stay where they are), or with ``portable=True`` tables
  holding the data (valid anywhere).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from treeagent.registry import FORMATS

ROOTS: tuple[str, ...] = ("runs", "validated")
DEFAULT_DB = Path("reports") / "treeagent.duckdb"
DEFAULT_SCORES = "runs/**/scores*.parquet"

DERIVED = {
    "cells": """SELECT dataset, task, length, agent, method,
                       avg(score) AS score, count(*) AS n
                FROM scores GROUP BY ALL""",
    "paired": """SELECT t.dataset, t.task, t.length, t.agent, t.example_id,
                        t.score AS treeagent_score, f.score AS flat_score,
                        t.score - f.score AS diff,
                        t.calls AS treeagent_calls, f.calls AS flat_calls,
                        t.input_tokens AS treeagent_input_tokens,
                        f.input_tokens AS flat_input_tokens,
                        t.sections AS treeagent_sections,
                        coalesce(t.flat_sections, f.sections) AS flat_sections
                 FROM scores t JOIN scores f USING (dataset, example_id, agent)
                 WHERE t.method = 'treeagent' AND f.method = 'flat'""",
}

_SHARD = re.compile(r"[-_.]?\d+$")
_FOLDER_NAMED = ("", "part", "data")
"""File stems that take their folder's name (shards; also per-format tables, named by a
format of :data:`treeagent.registry.FORMATS`)."""


def view_name(path: Path) -> str:
    """The view a Parquet file belongs to (rules in the module docstring)."""
    stem = path.name.removesuffix(".parquet").lower()
    if stem.startswith("scores"):
        return "scores"
    name = _SHARD.sub("", stem)
    parent = path.parent
    while (name in _FOLDER_NAMED or name in FORMATS.names or "=" in name) \
            and parent != parent.parent:
        while "=" in parent.name:
            parent = parent.parent
        name, parent = parent.name.lower(), parent.parent
    name = re.sub(r"\W+", "_", name).strip("_") or "data"
    return f"t_{name}" if name[0].isdigit() else name


def discover(root: str | Path = ".") -> dict[str, list[str]]:
    """View name -> Parquet files (paths as found from ``root``), over ``runs/``, ``validated/``."""
    base = Path(root)
    found: dict[str, dict[str, list[str]]] = {}
    for top in ROOTS:
        for path in sorted((base / top).rglob("*.parquet")):
            if any(part.startswith(".") for part in path.relative_to(base).parts):
                continue
            found.setdefault(view_name(path), {}).setdefault(top, []).append(str(path))
    views: dict[str, list[str]] = {}
    for name, by_root in found.items():
        if len(by_root) == 1 or name == "scores":
            views[name] = [f for files in by_root.values() for f in files]
        else:
            for top, files in by_root.items():
                views[f"{top}_{name}"] = files
    return views


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _select(con: Any, files: list[str]) -> str:
    """SQL reading a view's files; per-format files add a ``format`` column when the
    tables have none."""
    listed = ", ".join(_quote(f) for f in files)
    source = f"read_parquet([{listed}], union_by_name = true"
    stems = {Path(f).name.removesuffix(".parquet") for f in files}
    if stems <= set(FORMATS.names):
        columns = [d[0] for d in con.execute(f"SELECT * FROM {source}) LIMIT 0").description]
        if "format" not in columns:
            return (f"SELECT regexp_extract(filename, '([A-Za-z]+)[.]parquet$', 1) AS format, "
                    f"* EXCLUDE (filename) FROM {source}, filename = true)")
    return f"SELECT * FROM {source})"


def create_views(con: Any, views: dict[str, list[str]], portable: bool = False,
                 history: str | Path | None = None) -> list[str]:
    """Create (or replace) the views on a DuckDB connection; returns their names.
    ``portable``: tables holding the data instead of views over the files. ``history``:
    a project whose recorded result versions form the ``history`` view
    (:func:`treeagent.report.history.create_history`; none outside a git repository)."""
    names = []
    kind = "TABLE" if portable else "VIEW"
    for name, files in sorted(views.items()):
        con.execute(f'CREATE OR REPLACE {kind} "{name}" AS {_select(con, files)}')
        names.append(name)
    if "scores" in views:
        for name, sql in DERIVED.items():
            con.execute(f'CREATE OR REPLACE VIEW "{name}" AS {sql}')
            names.append(name)
    if history is not None:
        from treeagent.report.history import create_history

        names += create_history(con, history)
    return names


def connect(db: str | Path | None = None, root: str | Path = "."):
    """A DuckDB connection: ``db`` opened read-only, else in-memory views over ``root``."""
    import duckdb

    if db is not None:
        if not Path(db).exists():
            raise FileNotFoundError(f"{db}: no such database")
        return duckdb.connect(str(db), read_only=True)
    con = duckdb.connect()
    create_views(con, discover(root), history=root)
    return con


def write_database(path: str | Path, views: dict[str, list[str]],
                   portable: bool = False, history: str | Path | None = ".") -> Path:
    """Save the views to a DuckDB file, replacing any older one: views over the files'
    absolute paths (valid wherever the database is moved, while the files stay), or
    with ``portable`` tables holding the data (valid anywhere, no Parquet needed); with
    the ``history`` of the recorded result versions of that project (the ``history``
    view over the table ``history_versions``, which holds their example scores)."""
    import duckdb

    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    for stale in (out, out.with_name(out.name + ".wal")):
        stale.unlink(missing_ok=True)
    absolute = {name: [str(Path(f).resolve()) for f in files] for name, files in views.items()}
    con = duckdb.connect(str(out))
    try:
        create_views(con, absolute, portable=portable, history=history)
    finally:
        con.close()
    return out


def scored_files(source: str | Path) -> list[str]:
    """Parquet files named by a path, a folder (all ``*.parquet`` below it) or a glob."""
    import glob

    text = str(source)
    if any(c in text for c in "*?["):
        return sorted(glob.glob(text, recursive=True))
    path = Path(text)
    if path.is_dir():
        return sorted(str(p) for p in path.rglob("*.parquet"))
    return [text] if path.is_file() else []


def load_scores(files: list[str]):
    """Scored rows from Parquet files as a pandas DataFrame with the scored-row columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from treeagent.report.schema import SCORED_SCHEMA, conform

    tables = [conform(pq.read_table(f)) for f in files]
    table = pa.concat_tables(tables) if tables else SCORED_SCHEMA.empty_table()
    return table.to_pandas()
