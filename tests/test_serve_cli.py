"""``treeagent serve``: --dry-run prints the exact command lines; bad input is one line,
exit 2; a foreground run prints the URLs, and Ctrl-C / SIGTERM stop every server. The
servers are the TEST DOUBLE tests/vllm_serve_double.py run in place of the vllm binary
(``TREEAGENT_VLLM_BIN``): the CPU build of vLLM is not installed where these tests run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from test_serve import DOUBLE, PAPER, alive, free_ports, records
from treeagent.cli.main import main
from treeagent.pipeline import config


def write_params(path: Path, **serve_keys) -> Path:
    data = config.preset("paper")
    data["serve"].update(serve_keys)
    path.write_text(yaml.safe_dump(data))
    return path


def test_dry_run_prints_the_exact_command_lines(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("TREEAGENT_VLLM_BIN", raising=False)
    params = write_params(tmp_path / "params.yaml")
    assert main(["serve", "--params", str(params), "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 8
    assert lines[5] == (
        "CUDA_VISIBLE_DEVICES=5 .venv-vllm/bin/vllm serve iiiiGray/MemReread-4B --revision main "
        "--host 127.0.0.1 --port 18105 --served-model-name iiiiGray/MemReread-4B "
        "--tensor-parallel-size 1 --enable-prefix-caching --seed 42 --dtype auto "
        "--max-num-seqs 256 --disable-uvicorn-access-log --max-model-len 40960 "
        "--gpu-memory-utilization 0.9")
    assert [line.split()[0] for line in lines] == [f"CUDA_VISIBLE_DEVICES={g}" for g in range(8)]
    assert [line.split()[3] for line in lines] == [m for _, m, _ in PAPER for _ in range(2)]


@pytest.mark.parametrize(("keys", "message"), [
    ({"gpus": [0, 1, 2]}, "serve.gpus: 4 agents x 2 replicas x tensor_parallel 1 need 8 GPUs; "
                          "3 listed"),
    ({"replicas": 0}, "serve.replicas: 0 is below the minimum 1"),
])
def test_bad_params_one_line_exit_2(tmp_path, capsys, keys, message):
    params = write_params(tmp_path / "params.yaml", **keys)
    assert main(["serve", "--params", str(params), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {params}: {message}\n"


def test_foreground_run_prints_urls_and_stops_on_signals(tmp_path):
    record = tmp_path / "starts.jsonl"
    vllm = tmp_path / "bin" / "vllm"  # the double stands in for the vllm binary
    vllm.parent.mkdir()
    vllm.write_text(f"#!/bin/sh\nexec {sys.executable} {DOUBLE} \"$@\"\n")
    vllm.chmod(0o755)
    env = {**os.environ, "TREEAGENT_VLLM_BIN": str(vllm), "VLLM_DOUBLE_RECORD": str(record),
           "TREEAGENT_CACHE_DIR": str(tmp_path / "cache")}
    for stop in (signal.SIGINT, signal.SIGTERM):
        record.unlink(missing_ok=True)
        first = free_ports(8)
        params = write_params(tmp_path / "params.yaml", port=first)
        # as from a terminal: SIGINT at its default even where the suite itself was started
        # with SIGINT ignored (a background job of a script), which a child would inherit
        interactive = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            proc = subprocess.Popen([sys.executable, "-m", "treeagent", "serve", "--params",
                                     str(params), "--start-timeout", "60"], env=env,
                                    text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        finally:
            signal.signal(signal.SIGINT, interactive)
        assert proc.stdout is not None
        try:
            lines = [proc.stdout.readline() for _ in range(5)]
            assert lines[0] == (f"memagent: http://127.0.0.1:{first}/v1 "
                                f"http://127.0.0.1:{first + 1}/v1\n")
            assert lines[4].startswith("export TREEAGENT_SERVERS=")
            table = json.loads(lines[4].split("=", 1)[1].strip().strip("'"))
            assert table["rememr1"] == [f"http://127.0.0.1:{first + 6}/v1",
                                        f"http://127.0.0.1:{first + 7}/v1"]
            proc.send_signal(stop)
            # stopping is bounded by the grace period (20 s), a SIGKILL wait of up to 5 s
            # per server and 10 s for stray group members: up to 70 s on a busy machine
            assert proc.wait(120) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
        assert "stopping the servers" in proc.stderr.read()
        started = records(record)
        assert sorted(r["cuda"] for r in started) == [str(g) for g in range(8)]
        assert [pid for r in started for pid in (r["pid"], r["worker"]) if alive(pid)] == []
