"""DuckDB layout: separate ``examples`` and ``units`` views; a saved database
that stays valid when moved (absolute paths) or holds its data (portable)."""

from __future__ import annotations

import shutil

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from treeagent.report import db


@pytest.fixture
def project(tmp_path, monkeypatch):
    v = tmp_path / "validated"
    for fmt, ids in (("json", ["j1", "j2"]), ("yaml", ["y1"])):
        (v / "examples").mkdir(parents=True, exist_ok=True)
        (v / "units").mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": ids, "format": [fmt] * len(ids),
                                 "question": ["q"] * len(ids)}),
                       v / "examples" / f"{fmt}.parquet")
        pq.write_table(pa.table({"unit_id": [f"{fmt}/src/a", f"{fmt}/src/b", f"{fmt}/src/c"],
                                 "text": ["t"] * 3}), v / "units" / f"{fmt}.parquet")
    pq.write_table(pa.table({"id": ["r1"], "reason": ["length"]}), v / "rejections.parquet")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def rows(con, sql):
    return con.execute(sql).fetchall()


def columns(con, view):
    return [d[0] for d in con.execute(f"SELECT * FROM {view} LIMIT 0").description]


def test_examples_and_units_are_separate_views(project):
    assert db.discover(".").keys() == {"examples", "units", "rejections"}
    con = db.connect(None, ".")
    assert columns(con, "examples") == ["id", "format", "question"]
    assert columns(con, "units") == ["format", "unit_id", "text"]
    assert rows(con, "SELECT format, count(*) FROM examples GROUP BY ALL ORDER BY 1") == [
        ("json", 2), ("yaml", 1)]
    assert rows(con, "SELECT format, count(*) FROM units GROUP BY ALL ORDER BY 1") == [
        ("json", 3), ("yaml", 3)]
    assert rows(con, "SELECT count(*) FROM examples WHERE question IS NULL") == [(0,)]


def test_saved_database_stays_valid_when_moved(project, tmp_path_factory, monkeypatch):
    saved = db.write_database(project / "reports" / "treeagent.duckdb", db.discover("."))
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    moved = elsewhere / "copy.duckdb"
    shutil.move(saved, moved)
    monkeypatch.chdir(elsewhere)  # neither the old folder nor the project root
    con = duckdb.connect(str(moved), read_only=True)
    assert rows(con, "SELECT count(*) FROM examples") == [(3,)]
    assert rows(con, "SELECT count(*) FROM units WHERE format = 'yaml'") == [(3,)]


def test_portable_database_holds_the_data(project, tmp_path_factory, monkeypatch):
    saved = db.write_database(project / "reports" / "treeagent.duckdb", db.discover("."),
                              portable=True)
    shutil.rmtree(project / "validated")  # no Parquet file left
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    con = duckdb.connect(str(saved), read_only=True)
    assert rows(con, "SELECT id FROM examples ORDER BY id") == [("j1",), ("j2",), ("y1",)]
    assert rows(con, "SELECT reason FROM rejections") == [("length",)]
