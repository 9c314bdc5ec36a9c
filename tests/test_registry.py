"""Registries of formats, agents, engines, methods and tasks, and their plug-in points:
a thing registered once is seen by the command line, config
validation, reports and the runner; installed packages add theirs by entry points."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import sys
import threading
from pathlib import Path

import pandas as pd
import pytest

from helpers import CharTokenizer
from treeagent import formats, registry
from treeagent.agents import memagent
from treeagent.agents.common import Agent, Limits, ask
from treeagent.agents.runner import drive, program
from treeagent.cli import main as cli
from treeagent.formats import Format, json_format
from treeagent.llm.base import Response
from treeagent.pipeline import config
from treeagent.report import tables as T

ROOT = Path(__file__).resolve().parents[1]


def toy_run(ctx):
    """A one-call workflow: the answer call, told how many sections the mode made."""
    request = ctx.calls.request("memagent_answer", "answer", ctx.limits.answer,
                                question=ctx.problem, memory=f"{len(ctx.doc)} sections")
    return (yield from ask(request))


TOY_FORMAT = Format("toyfmt", "ToyFormat", (".toy",), json_format.parse, json_format.safe_cut)
TOY_AGENT = Agent("toyagent", "ToyAgent", Limits(48, 40, None, 4096), {},  # renders memagent_answer
                  toy_run)


@pytest.fixture
def toys():
    registry.FORMATS.register(TOY_FORMAT)
    registry.AGENTS.register(TOY_AGENT)
    try:
        yield
    finally:
        registry.FORMATS.unregister("toyfmt")
        registry.AGENTS.unregister("toyagent")


def _help(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as exit_:
        cli._build_parser().parse_args(argv)
    assert exit_.value.code == 0
    return capsys.readouterr().out


# --------------------------------------------------------------------------- built-ins

def test_builtin_records_in_the_papers_order_with_its_titles():
    assert list(registry.FORMATS.builtin_names) == ["json", "html", "yaml", "javascript"]
    assert list(registry.FORMATS.names) == ["json", "html", "yaml", "javascript", "markdown"]
    assert dict(registry.AGENTS.titles) == {"memagent": "MemAgent", "infmem": "InfMem",
                                            "memreread": "MemReread", "rememr1": "ReMemR1"}
    assert list(registry.METHODS.titles.values()) == ["Flat", "Tree", "Tree+Path", "TreeAgent"]
    assert list(registry.ENGINES.names) == ["transformers", "openai", "vllm"]
    assert registry.TASKS.titles["most_frequent"] == "Frequent Values"
    assert [t.name for t in registry.TASKS if t.family == "aggregation"] == [
        "conditional_count", "most_frequent", "numeric_extremum"]
    assert [t.name for t in registry.TASKS if t.match == "number"] == [
        "conditional_count", "numeric_extremum"]
    # Table 2: request limits 32,768 (MemAgent, InfMem) and 40,960 (MemReread, ReMemR1)
    assert {a.name: a.limits.request for a in registry.AGENTS} == {
        "memagent": 32768, "infmem": 32768, "memreread": 40960, "rememr1": 40960}
    assert registry.AGENTS.get("rememr1").limits == Limits(2048, 2048, 1024, 40960)


def test_benchmark_defaults_are_the_builtin_formats(toys):
    from dataclasses import asdict

    from treeagent.bench.build import BuildParams
    from treeagent.bench.sources import sources_of

    assert asdict(BuildParams())["formats"] == ("json", "html", "yaml", "javascript")
    with pytest.raises(ValueError, match="unknown format 'toyfmt'"):
        sources_of("toyfmt")  # a registered format without benchmark sources


def test_unknown_name_error_names_the_choices():
    with pytest.raises(ValueError, match=re.escape(
            "unknown agent 'nosuch' (choose from memagent, infmem, memreread, rememr1)")):
        registry.AGENTS.get("nosuch")
    with pytest.raises(ValueError, match="unknown format 'toml'"):
        formats.parse("a = 1", "toml")


def test_a_taken_name_is_refused():
    other = Format("json", "Other JSON", (".oj",), json_format.parse, json_format.safe_cut)
    with pytest.raises(ValueError, match="format 'json' is already registered"):
        registry.FORMATS.register(other)
    assert registry.FORMATS.get("json").title == "JSON"


def test_top_level_help_reads_no_registry():
    code = ("import sys\nfrom treeagent import registry\nfrom treeagent.cli import main as cli\n"
            "try:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print([r.kind for r in (registry.FORMATS, registry.AGENTS, registry.ENGINES)"
            " if r._state != 'empty'], 'importlib.metadata' in sys.modules)")
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout.splitlines()[-1]
    assert out == "[] False"


# --------------------------------------------------------------------------- toys

def test_toys_in_the_cli_choices(toys, capsys):
    run_help = " ".join(_help(["run", "--help"], capsys).split())
    assert "--agent {memagent,infmem,memreread,rememr1,toyagent}" in run_help
    assert "--format {json,html,yaml,javascript,markdown,toyfmt}" in run_help
    assert "the input document (JSON, HTML, YAML, JavaScript, Markdown or ToyFormat)" in run_help
    sections_help = " ".join(_help(["sections", "--help"], capsys).split())
    assert "--format {json,html,yaml,javascript,markdown,toyfmt}" in sections_help
    build_help = " ".join(_help(["bench", "build", "--help"], capsys).split())
    assert "datasets to build (json, html, yaml, javascript, markdown, toyfmt;" in build_help
    args = cli._build_parser().parse_args(
        ["run", "f.toy", "-q", "q", "--agent", "toyagent", "--format", "toyfmt"])
    assert (args.agent, args.format) == ("toyagent", "toyfmt")


def test_unregistered_names_are_refused_by_the_cli(toys, capsys):
    registry.AGENTS.unregister("toyagent")
    try:
        with pytest.raises(SystemExit) as exit_:
            cli._build_parser().parse_args(["run", "f", "-q", "q", "--agent", "toyagent"])
        assert exit_.value.code == 2
        assert "invalid choice: 'toyagent'" in capsys.readouterr().err
    finally:
        registry.AGENTS.register(TOY_AGENT)


def _params_with_toys() -> dict:
    data = config.preset("demo")
    data["acquire"]["formats"].append("toyfmt")
    data["build"]["formats"].append("toyfmt")
    data["evaluate"]["agents"].append("toyagent")
    data["agents"]["toyagent"] = {"model": "smollm2", "revision": "auto",
                                  "max_new_tokens": 32, "options": {}, "engine_options": {}}
    data["report"]["dataset"] = "toyfmt"
    return data


def test_toys_in_config_validation(toys, tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text(config.dump(_params_with_toys()), encoding="utf-8")
    params = config.load(path)
    assert params.data["evaluate"]["agents"] == ["memagent", "toyagent"]
    assert params.data["build"]["formats"] == [*config.preset("demo")["build"]["formats"],
                                               "toyfmt"]
    # the presets are the paper's: a registered agent or format joins none
    paper = config.preset("paper")
    assert "toyagent" not in paper["evaluate"]["agents"] and "toyagent" not in paper["agents"]
    assert paper["build"]["formats"] == ["json", "html", "yaml", "javascript"]


def test_unknown_names_fail_config_validation(toys, tmp_path):
    data = _params_with_toys()
    data["evaluate"]["agents"].append("nosuch")
    data["build"]["formats"].append("toml")
    path = tmp_path / "params.yaml"
    path.write_text(config.dump(data), encoding="utf-8")
    with pytest.raises(config.ParamsError) as err:
        config.load(path)
    toml_at = len(data["build"]["formats"]) - 1
    assert err.value.problems == [
        f"build.formats[{toml_at}]: 'toml' is not a valid format (json, html, yaml, javascript, "
        "markdown, toyfmt)",
        "build.formats: toml not acquired (add to acquire.formats)",
        "evaluate.agents[2]: 'nosuch' is not a valid memory agent (memagent, infmem, "
        "memreread, rememr1, toyagent)",
    ]
    registry.AGENTS.unregister("toyagent")  # the same file without the toy agent
    try:
        with pytest.raises(config.ParamsError) as err:
            config.validate(_params_with_toys())
        assert "evaluate.agents[1]: 'toyagent' is not a valid memory agent (memagent, " \
               "infmem, memreread, rememr1)" in err.value.problems
        assert "agents.toyagent: unknown key (allowed: infmem, memagent, memreread, " \
               "rememr1)" in err.value.problems
    finally:
        registry.AGENTS.register(TOY_AGENT)


def _score_rows(agents: list[str], datasets: list[str]) -> pd.DataFrame:
    rows = []
    for dataset in datasets:
        for agent in agents:
            for method, score in (("flat", 0.25), ("treeagent", 0.75)):
                rows.append({"example_id": "e1", "dataset": dataset, "task": "one_field",
                             "length": 8192, "agent": agent, "method": method,
                             "score": score})
    return pd.DataFrame(rows)


def test_toys_in_report_titles_and_order(toys):
    from treeagent.report.render import table1_rows

    cells = T.cell_means(_score_rows(["toyagent", "rememr1", "memagent"], ["toyfmt", "json"]))
    t1 = T.table1(cells)
    assert t1.agents == ["memagent", "rememr1", "toyagent"]  # the paper's, then plug-ins
    assert t1.datasets == ["json", "toyfmt"]
    headers, rows = table1_rows(t1, T.AGENT_NAMES)
    assert headers == ["Memory agent", "Method", "JSON", "ToyFormat", "AVG."]
    assert [r[0] for r in rows if r[0]][:3] == ["MemAgent", "ReMemR1", "ToyAgent"]


def test_toys_run_and_detect(toys):
    """The runner takes the toy agent's workflow and Table-2 limits from its record."""
    assert formats.detect("data.TOY", "") == "toyfmt"
    seen = []

    def respond(request):
        seen.append(request)
        return Response("\\boxed{1}", input_tokens=1, output_tokens=1)

    gen = program("toyagent", "treeagent", '{"a": [1, 2, 3], "b": "x"}', "toyfmt", "a?",
                  CharTokenizer(), base_budget=8)
    result = drive(gen, respond)
    assert result.agent == "toyagent" and result.prediction == "\\boxed{1}"
    assert [r.kind for r in seen] == ["answer"]
    assert seen[0].sampling.max_tokens == 40  # the toy's answer limit
    assert f"{result.total_sections} sections" in seen[0].messages[-1].content


# --------------------------------------------------------------------------- plug-ins

def _readme_plugin() -> tuple[str, str]:
    """The README's plug-in example: its entry points (as entry_points.txt) and module."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Plug-ins", 1)[1].split("\n## ", 1)[0]
    toml = section.split("```toml\n", 1)[1].split("```", 1)[0]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    ini = re.sub(r'\[project\.entry-points\."([^"]+)"\]', r"[\1]", toml).replace('"', "")
    return ini, code


def _install(folder: Path, name: str, entry_points: str, module: str | None = None) -> None:
    """A minimal installed distribution: ``name-0.1.dist-info`` (+ its module)."""
    info = folder / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n",
                                   encoding="utf-8")
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")
    if module is not None:
        (folder / f"{name}.py").write_text(module, encoding="utf-8")


@pytest.fixture
def readme_plugin(tmp_path, monkeypatch):
    ini, code = _readme_plugin()
    _install(tmp_path, "treeagent_extras", ini, code)
    monkeypatch.syspath_prepend(str(tmp_path))
    for reg in (registry.FORMATS, registry.AGENTS, registry.ENGINES):
        reg.reload_plugins()
    try:
        yield
    finally:
        registry.FORMATS.unregister("jsonc")
        registry.AGENTS.unregister("memagent512")
        registry.ENGINES.unregister("gpubox")
        sys.modules.pop("treeagent_extras", None)


def test_readme_entry_points_register_a_format_an_agent_and_an_engine(readme_plugin, capsys):
    agent = registry.AGENTS.get("memagent512")
    assert (agent.title, agent.limits.memory, agent.run) == ("MemAgent-512", 512, memagent.run)
    assert list(registry.AGENTS.names)[-1] == "memagent512"
    assert formats.detect("settings.jsonc", "") == "jsonc"
    tree = formats.parse('{\n  // port\n  "port": 8080,\n}\n', "jsonc")
    assert [tree.path(n) for n in tree.nodes] == ["$", "$.port"]
    from treeagent.llm import make_engine

    engine = make_engine("gpubox")
    try:
        assert engine.model == "qwen3-4b"
    finally:
        asyncio.run(engine.aclose())
    run_help = " ".join(_help(["run", "--help"], capsys).split())
    assert "rememr1,memagent512}" in run_help and "vllm,gpubox}" in run_help
    data = config.preset("demo")
    data["evaluate"]["agents"] = ["memagent512"]
    data["agents"]["memagent512"] = dict(data["agents"]["memagent"])
    data["engine"]["name"] = "gpubox"
    assert config.validate(data).data["engine"]["name"] == "gpubox"


def test_entry_points_are_read_once_when_first_read(tmp_path, monkeypatch):
    module = ("from treeagent.registry import Named\n"
              "ONE = Named('one', 'One')\nTWO = Named('two', 'Two')\n")
    _install(tmp_path / "a", "plug_one", "[treeagent.test]\none = plug_one:ONE\n", module)
    monkeypatch.syspath_prepend(str(tmp_path / "a"))
    reg = registry.Registry("thing", ("treeagent.agents.observation:METHOD_RECORDS",),
                            group="treeagent.test")
    assert reg._state == "empty"
    assert list(reg.names) == ["flat", "tree", "tree+path", "treeagent", "one"]
    assert [r.name for r in reg.builtin()] == ["flat", "tree", "tree+path", "treeagent"]
    # a distribution installed later is not seen until the plug-ins are read again
    _install(tmp_path / "b", "plug_two", "[treeagent.test]\ntwo = plug_one:TWO\n")
    monkeypatch.syspath_prepend(str(tmp_path / "b"))
    assert "two" not in reg.names
    reg.reload_plugins()
    assert list(reg.names)[-2:] == ["one", "two"]
    sys.modules.pop("plug_one", None)


def test_threads_reading_a_fresh_registry_wait_for_one_scan(tmp_path, monkeypatch):
    # Prefect runs a flow's tasks in threads: the demo's four acquire tasks read the
    # bench registry at once; a read while another thread scans must wait, not raise
    (tmp_path / "slow_things.py").write_text(
        "import time\nfrom treeagent.registry import Named\ntime.sleep(0.3)\n"
        "THINGS = [Named('a', 'A'), Named('b', 'B')]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = registry.Registry("thing", ("slow_things:THINGS",))
    start, got, errors = threading.Barrier(6), [], []

    def read() -> None:
        start.wait()
        try:
            got.append(list(reg.names))
        except Exception as exc:  # noqa: BLE001 - the failure under test
            errors.append(exc)

    threads = [threading.Thread(target=read) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and got == [["a", "b"]] * 6
    sys.modules.pop("slow_things", None)


def test_a_broken_plugin_warns_and_the_rest_loads(tmp_path, monkeypatch):
    module = "from treeagent.registry import Named\nGOOD = Named('good', 'Good')\n"
    entry = ("[treeagent.test]\ngood = plug_good:GOOD\nmissing = no_such_module:X\n"
             "misnamed = plug_good:GOOD\nflat = plug_good:GOOD\n")
    _install(tmp_path, "plug_good", entry, module)
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = registry.Registry("thing", {"flat": "treeagent.agents.observation:METHOD_RECORDS"},
                            group="treeagent.test")
    with pytest.warns(RuntimeWarning) as caught:
        names = list(reg.names)  # entry point names, nothing imported yet
    assert names == ["flat", "good", "missing", "misnamed"]
    assert [str(w.message) for w in caught] == [
        "treeagent: thing plug-in 'flat' (plug_good:GOOD) not loaded: the name 'flat' is taken"]
    assert "plug_good" not in sys.modules
    with pytest.warns(RuntimeWarning) as caught:
        assert [r.name for r in reg] == ["flat", "good"]
    messages = sorted(str(w.message) for w in caught)
    assert len(messages) == 2
    assert messages[0] == ("treeagent: thing plug-in 'misnamed' (plug_good:GOOD) not "
                           "loaded: the entry point is named 'misnamed' but its record "
                           "'good'")
    assert messages[1].startswith("treeagent: thing plug-in 'missing' (no_such_module:X) "
                                  "not loaded: No module named 'no_such_module'")
    assert list(reg.names) == ["flat", "good"]
    sys.modules.pop("plug_good", None)


def test_config_validation_and_cli_choices_import_no_record():
    """Names are declared with the built-ins' targets: validating params.yaml and
    checking a command's choices import no agent, format or engine module."""
    code = ("import sys\nfrom treeagent.cli import main as cli\nfrom treeagent.pipeline import config\n"
            "config.validate(config.preset('demo'))\n"
            "cli._build_parser().parse_args(['run', 'f', '-q', 'q', '--agent', 'infmem',"
            " '--method', 'tree', '--engine', 'vllm', '--format', 'yaml'])\n"
            "print(sorted(m for m in sys.modules if m.startswith(('treeagent.agents',"
            " 'treeagent.formats.', 'treeagent.llm'))))")
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout.splitlines()[-1]
    assert out == "[]"


def test_builtin_names_match_their_records():
    from treeagent.agents.observation import METHOD_RECORDS
    from treeagent.llm import ENGINE_SPECS

    assert [m.name for m in METHOD_RECORDS] == list(registry.METHODS.names)
    assert [e.name for e in ENGINE_SPECS] == list(registry.ENGINES.names)
    for reg in (registry.FORMATS, registry.AGENTS, registry.ENGINES, registry.METHODS):
        assert [r.name for r in reg.builtin()] == list(reg.builtin_names)


def test_plan_reads_the_cost_model_from_the_agent_record(toys):
    """An agent's record names its cost model (``Agent.cost``); plan keeps no list."""
    from treeagent.agents.infmem import cost as cost_infmem
    from treeagent.agents.memagent import cost as cost_memagent
    from treeagent.pipeline import plan

    assert plan.cost_model("memagent") is cost_memagent
    assert plan.cost_model("infmem") is cost_infmem
    with pytest.raises(ValueError, match="no cost model for agent 'toyagent'"):
        plan.cost_model("toyagent")


@pytest.mark.parametrize("text, fmt", [
    ('\ufeff  {"a": 1}', "json"), ("[1, 2]", "json"), ("<!DOCTYPE html><p>x</p>", "html"),
    ("<div>x</div>", "html"), ("const a = {b: 1};", "javascript"),
    ("module.exports = {}", "javascript"), ("a: 1\nb: [2]", "yaml"), ("# Notes\n\nwords", "markdown"),
])
def test_content_detection_reads_each_formats_record(text, fmt):
    """Without a known extension the format comes from the content beginnings each
    format's record declares (``Format.starts``; the longest match wins), else from its
    content test (``Format.sniff``)."""
    assert formats.detect("input.txt", text) == fmt


def test_a_registered_format_is_detected_by_its_content(toys):
    toy = dataclasses.replace(TOY_FORMAT, name="toycontent", title="ToyContent",
                              extensions=(), starts=("%toy",))
    registry.FORMATS.register(toy)
    try:
        assert formats.detect("input.txt", "%TOY 1\n") == "toycontent"
        assert formats.detect("input.txt", "a: 1") == "yaml"
    finally:
        registry.FORMATS.unregister("toycontent")


def test_a_format_brings_its_bench_hooks_in_one_record(toys):
    """A new format's benchmark side is one record: once registered, record
    extraction, context framing, the split back into pieces and the raw check use it."""
    from treeagent.bench import contexts, validate
    from treeagent.bench.sources import raw, records_from_text
    from treeagent.bench.sources.json_records import BENCH as JSON_BENCH
    from treeagent.bench.sources.registry import BENCH

    with pytest.raises(ValueError, match="unknown format 'toyfmt'"):
        records_from_text("toyfmt", "usgs", "{}")
    BENCH.register(dataclasses.replace(JSON_BENCH, name="toyfmt"))
    try:
        assert BENCH.get("toyfmt").title == "ToyFormat"  # the format's own title
        text = contexts.compose("toyfmt", ['{"a": 1}', '{"b": 2}'])
        assert text == '[\n{"a": 1},\n{"b": 2}\n]\n'
        assert validate.unit_pieces("toyfmt", text) == ['{"a": 1}', '{"b": 2}']
        assert raw.check("toyfmt", b'{"a": ') is not None and raw.check("toyfmt", b"{}") is None
        feature = ('{"type": "Feature", "id": "q1", "properties": {"mag": 4.6, '
                   '"place": "21 km SSW of Pahala"}}')
        mine = records_from_text("toyfmt", "usgs", feature, unit_id="u")
        assert [r.fields["magnitude"] for r in mine] == [4.6]
        assert mine == records_from_text("json", "usgs", feature, unit_id="u")
    finally:
        BENCH.unregister("toyfmt")
