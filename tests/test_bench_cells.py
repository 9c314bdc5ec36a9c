"""The grid build sharded by (format, length) cell (treeagent.bench.cells) writes the
serial build's files byte for byte, whatever order and processes the cells run in."""

from __future__ import annotations

import dataclasses
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import pytest

from treeagent import config
from treeagent.bench import build, cells, sources


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


@pytest.mark.parametrize("mapper", [_in_threads_backwards, _in_processes],
                         ids=["threads-backwards", "processes"])
def test_the_sharded_build_writes_the_serial_builds_files(grid, tmp_path, mapper) -> None:
    raw, params = grid
    units = {f: list(sources.units(f, raw_dir=raw)) for f in params.formats}
    serial = build.build(params, units, tmp_path / "serial")
    cells.build_sharded(params, raw, tmp_path / "sharded", mapper)
    assert serial.inventory["examples"] >= 4 and serial.rejections  # kept and rejected rows
    assert len({r["format"] for r in serial.rejections}) >= 1
    want, got = _files(tmp_path / "serial"), _files(tmp_path / "sharded")
    assert sorted(got) == sorted(want)
    assert [n for n in want if want[n] != got[n]] == []


def test_cells_are_format_major_and_cover_the_grid(grid) -> None:
    raw, params = grid
    specs = cells.cells(params, raw)
    assert [(s.fmt, s.length) for s in specs] == [
        ("json", 2048), ("json", 4096), ("yaml", 2048), ("yaml", 4096),
        ("html", 2048), ("html", 4096)]
    assert build.BuildParams(**specs[0].params) == params  # the params travel whole
