"""Records per B.1: readable fields, unique visible descriptions, per-format extraction."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from treeagent.bench.sources import records_from_text
from treeagent.bench.sources.common import flatten, humanize, sensitive
from treeagent.bench.sources.html_records import page_units
from treeagent.formats import parse

# ------------------------------------------------------------------ helpers


def test_humanize_reads_keys_as_words():
    assert humanize("baseScore") == "base score"
    assert humanize("award_amount") == "award amount"
    assert humanize("mag") == "magnitude"
    assert humanize("NCTId") == "NCT id"
    assert humanize("http://rs.tdwg.org/dwc/terms/recordedBy") == "recorded by"


def test_flatten_disambiguates_with_parent_keys_and_skips_long_lists():
    v = {"cvssV3": {"baseScore": 9.8}, "cvssV2": {"baseScore": 7.5}, "tags": ["a", "b"],
         "title": ["Only"], "note": "x" * 500, "empty": "", "nothing": None}
    assert flatten(v) == {"cvss v3 base score": 9.8, "cvss v2 base score": 7.5, "title": "Only"}


@given(st.dictionaries(st.from_regex(r"[a-z][a-zA-Z_]{0,8}", fullmatch=True),
                       st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                                 st.text(min_size=1, max_size=10).filter(lambda s: s == s.strip()
                                                                          and "\n" not in s),
                                 st.dictionaries(st.sampled_from(["id", "name", "value"]),
                                                 st.integers(), max_size=3)),
                       max_size=8))
def test_flatten_names_are_unique_and_values_are_scalars(d):
    out = flatten(d)
    assert len(out) == len(set(out))
    assert all(isinstance(v, int | float | str | bool) for v in out.values())
    leaves = []
    for v in d.values():
        leaves.extend(v.values() if isinstance(v, dict) else [v])
    assert all(any(v == x and type(v) is type(x) for x in leaves) for v in out.values())


def test_sensitive_strings_are_found():
    assert sensitive({"password": "hunter22"})
    assert sensitive({"a": ["x", "AKIAABCDEFGHIJKLMNOP"]})
    assert sensitive({"k": "ghp_" + "a1B2" * 9})
    assert sensitive({"label": "Ctrl+S", "n": 3, "password": ""}) is None
    assert sensitive({"hash": "deadbeef" * 8}) is None  # hex digests are not secrets


# ------------------------------------------------------------------ JSON

_USGS = {"type": "FeatureCollection", "features": [
    {"type": "Feature", "id": "ci1", "properties": {"mag": 4.6, "place": "10 km N of A",
                                                    "title": "M 4.6 - 10 km N of A"},
     "geometry": {"type": "Point", "coordinates": [-117.5, 35.1, 8.2]}},
    {"type": "Feature", "id": "ci2", "properties": {"mag": 3.1, "place": "5 km S of B",
                                                    "title": "M 4.6 - 10 km N of A"},
     "geometry": {"type": "Point", "coordinates": [-118.0, 34.0, 2.0]}},
]}


def test_json_descriptions_fall_back_when_titles_repeat():
    text = json.dumps(_USGS)
    recs = records_from_text("json", "usgs", text, unit_id="u")
    assert [r.description for r in recs] == ["10 km N of A", "5 km S of B"]
    assert recs[0].fields["magnitude"] == 4.6 and recs[0].fields["depth"] == 8.2
    assert recs[0].id == "u#$.features[0]" and recs[0].kind == "earthquake event"


def test_json_description_may_be_written_with_escapes():
    text = '{"message-type":"work","message":{"DOI":"10.1\\/abc","title":["T"]}}'
    (rec,) = records_from_text("json", "crossref", text)
    assert rec.description == "10.1/abc" and rec.fields["DOI"] == "10.1/abc"


def test_json_entities_without_a_unique_description_are_undescribed_and_reported():
    items = [{"DOI": "10.1/x", "title": ["Same"]}, {"DOI": "10.1/x", "title": ["Same"]},
             {"DOI": "10.1/y", "title": ["Other"]}]
    text = json.dumps({"message-type": "work-list", "message": {"items": items}})
    dropped = []
    recs = records_from_text("json", "crossref", text, on_drop=lambda p, w: dropped.append(p))
    # never looked up, but counted by aggregations (B.1: every visible record)
    assert [r.description for r in recs] == ["", "", "10.1/y"]
    assert dropped == ["$.message.items[0]", "$.message.items[1]"]
    assert {r.select for r in recs} == {("message", "items", "*")}
    assert recs[0].keys["DOI"] == ("DOI",) and recs[0].keys["title"] == ("title", "[1]")


def test_json_malformed_raises():
    with pytest.raises(ValueError):
        records_from_text("json", "usgs", '{"type": "FeatureCollection",')


# ------------------------------------------------------------------ YAML

_OPENAPI = """openapi: 3.0.0
info: {title: Pets, version: '1'}
paths:
  /pets:
    parameters:
      - {name: limit, in: query, schema: {type: integer}}
    get:
      operationId: listPets
      summary: List pets
      responses:
        '200': {description: A page of pets}
    post:
      summary: Create a pet
      parameters:
        - {name: limit, in: query, required: true, schema: {type: string}}
      responses:
        '201': {description: Created}
        default: {$ref: '#/components/responses/Error'}
  /pets/{id}:
    get:
      operationId: showPet
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
      responses:
        '200': {description: One pet}
"""


def test_yaml_records_are_paths_operations_parameters_responses():
    recs = records_from_text("yaml", "apis-guru", _OPENAPI)
    by = {r.description: r for r in recs}
    assert [r.kind for r in recs].count("operation") == 3
    assert by["listPets"].fields["method"] == "GET" and by["listPets"].fields["summary"] == "List pets"
    assert "POST /pets" in by  # no operationId: method and path
    # a path item's shared parameter is one record where it is written; the operation's
    # own parameter of the same name is the operation's
    # parameters and responses are described as a reader names them
    assert by['query parameter "limit" of the operation "POST /pets"'].fields["schema type"] == "string"
    assert by['query parameter "limit" of the path "/pets"'].fields["schema type"] == "integer"
    assert by['query parameter "limit" of the path "/pets"'].select[-2:] == ("parameters", "*")
    assert by['201 response of the operation "POST /pets"'].fields == {
        "status code": 201, "description": "Created"}
    # a $ref response is counted, its fields other than the status code unknown
    ref = by['default response of the operation "POST /pets"']
    assert ref.opaque and ref.fields == {"status code": "default"}
    # an absent `required` reads as OpenAPI's default (false), never as a written value
    assert by["listPets"].defaults == {"deprecated": False}
    assert by["/pets/{id}"].kind == "API path"
    assert len(by) == len(recs)


def test_yaml_dates_stay_as_written():
    text = "openapi: 3.0.0\npaths:\n  /a:\n    get:\n      x-added: 2020-01-02\n      responses: {}\n"
    (_, op) = records_from_text("yaml", "apis-guru", text)
    assert op.fields["x added"] == "2020-01-02"


# ------------------------------------------------------------------ HTML

_PAGE = """<html><body><h1>Shop</h1>
<table><tr><th>Model</th><th>Price</th><th>Stock</th></tr>
<tr><td>Alpha 1</td><td>1,299</td><td>yes</td>
<tr><td>Beta 2</td><td>899.50</td><td>no</td></tr></table>
<table><tr><td>Specs</td></tr><tr><td>Weight:</td><td>2.5 kg</td></tr>
<tr><td>Colour</td><td>Red</td></tr></table>
<ul><li>Free shipping<li>Two-year warranty<li>Free shipping</ul>
<div class="results"><div class="card"><span class="name">Gamma</span><span class="price">12</span></div>
<div class="card"><span class="name">Delta</span><span class="price">15</span></div>
<div class="card"><span class="name">Epsilon</span><span class="price">9</span></div></div>
<p>unclosed <b>markup
"""


def test_html_units_tables_lists_blocks_from_broken_html():
    units = list(page_units(_PAGE))
    kinds = []
    for text, _, _tree, node in units:
        recs = records_from_text("html", "websrc", text, unit_id="u")
        assert parse(text, "html").root.children[0].label == node.label
        kinds.append([(r.kind, r.description, r.fields) for r in recs])
    assert kinds[0] == [("table row", "Alpha 1", {"model": "Alpha 1", "price": 1299, "stock": "yes"}),
                        ("table row", "Beta 2", {"model": "Beta 2", "price": 899.5, "stock": "no"})]
    # named by a value under its label (a reader finds no table by its title row)
    assert kinds[1] == [("specification table", "2.5 kg", {"weight": "2.5 kg", "colour": "Red"})]
    # the repeated list item has no unique description: undescribed (counted, not named)
    assert kinds[2] == [("list item", "", {"text": "Free shipping"}),
                        ("list item", "Two-year warranty", {"text": "Two-year warranty"}),
                        ("list item", "", {"text": "Free shipping"})]
    assert [d for _, d, _ in kinds[3]] == ["Gamma", "Delta", "Epsilon"]
    assert kinds[3][0][2] == {"name": "Gamma", "price": 12}


# ------------------------------------------------------------------ JavaScript


def test_js_records_arrays_members_settings():
    recs = records_from_text("javascript", "eslint",
                             "const rules = [{name: 'semi', level: 2}, {name: 'quotes', level: 1}];")
    assert [(r.kind, r.description, r.fields) for r in recs] == [
        ("rule entry", "semi", {"name": "semi", "level": 2}),
        ("rule entry", "quotes", {"name": "quotes", "level": 1}),
        # and every object literal, undescribed, for aggregations over "objects"
        ("object", "", {"name": "semi", "level": 2}),
        ("object", "", {"name": "quotes", "level": 1})]
    assert all(r.counted for r in recs) and recs[2].select == ("*", "**")
    recs = records_from_text("javascript", "eslint",
                             "module.exports = {env: {browser: {a: 1}, node: {a: 2}}};")
    assert [r.description for r in recs if r.description] == ["browser", "node"]  # wrappers
    recs = records_from_text("javascript", "eslint", "export const cfg = {tabWidth: 2, semi: true};")
    assert [(r.kind, r.description) for r in recs] == [("settings object", "cfg"), ("object", "")]


_SPECS = """<html><body><div id="film"><h1><span>Die Another Day</span> (2002)</h1>
<p class="info"><b>Genres:</b> <a>Action</a>, <a>Adventure</a></p>
<p class="info"><b>Country:</b> <a>UK</a></p>
<div class="spec"><div class="spec-title"><strong>Runtime</strong></div><div>133</div></div>
<p class="info"><b>Directed By:</b> <span>Lee Tamahori</span></p>
</div></body></html>"""


def test_html_label_value_dom_subtree_is_one_record():
    ((text, path, _, _),) = list(page_units(_SPECS))
    (rec,) = records_from_text("html", "websrc", text, unit_id="u")
    assert path == "/html/body/div" and rec.kind == "specification block"
    assert rec.description == "Die Another Day"
    assert rec.fields == {"genres": "Action, Adventure", "country": "UK", "runtime": 133,
                          "directed by": "Lee Tamahori"}


def test_html_units_repeating_a_layout_are_skipped(tmp_path):
    from treeagent.bench import sources as S

    block = ("<div class='d{0}'><p><b>Size:</b> 4 in</p><p><b>Weight:</b> 2 oz</p>"
             "<p><b>Colour:</b> Red</p></div>")
    page = f"<html><body>{block.format(1)}{block.format(2)}</body></html>"
    mirror = tmp_path / "m" / "html" / "websrc-v1.0-sample"
    mirror.mkdir(parents=True)
    (mirror / "p.html").write_text(page)
    S.acquire("mirror", formats=["html"], sources=["websrc"], raw_dir=tmp_path / "raw",
              mirror_dir=tmp_path / "m", progress=False)
    rejections: list[dict] = []
    units = list(S.units("html", raw_dir=tmp_path / "raw", rejections=rejections))
    assert [u.id for u in units] == ["html/websrc/p.html#/html/body/div[1]"]
    assert rejections[0]["reason"] == "repeats the records of an earlier unit of the page"


def test_description_clashes_across_units():
    from treeagent.bench.model import Unit
    from treeagent.bench.sources import description_clashes

    a = Unit("json/crossref/a", "json", "crossref", '{"message-type":"work","message":{"DOI":"10.1\\/x"}}')
    a.records = records_from_text("json", "crossref", a.text, unit_id=a.id)
    b = Unit("json/crossref/b", "json", "crossref", '{"cited": "10.1\\/x"}')
    c = Unit("html/websrc/c", "html", "websrc", "<p>10.1/x</p>")
    d = Unit("html/websrc/d", "html", "websrc", "<p>10.1/y</p>")
    assert description_clashes(a.records[0], [a, b, c, d]) == ["json/crossref/b", "html/websrc/c"]
