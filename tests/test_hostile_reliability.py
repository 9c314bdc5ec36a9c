"""Reliability under bad input, faults and corrupt artifacts: a BOM read as the encoding
says; malformed 200 replies retried and counted; ``--timeout`` bounding each attempt;
out-of-range options refused; a trace that is written as the run goes (kept by a killed
run) and whose write failure never costs the answer; a summary counting requests,
retries and cache hits; ``query`` without file access; links out of the mirror refused."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loopback_server import LoopbackOpenAI
from test_hostile_servers import HostileServer, _ask, _completion, _engine, _head
from treeagent import formats
from treeagent.cli import main as cli

DOC = str(Path(__file__).resolve().parents[1] / "src/treeagent/samples/usgs_events.json")
TRANSPORTS = ["httpx", "aiohttp", "httptools"]
BOM = b"\xef\xbb\xbf"
YAML_DOC = b"station: A1\nreadings:\n  - 3\n  - 4\nunit: C\n"


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _one_line_error(err: str, *needles: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for n in needles:
        assert n in lines[0], (n, err)
    return lines[0]


def _openai(url: str, doc: str = DOC, *extra: str) -> list[str]:
    return ["run", doc, "-q", "magnitude?", "--engine", "openai", "--model", "m",
            "--base-url", url, "--tokenizer", "cl100k_base", "--budget", "2000",
            "--max-new-tokens", "8", "--revision", "loop-rev", *extra]


# ------------------------------------------------------------------ 1: byte-order mark


def test_a_yaml_file_with_a_bom_is_read(tmp_path, capsys, monkeypatch):
    path = tmp_path / "station.yaml"
    path.write_bytes(BOM + YAML_DOC)
    code, out, err = _run(capsys, "sections", path, "--tokenizer", "cl100k_base", "--json")
    assert code == 0, err
    plain = tmp_path / "plain.yaml"
    plain.write_bytes(YAML_DOC)
    _, same, _ = _run(capsys, "sections", plain, "--tokenizer", "cl100k_base", "--json")
    assert [s["path"] for s in json.loads(out)["sections"]] == \
        [s["path"] for s in json.loads(same)["sections"]]
    text = formats.read_document(path)
    assert len(text) == len(YAML_DOC.decode()) + 1  # offsets stay those of the file
    assert formats.parse(text, "yaml").root is not None

    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(BOM + YAML_DOC)))
    code, _, err = _run(capsys, "sections", "-", "--format", "yaml",
                        "--tokenizer", "cl100k_base")
    assert code == 0, err


def test_run_reads_a_yaml_file_with_a_bom(tmp_path, capsys):
    path = tmp_path / "station.yaml"
    path.write_bytes(BOM + YAML_DOC)

    async def reply(body, writer):
        text = _completion("ANSWER: 4")
        writer.write(_head(200, len(text)) + text)

    with HostileServer(reply) as server:
        code, out, err = _run(capsys, *_openai(server.url, str(path)))
    assert code == 0, err
    assert out.splitlines()[0] == "4"


# ------------------------------------------------------------------ 2: malformed 200s


@pytest.mark.parametrize("fault", ["notjson", "nochoices", "nullcontent"])
def test_malformed_200_replies_are_retried_and_counted(fault):
    with LoopbackOpenAI(faults=lambda prompt, attempt: fault if attempt <= 2 else None) as s:
        eng = _engine(s.url, "httptools", max_retries=3)
        r = asyncio.run(_complete(eng, _ask("hello")))
    assert r.text == "echo:hello", r.error
    assert s.arrivals["hello"] == 3
    assert eng.stats["malformed"] == 2 and eng.stats["retries"] == 2
    assert eng.stats["requests"] == 3


def test_malformed_replies_past_the_retries_leave_the_call_unavailable():
    with LoopbackOpenAI(faults=lambda prompt, attempt: "notjson") as s:
        eng = _engine(s.url, "httpx", max_retries=1)
        r = asyncio.run(_complete(eng, _ask("hello")))
    assert r.text is None and "retries exhausted (1)" in r.error and "not JSON" in r.error
    assert s.arrivals["hello"] == 2


def test_a_run_under_malformed_replies_answers_every_question_and_counts_them():
    """Every fourth prompt gets an HTML page, then JSON without choices, before its
    answer: all 64 programs are answered and the run's totals count the extra attempts."""
    from treeagent.llm import run_programs

    def faults(prompt: str, attempt: int) -> str | None:
        if int(prompt.removeprefix("q")) % 4 == 0 and attempt <= 2:
            return ("notjson", "nochoices")[attempt - 1]
        return None

    def one(prompt: str):
        reply = yield _ask(prompt)
        return reply.text

    with LoopbackOpenAI(latency=0.01, faults=faults) as s:
        eng = _engine(s.url, "httptools", max_retries=3, concurrency=16)
        out = run_programs([(f"q{i}", one(f"q{i}")) for i in range(64)], eng,
                           progress=False)
        asyncio.run(eng.aclose())
    assert all(out[f"q{i}"].result == f"echo:q{i}" for i in range(64))
    assert out.totals.requests == len(s.seen) == 64 + 2 * 16
    assert out.totals.retries == 2 * 16 and out.totals.unavailable == 0


async def _complete(eng, request):
    try:
        return await eng.complete(request)
    finally:
        await eng.aclose()


# ------------------------------------------------------------------ 8: --timeout per attempt


@pytest.mark.parametrize("http_client", TRANSPORTS)
def test_timeout_bounds_one_attempt_against_a_trickling_server(http_client):
    async def reply(body, writer):  # one byte every 0.1 s, never the whole body
        writer.write(_head(200, 10_000))
        for _ in range(600):
            writer.write(b" ")
            await writer.drain()
            await asyncio.sleep(0.1)

    with HostileServer(reply) as server:
        eng = _engine(server.url, http_client, timeout=0.5, deadline=60.0, max_retries=1)
        t0 = time.perf_counter()
        r = asyncio.run(_complete(eng, _ask()))
        elapsed = time.perf_counter() - t0
    assert r.text is None and "retries exhausted (1)" in r.error and "timeout" in r.error
    assert elapsed < 3.0 and server.requests == 2


# ------------------------------------------------------------------ 7: option ranges


@pytest.mark.parametrize("flags,needle", [
    (["--max-new-tokens", "0"], "--max-new-tokens: must be a positive number of tokens"),
    (["--max-new-tokens", "-3"], "--max-new-tokens: must be a positive number of tokens"),
    (["--context-window", "1"], "--context-window: 1 tokens"),
    (["--context-window", "0"], "--context-window: 0 tokens"),
    (["--context-window", "8"], "--context-window: 8 tokens"),
])
def test_out_of_range_options_are_refused(capsys, flags, needle):
    with LoopbackOpenAI() as s:
        argv = [a for a in _openai(s.url) if a not in ("--max-new-tokens", "8")]
        code, out, err = _run(capsys, *argv, *flags)
        assert s.seen == []
    assert code == 2 and out == ""
    _one_line_error(err, needle)


def test_a_context_window_that_holds_the_calls_is_taken(capsys):
    with LoopbackOpenAI() as s:
        code, _, err = _run(capsys, *_openai(s.url), "--context-window", "4096")
    assert code == 0, err


def test_a_null_content_reply_is_a_failed_call(capsys):
    with LoopbackOpenAI(faults=lambda prompt, attempt: "nullcontent") as s:
        code, out, err = _run(capsys, *_openai(s.url), "--retries", "0")
    assert code == 1
    assert "no content" in err and "Traceback" not in err


# ------------------------------------------------------------------ 6: summary counts

SUMMARY = re.compile(r"^calls (\d+) \(requests (\d+), retries (\d+), cache hits (\d+)\), "
                     r"input tokens \d+, output tokens \d+, seconds \d+\.\d$")


def test_summary_counts_requests_retries_and_cache_hits(tmp_path, capsys, monkeypatch):
    import treeagent.llm

    make = treeagent.llm.make_engine  # a pinned revision: its replies may be reused
    monkeypatch.setattr(treeagent.llm, "make_engine",
                        lambda *a, **o: make(*a, **{**o, "revision": "0123abcd"}))
    cache = tmp_path / "calls.sqlite"
    with LoopbackOpenAI(faults=lambda prompt, attempt: "500" if attempt == 1 else None) as s:
        code, out, err = _run(capsys, *_openai(s.url), "--cache", cache)
        sent = len(s.seen)
    assert code == 0, err
    calls, requests, retries, hits = map(int, SUMMARY.match(out.splitlines()[1]).groups())
    assert requests == sent == 2 * calls and retries == calls and hits == 0
    with LoopbackOpenAI() as s:
        code, out, err = _run(capsys, *_openai(s.url), "--cache", cache)
        assert s.seen == []
    again = tuple(map(int, SUMMARY.match(out.splitlines()[1]).groups()))
    assert again == (calls, 0, 0, calls)


# ------------------------------------------------------------------ 5, 10: the trace


def test_the_answer_is_printed_when_the_trace_cannot_be_written(capsys):
    with LoopbackOpenAI() as s:
        code, out, err = _run(capsys, *_openai(s.url), "--trace", "/dev/full")
    assert len(out.splitlines()) == 2 and SUMMARY.match(out.splitlines()[1])
    errors = [line for line in err.splitlines()  # less notes and the progress line
              if not line.startswith(("note: ", "run usgs_events.json: "))]
    line = _one_line_error("\n".join(errors), "--trace: /dev/full", "No space left on device")
    assert "Traceback" not in err and "the trace is not" in line
    assert code == 1


def test_a_killed_run_keeps_the_calls_it_made(tmp_path):
    trace = tmp_path / "t.jsonl"
    with LoopbackOpenAI(faults=lambda prompt, attempt: "hang" if len(s.seen) > 2 else None
                        ) as s:
        argv = _openai(s.url, DOC, "--trace", str(trace))
        code = "import sys; from treeagent.cli.main import main; sys.exit(main(sys.argv[1:]))"
        proc = subprocess.Popen([sys.executable, "-c", code, *argv],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 60
            while len(s.seen) < 3 and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.05)
            assert len(s.seen) >= 3, proc.stderr.read() if proc.poll() is not None else ""
            time.sleep(0.3)
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
    rows = [json.loads(line) for line in trace.read_text().splitlines()]
    assert len(rows) == 2
    assert [r["call"] for r in rows] == [0, 1] and all(r["reply"].startswith("echo:")
                                                       for r in rows)
