"""Great Expectations gates (treeagent.pipeline.gates): pass, fail with the expectation named,
results written to reports/validation/<gate>.json."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from treeagent.pipeline import gates
from treeagent.report.schema import score_rows, write_scores


def test_passing_gate_writes_identical_results(tmp_path: Path) -> None:
    frame = pd.DataFrame({"id": ["a", "b"], "n": [1, 2]})
    suite = gates.Suite("t", frame, [lambda e: e.ExpectColumnValuesToBeUnique(column="id")])
    doc = gates.check("demo", [suite], tmp_path)
    first = (tmp_path / "demo.json").read_bytes()
    assert doc["success"] and json.loads(first)["suites"][0]["rows"] == 2
    gates.check("demo", [suite], tmp_path)
    assert (tmp_path / "demo.json").read_bytes() == first  # no run ids or times


def test_failing_gate_names_the_expectation(tmp_path: Path) -> None:
    frame = pd.DataFrame({"id": ["a", "a", "c"], "n": [1, 0, 5]})
    suite = gates.Suite("units", frame, [
        lambda e: e.ExpectColumnValuesToBeUnique(column="id"),
        lambda e: e.ExpectColumnValuesToBeBetween(column="n", min_value=1),
    ], labels="id")
    with pytest.raises(gates.GateError) as info:
        gates.check("raw", [suite], tmp_path)
    err = info.value
    assert err.gate == "raw" and len(err.failures) == 2
    assert "units: expect_column_values_to_be_unique(column=id): 2 unexpected" in str(err)
    assert "expect_column_values_to_be_between(column=n, min_value=1" in str(err)
    assert "e.g. ['a']" in str(err)  # the row's label, not its value
    saved = json.loads((tmp_path / "raw.json").read_text())
    assert saved["success"] is False and saved["failed"] == err.failures


def _scores(tmp_path: Path, rows: list[dict], name: str) -> str:
    path = tmp_path / name / "scores.parquet"
    write_scores(score_rows(rows), path)
    return str(path)


def _row(example: str, method: str, prediction: str = "x") -> dict:
    return {"example_id": example, "dataset": "json", "task": "one_field", "length": 2048,
            "agent": "memagent", "method": method, "reference": '"x"',
            "prediction": prediction}


def test_scores_gate_complete_and_in_range(tmp_path: Path) -> None:
    files = [_scores(tmp_path, [_row("e1", m), _row("e2", m, "y")], m)
             for m in ("flat", "treeagent")]
    doc = gates.check("scores", gates.scores_suites(files, ["e1", "e2"], ["memagent"],
                                                    ["flat", "treeagent"]), tmp_path / "v")
    assert doc["success"]


def test_scores_gate_finds_missing_rows_and_files(tmp_path: Path) -> None:
    flat = _scores(tmp_path, [_row("e1", "flat")], "flat")
    missing = str(tmp_path / "treeagent" / "scores.parquet")
    with pytest.raises(gates.GateError) as info:
        gates.check("scores", gates.scores_suites([flat, missing], ["e1", "e2"], ["memagent"],
                                                  ["flat", "treeagent"]), tmp_path / "v")
    text = str(info.value)
    assert "files: expect_column_values_to_be_in_set(column=exists" in text
    assert "complete: expect_column_values_to_be_in_set(column=key" in text
    assert "memagent/flat/e2" in text and (tmp_path / "v" / "scores.json").exists()


def test_scores_gate_rejects_out_of_range_and_duplicates(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = _scores(tmp_path, [_row("e1", "flat"), _row("e1", "flat")], "flat")
    table = pq.read_table(path)
    i = table.schema.get_field_index("score")
    pq.write_table(table.set_column(i, table.schema.field(i), pa.array([1.5, 1.0])), path)
    with pytest.raises(gates.GateError) as info:
        gates.check("scores", gates.scores_suites([path], ["e1"], ["memagent"], ["flat"]),
                    tmp_path / "v")
    text = str(info.value)
    assert "expect_column_values_to_be_between(column=score, min_value=0.0, max_value=1.0)" in text
    assert "expect_column_values_to_be_unique(column=key)" in text


def _raw(tmp_path: Path, payloads: dict[str, bytes], quarantine: dict[str, str],
         extra: tuple[str, ...] = ()) -> Path:
    raw = tmp_path / "raw"
    files, held = [], []
    for rel, data in payloads.items():
        (raw / rel).parent.mkdir(parents=True, exist_ok=True)
        (raw / rel).write_bytes(data)
        files.append({"file": rel, "format": "json", "source": "usgs", "bytes": len(data),
                      "sha256": hashlib.sha256(data).hexdigest()})
    for rel, reason in quarantine.items():
        (raw / rel).parent.mkdir(parents=True, exist_ok=True)
        (raw / rel).write_bytes(b"{")
        held.append({"file": rel, "format": "json", "source": "usgs", "bytes": 1,
                     "sha256": "0" * 64, "reason": reason})
    for rel in extra:
        (raw / rel).write_bytes(b"{}")
    (raw / "manifest.json").write_text(json.dumps({"version": 1, "files": files,
                                                   "quarantine": held, "missing": []}))
    return raw


def _units(ids: list[str], texts: list[str] | None = None):
    """A units() double: JSON units with one record each; other formats yield none."""
    texts = texts or ["{}"] * len(ids)
    records = [SimpleNamespace(id=f"{u}#r", unit_id=u, description=f"event {u}") for u in ids]

    def units(fmt: str, raw_dir: str):
        return [SimpleNamespace(id=u, format=fmt, source="usgs", text=t, records=[r])
                for u, t, r in zip(ids, texts, records) if fmt == "json"]
    return units


def test_raw_gate_passes_on_a_sound_raw_folder(tmp_path: Path) -> None:
    raw = _raw(tmp_path, {"json/usgs/a.json": b"{}", "json/usgs/b.json": b"[]"},
               {"quarantine/json/usgs/c.json": "not valid JSON"})
    suites = gates.raw_suites(raw, ["json"], units=_units(["u1", "u2"]))
    assert gates.check("raw", suites, tmp_path / "v")["success"]
    suites = gates.raw_suites(raw, ["json", "yaml"], units=_units(["u1", "u2"]))
    with pytest.raises(gates.GateError, match=r"formats: expect_column_values_to_be_between"
                                              r"\(column=units, min_value=1.*e\.g\. \['yaml'\]"):
        gates.check("raw", suites, tmp_path / "v")


def test_raw_gate_fails_on_unlisted_empty_and_duplicate(tmp_path: Path) -> None:
    raw = _raw(tmp_path, {"json/usgs/a.json": b"", "json/usgs/b.json": b"[]"},
               {"quarantine/json/usgs/c.json": None}, extra=("json/usgs/stray.json",))
    suites = gates.raw_suites(raw, ["json"], units=_units(["u1", "u1"], ["{}", ""]))
    with pytest.raises(gates.GateError) as info:
        gates.check("raw", suites, tmp_path / "v")
    text = str(info.value)
    assert "payloads: expect_column_values_to_be_between(column=bytes, min_value=1" in text
    assert "quarantine: expect_column_values_to_not_be_null(column=reason)" in text
    assert "files: expect_column_values_to_be_in_set(column=listed" in text
    assert "json/usgs/stray.json" in text
    assert "units: expect_column_values_to_be_unique(column=id)" in text
    assert "formats: expect_column_values_to_be_between(column=units" not in text
    assert "units: expect_column_values_to_be_between(column=chars, min_value=1" in text


def test_raw_gate_takes_undescribed_records_and_refuses_names_shared_in_a_unit(
        tmp_path: Path) -> None:
    raw = _raw(tmp_path, {"json/usgs/a.json": b"{}"}, {})
    records = [SimpleNamespace(id="u1#0", unit_id="u1", description="event A"),
               SimpleNamespace(id="u1#1", unit_id="u1", description=""),  # counted, not named
               SimpleNamespace(id="u1#2", unit_id="u1", description="")]

    def units(fmt: str, raw_dir: str):
        return [SimpleNamespace(id="u1", format=fmt, source="usgs", text="{}",
                                records=records)] if fmt == "json" else []

    assert gates.check("raw", gates.raw_suites(raw, ["json"], units=units),
                       tmp_path / "v")["success"]
    records[2].description = "event A"  # two records of one unit named alike
    with pytest.raises(gates.GateError, match=r"records: expect_column_values_to_be_in_set"
                                              r"\(column=named_ok.*u1#0"):
        gates.check("raw", gates.raw_suites(raw, ["json"], units=units), tmp_path / "v")
