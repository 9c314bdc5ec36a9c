"""A source with records that a build never uses as evidence is named in the inventory
with the reason in words where its data cannot supply evidence (B.1)."""

from __future__ import annotations

import pytest

from helpers import SOURCES
from treeagent.bench import tasks, variety
from treeagent.bench.model import UnitFile
from treeagent.bench.sources import html_records
from treeagent.bench.sources.registry import get


def _cells(n: int) -> dict:
    return {"one_field@8K": {"kept": n, "distinct": n, "top_unit": "u", "top_unit_examples": 1}}


def test_the_shortfall_line_says_why_a_source_cannot_be_evidence():
    lines = variety.shortfalls("html", _cells(12), 0, ["swde", "websrc", "wikitables"],
                               ["wikitables"])
    (line,) = lines
    assert line.startswith("html: sources with records never used as evidence: ")
    reason = get("html", "swde").no_evidence
    assert reason and f"swde ({reason})" in line
    assert line.endswith(f"swde ({reason}); websrc")  # none declared: named alone


def test_a_reason_given_by_the_build_wins_over_the_declared_one():
    (line,) = variety.shortfalls("json", _cells(12), 0, ["gbif", "usgs"], ["usgs"],
                                 why={"gbif": "no unit fits half of the smallest bucket"})
    assert line.endswith("gbif (no unit fits half of the smallest bucket)")


@pytest.mark.skipif(SOURCES is None, reason="no mirror of the real sources "
                                            "(set $TREEAGENT_MIRROR)")
def test_swde_pages_hold_no_record_a_lookup_can_ask_nor_a_block_a_reader_can_address():
    # what the declared reason says, checked on the first SWDE pages of the mirror
    pages = sorted((SOURCES / "html/swde-book-subset").rglob("*.htm"))[:6]
    assert pages
    kinds = set()
    for page in pages:
        f = UnitFile("html", "swde", f"html/swde/{page.name}", page.name, {}, (),
                     lambda reason, **extra: None)
        text = page.read_bytes().decode("utf-8", "replace")
        for unit in html_records.file_units(text, f):
            for rec in unit.records:
                kinds.add(rec.kind)
                assert not tasks.lookup_fields(rec), rec.id
                assert rec.kind == "list item" or not rec.select, rec.id
    assert "list item" in kinds
