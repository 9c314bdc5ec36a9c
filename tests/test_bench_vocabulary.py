"""Questions speak each source's vocabulary: field glossaries, record kinds as
the source's readers name them, records named by their natural name or id (or by the
field that tells them apart, said as such), never by a generator-made label.

Units are small hand-written responses read by the real source adapters; expected
wordings are written out here from the sources' documentation, not produced by the code
under test. The second reader confirms every question asked of them.
"""

from __future__ import annotations

import json
import random
import re

import pytest

from test_bench_independent import _confirm, _context
from test_bench_questions import _crossref, _gbif, _nvd, _openapi, _trials
from treeagent.bench import sources, tasks
from treeagent.bench.sources import records_from_text
from treeagent.scoring import TASKS


def _all(fmt: str, src: str, text: str, seeds: int = 4) -> list[tasks.Question]:
    recs = records_from_text(fmt, src, text, unit_id=f"{fmt}/{src}/a")
    out = []
    for seed in range(seeds):
        for task in TASKS:
            seen: set[str] = set()
            for _ in range(3):
                q = tasks.generate(task, recs, random.Random(seed), seen)
                if q is not None:
                    out.append(q)
    return out


# ------------------------------------------------------------------ declared words


@pytest.mark.parametrize("key", sorted(sources.SOURCES))
def test_every_declared_phrase_reads_as_words_and_reveals_no_schema(key):
    src = sources.SOURCES[key]
    assert src.kinds, key  # every source names its record kinds
    for phrase in [p for p in src.fields.values() if p] + [
            w for k in src.kinds.values() for w in (k.singular, k.plural)]:
        assert re.fullmatch(r"[A-Za-z][A-Za-z0-9 '(),/.+-]*", phrase), phrase
        assert not re.search(r"[a-z][A-Z]|_", phrase), phrase  # no camelCase, no snake_case
        assert tasks.leaks(f"What is the {phrase}?") == [], phrase


def test_kinds_are_the_sources_own_words():
    want = {("json", "usgs"): "earthquake events", ("json", "nvd"): "CVE entries",
            ("json", "crossref"): "works", ("json", "clinicaltrials"): "studies",
            ("json", "nih_reporter"): "projects", ("json", "gbif"): "occurrences",
            ("json", "contracts_finder"): "notices", ("yaml", "apis-guru"): "API operations"}
    for key, plural in want.items():
        assert plural in {k.plural for k in sources.get(*key).kinds.values()}, key
    assert "awards" in {k.plural for k in sources.get("json", "usaspending").kinds.values()}


# ------------------------------------------------------------------ field words


def test_nvd_scores_say_which_cvss_version_they_belong_to():
    qs = _all("json", "nvd", _nvd(random.Random(3)), seeds=8)
    text = " ".join(q.question for q in qs)
    assert "CVSS v3.1 base score" in text or "CVSS v2 base score" in text
    assert "CVE entry" in text and "vulnerability " not in text.replace("vulnerability status", "")
    for q in qs:  # two base scores in every entry: never asked without their version
        assert not re.search(r"(?<!v3\.1 )(?<!v2 )base score", q.question), q.question
        assert "cvss metric" not in q.question.lower() and "cvss data" not in q.question.lower()


def test_crossref_duplicates_are_never_asked_and_counts_read_as_words():
    qs = _all("json", "crossref", _crossref(random.Random(2)), seeds=8)
    text = " ".join(q.question for q in qs)
    assert "number of references" in text or "citation count" in text
    for q in qs:  # references-count repeats reference-count; issn-type value repeats ISSN
        fields = tasks.spec_fields(q.spec)
        assert "references count" not in fields and "issn type value" not in fields, q.question
        assert "is referenced by" not in q.question and "date parts" not in q.question


def test_clinical_trials_modules_and_structs_are_not_words():
    qs = _all("json", "clinicaltrials", _trials(random.Random(1)), seeds=8)
    assert qs
    for q in qs:
        low = q.question.lower()
        assert not any(w in low for w in ("module", "struct", "protocol section", "nct id")), low
    text = " ".join(q.question for q in qs)
    assert 'the study "NCT0' in text


# ------------------------------------------------------------------ naming records


def test_openapi_parameters_and_responses_are_named_as_a_reader_names_them():
    recs = records_from_text("yaml", "apis-guru", _openapi(random.Random(0)),
                             unit_id="yaml/apis-guru/a")
    by = {r.description: r for r in recs}
    param = next(r for d, r in by.items() if d.endswith('parameter "limit" of the operation '
                                                     '"getPets"'))
    assert tasks.naming(param) == f"the {param.description}"
    resp = by['404 response of the operation "getPets"']
    assert tasks.naming(resp) == 'the 404 response of the operation "getPets"'
    assert tasks.naming(by["getPets"]) == 'the API operation "getPets"'
    for q in _all("yaml", "apis-guru", _openapi(random.Random(0))):
        assert not re.search(r"\((?:query|header|path)\)", q.question), q.question


def test_a_record_without_a_name_is_named_by_the_field_that_tells_it_apart():
    # occurrences without occurrence ID or catalogue number: the locality identifies
    recs = records_from_text("json", "gbif", _gbif(random.Random(0)), unit_id="json/gbif/a")
    named = [tasks.naming(r) for r in recs if r.description]
    assert named == [f'the occurrence with locality "Site {c}"' for c in "ABCDEFGH"]
    # a category that is rare by chance never names a record
    assert not any("basis of record" in n for n in named)


def test_html_rows_are_named_by_their_column():
    page = ("<table><tr><th>Model</th><th>Price</th><th>Colour</th></tr>"
            "<tr><td>Alpha 1</td><td>1299</td><td>Red</td></tr>"
            "<tr><td>Beta 2</td><td>899</td><td>Blue</td></tr>"
            "<tr><td>Gamma 3</td><td>450</td><td>Red</td></tr></table>")
    recs = records_from_text("html", "websrc", page, unit_id="html/websrc/a")
    row = next(r for r in recs if r.description == "Beta 2")
    assert tasks.naming(row) == 'the table row with model "Beta 2"'
    many = next(q for q in _all("html", "websrc", page) if q.task == "two_records")
    assert ", named by their model: " in many.question, many.question


def test_a_header_is_named_as_shown_when_lower_case_would_misname_it():
    # a candidate's name and an abbreviation keep their capitals; a plain header reads as
    # words; a results table's abbreviation is spelled out
    page = ("<table><tr><th>Date(s) administered</th><th>Andrew Cuomo (D)</th>"
            "<th>W-L-T</th><th>Year</th><th>Pts</th></tr>"
            + "".join(f"<tr><td>March {i}, 2014</td><td>{50 + i}%</td><td>{i}-2-1</td>"
                      f"<td>{2000 + i}</td><td>{3 * i}</td></tr>" for i in range(1, 6))
            + "</table>")
    recs = records_from_text("html", "wikitables", page, unit_id="html/wikitables/a")
    assert tasks.field_words(recs[0]) == {
        "date(s) administered": "date(s) administered",
        "andrew cuomo (d)": '"Andrew Cuomo (D)" value', "w l t": '"W-L-T" value',
        "year": "year", "pts": "points"}  # kept capitals: quoted as the label they are
    qs = _all("html", "wikitables", page)
    assert any("Andrew Cuomo (D)" in q.question for q in qs)
    assert not any("andrew cuomo" in q.question or "w l t" in q.question for q in qs)


def test_javascript_data_keys_are_not_fields_and_kinds_say_what_the_literal_is():
    text = ("const config = {rules: {'no-console': 'error', 'no-unused-vars': 'warn'}, "
            "settings: {ecmaVersion: 2020, sourceType: 'module'}};\n")
    recs = records_from_text("javascript", "eslint", text, unit_id="javascript/eslint/a")
    member = next(r for r in recs if r.description == "settings")
    assert tasks.naming(member) == 'the config property "settings"'
    assert tasks.field_words(member) == {"ecma version": "ECMAScript version",
                                         "source type": "source type"}
    rules = next(r for r in recs if r.description == "rules")
    assert tasks.field_words(rules) == {}  # rule names are data, not property names
    assert tasks.lookup_fields(rules) == []


def test_an_expected_errors_position_is_asked_as_the_errors_not_the_test_cases():
    # an ESLint invalid test case holds its one expected error in `errors: [{...}]`;
    # "the end column of the object with code ..." would read as the test case's own
    case = ('{code: "x ? x : 1;", output: "x || 1;", errors: [{messageId: "unneeded", '
            'type: "ConditionalExpression", line: 1, column: 1, endLine: 1, endColumn: 10}]}')
    recs = records_from_text("javascript", "eslint", case, unit_id="javascript/eslint/a")
    test_case = next(r for r in recs if r.description == "x ? x : 1;")
    assert tasks.field_words(test_case) == {
        "code": "code", "output": "output", "message id": "error message ID",
        "errors type": "error node type", "line": "error line", "column": "error column",
        "end line": "error end line", "end column": "error end column"}
    qs = [q for q in _all("javascript", "eslint", case) if q.task == "one_field"]
    assert qs and all(" end column of " not in q.question or "error end column" in q.question
                      for q in qs)


def test_objects_named_one_by_one_are_never_a_count_scope():
    # each `cfgN` is one object of scalars, named by its binding; "how many objects"
    # could not say whether it means these or every object literal, so only the latter
    texts = [f"const cfg{i} = {{level: {i}, mode: 'm{i % 2}', size: {10 * i}}};" for i in range(5)]
    text, recs, srcs = _context("javascript", "eslint", texts)
    assert {a.kind for a in tasks.aggregates(recs)} == {"settings object", "object"}
    assert {a.kind for a in tasks.askable(tasks.aggregates(recs))} == {"object"}
    qs = [q for seed in range(6) for task in ("conditional_count", "numeric_extremum")
          if (q := tasks.generate(task, recs, random.Random(seed))) is not None]
    assert qs and all("object literals in this input" in q.question for q in qs)
    assert all(_confirm(q.task, q.spec, q.answer, "javascript", text, srcs) == "" for q in qs)


# ------------------------------------------------------------------ the second reader


@pytest.mark.parametrize("fmt,src,make", [
    ("json", "nvd", _nvd), ("json", "crossref", _crossref),
    ("json", "clinicaltrials", _trials), ("json", "gbif", _gbif),
    ("yaml", "apis-guru", _openapi)])
def test_the_second_reader_confirms_every_reworded_question(fmt, src, make):
    rng = random.Random(5)
    text, recs, srcs = _context(fmt, src, [make(rng), make(rng)])
    n = 0
    for seed in range(3):
        for task in TASKS:
            q = tasks.generate(task, recs, random.Random(seed))
            if q is None or tasks.ambiguous(q, recs):
                continue
            n += 1
            assert _confirm(task, q.spec, q.answer, fmt, text, srcs) == "", q.question
    assert n >= 8


def test_unknown_sources_keep_their_record_words():
    # records of a unit id outside the registry (tests, ad-hoc units) are worded as given
    units = json.dumps({"type": "FeatureCollection", "features": [
        {"type": "Feature", "id": f"e{i}", "properties": {"mag": 1.0 + i, "title": f"Q {i}"},
         "geometry": {"type": "Point", "coordinates": [0, 0, i]}} for i in range(4)]})
    recs = records_from_text("json", "usgs", units, unit_id="u")
    assert tasks.naming(recs[0]) == 'the earthquake event "Q 0"'


def test_page_labels_that_are_verbs_are_named_as_nouns():
    html = ('<table class="infobox vcard"><tbody><tr><th colspan="2">Mozilla Foundation</th>'
            '</tr><tr><th scope="row">Industry</th><td>Open-source software</td></tr>'
            '<tr><th scope="row">Founded</th><td>February 28, 1998</td></tr>'
            '<tr><th scope="row">Founder</th><td>Netscape Communications</td></tr></tbody>'
            '</table>')
    for src in ("websrc", "swde", "readability", "wikitables"):
        (rec,) = records_from_text("html", src, html, unit_id=f"html/{src}/a#/table")
        assert tasks.field_words(rec) == {"industry": "industry", "founded": "founding date",
                                          "founder": "founder"}
