"""The grid build sharded by (format, length) cell (treeagent.bench.cells) writes the
serial build's files byte for byte, whatever order and processes the cells run in."""

from __future__ import annotations

import dataclasses
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from treeagent import signed_pickle
from treeagent.bench import build, cells, sources
from treeagent.pipeline import config


@pytest.fixture(scope="module")
def grid(tmp_path_factory) -> tuple[Path, build.BuildParams]:
    raw = tmp_path_factory.mktemp("raw")
    params = build.BuildParams(**config.Params(config.preset("demo")).build_kwargs())
    params = dataclasses.replace(params, formats=("json", "yaml", "html"), lengths=(2048, 4096))
    sources.acquire("sample", formats=params.formats, raw_dir=raw)
    return raw, params


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _in_threads_backwards(fn, items):
    with ThreadPoolExecutor(2) as pool:  # the last cell first: order must not matter
        done = list(pool.map(fn, list(items)[::-1]))
    return done[::-1]


def _in_processes(fn, items):
    with ProcessPoolExecutor(2) as pool:
        return list(pool.map(fn, items))


@pytest.fixture(scope="module")
def serial(grid, tmp_path_factory) -> tuple[build.BuildParams, build.BuildResult, Path]:
    """The serial build both sharded runs are compared with (built once)."""
    raw, params = grid
    # four a cell: the sample then also yields rejected candidates (repeated questions),
    # so the rejections file is compared too
    params = dataclasses.replace(params, per_cell=4)
    units = {f: list(sources.units(f, raw_dir=raw)) for f in params.formats}
    out = tmp_path_factory.mktemp("serial")
    return params, build.build(params, units, out), out


@pytest.mark.parametrize(("mapper", "workers"), [(_in_threads_backwards, 6), (_in_processes, 2)],
                         ids=["a-task-per-cell-threads-backwards", "a-task-per-format-processes"])
def test_the_sharded_build_writes_the_serial_builds_files(grid, serial, tmp_path, mapper,
                                                          workers) -> None:
    raw = grid[0]
    params, result, folder = serial
    cells.build_sharded(params, raw, tmp_path / "sharded", mapper, workers=workers)
    assert result.inventory["examples"] >= 4 and result.rejections  # kept and rejected rows
    assert len({r["format"] for r in result.rejections}) >= 1
    want, got = _files(folder), _files(tmp_path / "sharded")
    assert sorted(got) == sorted(want)
    assert [n for n in want if want[n] != got[n]] == []


def test_tasks_come_group_major_and_give_every_worker_one(grid) -> None:
    raw, params = grid
    big = dataclasses.replace(params, lengths=(2048, 4096, 8192, 16384, 32768))
    # within a group, the costliest format first (a YAML cell costs the most CPU per
    # token of these three, JSON the least), whatever the order of params.formats
    assert params.formats == ("json", "yaml", "html")
    assert [(s.fmt, s.lengths) for s in cells.cells(params, raw, 1)] == [
        ("yaml", (2048, 4096)), ("html", (2048, 4096)), ("json", (2048, 4096))]
    assert [(s.fmt, s.lengths) for s in cells.cells(big, raw, 6)] == [
        ("yaml", (32768,)), ("html", (32768,)), ("json", (32768,)),
        ("yaml", (2048, 4096, 8192, 16384)), ("html", (2048, 4096, 8192, 16384)),
        ("json", (2048, 4096, 8192, 16384))]
    two = cells.cells(big, raw, 2)  # two workers share a format, each starts on its own
    assert [s.lengths for s in two] == [(32768,)] * 3 + [(2048, 4096, 8192, 16384)] * 3
    assert two[0].fmt != two[1].fmt
    assert len(cells.cells(params, raw, 64)) == 6  # at most one task per cell
    specs = cells.cells(params, raw, 3)
    assert build.BuildParams(**specs[0].params) == params  # the params travel whole


@given(lengths=st.sets(st.integers(256, 1 << 20), min_size=1, max_size=12),
       groups=st.integers(1, 8))
def test_balanced_groups_deal_every_length_once_and_none_is_avoidably_heavy(lengths, groups):
    got = cells.balanced(sorted(lengths), groups)
    assert sorted(n for g in got for n in g) == sorted(lengths)  # each length once
    assert len(got) == min(groups, len(lengths)) and all(g == tuple(sorted(g)) for g in got)
    loads = [sum(g) for g in got]
    assert loads == sorted(loads, reverse=True)
    # longest-first dealing: the heaviest group is its longest length alone, or exceeds
    # the lightest by at most the shortest length it holds
    heavy = got[0]
    assert len(heavy) == 1 or loads[0] - loads[-1] <= min(heavy)


def test_a_format_is_prepared_once_per_build_and_its_scratch_removed(grid, tmp_path,
                                                                     monkeypatch) -> None:
    """Each task on a fresh worker (nothing kept in memory): the first task of a format
    prepares it, the others load what it left in the build's scratch folder."""
    raw, params = grid
    params = dataclasses.replace(params, per_cell=2)
    made: list[str] = []
    real = cells.B.prepare_format
    monkeypatch.setattr(cells.B, "prepare_format",
                        lambda fmt, *a, **k: made.append(fmt) or real(fmt, *a, **k))

    def fresh_workers(fn, items):
        out = []
        for item in items:
            cells._LAST.clear()
            out.append(fn(item))
        return out

    cells._LAST.clear()
    cells.build_sharded(params, raw, tmp_path / "shared", fresh_workers, workers=2)
    cells._LAST.clear()
    assert len(cells.cells(params, raw, 2)) == 2 * len(params.formats)
    assert sorted(made) == sorted(params.formats)  # once each, not once per task
    assert not list(Path(raw).glob(".cells-*"))  # the scratch folder is gone
    from treeagent.bench import independent

    assert independent._SHARED[0] is None  # and no longer named to the second reader
    units = {f: list(sources.units(f, raw_dir=raw)) for f in params.formats}
    build.build(params, units, tmp_path / "serial")
    want, got = _files(tmp_path / "serial"), _files(tmp_path / "shared")
    assert sorted(got) == sorted(want) and [n for n in want if want[n] != got[n]] == []


def test_a_saved_prepared_format_fills_the_same_rows(grid, tmp_path) -> None:
    from treeagent.bench import contexts
    from treeagent.bench.sources import records_from_text

    raw, params = grid
    params = dataclasses.replace(params, per_cell=2, formats=("json",))
    counter = contexts.Counter(params.tokenizers)
    prep = build.prepare_format("json", sources.units("json", raw_dir=raw), params, counter)
    key = signed_pickle.new_key()
    assert cells.save_prepared(prep, tmp_path / "json.pickle", key)
    assert cells.load_prepared(tmp_path / "json.pickle", signed_pickle.new_key()) is None
    loaded = cells.load_prepared(tmp_path / "json.pickle", key)
    assert loaded is not None and loaded.unit_of_rec and loaded.unit_of_rec != prep.unit_of_rec
    assert sorted(loaded.unit_of_rec.values()) == sorted(prep.unit_of_rec.values())
    rows = build.fill(prep, params, counter, records_from_text)
    again = build.fill(loaded, params, contexts.Counter(params.tokenizers), records_from_text)
    assert again == rows and rows[0]  # (rows, statistics, notes), some rows
    assert cells.load_prepared(tmp_path / "none.pickle", key) is None
    assert not cells.save_prepared(prep, tmp_path / "no-such-folder" / "json.pickle", key)


def test_a_context_is_checked_once_and_only_when_a_question_is_asked_over_it(
        grid, monkeypatch) -> None:
    """Validation re-parses and recounts a context at its first candidate row: once per
    context with candidates, never for a context no question is asked over."""
    from treeagent.bench import contexts, validate
    from treeagent.bench.sources import records_from_text

    raw, params = grid
    params = dataclasses.replace(params, per_cell=2, formats=("json",))
    counter = contexts.Counter(params.tokenizers)
    prep = build.prepare_format("json", sources.units("json", raw_dir=raw), params, counter)
    built: list[str] = []
    checked: list[str] = []
    real_build, real_check = contexts.build_context, validate.check_context
    monkeypatch.setattr(contexts, "build_context",
                        lambda *a, **k: (c := real_build(*a, **k), built.append(c.text))[0])
    monkeypatch.setattr(validate, "check_context",
                        lambda fmt, text, *a: (checked.append(text), real_check(fmt, text, *a))[1])
    rows, _, _ = build.fill(prep, params, counter, records_from_text)
    asked = {(r["family"], r["length"]) for r in rows}
    assert len(checked) == len(asked) and len(set(checked)) == len(checked)
    assert set(checked) <= set(built) and len(built) >= len(checked)
