"""Families anchor on units a lookup can ask about, and a small grid's lookup cells
draw on every source with such units (not the first few of the alphabet)."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from treeagent.bench import build, contexts, sources, tasks, validate
from treeagent.pipeline import config


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> tuple[Path, build.BuildParams]:
    raw = tmp_path_factory.mktemp("raw")
    params = build.BuildParams(**config.Params(config.preset("demo")).build_kwargs())
    params = dataclasses.replace(params, formats=("json", "html"), lengths=(2048, 4096))
    sources.acquire("sample", formats=params.formats, raw_dir=raw)
    return raw, params


def _prepared(fmt: str, raw: Path, params: build.BuildParams) -> build.Prepared:
    return build.prepare_format(fmt, sources.units(fmt, raw_dir=raw), params,
                                contexts.Counter(params.tokenizers))


def test_the_first_anchor_holds_a_record_a_lookup_can_ask(sample):
    raw, params = sample
    prep = _prepared("html", raw, params)
    mute = [i for i, s in prep.support.items() if not s.widest]
    source = prep.units[mute[0]].source  # a source with list-only units beside others
    assert any(prep.support[i].widest for i in prep.support if prep.units[i].source == source)
    for seed in range(12):
        got = build._anchors(prep.pool, prep.units, prep.budget, random.Random(seed), set(),
                             prep.support, source=source)
        assert prep.units[got[0]].source == source and prep.support[got[0]].widest


def test_a_small_grid_draws_its_lookups_from_every_source(sample):
    raw, params = sample
    prep = _prepared("json", raw, params)
    turns = {prep.units[i].source for i, s in prep.support.items() if s.widest}
    assert len(turns) >= 4
    params = dataclasses.replace(params, tasks=tuple(tasks.LOOKUP_TASKS), per_cell=1)
    rows, _, _ = build.fill(prep, params, contexts.Counter(params.tokenizers),
                            sources.records_from_text)
    kept = [r for r in rows if not any(r[f"check_{c}"] for c in validate.CHECKS)]
    used = {prep.unit_map[u][0] for r in kept for u in r["source_ids"]}
    assert len(kept) >= 6
    assert len(used) >= len(turns) - 1, (sorted(used), sorted(turns))
