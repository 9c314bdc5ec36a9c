"""Train / dev / test splits (paper B.2): a partition of each format's units by source
document, quotas spread over the grid, per-split builds by the build's own code, their
inventory, export and the test-only evaluation input."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_bench_tasks import extract, make_units
from treeagent.bench import build, export, splits
from treeagent.bench.model import Record, Unit

# ------------------------------------------------------------------ the partition

_key = st.text(alphabet="abcdefgh", min_size=1, max_size=4)
_weights = st.fixed_dictionaries(
    {"test": st.integers(0, 20), "dev": st.integers(0, 20), "train": st.integers(0, 60)}
).filter(lambda w: sum(w.values()) > 0)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=6), _key, max_size=60), _weights,
       st.integers(0, 10**6))
def test_partition_puts_a_group_in_one_split_and_every_unit_in_one(group_of, weights, seed):
    got = splits.partition(group_of, weights, seed)
    assert set(got) == set(group_of)
    assert all(weights[s] > 0 for s in got.values())
    by_group: dict[str, set[str]] = {}
    for unit, group in group_of.items():
        by_group.setdefault(group, set()).add(got[unit])
    assert all(len(s) == 1 for s in by_group.values())  # no group in two splits
    assert splits.partition(group_of, weights, seed) == got  # deterministic


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=6), _key, min_size=1, max_size=60),
       st.data(), _weights, st.integers(0, 10**6))
def test_each_split_gets_its_share_of_the_pool_within_one_group(group_of, data, weights,
                                                                 seed):
    """By size (characters of text): no split that got a group is ahead of another's
    share by more than the largest group, so a small pool is not left to chance."""
    size_of = {u: data.draw(st.integers(1, 10**6)) for u in group_of}
    got = splits.partition(group_of, weights, seed, size_of)
    group_size: Counter[str] = Counter()
    for u, g in group_of.items():
        group_size[g] += size_of[u]
    held: Counter[str] = Counter()
    for u, s in got.items():
        held[s] += size_of[u]
    biggest = max(group_size.values())
    for a in held:
        for b in (s for s in weights if weights[s] > 0):
            assert held[a] / weights[a] - held[b] / weights[b] <= biggest / weights[a] + 1e-6


def test_bad_weights_are_refused():
    with pytest.raises(ValueError, match="split weights"):
        splits.partition({"a": "a"}, {"test": 0, "dev": 0}, 1)
    with pytest.raises(ValueError, match="split weights"):
        splits.partition({"a": "a"}, {"holdout": 1}, 1)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 5000), st.integers(1, 8), st.integers(1, 8))
def test_quotas_spread_a_total_evenly_over_the_cells(total, n_tasks, n_lengths):
    task_names = [f"t{i}" for i in range(n_tasks)]
    lengths = [2 ** (13 + i) for i in range(n_lengths)]
    q = splits.quotas(total, task_names, lengths)
    assert set(q) == {(t, n) for t in task_names for n in lengths}
    assert sum(q.values()) == total
    assert max(q.values()) - min(q.values()) <= 1
    per_task = [sum(q[(t, n)] for n in lengths) for t in task_names]
    assert max(per_task) - min(per_task) <= 1
    if n_tasks == n_lengths:
        per_length = [sum(q[(t, n)] for t in task_names) for n in lengths]
        assert max(per_length) - min(per_length) <= 1


def test_the_papers_json_sizes():
    from treeagent.scoring import TASKS

    lengths = [2 ** k for k in range(13, 21)]
    q = splits.quotas(13200, TASKS, lengths)
    assert sum(q.values()) == 13200 and sorted(set(q.values())) == [206, 207]
    assert 3200 + sum(splits.quotas(3200, TASKS, lengths).values()) + 13200 == 19600


def _unit(uid: str, *descriptions: str) -> Unit:
    recs = [Record(id=f"{uid}#{i}", unit_id=uid, kind="event", description=d, fields={})
            for i, d in enumerate(descriptions)]
    return Unit(id=uid, format="json", source=uid.split("/")[1], text="{}", records=recs)


def test_groups_join_pages_of_one_file_and_units_naming_one_record():
    units = [_unit("json/usgs/assoc__3.json", "quake A"),
             _unit("json/usgs/assoc__11.json", "quake B"),   # another page of assoc
             _unit("json/usgs/detail__0.json", "Quake  a"),  # the same record, other file
             _unit("json/nvd/feed.json", "CVE-1"),
             _unit("html/wiki/page.html#table[2]"), _unit("html/wiki/page.html#list[1]")]
    g = splits.unit_groups(units)
    assert g["json/usgs/assoc__3.json"] == g["json/usgs/assoc__11.json"] \
        == g["json/usgs/detail__0.json"] == "json/usgs/assoc"
    assert g["html/wiki/page.html#table[2]"] == g["html/wiki/page.html#list[1]"]
    assert len(set(g.values())) == 3


# ------------------------------------------------------------------ a build with splits

SPLIT_PARAMS = dict(formats=("json",), lengths=(2048,), per_cell=1, questions_per_context=1,
                    tokenizers=("qwen3",),
                    tasks=("one_field", "conditional_count"),
                    splits={"json": {"dev": 2, "train": 5}})


def _doc(unit_id: str) -> str:
    """Independent of the code under test: the file of a unit id, page index dropped."""
    return re.sub(r"(__\d+)?(\.\w+)?$", "", unit_id.split("#")[0])


@pytest.fixture(scope="module")
def split_build(tmp_path_factory):
    out = tmp_path_factory.mktemp("splits")
    units = make_units("json", 90, 9)
    result = build.build(build.BuildParams(**SPLIT_PARAMS), {"json": units}, out,
                         extract=extract)
    return out, result


def _read(out: Path, split: str) -> list[dict]:
    path = splits.split_dir(out, split) / "examples" / "json.parquet"
    return pq.read_table(path).to_pylist()


def test_each_split_fills_its_quota_per_cell(split_build):
    out, result = split_build
    inv = json.loads((out / "inventory.json").read_text())
    want = {"test": {"one_field": 1, "conditional_count": 1},
            "dev": {"one_field": 1, "conditional_count": 1},
            "train": {"one_field": 3, "conditional_count": 2}}
    for split, cells in want.items():
        rows = _read(out, split)
        assert Counter(r["task"] for r in rows) == Counter(cells), split
        entry = inv["splits"]["json"][split]
        assert entry["counts"] == {t: {"demo-2K": n} for t, n in cells.items()}
        assert entry["examples"] == sum(cells.values())
    assert inv["counts"]["json"] == {"one_field": {"demo-2K": 1},
                                     "conditional_count": {"demo-2K": 1}}
    assert inv["params"]["splits"] == {"json": {"dev": 2, "train": 5}}
    assert build.shortfall_lines(result) == []
    md = (out / "inventory.md").read_text()
    assert "## Splits" in md and "| train | conditional_count | 2 of 2 |" in md


def test_no_source_document_is_in_two_splits(split_build):
    out, _ = split_build
    docs: dict[str, set[str]] = {}
    descriptions: dict[str, set[str]] = {}
    for split in ("test", "dev", "train"):
        units = {u["unit_id"]: u["text"] for u in pq.read_table(
            splits.split_dir(out, split) / "units" / "json.parquet").to_pylist()}
        used = {u for r in _read(out, split) for u in r["unit_ids"]}
        assert used <= set(units)
        docs[split] = {_doc(u) for u in used}
        descriptions[split] = {r.description for u in used
                               for r in extract("json", "test", units[u])}
        ids = [r["id"] for r in _read(out, split)]
        assert all(i.startswith("json-dev-" if split == "dev" else "json-train-"
                                if split == "train" else "json-") for i in ids)
    for a, b in (("test", "dev"), ("test", "train"), ("dev", "train")):
        assert not docs[a] & docs[b], (a, b)
        assert not descriptions[a] & descriptions[b], (a, b)


def test_a_short_split_cell_is_named(tmp_path):
    params = dict(SPLIT_PARAMS, splits={"json": {"dev": 2, "train": 40}}, max_families=4)
    result = build.build(build.BuildParams(**params), {"json": make_units("json", 60, 9)},
                         tmp_path, extract=extract)
    lines = build.shortfall_lines(result)
    assert any(re.search(r"json train: one_field@demo-2K holds [0-4] of 20", x) for x in lines)
    inv = json.loads((tmp_path / "inventory.json").read_text())
    assert inv["splits"]["json"]["train"]["quotas"]["one_field@demo-2K"] == 20


def test_split_params_are_checked():
    with pytest.raises(ValueError, match="splits"):
        build.BuildParams(**dict(SPLIT_PARAMS, splits={"json": {"holdout": 3}}))
    with pytest.raises(ValueError, match="splits"):
        build.BuildParams(**dict(SPLIT_PARAMS, splits={"json": {"dev": -1}}))


def test_without_splits_nothing_changes_on_disk(tmp_path):
    params = {k: v for k, v in SPLIT_PARAMS.items() if k != "splits"}
    build.build(build.BuildParams(**params), {"json": make_units("json", 40, 9)}, tmp_path,
                extract=extract)
    assert not (tmp_path / "splits").exists()
    inv = json.loads((tmp_path / "inventory.json").read_text())
    assert "splits" not in inv and "splits" not in inv["params"]


def test_the_sharded_build_writes_the_same_splits(split_build, tmp_path, monkeypatch):
    from treeagent.bench import cells

    out, _ = split_build
    units = make_units("json", 90, 9)
    monkeypatch.setattr("treeagent.bench.sources.units", lambda fmt, raw_dir: iter(units))
    monkeypatch.setattr("treeagent.bench.sources.records_from_text", extract)
    cells._LAST.clear()
    cells.build_sharded(build.BuildParams(**SPLIT_PARAMS), "raw", tmp_path,
                        lambda fn, specs: [fn(s) for s in specs], workers=2)
    cells._LAST.clear()
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert "splits/train/examples/json.parquet" in files
    for f in files:
        assert (tmp_path / f).read_bytes() == (out / f).read_bytes(), f


# ------------------------------------------------------------------ export, evaluate


def test_jsonl_export_names_each_examples_split(split_build):
    import io as text_io

    out, _ = split_build
    buf = text_io.StringIO()
    counts = export.write_jsonl(out, ["json"], buf)
    rows = [json.loads(line) for line in buf.getvalue().splitlines()]
    got = Counter(r["split"] for r in rows)
    assert got == {"test": 2, "validation": 2, "train": 5} and counts == {"json": 9}
    assert {r["id"] for r in rows if r["split"] == "validation"} == {
        r["id"] for r in _read(out, "dev")}


def test_datasets_export_has_a_config_per_format_with_hf_splits(split_build, tmp_path):
    from datasets import load_from_disk

    out, _ = split_build
    dest = tmp_path / "hf"
    counts = export.write_datasets(out, ["json"], dest)
    ds = load_from_disk(str(dest / "json"))
    assert {s: len(ds[s]) for s in ds} == {"train": 5, "validation": 2, "test": 2}
    assert counts == {"json": {"train": 5, "validation": 2, "test": 2}}
    assert {r["id"] for r in ds["train"]} == {r["id"] for r in _read(out, "train")}
    card = (dest / "README.md").read_text(encoding="utf-8")
    assert "| `json` | `train` | 5 |" in card and "| `json` | `validation` | 2 |" in card
    assert "development split" in card


def test_evaluate_reads_the_test_split_only(split_build):
    from treeagent.agents.shards import example_ids

    out, _ = split_build
    files = splits.test_tables(out, ["json"])
    assert files == [out / "examples" / "json.parquet"]
    ids = set(example_ids([str(f) for f in files]))
    assert ids == {r["id"] for r in _read(out, "test")}
    assert not ids & {r["id"] for s in ("dev", "train") for r in _read(out, s)}
    source = (Path(__file__).parents[1] / "flows" / "evaluate.py").read_text()
    assert "splits.test_tables(" in source and '/ "examples" /' not in source


# ------------------------------------------------------------------ params and CLI


def test_the_paper_preset_builds_json_splits_and_the_demo_none():
    from treeagent.pipeline import config

    paper = config.validate(config.preset("paper")).build_kwargs()
    assert paper["splits"] == {"json": {"dev": 3200, "train": 13200}}
    assert config.validate(config.preset("demo")).build_kwargs()["splits"] == {}
    bad = config.preset("demo")
    bad["build"]["splits"] = {"json": {"dev": -1, "holdout": 2}, "xml": {}}
    with pytest.raises(config.ParamsError) as err:
        config.validate(bad)
    assert "build.splits.json.holdout: unknown key" in str(err.value)
    assert "build.splits.json.dev: -1 is below the minimum 0" in str(err.value)
    assert "build.splits.xml: 'xml' is not built" in str(err.value)


@pytest.mark.parametrize("arg", ["json-dev=3", "json:dev=x", "json:holdout=3"])
def test_a_bad_split_option_is_one_line_and_exit_2(arg, capsys, tmp_path):
    from treeagent.cli.main import main

    status = main(["bench", "build", "--split", arg, "--no-acquire", "--raw",
                   str(tmp_path), "--out", str(tmp_path / "v")])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and err[0].startswith("error:") and "split" in err[0]


def test_the_examples_gate_checks_dev_and_train_as_the_test_tables(split_build, tmp_path,
                                                                    monkeypatch):
    from treeagent.bench import contexts, examples_gate
    from treeagent.pipeline import gx

    out, _ = split_build
    monkeypatch.setattr("treeagent.bench.sources.records_from_text", extract)  # the units'
    # reader (hand-built events); the gate's re-check reads records with it
    tables = splits.gated_tables(out, ["json", "yaml"], SPLIT_PARAMS["splits"])
    assert tables == [("dev", out / "splits" / "dev", ["json"]),
                      ("train", out / "splits" / "train", ["json"])]
    suites = []
    for split, folder, formats in tables:
        for suite in examples_gate.suites(folder, formats, [2048], SPLIT_PARAMS["tasks"],
                                          ["qwen3"], contexts.DEFAULT_TOLERANCE):
            suite.name = f"{split} {suite.name}"
            suites.append(suite)
    doc = gx.check("examples", suites, tmp_path)
    assert doc["success"] and {s["name"]: s["rows"] for s in doc["suites"]} == {
        "examples.dev grid": 2, "examples.dev examples": 2, "examples.train grid": 5,
        "examples.train examples": 5}
    source = (Path(__file__).parents[1] / "flows" / "validate.py").read_text()
    assert "splits.gated_tables(" in source


def test_show_finds_a_dev_example(split_build, capsys):
    from treeagent.cli.main import main

    out, _ = split_build
    dev_id = _read(out, "dev")[0]["id"]
    assert main(["bench", "show", dev_id, "--out", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["id"] == dev_id
