"""params.yaml loading, presets and validation (treeagent.pipeline.config)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from treeagent.pipeline import config

ROOT = Path(__file__).resolve().parent.parent


def test_shipped_params_are_the_demo_preset() -> None:
    assert config.load(ROOT / "params.yaml").data == config.preset("demo")


@pytest.mark.parametrize("name", sorted(config.PRESETS))
def test_presets_validate_and_round_trip(name: str, tmp_path: Path) -> None:
    path = tmp_path / "params.yaml"
    assert config.main(["write", "--preset", name, "-o", str(path)]) == 0
    assert config.load(path).data == config.preset(name)


def test_paper_preset_is_the_paper_grid() -> None:
    p = config.validate(config.preset("paper"))
    assert p["acquire.mode"] == "mirror"
    assert p["build.lengths"] == [8192 << i for i in range(8)]
    assert (p["build.per_cell"], len(p["build.tasks"]), len(p["build.formats"])) == (50, 8, 4)
    assert p["sectioning.base_budget"] == 5000 and p["retrieval"] == {"k": 4, "span_tokens": 96}
    assert p.agents == ["memagent", "infmem", "memreread", "rememr1"]
    assert p["engine.name"] == "vllm"
    assert all(p[f"agents.{a}.max_new_tokens"] is None for a in p.agents)  # Table 2 limits


def test_demo_preset_is_small_and_local() -> None:
    p = config.validate(config.preset("demo"))
    assert p["acquire.mode"] == "sample" and p["engine.name"] == "transformers"
    assert p.agents == ["memagent"] and p.methods == ["flat", "tree", "tree+path", "treeagent"]
    assert p["agents.memagent.model"] == "smollm2"


def _problems(**changes: object) -> list[str]:
    data = config.preset("demo")
    for key, value in changes.items():
        config.assign(data, key.replace("__", "."), value)
    with pytest.raises(config.ParamsError) as info:
        config.validate(data)
    return info.value.problems


def test_errors_name_the_key() -> None:
    assert _problems(build__lengths=[2048, 1000]) == [
        "build.lengths[1]: 1000 is not a valid length bucket (2048, 4096, 8192, 16384, 32768, "
        "65536, 131072, 262144, 524288, 1048576)"]
    assert _problems(evaluate__methods=["flat", "flat"]) == [
        "evaluate.methods: duplicate value(s): flat"]
    assert _problems(agents__memagent__max_new_tokens=0) == [
        "agents.memagent.max_new_tokens: 0 is below the minimum 1"]
    assert _problems(retrieval__k=8)[0].startswith("retrieval.k: 8: span retrieval (C.2)")


def test_every_problem_is_reported_at_once() -> None:
    problems = _problems(seed="x", engine__name="tgi", acquire__formats=["yaml"],
                         build__formats=["javascript"])
    assert problems == [
        "seed: expected an integer, got str 'x'",
        "build.formats: javascript not acquired (add to acquire.formats)",
        "engine.name: 'tgi' is not a valid engine (transformers, openai, vllm)",
        "report.dataset: 'json' is not built (build.formats)",
    ]


def test_unknown_and_missing_keys() -> None:
    data = config.preset("demo")
    data["build"]["per_cel"] = 3
    del data["evaluate"]["cache"]
    with pytest.raises(config.ParamsError) as info:
        config.validate(data, "params.yaml")
    text = str(info.value)
    assert "params.yaml: build.per_cel: unknown key" in text
    assert "params.yaml: evaluate.cache: missing" in text


def test_listed_agent_needs_its_spec() -> None:
    data = config.preset("demo")
    data["evaluate"]["agents"] = ["memagent", "rememr1"]
    del data["agents"]["rememr1"]
    with pytest.raises(config.ParamsError, match="agents.rememr1: missing"):
        config.validate(data)


def test_set_values_keeps_comments_and_validates(tmp_path: Path) -> None:
    path = tmp_path / "params.yaml"
    path.write_text((ROOT / "params.yaml").read_text())
    config.set_values(path, {"agents.memagent.revision": "abc123"})
    text = path.read_text()
    assert "revision: abc123" in text and "# dataset sampling and inference seed" in text
    assert config.load(path)["agents.memagent.revision"] == "abc123"
    before = path.read_text()
    with pytest.raises(config.ParamsError):
        config.set_values(path, {"build.per_cell": -1})
    assert path.read_text() == before  # nothing written on error


def test_stage_arguments() -> None:
    p = config.validate(config.preset("demo"))
    name, options = p.engine_spec("memagent")
    assert name == "transformers" and options["model"] == "smollm2"
    assert "revision" not in options  # auto: the engine hashes the local weights
    kwargs = p.evaluate_kwargs("memagent")
    assert kwargs["base_budget"] == 768 and kwargs["options"] == {"max_new_tokens": 64}
    assert p.build_kwargs()["seed"] == 42
    assert config.validate(config.preset("paper")).engine_spec("rememr1")[1][
        "max_model_len"] == 40960
    data = config.preset("paper")
    data["engine"] = {"name": "openai", "options": {"concurrency": 128}}
    data["agents"]["infmem"]["engine_options"] = {"base_urls": ["http://10.0.0.2:8000/v1"]}
    name, options = config.validate(data).engine_spec("infmem")
    assert options == {"concurrency": 128, "base_urls": ["http://10.0.0.2:8000/v1"],
                       "model": "ucmp137538/infmem-4B", "revision": "main"}


def test_cli_check_reports_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = config.preset("demo")
    bad["sectioning"]["base_budget"] = 0
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(bad))
    assert config.main(["check", str(path)]) == 2
    assert "sectioning.base_budget: 0 is below the minimum 1" in capsys.readouterr().err
    assert config.main(["check", str(tmp_path / "none.yaml")]) == 2


def test_runner_serve_and_shards_are_validated():
    data = config.preset("demo")
    data["runner"] = {"name": "ray", "address": "tcp://h:8786", "workers": 0}
    data["serve"]["gpus"] = [0, 0]
    data["evaluate"]["shards"] = 0
    with pytest.raises(config.ParamsError) as err:
        config.validate(data)
    text = str(err.value)
    for key in ("runner.name", "runner.address", "runner.workers", "serve.gpus",
                "evaluate.shards"):
        assert f"params: {key}:" in text, key


def test_the_vllm_engine_with_shards_needs_the_pipelines_servers():
    data = config.preset("paper")
    assert data["serve"]["enabled"] and data["evaluate"]["shards"] > 1
    config.validate(data)  # shards share the replicas the serve step starts
    data["serve"]["enabled"] = False
    with pytest.raises(config.ParamsError, match="evaluate.shards: the vllm engine starts "
                                                 "one server per shard"):
        config.validate(data)
    data["evaluate"]["shards"] = 1
    config.validate(data)


def test_no_preset_names_a_folder_outside_the_project() -> None:
    for name in config.PRESETS:
        acquire = config.preset(name)["acquire"]
        assert acquire["mirror_dir"] is None  # the mirror comes from $TREEAGENT_MIRROR


def test_mirror_mode_reads_the_environment_and_names_both_settings_without_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from treeagent.bench import sources

    mirror = tmp_path / "mirror" / "json" / "usgs"
    mirror.mkdir(parents=True)
    sample = ROOT / "src/treeagent/samples/bench/json/usgs/libcomcat__dataframes_association__2.json"
    (mirror / sample.name).write_bytes(sample.read_bytes())
    monkeypatch.delenv("TREEAGENT_MIRROR", raising=False)
    with pytest.raises(ValueError) as info:
        sources.acquire("mirror", formats=["json"], sources=["usgs"],
                        raw_dir=tmp_path / "raw", progress=False)
    assert "acquire.mirror_dir" in str(info.value) and "$TREEAGENT_MIRROR" in str(info.value)
    monkeypatch.setenv("TREEAGENT_MIRROR", str(tmp_path / "mirror"))
    manifest = sources.acquire("mirror", formats=["json"], sources=["usgs"],
                               raw_dir=tmp_path / "raw", progress=False)
    assert manifest["missing"] == []
    assert (tmp_path / "raw" / "json" / "usgs" / sample.name).read_bytes() == sample.read_bytes()
