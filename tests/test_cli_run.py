"""``treeagent run``: input errors, output format, trace, prompts and cache; one real
SmolLM2 run."""

from __future__ import annotations

import json
import re

import pytest

import treeagent.llm
from test_agents_double import ScriptedEngine
from treeagent.cli.main import main

DOC = ('{"stations":[{"id":"A1","city":"Oslo","temp":-3},'
       '{"id":"B2","city":"Lima","temp":19}],"unit":"C"}')
Q = "What is the temperature at the station in Lima?"
COST = re.compile(r"^calls (\d+) \(requests \d+, retries \d+, cache hits \d+\), input tokens (\d+), output tokens (\d+), seconds \d+\.\d$")


@pytest.fixture
def doc(tmp_path):
    path = tmp_path / "stations.json"
    path.write_text(DOC, encoding="utf-8")
    return path


@pytest.fixture
def double(monkeypatch):
    """Make ``treeagent run`` use a scripted engine instead of loading a model."""
    engines: list[ScriptedEngine] = []

    def make(name, model=None, **options):
        script = options.pop("script", None)
        engine = ScriptedEngine(script or (lambda r: "temp 19" if r.kind == "memory"
                                           else "The answer is \\boxed{19}."))
        engine.options = {"name": name, "model": model, **options}
        engines.append(engine)
        return engine

    monkeypatch.setattr(treeagent.llm, "make_engine", make)
    return engines


def _run(capsys, *args):
    status = main(["run", *map(str, args)])
    out, err = capsys.readouterr()
    return status, out, err


def test_prints_the_answer_and_one_cost_line(doc, double, capsys, tmp_path):
    trace = tmp_path / "trace.jsonl"
    status, out, err = _run(capsys, doc, "-q", Q, "--tokenizer", "qwen3", "--budget", 24,
                            "--agent", "rememr1", "--method", "treeagent", "--trace", trace)
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0] == "19" and len(lines) == 2
    calls, tokens_in, tokens_out = map(int, COST.match(lines[1]).groups())
    assert calls == len(double[0].requests) == 3 and tokens_in > 0 and tokens_out > 0
    rows = [json.loads(x) for x in trace.read_text().splitlines()]
    assert [r["kind"] for r in rows] == ["memory", "memory", "answer"]
    assert rows[0]["example_id"] == str(doc) and rows[0]["method"] == "treeagent"
    assert double[0].options["name"] == "transformers"


def test_engine_options_and_base_urls(doc, double, capsys):
    status, _, err = _run(capsys, doc, "-q", Q, "--tokenizer", "qwen3", "--engine", "openai",
                          "--model", "served-name", "--base-url", "http://127.0.0.1:1/v1",
                          "http://127.0.0.1:2/v1", "--base-url", "http://127.0.0.1:3/v1")
    assert status == 0, err
    assert double[0].options == {"name": "openai", "model": "served-name",
                                 "base_urls": ["http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1",
                                               "http://127.0.0.1:3/v1"]}


def test_user_prompts_and_cache(doc, double, capsys, tmp_path):
    folder = tmp_path / "prompts"
    folder.mkdir()
    (folder / "memagent_answer.txt").write_text("MY ANSWER PROMPT {prompt} {memory}")
    cache = tmp_path / "calls.sqlite"
    args = (doc, "-q", Q, "--tokenizer", "qwen3", "--method", "flat", "--budget", 24,
            "--prompts", folder, "--cache", cache)
    assert _run(capsys, *args)[0] == 0
    assert double[0].prompt(2).startswith("MY ANSWER PROMPT " + Q)
    status, out, _ = _run(capsys, *args)
    assert status == 0 and double[1].requests == []  # every call came from the cache
    assert out.splitlines()[0] == "19"


def test_unavailable_response_prints_an_empty_answer_and_fails(doc, monkeypatch, capsys):
    monkeypatch.setattr(treeagent.llm, "make_engine",
                        lambda name, model=None, **o: ScriptedEngine(lambda r: None))
    status, out, err = _run(capsys, doc, "-q", Q, "--tokenizer", "qwen3", "--budget", 24)
    assert status == 1
    lines = out.splitlines()
    assert lines[0] == "" and COST.match(lines[1]).group(1) == "1"
    assert err.splitlines()[-1].startswith("error: no answer: memory call unavailable")


@pytest.mark.parametrize(
    ("content", "suffix", "expected"),
    [
        ('{"a": [1, 2,, 3]}', ".json", r":1:\d+: "),
        ("a: [1, 2\nb: 3\n", ".yaml", r":\d+:\d+: "),
        (b'{"a": "\xff"}', ".json", r":1:8: not valid UTF-8$"),
    ],
)
def test_bad_input_is_one_error_line_with_place(tmp_path, capsys, content, suffix, expected):
    path = tmp_path / f"bad{suffix}"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    status, out, err = _run(capsys, path, "-q", Q)
    assert status == 2 and out == ""
    assert len(err.splitlines()) == 1
    assert re.match(rf"^error: {re.escape(str(path))}{expected}", err.strip()), err


def test_other_usage_errors(doc, tmp_path, capsys, double):
    status, _, err = _run(capsys, tmp_path / "absent.json", "-q", Q)
    assert status == 2 and err.startswith(f"error: {tmp_path / 'absent.json'}: ")
    assert _run(capsys, doc, "-q", Q, "--budget", 0)[0] == 2
    status, _, err = _run(capsys, doc, "-q", Q, "--prompts", tmp_path / "nope")
    assert status == 2 and err.startswith("error: --prompts: ")
    status, _, err = _run(capsys, doc, "-q", Q, "--tokenizer", "qwen3", "--task", "x")
    assert status == 2 and "unknown task" in err
    status, _, err = _run(capsys, doc, "-q", Q)  # a double has no local tokenizer
    assert status == 2 and err.startswith("error: --tokenizer: ")
    with pytest.raises(SystemExit):
        main(["run", str(doc)])  # --question is required
    capsys.readouterr()


def test_real_smollm2_run(doc, capsys, tmp_path):
    trace = tmp_path / "t.jsonl"
    status, out, err = _run(capsys, doc, "-q", Q, "--agent", "memagent", "--method", "flat",
                            "--budget", 24, "--max-new-tokens", 4, "--trace", trace)
    assert status == 0, err
    lines = out.splitlines()
    assert len(lines) == 2
    assert COST.match(lines[1]).group(1) == "3"
    assert len(trace.read_text().splitlines()) == 3
