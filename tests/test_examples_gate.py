"""The ``examples`` gate in one place: the same expectations hold the
build's new rows and the pipeline's stored tables, and the stored rows are re-checked
from their recipes, so a corrupted table fails the gate naming the row and the check."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from treeagent.bench import examples_gate
from treeagent.cli.main import main
from treeagent.pipeline import config, gates

DEMO = config.preset("demo")["build"]
GRID = dict(formats=["json"], lengths=[4096], tasks=["one_field", "conditional_count"],
            tokenizers=DEMO["tokenizers"], tolerance=DEMO["tolerance"])


@pytest.fixture(scope="module")
def validated(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("gate")
    argv = ["bench", "build", "--preset", "demo", "--lengths", "demo-4K", "--formats", "json",
            "--tasks", *GRID["tasks"], "--raw", str(root / "raw"),
            "--out", str(root / "validated")]
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        assert main(argv) == 0
    return root / "validated"


def _corrupt(validated: Path, dest: Path, column: str, value) -> str:
    """A copy of ``validated`` whose first JSON row has ``column`` set to ``value``."""
    for sub in ("examples", "units"):
        (dest / sub).mkdir(parents=True)
        (dest / sub / "json.parquet").write_bytes((validated / sub / "json.parquet").read_bytes())
    path = dest / "examples" / "json.parquet"
    table = pq.read_table(path)
    col = table[column].to_pylist()
    col[0] = value
    table = table.set_column(table.column_names.index(column), column,
                             pa.array(col, table.schema.field(column).type))
    pq.write_table(table, path)
    return table["id"][0].as_py()


def test_stored_tables_pass_with_the_builds_expectations(validated, tmp_path):
    doc = gates.check("examples", examples_gate.suites(validated, **GRID), tmp_path)
    assert doc["success"] and [s["name"] for s in doc["suites"]] == [
        "examples.grid", "examples.examples"]
    stored = [r["expectation_config"]["type"] for r in doc["suites"][1]["results"]]
    frame = examples_gate.stored_frame(validated / "examples" / "json.parquet")
    in_build = [t for t, *_ in examples_gate.run(frame, DEMO["tolerance"]).expectations]
    assert stored == in_build and len(stored) > 20  # one list of expectations, both runs


def test_a_wrong_stored_answer_fails_the_gate_naming_the_row(validated, tmp_path):
    bad = _corrupt(validated, tmp_path / "v", "answer", json.dumps("not the answer"))
    with pytest.raises(gates.GateError) as err:
        gates.check("examples", examples_gate.suites(tmp_path / "v", **GRID), tmp_path)
    text = str(err.value)
    assert "check_answer" in text and bad in text


def test_a_recipe_naming_a_missing_unit_fails_the_gate(validated, tmp_path):
    bad = _corrupt(validated, tmp_path / "v", "unit_ids", ["json/nowhere/0"])
    with pytest.raises(gates.GateError) as err:
        gates.check("examples", examples_gate.suites(tmp_path / "v", **GRID), tmp_path)
    assert "check_units" in str(err.value) and bad in str(err.value)


def test_the_recheck_of_stored_rows_gives_each_row_what_a_fresh_recheck_gives(validated):
    """recheck keeps the last context's re-parse for the next rows: the same verdicts as
    re-parsing the context for every row (a fresh recheck per row), corrupted row too."""
    from treeagent.bench import io as bench_io

    path = validated / "examples" / "json.parquet"
    stored = bench_io.read_rows(path)
    # the first stored row, a copy of it with a wrong answer (the same context, next in
    # line: the kept re-parse serves it), then the other rows
    rows = [stored[0], {**stored[0], "answer": json.dumps("not the answer")}, *stored[1:]]
    contexts = [tuple(r["unit_ids"]) for r in rows]
    assert len(set(contexts)) < len(contexts)  # some rows share a context: the cache serves
    kept = examples_gate.recheck(path, "json", DEMO["tolerance"])
    fresh = [examples_gate.recheck(path, "json", DEMO["tolerance"])(r) for r in rows]
    assert [kept(r) for r in rows] == fresh
    assert fresh[1]["check_answer"] and not fresh[0]["check_answer"]
