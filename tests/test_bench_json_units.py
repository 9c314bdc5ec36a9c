"""JSON parser units (B.1 "a JSON value inside an ordered response list"): a list response
too long to anchor a family is cut into its records' JSON values, each a unit that reads
alone; a short response stays whole."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from treeagent.bench.model import UnitFile
from treeagent.bench.sources import json_records, records_from_text
from treeagent.bench.sources.acquiring import sample_root

NIH = "json/nih_reporter/nih-reporter-dept-lookup__grants_sample.json"


def _units(source: str, text: str, rel: str = "a.json"):
    notes: list[tuple] = []
    f = UnitFile("json", source, f"json/{source}/{rel}", rel, {"file": rel}, (),
                 lambda reason, **extra: notes.append((reason, extra)))
    return list(json_records.file_units(text, f)), notes


def test_a_long_list_response_is_cut_into_its_records():
    # the RePORTER sample: five projects in 17 KB, over 4,096 tokens whole (more than a
    # family's anchors may take at 8K), each project 3-4 KB alone
    text = (sample_root() / NIH).read_text(encoding="utf-8")
    data = json.loads(text)
    assert len(text) > json_records.MAX_WHOLE_CHARS
    units, notes = _units("nih_reporter", text, NIH.split("/", 2)[2])
    assert notes == []
    assert [u.id.rsplit("#", 1)[1] for u in units] == [f"$[{i}]" for i in range(5)]
    for u, project in zip(units, data):
        assert json.loads(u.text) == project
        assert len(u.text) <= json_records.MAX_WHOLE_CHARS
        assert u.text.startswith("{\n  \"fiscal_year\"")  # its own indentation, as written
        assert u.records == records_from_text("json", "nih_reporter", u.text, unit_id=u.id)
        (rec,) = u.records
        assert rec.description == project["project_num"] and rec.path == "$"
        assert rec.fields["award amount"] == project["award_amount"]


def test_a_short_response_or_one_whose_records_do_not_read_alone_stays_whole():
    short = json.dumps([{"project_num": f"R{i}", "award_amount": i} for i in range(3)])
    units, _ = _units("nih_reporter", short)
    assert [u.text for u in units] == [short]
    # NVD items read alone are no response NVD writes: the feed stays one unit
    nvd = json.dumps({"CVE_Items": [{"cve": {"CVE_data_meta": {"ID": f"CVE-2020-{i:04d}"}},
                                     "impact": {"baseMetricV3": {"exploitabilityScore": i}},
                                     "publishedDate": "2020-01-01T00:00Z" + " " * 200}
                                    for i in range(60)]}, indent=2)
    assert len(nvd) > json_records.MAX_WHOLE_CHARS
    units, _ = _units("nvd", nvd)
    assert [u.text for u in units] == [nvd] and len(units[0].records) == 60


_VALUE = st.one_of(st.integers(-10**6, 10**6), st.booleans(),
                   st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)),
                           min_size=1, max_size=20))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["basisOfRecord", "country", "year",
                                                 "eventRemarks", "depth"]), _VALUE,
                                max_size=4), min_size=2, max_size=40),
       st.sampled_from([None, 0, 1, 2, 4, "\t"]), st.integers(0, 12_000))
def test_every_cut_record_is_its_json_value_and_reads_as_one_record(extra, indent, pad):
    occurrences = [{"occurrenceID": f"occ-{i}", "note": "x" * (pad // len(extra)), **e}
                   for i, e in enumerate(extra)]
    text = json.dumps({"offset": 0, "results": occurrences}, indent=indent)
    units, _ = _units("gbif", text)
    if len(text.strip()) <= json_records.MAX_WHOLE_CHARS:
        assert [u.text for u in units] == [text]
        return
    assert [json.loads(u.text) for u in units] == occurrences
    for i, u in enumerate(units):
        assert u.id.endswith(f"#$.results[{i}]")
        (rec,) = u.records
        assert rec.description == f"occ-{i}" and rec.select == (("@lacks", "results"),)
