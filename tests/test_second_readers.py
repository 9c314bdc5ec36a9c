"""A plug-in format's second reader (paper B.1 "independent validation"): declared apart
from the format's construction hooks, consulted by the independent validation; a format
without one is built only with ``--no-second-reader``, every example flagged."""

from __future__ import annotations

import dataclasses
import json

import pyarrow.parquet as pq
import pytest

from test_bench_tasks import extract, make_units
from treeagent import registry
from treeagent.bench import build, independent, second_readers
from treeagent.bench.second_readers import UNCONFIRMED, SecondReader
from treeagent.cli.main import main
from treeagent.formats import Format, json_format

TOY = "toyjson"
PARAMS = dict(formats=(TOY,), lengths=(2048,), per_cell=1, questions_per_context=1,
              tasks=("one_field", "conditional_count"))


def _read_toy(text: str) -> list:
    """The toy format's own second reader: a JSON decoder of the standard library, not
    the construction's record reader."""
    value = json.JSONDecoder().decode(text)
    if not isinstance(value, list):
        raise ValueError("a toy context is a list of responses")
    return value


@pytest.fixture
def toy_format():
    """A plug-in format with construction hooks (JSON's) and no second reader."""
    from treeagent.bench.sources.json_records import BENCH as JSON_BENCH
    from treeagent.bench.sources.registry import BENCH

    registry.FORMATS.register(Format(TOY, "ToyJSON", (".toyjson",), json_format.parse,
                                     json_format.safe_cut))
    BENCH.register(dataclasses.replace(JSON_BENCH, name=TOY))
    try:
        yield
    finally:
        BENCH.unregister(TOY)
        registry.FORMATS.unregister(TOY)
        registry.SECOND_READERS.unregister(TOY)


def _units():
    return {TOY: [dataclasses.replace(u, format=TOY) for u in make_units("json", 40, 9)]}


def _extract(fmt, source, text):
    return extract("json" if fmt == TOY else fmt, source, text)


def test_builtin_formats_have_second_readers_and_a_plugin_none(toy_format):
    assert list(registry.SECOND_READERS.names) == ["json", "html", "yaml", "javascript"]
    assert second_readers.missing(["json", "yaml", TOY]) == [TOY]
    with pytest.raises(independent.Unconfirmed, match="unknown format 'toyjson'"):
        independent.read_context(TOY, "[]")


def test_a_plugin_second_reader_reads_its_contexts(toy_format):
    registry.SECOND_READERS.register(SecondReader(TOY, _read_toy))
    assert second_readers.available(TOY)
    assert registry.SECOND_READERS.get(TOY).title == "ToyJSON"
    reading = independent.read_context(TOY, '[{"a": 1}, {"b": [2]}]')
    assert (reading.format, reading.units) == (TOY, [{"a": 1}, {"b": [2]}])
    with pytest.raises(independent.Unconfirmed, match="toyjson context does not parse"):
        independent.read_context(TOY, '{"a": 1}')


def test_a_format_without_second_reader_is_refused_unless_asked(toy_format):
    with pytest.raises(ValueError, match="format 'toyjson' has no second reader .* "
                                         "--no-second-reader"):
        build.BuildParams(**PARAMS)
    assert build.BuildParams(**PARAMS, second_reader=False).second_reader is False
    build.BuildParams(formats=("json",), lengths=(2048,))  # the built-ins need no flag


def test_cli_refuses_it_in_one_line(toy_format, tmp_path, capsys):
    code = main(["bench", "build", "--formats", TOY, "--no-acquire", "--raw",
                 str(tmp_path / "raw"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("error: format 'toyjson' has no second reader")
    assert not (tmp_path / "out").exists()


def test_built_without_second_reader_every_example_is_flagged(toy_format, tmp_path):
    params = build.BuildParams(**PARAMS, second_reader=False)
    result = build.build(params, _units(), tmp_path, extract=_extract)
    rows = pq.read_table(tmp_path / "examples" / f"{TOY}.parquet").to_pylist()
    assert len(rows) == 2 and all(UNCONFIRMED in r["flags"] for r in rows)
    inv = json.loads((tmp_path / "inventory.json").read_text())
    assert inv["unconfirmed"] == {TOY: 2} and inv["params"]["second_reader"] is False
    assert f"2 examples flagged `{UNCONFIRMED}`" in (tmp_path / "inventory.md").read_text()
    assert result.inventory["unconfirmed"] == {TOY: 2}


def test_with_its_second_reader_examples_are_confirmed_by_it(toy_format, tmp_path):
    registry.SECOND_READERS.register(SecondReader(TOY, _read_toy))
    build.build(build.BuildParams(**PARAMS), _units(), tmp_path / "a", extract=_extract)
    rows = pq.read_table(tmp_path / "a" / "examples" / f"{TOY}.parquet").to_pylist()
    assert len(rows) == 2 and not any(UNCONFIRMED in r["flags"] for r in rows)
    inv = json.loads((tmp_path / "a" / "inventory.json").read_text())
    assert "unconfirmed" not in inv and "second_reader" not in inv["params"]

    def lying(text: str) -> list:  # a reader that sees other values: nothing confirmed
        units = _read_toy(text)
        for unit in units:
            for event in unit.get("events", []):
                event.update({k: "?" for k in event if k != "title"})
        return units

    registry.SECOND_READERS.unregister(TOY)
    registry.SECOND_READERS.register(SecondReader(TOY, lying))
    result = build.build(build.BuildParams(**PARAMS, max_families=4), _units(),
                         tmp_path / "b", extract=_extract)
    assert result.inventory["examples"] == 0
    assert {r["reason"].split(":")[0] for r in result.rejections} >= {"independent"}, \
        result.rejections[:2]


def test_a_flag_does_not_skip_an_existing_second_reader(toy_format):
    """A stored row that claims the flag is still checked where the format has a reader."""
    from treeagent.bench import validate

    ctx = validate.ContextCheck(format="json", text="{}", unit_sources=[])
    row = {"format": "json", "task": "one_field", "answer": "1", "flags": [UNCONFIRMED]}
    assert validate.second_reader(row, {"op": "lookup"}, ctx).startswith("second reader:")



def test_the_build_stage_refuses_it_in_one_line(tmp_path):
    """The pipeline's build stage, with the toy distribution installed without its second
    reader's entry point: one line naming build.second_reader's flag, exit 2, no output."""
    import subprocess
    import sys
    from pathlib import Path

    from treeagent.pipeline import config

    root = Path(__file__).resolve().parents[1]
    info = tmp_path / "site" / "treeagent_toy-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: treeagent-toy\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[treeagent.formats]\ntoyjson = treeagent_toy:FORMAT\n"
                                           "[treeagent.bench]\ntoyjson = treeagent_toy:BENCH\n")
    data = config.preset("demo")
    data["acquire"]["formats"] = data["build"]["formats"] = [TOY]
    data["report"]["dataset"] = TOY
    (tmp_path / "params.yaml").write_text(config.dump(data))
    env = {**__import__("os").environ, "PYTHONPATH": f"{tmp_path / 'site'}:"
           f"{root / 'tests' / 'fixtures' / 'toy_plugin'}", "PREFECT_HOME": str(tmp_path / "p")}
    proc = subprocess.run([sys.executable, str(root / "flows" / "build.py")], cwd=tmp_path,
                          env=env, text=True, capture_output=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(
        "error: params.yaml: build: format 'toyjson' has no second reader"), proc.stderr
    assert "--no-second-reader (build.second_reader: false)" in proc.stderr
    assert not (tmp_path / "validated").exists()


def test_params_validation_checks_the_second_reader_key():
    from treeagent.pipeline import config

    data = config.preset("demo")
    data["build"]["second_reader"] = False
    assert config.validate(data).build_kwargs()["second_reader"] is False
    assert config.validate(config.preset("demo")).build_kwargs()["second_reader"] is True
    data["build"]["second_reader"] = "no"
    with pytest.raises(config.ParamsError, match="build.second_reader: expected true/false"):
        config.validate(data)
