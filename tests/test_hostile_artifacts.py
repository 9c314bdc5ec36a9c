"""Corrupt, changed and linked artifacts: the raw gate re-hashes every payload against
the manifest and names the file; a corrupt Parquet table or manifest is one line naming
it (exit 2 in the CLI, a failed gate in the pipeline); ``query`` has no file access
unless asked; a mirror folder that is a link out of the mirror is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from treeagent.bench import io
from treeagent.bench import sources as S
from treeagent.bench.sources import raw as R
from treeagent.bench.sources.registry import sources_of
from treeagent.cli import main as cli
from treeagent.pipeline import gates


def _run(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _one_line_error(err: str, *needles: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    for n in needles:
        assert n in lines[0], (n, err)
    return lines[0]


@pytest.fixture()
def sample_raw(tmp_path):
    raw = tmp_path / "raw"
    m = S.acquire("sample", formats=["json"], sources=["usgs"], raw_dir=raw, progress=False)
    assert len(m["files"]) >= 2
    return raw


def _units(fmt: str, raw_dir: str):
    from types import SimpleNamespace

    rec = SimpleNamespace(id="u#r", unit_id="u", description="event u")
    return [SimpleNamespace(id="u", format=fmt, source="usgs", text="{}", records=[rec])]


# ------------------------------------------------------------------ 3: raw gate re-hash


@pytest.mark.parametrize("change", ["modified", "deleted"])
def test_the_raw_gate_fails_on_a_changed_payload_naming_it(sample_raw, tmp_path, change):
    first = json.loads((sample_raw / R.MANIFEST).read_text())["files"][0]["file"]
    gates.check("raw", gates.raw_suites(sample_raw, ["json"], units=_units), tmp_path / "v")
    if change == "modified":
        data = (sample_raw / first).read_bytes()
        (sample_raw / first).write_bytes(data.replace(b"1", b"2", 1))  # same size
    else:
        (sample_raw / first).unlink()
    with pytest.raises(gates.GateError) as info:
        gates.check("raw", gates.raw_suites(sample_raw, ["json"], units=_units),
                    tmp_path / "v")
    text = str(info.value)
    assert first in text and ("sha256" in text if change == "modified" else "unreadable" in text)
    doc = json.loads((tmp_path / "v" / "raw.json").read_text())
    assert any(first in f for f in doc["failed"])


# ------------------------------------------------------------------ 4: corrupt artifacts


def _corrupt(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"PAR1" + b"\x00garbage" * 40)


def test_a_corrupt_parquet_table_is_one_error_naming_it(tmp_path):
    path = tmp_path / "validated" / "examples" / "json.parquet"
    _corrupt(path)
    for read in (lambda: list(io.read_examples(path)), lambda: io.read_rows(path),
                 lambda: list(io.example_batches(path)),
                 lambda: io.load_units(path)):
        with pytest.raises(io.ArtifactError) as info:
            read()
        assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_a_corrupt_units_table_is_named(tmp_path):
    v = tmp_path / "validated"
    rows = [{"id": "json-x", "format": "json", "unit_ids": ["u1"]}]
    pq.write_table(pa.Table.from_pylist(rows), _mkdir(v / "examples") / "json.parquet")
    _corrupt(v / "units" / "json.parquet")
    with pytest.raises(io.ArtifactError, match=r"units/json\.parquet: not a readable Parquet"):
        list(io.read_examples(v / "examples" / "json.parquet"))


def _mkdir(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


def test_bench_show_on_a_corrupt_table_exits_2_naming_it(tmp_path, capsys):
    path = tmp_path / "validated" / "examples" / "json.parquet"
    _corrupt(path)
    code, out, err = _run(capsys, "bench", "show", "json-lookup-8k-f0-q0", "--out",
                          tmp_path / "validated")
    assert code == 2
    _one_line_error(err, str(path), "not a readable Parquet table")


@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]", b'{"files": 3}',
                                     b'{"files": [7]}'])
def test_a_corrupt_manifest_is_one_error_naming_it(sample_raw, tmp_path, content):
    manifest = sample_raw / R.MANIFEST
    manifest.write_bytes(content)
    with pytest.raises(io.ArtifactError) as info:
        S.manifest(sample_raw)
    assert str(manifest) in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(gates.GateError) as gate:  # a failed gate, not a traceback
        gates.check("raw", gates.raw_suites(sample_raw, ["json"], units=_units),
                    tmp_path / "v")
    assert str(manifest) in str(gate.value)


def test_bench_build_on_a_corrupt_manifest_exits_2_naming_it(sample_raw, tmp_path, capsys):
    manifest = sample_raw / R.MANIFEST
    manifest.write_bytes(b"{not json")
    code, _, err = _run(capsys, "bench", "build", "--no-acquire", "--raw", sample_raw,
                        "--out", tmp_path / "validated", "--formats", "json")
    assert code == 2
    _one_line_error(err, str(manifest), "not valid JSON")


def test_a_corrupt_table_fails_the_gate_that_reads_it(tmp_path):
    from treeagent.bench import examples_gate

    v = tmp_path / "validated"
    _corrupt(v / "examples" / "json.parquet")
    pq.write_table(pa.table({"unit_id": ["u1"], "source": ["s"], "text": ["{}"],
                             "sha256": ["0" * 64]}), _mkdir(v / "units") / "json.parquet")
    suites = gates.guarded_suites(examples_gate.suites, v, ["json"], [8000], ["lookup"],
                                  ["cl100k_base"])
    with pytest.raises(gates.GateError) as info:
        gates.check("examples", suites, tmp_path / "out")
    assert str(v / "examples" / "json.parquet") in str(info.value)


@pytest.mark.parametrize("gate", ["evidence", "scores"])
def test_a_corrupt_evidence_or_score_file_fails_its_gate_naming_it(tmp_path, gate):
    bad = tmp_path / "runs" / f"{gate}.parquet"
    _corrupt(bad)
    if gate == "evidence":
        suites = gates.evidence_suites(bad, ["json-x"], ["memagent"], ["flat"])
    else:
        suites = gates.scores_suites([str(bad)], ["json-x"], ["memagent"], ["flat"])
    with pytest.raises(gates.GateError) as info:
        gates.check(gate, suites, tmp_path / "v")
    assert f"{bad}: not a readable Parquet table" in str(info.value)


# ------------------------------------------------------------------ 9: query, mirror links


@pytest.fixture()
def project(tmp_path, monkeypatch):
    v = tmp_path / "validated"
    _mkdir(v / "examples")
    pq.write_table(pa.table({"id": ["j1", "j2"], "format": ["json"] * 2}),
                   v / "examples" / "json.parquet")
    (tmp_path / "secret.txt").write_text("top secret\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("sql", [
    "COPY (SELECT 42 AS a) TO 'written.csv'",
    "SELECT * FROM read_text('secret.txt')",
    "SELECT * FROM read_csv('secret.txt')",
    "ATTACH 'other.duckdb' AS other",
    "SET enable_external_access = true",
])
def test_query_has_no_file_access_unless_allowed(project, capsys, sql):
    code, out, err = _run(capsys, "query", sql)
    assert code == 2 and "top secret" not in out
    _one_line_error(err)
    assert not (project / "written.csv").exists() and not (project / "other.duckdb").exists()


def test_query_still_reads_the_views_and_allows_files_when_asked(project, capsys):
    code, out, err = _run(capsys, "query", "SELECT count(*) AS n FROM examples",
                          "--format", "json")
    assert code == 0, err
    assert json.loads(out) == [{"n": 2}]
    code, out, err = _run(capsys, "query", "SELECT * FROM read_text('secret.txt')",
                          "--allow-files", "--format", "json")
    assert code == 0, err
    assert "top secret" in out


def test_query_on_a_saved_database_has_no_file_access(project, capsys):
    from treeagent.report import db

    db.write_database(project / "t.duckdb", db.discover(project))
    code, out, err = _run(capsys, "query", "SELECT count(*) AS n FROM examples", "--db",
                          project / "t.duckdb", "--format", "json")
    assert code == 0, err
    assert json.loads(out) == [{"n": 2}]
    code, out, err = _run(capsys, "query", "SELECT * FROM read_text('secret.txt')",
                          "--db", project / "t.duckdb")
    assert code == 2 and "top secret" not in out


def test_a_mirror_folder_linking_out_of_the_mirror_is_refused(tmp_path):
    src = sources_of("json", ["usgs"])[0]
    outside = _mkdir(tmp_path / "elsewhere")
    (outside / "x.json").write_text('{"secret": 1}')
    mirror = _mkdir(tmp_path / "mirror" / "json").parent
    (mirror / "json" / src.folder).symlink_to(outside, target_is_directory=True)
    with pytest.raises(ValueError, match=r"link out of the mirror"):
        S.acquire("mirror", formats=["json"], sources=["usgs"], raw_dir=tmp_path / "raw",
                  mirror_dir=mirror, progress=False)
    assert not list((tmp_path / "raw").rglob("x.json"))


def test_a_file_linking_out_of_the_mirror_is_not_read(tmp_path):
    src = sources_of("json", ["usgs"])[0]
    (tmp_path / "secret.json").write_text('{"secret": 1}')
    folder = _mkdir(tmp_path / "mirror" / "json" / src.folder)
    (folder / "a.json").write_text('{"a": 1}')
    sub = _mkdir(tmp_path / "elsewhere")
    (sub / "b.json").write_text('{"b": 2}')
    (folder / "linked").symlink_to(sub, target_is_directory=True)
    (folder / "s.json").symlink_to(tmp_path / "secret.json")
    m = S.acquire("mirror", formats=["json"], sources=["usgs"], raw_dir=tmp_path / "raw",
                  mirror_dir=tmp_path / "mirror", progress=False)
    names = {Path(e["file"]).name for e in m["files"] + m["quarantine"]}
    assert "a.json" in names and not names & {"b.json", "s.json"}
