"""``treeagent sections``: JSON output contract and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from treeagent.cli import main as cli
from treeagent.tokenizers.tokens import load

SAMPLE = Path(__file__).resolve().parents[1] / "src" / "treeagent" / "samples" / "usgs_events.json"


def run(capsys, *argv):
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_json_output_contract(capsys):
    code, out, err = run(capsys, "sections", str(SAMPLE), "--budget", "512", "--json")
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert set(doc) == {"file", "format", "tokenizer", "tokens", "base_budget", "flat_count",
                        "budget", "sections", "links"}
    text = SAMPLE.read_text(encoding="utf-8")
    tk = load("qwen3")
    assert doc["tokens"] == tk.count(text)
    assert doc["flat_count"] == -(-doc["tokens"] // 512)
    assert 512 <= doc["budget"] <= 1023
    for i, s in enumerate(doc["sections"]):
        assert s["index"] == i and s["kind"] in {"subtree", "siblings", "span"}
        assert s["tokens"] == tk.count(text[s["start"]:s["end"]])
        assert s["tokens"] <= doc["budget"] or s["atomic"]
    assert doc["sections"][1]["path"].startswith("$.features")
    for i, t in doc["links"]:
        assert 0 <= i < t < len(doc["sections"])


def test_no_search_uses_c(capsys):
    code, out, _ = run(capsys, "sections", str(SAMPLE), "--budget", "512", "--no-search", "--json")
    assert code == 0 and json.loads(out)["budget"] == 512


def test_human_output_has_summary(capsys):
    code, out, _ = run(capsys, "sections", str(SAMPLE), "--budget", "700")
    assert code == 0
    assert "Flat at C=700" in out and "B*=" in out and out.count(" tokens") > 3


@pytest.mark.parametrize(
    "content, expected",
    [
        (b'{"a": 1,\n "b": }', ":2:7: Expecting value"),
        (b'{"a": [1, 2}', ":1:12:"),
        (b"", ":1:1: empty JSON document"),
        (b'{"a": "\xff"}', ":1:8: not valid UTF-8"),
        (b"[NaN]", ":1:1: NaN is not valid JSON"),
    ],
)
def test_malformed_input_one_line_error(tmp_path, capsys, content, expected):
    f = tmp_path / "bad.json"
    f.write_bytes(content)
    code, out, err = run(capsys, "sections", str(f))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"error: {f}") and expected in err


def test_missing_file_and_bad_options(tmp_path, capsys):
    code, _, err = run(capsys, "sections", str(tmp_path / "none.json"))
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1
    code, _, err = run(capsys, "sections", str(SAMPLE), "--tokenizer", "nope")
    assert code == 2 and "unknown tokenizer" in err
    code, _, err = run(capsys, "sections", str(SAMPLE), "--budget", "0")
    assert code == 2 and "--budget" in err


def test_console_script_exit_code(tmp_path):
    f = tmp_path / "bad.json"
    f.write_text("[1, 2")
    proc = subprocess.run([sys.executable, "-m", "treeagent.cli.main", "sections", str(f)],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith(f"error: {f}:1:")


@pytest.mark.parametrize(
    "name, content, expected",
    [
        ("bad.js", "const x = {a: [1, 2};\n", ":1:20: syntax error (missing ']')"),
        ("bad.yaml", 'a: !!python/object/apply:os.system ["ls"]\n', ":1:4: unsupported YAML tag"),
        ("dup.yaml", "a: 1\na: 2\n", ":2:1: duplicate key"),
        ("empty.html", "   \n", ":1:1: empty HTML document"),
    ],
)
def test_other_formats_one_line_errors(tmp_path, capsys, name, content, expected):
    f = tmp_path / name
    f.write_text(content)
    code, out, err = run(capsys, "sections", str(f))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"error: {f}") and expected in err


def test_javascript_sections_paths(tmp_path, capsys):
    f = tmp_path / "c.js"
    f.write_text('export const config = {\n  rules: {"no-var": ["error", {a: 1}]},\n'
                 '  list: [1, -0, "x", `tpl`],\n};\n')
    code, out, _ = run(capsys, "sections", str(f), "--budget", "8", "--no-search", "--json")
    assert code == 0
    paths = [s["path"] for s in json.loads(out)["sections"]]
    tk = load("qwen3")
    assert tk.count('1, -0, "x"') <= 8 < tk.count('1, -0, "x", `tpl`')  # greedy grouping
    assert "$.config.rules['no-var'][1]" in paths and "($.config.list, [0, 2])" in paths
    assert paths[-1] == "$.config.list[3]"


def test_on_error_fallback_warns_and_sections_plain_text(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    text = '{"a": [1, 2,\n  "b": }' + " trailing words" * 12
    bad.write_text(text, encoding="utf-8")
    code, out, err = run(capsys, "sections", str(bad), "--budget", "8", "--tokenizer",
                         "cl100k_base", "--on-error", "fallback", "--json", "--text")
    assert code == 0
    assert err == f"warning: {bad}:2:6: Expecting ',' delimiter; sectioned as plain text\n"
    data = json.loads(out)
    assert data["fallback"] is True and data["parse_error"].startswith(f"{bad}:2:6: ")
    count = load("cl100k_base").count
    assert "".join(s["text"] for s in data["sections"]) == text
    assert all(s["kind"] == "text" and s["tokens"] == count(s["text"]) <= 8
               for s in data["sections"])
    # raise (the default) keeps the one-line error and status 2
    code, out, err = run(capsys, "sections", str(bad), "--budget", "8")
    assert code == 2 and out == "" and err == f"error: {bad}:2:6: Expecting ',' delimiter\n"


def test_on_error_fallback_leaves_valid_input_alone(capsys):
    usgs = Path(__file__).parents[1] / "src" / "treeagent" / "samples" / "usgs_events.json"
    argv = ("sections", str(usgs), "--budget", "512", "--tokenizer", "cl100k_base", "--json")
    code, plain, _ = run(capsys, *argv)
    code2, fallback, err = run(capsys, *argv, "--on-error", "fallback")
    assert code == code2 == 0 and err == "" and plain == fallback


def test_the_summary_line_says_one_section_in_the_singular(tmp_path, capsys):
    doc = tmp_path / "one.json"
    doc.write_text('{"a": 1}', encoding="utf-8")
    code, out, _ = run(capsys, "sections", str(doc), "--budget", "512")
    assert code == 0
    summary = out.splitlines()[-1]
    assert "Flat at C=512: 1 section; B*=" in summary and summary.endswith(
        ": 1 section, 0 residual links")
