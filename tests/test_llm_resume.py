"""kill -9 in the middle of a run, then rerun: no answered call repeated, none lost."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from treeagent.llm import Message, Request, Sampling, prompt_hash

TESTS = Path(__file__).parent
PROGRAMS, STEPS = 12, 5
DRIVER = f"""
import json, sys
from treeagent.llm import Message, Request, Sampling, make_engine, run_programs

def chain(name):
    memory = "m"
    for t in range({STEPS}):
        reply = yield Request((Message("user", f"{{name}} step {{t}} after {{memory[-6:]}}"),),
                              Sampling(max_tokens=8))
        memory = reply.text
    return memory

if __name__ == "__main__":
    url, db, out = sys.argv[1:4]
    engine = make_engine("openai", "loop-model", base_urls=[url], timeout=30,
                         revision="loop-r1")  # a known revision: calls are cached
    outcomes = run_programs(((f"p{{i}}", chain(f"p{{i}}")) for i in range({PROGRAMS})),
                            engine, db, concurrency=4, progress=False)
    json.dump({{k: o.result for k, o in outcomes.items()}}, open(out, "w"))
"""


def expected(name: str) -> tuple[list[str], str]:
    prompts, memory = [], "m"
    for t in range(STEPS):
        prompts.append(f"{name} step {t} after {memory[-6:]}")
        memory = "echo:" + prompts[-1]
    return prompts, memory


def answered(db: Path) -> int:
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_kill_9_midway_then_resume(tmp_path) -> None:
    log, db, out = tmp_path / "server.log", tmp_path / "calls.sqlite", tmp_path / "out.json"
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    server = subprocess.Popen(
        [sys.executable, str(TESTS / "loopback_server.py"), "--latency", "0.15", "--log", str(log)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{server.stdout.readline().split()[1]}/v1"
        first = subprocess.Popen([sys.executable, str(driver), url, str(db), str(out)])
        deadline = time.monotonic() + 60
        while answered(db) < 20 and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        assert first.returncode == -signal.SIGKILL and not out.exists()
        seen_first = len(log.read_text().splitlines())
        with sqlite3.connect(db) as conn:
            done_hashes = {h for (h,) in conn.execute("SELECT prompt_hash FROM journal")}
        assert 20 <= len(done_hashes) < PROGRAMS * STEPS

        second = subprocess.run([sys.executable, str(driver), url, str(db), str(out)], timeout=120)
        assert second.returncode == 0
        asked_again = [json.loads(line) for line in log.read_text().splitlines()[seen_first:]]
    finally:
        server.kill()
        server.wait()

    results = json.loads(out.read_text())
    assert results == {f"p{i}": expected(f"p{i}")[1] for i in range(PROGRAMS)}  # none lost
    assert len(asked_again) == len(set(asked_again))  # each prompt at most once in the rerun
    hash_of = {p: prompt_hash(Request((Message("user", p),), Sampling(8)))
               for i in range(PROGRAMS) for p in expected(f"p{i}")[0]}  # fmt: skip
    assert not {hash_of[p] for p in asked_again} & done_hashes  # no answered call repeated
    with sqlite3.connect(db) as conn:
        keys = [k for (k,) in conn.execute("SELECT key FROM journal WHERE available = 1")]
    assert len(keys) == len(set(keys)) == PROGRAMS * STEPS  # one journal row per call
