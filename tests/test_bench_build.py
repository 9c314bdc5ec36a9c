"""Build (4.1, B.1): byte-identical outputs, recipes that materialize, rejections kept
with their reasons, inventory, and the ``treeagent bench build|show`` CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from test_bench_tasks import extract, make_units
from treeagent.bench import build, cli, examples_gate, io, validate
from treeagent.cli.main import main

PARAMS = dict(formats=("json", "javascript"), lengths=(2048,), per_cell=1,
              questions_per_context=1)


def _units():
    return {f: make_units(f, 40, 9) for f in ("json", "javascript")}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("a")
    result = build.build(build.BuildParams(**PARAMS), _units(), out, extract=extract)
    return out, result


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_same_inputs_and_params_give_byte_identical_outputs(built, tmp_path):
    out, _ = built
    build.build(build.BuildParams(**PARAMS), _units(), tmp_path, extract=extract)
    first, second = _files(out), _files(tmp_path)
    assert set(first) >= {"examples/json.parquet", "units/json.parquet", "rejections.parquet",
                          "inventory.json", "inventory.md"}
    assert first == second


def test_outputs_do_not_depend_on_the_hash_seed(built, tmp_path):
    """Another process with another PYTHONHASHSEED writes the same bytes."""
    out, _ = built
    code = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from pathlib import Path\n"
        "from test_bench_build import PARAMS, _units, extract\n"
        "from treeagent.bench import build\n"
        f"build.build(build.BuildParams(**PARAMS), _units(), Path({str(tmp_path)!r}), extract=extract)\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=600)
    assert _files(out) == _files(tmp_path)


def test_every_cell_is_filled_and_every_example_reads_back_valid(built):
    out, result = built
    inv = json.loads((out / "inventory.json").read_text())
    assert inv["examples"] == 2 * 8 and inv["rejected"] == 0
    assert all(n == 1 for f in inv["counts"].values() for t in f.values() for n in t.values())
    examples = list(io.read_examples(out / "examples" / "json.parquet"))
    assert len(examples) == 8
    for ex in examples:
        assert validate.sha256(ex.context) == io.read_rows(
            out / "examples" / "json.parquet")[examples.index(ex)]["context_hash"]
        assert 1946 <= ex.tokens["qwen3"] <= 2048 and set(ex.tokens) == {"qwen3", "qwen2.5"}
        pieces = validate.unit_pieces("json", ex.context)
        recs = [r for p in pieces for r in extract("json", "test", p)]
        got, _ = validate.execute(ex.spec, recs)
        assert validate.same_answer(ex.task, got, ex.answer)
    table = pq.read_table(out / "examples" / "json.parquet")
    assert {"tokens_qwen3", "tokens_qwen2_5", "unit_ids", "content_hash"} <= set(table.column_names)
    assert "| one_field | 1 |" in (out / "inventory.md").read_text()
    # the question-quality report: every kept example confirmed by the second reader
    q = inv["quality"]["json"]
    assert set(q) == set(PARAMS.get("tasks", build.TASKS))
    for task, entry in q.items():
        assert entry["kept"] == 1 and entry["confirmed"] >= entry["kept"], task
        assert entry["samples"] and entry["samples"][0]["question"].endswith(("?", "."))
    assert sum(q["conditional_count"]["count_answers"]["demo-2K"].values()) == 1


def test_js_repos_on_the_command_line_reach_acquire(tmp_path):
    assert cli.js_repos_from_args([f"eslint={tmp_path}", f"babel={tmp_path}"]) == {
        "eslint": str(tmp_path), "babel": str(tmp_path)}


def test_examples_frame_counts_recipes_and_keeps_a_missing_one_null(built, tmp_path):
    """The suites read recipes as unit counts; a null recipe stays null and fails."""
    import pyarrow as pa

    out, _ = built
    path = out / "examples" / "javascript.parquet"
    table = pq.read_table(path)
    lists = table["unit_ids"].to_pylist()
    frame = examples_gate.stored_frame(path)
    assert frame["unit_ids"].tolist() == [len(u) for u in lists] and min(lists, key=len)
    assert frame.drop(columns="unit_ids").equals(table.drop(["unit_ids"]).to_pandas())
    assert examples_gate.run(frame).success
    extra = examples_gate.stored_frame(path, lambda row: {"first_unit": row["unit_ids"][0]})
    assert extra["first_unit"].tolist() == [u[0] for u in lists]
    assert extra.drop(columns="first_unit").equals(frame)
    broken = table.set_column(table.column_names.index("unit_ids"), "unit_ids",
                              pa.array([None] + lists[1:], pa.list_(pa.string())))
    pq.write_table(broken, tmp_path / "broken.parquet")
    frame = examples_gate.stored_frame(tmp_path / "broken.parquet")
    assert frame["unit_ids"].isna().tolist() == [True] + [False] * (len(lists) - 1)
    failed = examples_gate.run(frame).failed
    assert list(failed) == [0] and any("unit_ids" in f for f in failed[0])


def test_failures_are_rejected_with_their_reason_never_dropped(tmp_path):
    def lossy(fmt, source, text):  # the validator's re-extraction misses odd-depth events
        return [r for r in extract(fmt, source, text) if r.fields["depth"] % 2 == 0]

    params = build.BuildParams(formats=("json",), lengths=(2048,), per_cell=2,
                               questions_per_context=2, tasks=("one_field", "conditional_count"))
    units = {"json": make_units("json", 40, 9)}
    result = build.build(params, units, tmp_path, extract=lossy)
    rejected = pq.read_table(tmp_path / "rejections.parquet").to_pylist()
    inv = json.loads((tmp_path / "inventory.json").read_text())
    assert inv["rejected"] == len(rejected) == len(result.rejections)
    kept = {r["id"] for r in result.examples["json"]}
    assert not kept & {r["id"] for r in rejected}
    assert rejected and inv["rejections"]
    assert all(r["reason"] in validate.CHECKS and r["detail"] for r in rejected)
    assert all(r["expectations"].startswith("expect_") for r in rejected)
    assert {r["reason"] for r in rejected} <= {"answer", "unique", "sources", "scope"}
    for r in result.examples["json"]:  # what is kept is right under the lossy reading too
        assert r["task"] in params.tasks


def test_params_are_checked():
    with pytest.raises(ValueError, match="unknown format"):
        build.BuildParams(formats=("xml",))
    with pytest.raises(ValueError, match="unknown task"):
        build.BuildParams(tasks=("five_fields",))
    assert build.BuildParams().families == 160


@pytest.mark.parametrize("name", ["demo", "paper"])
def test_bench_build_takes_the_pipelines_preset(name):
    """One set of presets: ``bench build --preset demo`` builds what
    ``make demo`` builds; options override single fields."""
    import argparse

    from treeagent.pipeline import config

    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    p = config.Params(config.preset(name))
    params, mode = cli.params_from_args(parser.parse_args(["bench", "build", "--preset", name]))
    assert params == build.BuildParams(**p.build_kwargs()) and mode == p["acquire.mode"]
    assert mode == ("sample" if name == "demo" else "mirror")
    params, _ = cli.params_from_args(parser.parse_args(
        ["bench", "build", "--preset", name, "--per-cell", "3", "--seed", "7"]))
    assert (params.per_cell, params.seed, params.lengths) == (3, 7, tuple(p["build.lengths"]))


def test_show_prints_question_answer_spec_and_evidence(built, capsys, monkeypatch):
    out, result = built
    ex = result.examples["json"][0]
    import treeagent.bench.sources as sources

    monkeypatch.setattr(sources, "records_from_text", extract)
    assert main(["bench", "show", ex["id"], "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert ex["question"] in text and "answer:" in text and '"op"' in text
    assert "line " in text and "unit " in text


@pytest.mark.parametrize("argv, message", [
    (["bench", "show", "json-one_field-demo-2K-f999-q0"], "no such example"),
    (["bench", "show", "nonsense"], "not an example id"),
    (["bench", "build", "--formats", "xml"], "unknown format"),
    (["bench", "build", "--lengths", "3Q"], "unknown length"),
    (["bench", "build", "--per-cell", "0"], "must be positive"),
    (["bench", "build", "--js-repo", "eslint"], "expected NAME=PATH"),
    (["bench", "build", "--js-repo", "jquery=/tmp"], "unknown repository 'jquery'"),
    (["bench", "build", "--js-repo", "eslint=/nonexistent/eslint"], "does not exist"),
])
def test_bad_cli_input_is_one_line_and_exit_2(built, argv, message, capsys):
    out, _ = built
    assert main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and err.startswith("error: ")


def test_quality_report_counts_distinct_questions_per_length():
    rows = [{"task": "one_field", "bucket": b, "question": q, "answer": "1", "id": f"x{i}"}
            for i, (b, q) in enumerate([("8K", "a?"), ("8K", "a?"), ("8K", "b?"),
                                        ("16K", "a?")])]
    q = build.question_quality(rows, rows, ["one_field"])["one_field"]
    assert q["distinct_questions"] == {"8K": [2, 3], "16K": [1, 1]}
    lines = build.quality_lines({"quality": {"json": {"one_field": q}}})
    assert "    distinct questions: 8K 2/3, 16K 1/1" in lines
