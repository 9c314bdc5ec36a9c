"""vLLM servers as pipeline machinery (treeagent.llm.serve).

Command lines are asserted exactly for the paper preset. The lifecycle runs against a
TEST DOUBLE launched as a subprocess in place of ``vllm serve`` (tests/vllm_serve_double.py,
the loopback OpenAI server behind vLLM's command line, with one worker process in its
group): the CPU build of vLLM is not installed where these tests run.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import socket
import sys
from pathlib import Path

import pytest

from treeagent.llm import make_engine, serve
from treeagent.llm.base import Message, Request, Sampling
from treeagent.llm.cache import engine_key
from treeagent.llm.vllm_engine import VLLMEngine
from treeagent.pipeline import config

DOUBLE = str(Path(__file__).resolve().parent / "vllm_serve_double.py")
PAPER = [  # agent, model, request limit (Table 2)
    ("memagent", "BytedTsinghua-SIA/RL-MemoryAgent-7B", 32768),
    ("infmem", "ucmp137538/infmem-4B", 32768),
    ("memreread", "iiiiGray/MemReread-4B", 40960),
    ("rememr1", "yrshi/ReMemR1-7B", 40960),
]


def paper_params(**serve_keys) -> config.Params:
    data = config.preset("paper")
    data["serve"].update(serve_keys)
    return config.validate(data)


def test_paper_preset_command_lines_exactly():
    servers = serve.plan(paper_params(), environ={})
    expected = []
    for i, (_agent, model, limit) in enumerate(PAPER):
        for replica in range(2):
            gpu = port_offset = 2 * i + replica
            expected.append(
                f"CUDA_VISIBLE_DEVICES={gpu} .venv-vllm/bin/vllm serve {model} --revision main "
                f"--host 127.0.0.1 --port {18100 + port_offset} --served-model-name {model} "
                f"--tensor-parallel-size 1 --enable-prefix-caching --seed 42 --dtype auto "
                f"--max-num-seqs 256 --disable-uvicorn-access-log --max-model-len {limit} "
                f"--gpu-memory-utilization 0.9")
    assert [s.shell() for s in servers] == expected
    assert [(s.agent, s.replica, s.gpus) for s in servers] == [
        (a, r, (2 * i + r,)) for i, (a, _, _) in enumerate(PAPER) for r in range(2)]
    assert serve.urls(servers)["rememr1"] == ["http://127.0.0.1:18106/v1",
                                              "http://127.0.0.1:18107/v1"]


def test_tensor_parallel_takes_consecutive_gpus_and_vllm_bin_is_honoured():
    servers = serve.plan(paper_params(gpus=list(range(16)), tensor_parallel=2),
                         environ={"TREEAGENT_VLLM_BIN": "/opt/vllm/bin/vllm"})
    assert [s.env["CUDA_VISIBLE_DEVICES"] for s in servers] == [
        f"{2 * k},{2 * k + 1}" for k in range(8)]
    first = servers[0].command
    assert first[:3] == ("/opt/vllm/bin/vllm", "serve", "BytedTsinghua-SIA/RL-MemoryAgent-7B")
    assert first[first.index("--tensor-parallel-size") + 1] == "2"
    assert first.count("--tensor-parallel-size") == 1  # the preset's extra_args copy dropped


def test_too_few_gpus_is_one_clear_line():
    with pytest.raises(serve.ServeError) as err:
        serve.plan(paper_params(gpus=[0, 1, 2, 3, 4, 5]), environ={})
    assert str(err.value) == ("serve.gpus: 4 agents x 2 replicas x tensor_parallel 1 need "
                              "8 GPUs; 6 listed")


def test_serve_owned_flags_in_extra_args_give_way_and_cpu_tensor_parallel_refused():
    data = config.preset("paper")
    data["engine"]["options"]["extra_args"] = ["--port=1", "--tensor-parallel-size", "4",
                                               "--enforce-eager", "--seed", "7", "--quantization", "fp8"]
    first = serve.plan(config.validate(data), environ={})[0].command
    assert first[first.index("--max-model-len"):] == (
        "--max-model-len", "32768", "--enforce-eager", "--quantization", "fp8")
    assert [first.count(f) for f in ("--port", "--tensor-parallel-size", "--seed")] == [1, 1, 1]
    assert first[first.index("--tensor-parallel-size") + 1] == "1"
    with pytest.raises(serve.ServeError, match="CPU servers"):
        serve.plan(paper_params(gpus=[], tensor_parallel=2), environ={})


def test_vllm_engine_command_line_unchanged():
    engine = VLLMEngine("org/model", vllm_bin="/v/bin/vllm", device="gpu", concurrency=8,
                        max_model_len=4096, extra_args=["--x"])
    engine.port = 9000
    assert engine.command() == [
        "/v/bin/vllm", "serve", "org/model", "--host", "127.0.0.1", "--port", "9000",
        "--served-model-name", "org/model", "--enable-prefix-caching", "--seed", "42",
        "--dtype", "auto", "--max-num-seqs", "8", "--disable-uvicorn-access-log",
        "--max-model-len", "4096", "--x"]


# --------------------------------------------------------------------------- the engine

def paper_params_pinned(agent: str, revision: str) -> config.Params:
    data = config.preset("paper")
    data["agents"][agent]["revision"] = revision
    return config.validate(data)


def test_served_engine_spec_reads_the_variable_and_keeps_ports_out_of_the_key():
    p = paper_params()
    assert serve.served_engine_spec(config.validate(config.preset("demo")), "memagent",
                                    {}) is None  # serve.enabled false
    a = {"TREEAGENT_SERVERS": json.dumps({"memagent": ["http://127.0.0.1:8100/v1",
                                                       "http://127.0.0.1:8101/v1"]})}
    b = {"TREEAGENT_SERVERS": json.dumps({"memagent": ["http://10.0.0.7:9100/v1",
                                                       "http://10.0.0.8:9100/v1"]})}
    name, options = serve.served_engine_spec(p, "memagent", a)
    assert name == "openai"
    assert options["model"] == "BytedTsinghua-SIA/RL-MemoryAgent-7B"
    assert options["revision"] == "unversioned"  # main is a label: no cache hits
    pinned = serve.served_engine_spec(paper_params_pinned("memagent", "a" * 40), "memagent", a)
    assert pinned[1]["revision"] == "a" * 40
    assert options["concurrency"] == 512  # 256 per server x 2 replicas
    assert options["api_key_env"] == "TREEAGENT_VLLM_API_KEY"
    engines = [make_engine("openai", **serve.served_engine_spec(p, "memagent", env)[1])
               for env in (a, b)]
    request = Request((Message("user", "q"),), Sampling(max_tokens=4))
    assert engines[0].base_urls != engines[1].base_urls
    assert engine_key(engines[0], request) == engine_key(engines[1], request)


def test_served_context_window_is_the_servers_max_model_len():
    p = paper_params()
    assert [serve.served_context_window(p, a) for a, _, _ in PAPER] == [
        32768, 32768, 40960, 40960]
    demo = config.preset("demo")  # SmolLM2: its GGUF header records 8,192 tokens
    demo["engine"]["name"] = "vllm"
    assert serve.served_context_window(config.validate(demo), "memagent") == 8192


@pytest.mark.parametrize(("environ", "message"), [
    ({}, "TREEAGENT_SERVERS is not set"),
    ({"TREEAGENT_SERVERS": "{nope"}, "TREEAGENT_SERVERS: not JSON"),
    ({"TREEAGENT_SERVERS": '{"infmem": ["http://127.0.0.1:1/v1"]}'},
     "no server URLs for agent 'memagent'"),
])
def test_served_engine_spec_bad_variable(environ, message):
    with pytest.raises(serve.ServeError, match=message):
        serve.served_engine_spec(paper_params(), "memagent", environ)


# --------------------------------------------------------------------------- lifecycle

def _ephemeral_low() -> int:
    """The lowest port the kernel hands to outgoing connections (Linux; else IANA's)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 49152


def free_ports(n: int) -> int:
    """A first port whose next ``n - 1`` are free too, below the ephemeral range: a port
    from that range may be taken by any process's outgoing connection (the other test
    workers' HTTP clients) between this check and the servers' binding."""
    rng = random.Random()
    for _ in range(200):
        first = rng.randrange(20000, max(20001, _ephemeral_low() - n))
        if all(serve._port_free("127.0.0.1", first + k) for k in range(n)):
            return first
    raise RuntimeError("no run of free ports")


def small_params(agents=("memagent", "infmem"), replicas=2, gpus=(0, 1, 2, 3)) -> config.Params:
    data = config.preset("paper")
    data["evaluate"]["agents"] = list(agents)
    data["serve"].update(gpus=list(gpus), replicas=replicas, port=free_ports(len(agents) * replicas))
    return config.validate(data)


def double(modes_for=None):
    """A launcher that starts the test double in place of vllm (``modes_for(weights)``
    gives the double's mode flags)."""
    return lambda weights: [sys.executable, DOUBLE, *(modes_for or (lambda w: []))(weights),
                            "serve", weights]


def records(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "\nState:\tZ" in status.read_text())


def assert_none_left(record: Path) -> None:
    found = records(record)
    assert found, "no double started"
    left = [(r["port"], pid) for r in found for pid in (r["pid"], r["worker"]) if alive(pid)]
    assert left == []


@pytest.fixture
def record(tmp_path, monkeypatch):
    path = tmp_path / "starts.jsonl"
    monkeypatch.setenv("VLLM_DOUBLE_RECORD", str(path))
    return path


def options(tmp_path, **kw):
    return {"launch": double(kw.pop("modes_for", None)), "log_dir": tmp_path / "logs",
            "poll": 0.05, "grace": kw.pop("grace", 5.0), **kw}


def test_lifecycle_start_health_urls_spread_and_stop(tmp_path, record, monkeypatch):
    monkeypatch.setenv("TREEAGENT_VLLM_API_KEY", "k-secret")
    p = small_params()
    first = p["serve.port"]
    with serve.serving(p, **options(tmp_path, start_timeout=60)) as table:
        assert table == {"memagent": [f"http://127.0.0.1:{first}/v1",
                                      f"http://127.0.0.1:{first + 1}/v1"],
                         "infmem": [f"http://127.0.0.1:{first + 2}/v1",
                                    f"http://127.0.0.1:{first + 3}/v1"]}
        started = {r["port"]: r for r in records(record)}
        assert {port: r["cuda"] for port, r in started.items()} == {
            first: "0", first + 1: "1", first + 2: "2", first + 3: "3"}
        assert all(r["api_key"] for r in started.values())  # by environment, not argv
        assert not any("k-secret" in " ".join(r["argv"]) for r in started.values())
        name, opts = serve.served_engine_spec(p, "memagent",
                                              {"TREEAGENT_SERVERS": json.dumps(table)})
        engine = make_engine(name, **opts)
        requests = [Request((Message("user", f"q{i}"),), Sampling(max_tokens=8))
                    for i in range(20)]

        async def ask():
            try:
                return await engine.generate(requests)
            finally:
                await engine.aclose()

        replies = asyncio.run(ask())
        assert [r.text for r in replies] == [f"echo:q{i}" for i in range(20)]
        per_replica = [len(Path(f"{record}.{port}.prompts").read_text().splitlines())
                       for port in (first, first + 1)]
        assert per_replica == [10, 10]
        assert Path(f"{record}.{first + 2}.prompts").read_text() == ""  # infmem: not asked
    assert_none_left(record)


def test_stops_all_after_a_failure_inside(tmp_path, record):
    p = small_params()
    with pytest.raises(RuntimeError, match="evaluation failed"):
        with serve.serving(p, **options(tmp_path, start_timeout=60)):
            assert len(records(record)) == 4
            raise RuntimeError("evaluation failed")
    assert_none_left(record)


def test_never_healthy_server_is_one_clear_error_and_stops_the_others(tmp_path, record):
    p = small_params()
    first = p["serve.port"]
    unhealthy = lambda w: ["--unhealthy"] if w == "ucmp137538/infmem-4B" else []  # noqa: E731
    with pytest.raises(serve.ServeError) as err:
        with serve.serving(p, **options(tmp_path, start_timeout=6, modes_for=unhealthy)):
            pytest.fail("started")
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"vllm serve for infmem replica 0 (port {first + 2}, GPU 2) "
                              "not healthy after 6 s; its log: ")
    assert len(records(record)) == 4
    assert_none_left(record)


def test_server_that_exits_is_named_and_the_others_stopped(tmp_path, record):
    p = small_params()
    # the two infmem replicas exit once both memagent replicas have started
    crash = lambda w: (["--exit", "3", "--after-starts", "2"]  # noqa: E731
                       if w == "ucmp137538/infmem-4B" else [])
    with pytest.raises(serve.ServeError, match=r"infmem replica [01] .* exited with status 3"):
        with serve.serving(p, **options(tmp_path, start_timeout=30, modes_for=crash)):
            pytest.fail("started")
    assert sorted(r["port"] for r in records(record)) == [p["serve.port"], p["serve.port"] + 1]
    assert_none_left(record)


def test_sigterm_ignored_escalates_to_sigkill(tmp_path, record):
    p = small_params(agents=("memagent",), gpus=(0, 1))
    stubborn = lambda w: ["--ignore-sigterm"]  # noqa: E731
    servers = serve.ServerSet(serve.plan(p, launch=double(stubborn)), log_dir=tmp_path,
                              poll=0.05, grace=0.5, start_timeout=30)
    with servers:
        assert len(servers.running) == 2
    assert servers.running == []
    assert_none_left(record)


def test_interrupt_while_waiting_stops_everything(tmp_path, record, monkeypatch):
    p = small_params()
    real_sleep, raised = serve.time.sleep, []

    def interrupt(seconds):  # Ctrl-C once every double has started, while waiting
        if not raised and len(records(record)) == 4:
            raised.append(seconds)
            raise KeyboardInterrupt
        real_sleep(seconds)

    monkeypatch.setattr(serve.time, "sleep", interrupt)
    never = lambda w: ["--unhealthy"]  # noqa: E731
    with pytest.raises(KeyboardInterrupt):
        with serve.serving(p, **options(tmp_path, start_timeout=60, modes_for=never)):
            pytest.fail("started")
    assert raised
    assert_none_left(record)


def test_busy_port_refused_before_any_start(tmp_path, record):
    p = small_params()
    with socket.socket() as s:
        s.bind(("127.0.0.1", p["serve.port"] + 1))
        s.listen()
        with pytest.raises(serve.ServeError, match=rf"serve.port: port {p['serve.port'] + 1} "
                                                   "for memagent replica 1"):
            serve.ServerSet(serve.plan(p, launch=double()), log_dir=tmp_path).start()
    assert records(record) == []
