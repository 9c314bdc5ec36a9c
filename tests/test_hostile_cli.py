"""The CLI under bad paths and failing servers: one line,
exit 2, before the first call; a hung server costs ``--timeout``; non-regular and
oversized inputs are refused; duplicate keys in params.yaml are named."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest

from test_hostile_servers import HostileServer, _completion, _head
from treeagent.cli import main as cli
from treeagent.pipeline import config

DOC = str(Path(__file__).resolve().parents[1] / "src/treeagent/samples/usgs_events.json")


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _one_line_error(err: str, *needles: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    for n in needles:
        assert n in lines[0], (n, err)


@pytest.fixture()
def counting_server():
    async def reply(body, writer):
        text = _completion("ANSWER: 4.2")
        writer.write(_head(200, len(text)) + text)

    with HostileServer(reply) as server:
        yield server


def _openai(server, *extra: str) -> list[str]:
    return ["run", DOC, "-q", "magnitude?", "--engine", "openai", "--model", "m",
            "--base-url", server.url, "--tokenizer", "cl100k_base", "--budget", "2000",
            "--max-new-tokens", "8", *extra]


def _bad_paths(tmp: Path) -> list[tuple[str, str, str]]:
    (tmp / "folder").mkdir()
    (tmp / "text.txt").write_text("not a database, just text\n" * 10)
    (tmp / "prompts_file").write_text("x")
    bad = tmp / "bad_prompts"
    bad.mkdir()
    (bad / "memagent_memory.txt").write_bytes(b"\xff\xfe not utf-8")
    other = tmp / "other.sqlite"
    import sqlite3

    with sqlite3.connect(other) as c:
        c.execute("CREATE TABLE responses (a INTEGER)")
    return [
        ("--cache", str(tmp / "folder"), "is a folder"),
        ("--cache", str(tmp / "text.txt"), "cannot be used as a call cache"),
        ("--cache", str(tmp / "text.txt" / "calls.sqlite"), "text.txt"),
        ("--cache", str(other), "not a call cache"),
        ("--trace", str(tmp / "missing" / "t.jsonl"), "No such file or directory"),
        ("--trace", str(tmp / "folder"), "is a folder"),
        ("--prompts", str(tmp / "prompts_file"), "not a folder"),
        ("--prompts", str(tmp / "missing"), "not a folder"),
        ("--prompts", str(bad), "--prompts"),
    ]


def test_bad_output_paths_fail_before_the_first_call(tmp_path, capsys, counting_server):
    for flag, value, needle in _bad_paths(tmp_path):
        code, out, err = _run(capsys, *_openai(counting_server, flag, value))
        assert code == 2, (flag, value, err)
        _one_line_error(err, flag, needle)
    assert counting_server.requests == 0


def test_good_paths_still_work(tmp_path, capsys, counting_server):
    trace = tmp_path / "t.jsonl"
    code, out, err = _run(capsys, *_openai(counting_server, "--cache", str(tmp_path / "c.db"),
                                           "--trace", str(trace)))
    assert code == 0, err
    assert counting_server.requests >= 1
    assert all(json.loads(line) for line in trace.read_text().splitlines())


@pytest.mark.parametrize("url", ["htp://127.0.0.1/v1", "http://127.0.0.1:70000/v1",
                                 "http:// spaced/v1"])
def test_invalid_base_url_exits_2_at_once(capsys, url):
    t0 = time.perf_counter()
    code, _, err = _run(capsys, "run", DOC, "-q", "x", "--engine", "openai", "--model", "m",
                        "--base-url", url)
    assert code == 2 and time.perf_counter() - t0 < 5
    _one_line_error(err, "--base-url", "invalid base URL")


@pytest.mark.parametrize("flags,needle", [
    (["--timeout", "0"], "--timeout: must be positive"),
    (["--timeout", "nan"], "--timeout: must be positive"),
    (["--retries", "-1"], "--retries: must be >= 0"),
])
def test_bad_timeout_and_retries_values(capsys, counting_server, flags, needle):
    code, _, err = _run(capsys, *_openai(counting_server, *flags))
    assert code == 2
    _one_line_error(err, needle)
    assert counting_server.requests == 0


def test_timeout_on_the_local_engine_is_refused(capsys):
    code, _, err = _run(capsys, "run", DOC, "-q", "x", "--timeout", "5")
    assert code == 2
    _one_line_error(err, "--timeout: applies to --engine openai or vllm")


def test_a_hung_server_costs_the_timeout_not_an_hour(capsys):
    async def reply(body, writer):
        await asyncio.sleep(60)

    with HostileServer(reply) as server:
        t0 = time.perf_counter()
        code, out, err = _run(capsys, *_openai(server, "--timeout", "0.3", "--retries", "1"))
        elapsed = time.perf_counter() - t0
        asked = server.requests
    assert code == 1 and "Traceback" not in err
    assert 1 <= asked <= 2 * 8  # at most retries+1 per call, and few calls
    assert elapsed < 30  # each call ends at its 0.6 s deadline


# ------------------------------------------------------------------ inputs (item 3)


def test_fifo_and_devices_are_refused_without_blocking(tmp_path, capsys):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    for path in (str(fifo), "/dev/zero", str(tmp_path)):
        t0 = time.perf_counter()
        code, _, err = _run(capsys, "sections", path, "--tokenizer", "cl100k_base")
        assert code == 2 and time.perf_counter() - t0 < 5
        _one_line_error(err, path, "not a regular file")


def test_input_size_cap(tmp_path, capsys):
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"a": "x" * (3 * 2**20)}))
    code, _, err = _run(capsys, "sections", str(big), "--max-input-mb", "2",
                        "--tokenizer", "cl100k_base")
    assert code == 2
    _one_line_error(err, str(big), "over the input cap of 2097152 bytes")
    code, _, err = _run(capsys, "sections", str(big), "--max-input-mb", "0")
    _one_line_error(err, "--max-input-mb")


# ------------------------------------------------------------------ params (item 9)


def test_duplicate_keys_in_params_are_refused_naming_the_key(tmp_path):
    text = config.dump(config.preset("demo"))
    config.validate(__import__("yaml").safe_load(text))  # the preset itself is fine
    p = tmp_path / "params.yaml"
    p.write_text(text + "engine:\n  name: vllm\n  options: {}\n")
    with pytest.raises(config.ParamsError) as err:
        config.load(p)
    message = str(err.value)
    line = text.count("\n") + 1
    assert f"{line}:1: not valid YAML: duplicate key 'engine'" in message and str(p) in message
    nested = tmp_path / "nested.yaml"
    nested.write_text(text.replace("engine:\n", "engine:\n  name: openai\n", 1))
    with pytest.raises(config.ParamsError, match="duplicate key 'name'"):
        config.load(nested)


def test_capped_replies_are_reported(capsys):
    long = " ".join(f"w{i}" for i in range(3000))

    async def reply(body, writer):
        text = _completion(long, completion_tokens=2)  # ignores max_tokens
        writer.write(_head(200, len(text)) + text)

    with HostileServer(reply) as server:
        code, out, err = _run(capsys, *_openai(server))
    assert "note: replies refused over max_reply_bytes 0, cut to max_tokens " in err
    n = int(err.split("cut to max_tokens ")[1].split(",")[0])
    assert n >= 1 and "Traceback" not in err


def test_timeout_and_retries_are_engine_options_in_params(tmp_path):
    import yaml

    from treeagent.llm import make_engine

    data = config.preset("demo")
    data["engine"] = {"name": "openai", "options": {
        "base_urls": ["http://127.0.0.1:8000/v1"], "timeout": 30, "max_retries": 2,
        "deadline": 45, "max_reply_bytes": 2**20}}
    p = tmp_path / "params.yaml"
    p.write_text(yaml.safe_dump(data))
    params = config.load(p)
    agent = next(iter(params.data["agents"]))
    name, kwargs = params.engine_spec(agent)
    eng = make_engine(name, **kwargs)
    assert (eng.timeout, eng.max_retries, eng.deadline, eng.max_reply_bytes) == \
        (30, 2, 45, 2**20)
    data["engine"]["options"]["base_urls"] = ["ftp://x"]
    p.write_text(yaml.safe_dump(data))
    name, kwargs = config.load(p).engine_spec(agent)
    with pytest.raises(ValueError, match="invalid base URL"):
        make_engine(name, **kwargs)
