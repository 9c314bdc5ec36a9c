"""Every question template reads as English: no doubled words, 'a'/'an' as the
next word sounds, no key-like words (snake_case, camelCase) outside quoted content; count
conditions mostly match two or more records.

The questions come from the real generators over records the real source adapters read
from small hand-written units of all four formats; the checks below are written from
the rules of English, not from the generators' helpers.
"""

from __future__ import annotations

import json
import random
import re

import pytest
import yaml

from test_bench_tasks import make_units
from treeagent.bench import sources, tasks
from treeagent.bench.aggregates import mixed_case
from treeagent.bench.sources import records_from_text
from treeagent.scoring import TASKS

_QUOTED = re.compile(r'"[^"]*"')
_VOWEL_SOUND_LETTERS = set("AEFHILMNORSX")  # letters whose spelled name starts with a vowel


def _features(rng: random.Random) -> str:
    feats = [{"type": "Feature", "id": f"ev{i}",
              "properties": {"mag": rng.choice([1.5, 2.0, 3.1, 4.4]), "place": f"Town {i}",
                             "title": f"M {i} - Town {i}", "magType": rng.choice(["ml", "md"]),
                             "net": rng.choice(["us", "ci"]), "tsunami": rng.choice([0, 1]),
                             "alert": rng.choice(["green", "yellow"])},
              "geometry": {"type": "Point", "coordinates": [rng.random(), rng.random(), i]}}
             for i in range(8)]
    return json.dumps({"type": "FeatureCollection", "features": feats})


def _openapi(rng: random.Random) -> str:
    paths = {}
    for p in ("/pets", "/owners", "/vets", "/visits"):
        params = [{"name": n, "in": rng.choice(["query", "header"]),
                   **({"required": rng.choice([True, False])} if rng.random() < 0.5 else {}),
                   "schema": {"type": rng.choice(["integer", "string"])}}
                  for n in ("limit", "offset", "apiVersion")]
        paths[p] = {m: {"operationId": f"{m}{p[1:].title()}", "summary": f"{m} {p[1:]}",
                        "parameters": params,
                        "responses": {"200": {"description": "ok"},
                                      "404": {"description": "missing"}}}
                    for m in ("get", "post")}
    # operations without an id are named by method and path (a path may read as a key)
    paths["/pet_owners/{ownerId}"] = {m: {"summary": f"{m} one owner", "parameters": [
        {"name": "ownerId", "in": "path", "required": True, "schema": {"type": "string"}}],
        "responses": {"200": {"description": "ok"}, "404": {"description": "missing"}}}
        for m in ("get", "delete")}
    return yaml.safe_dump({"openapi": "3.0.0", "paths": paths}, sort_keys=False)


def _page(rng: random.Random) -> str:
    rows = "".join(f"<tr><td>Model {i}</td><td>{rng.choice([3, 5, 8])}</td>"
                   f"<td>{rng.choice(['Red', 'Blue'])}</td><td>{rng.choice(['yes', 'no'])}</td></tr>"
                   for i in range(8))
    return ("<table><tr><th>Model</th><th>Engine size</th><th>Colour</th><th>In stock</th>"
            f"</tr>{rows}</table>")


def _js(rng: random.Random) -> str:
    items = [f"{{name: 'rule-{i}', ecmaVersion: {rng.choice([5, 6, 2015])}, "
             f"sourceType: '{rng.choice(['module', 'script'])}', fixable: {rng.choice(['true', 'false'])}}}"
             for i in range(8)]
    return "const rules = [" + ", ".join(items) + "];"


def _nvd(rng: random.Random) -> str:
    def metric(version: str, **data) -> dict:
        return {"source": "nvd@nist.gov", "type": "Primary",
                "cvssData": {"version": version, **data},
                "exploitabilityScore": rng.choice([1.8, 3.9, 10.0]),
                "impactScore": rng.choice([2.9, 3.6, 5.9])}
    vulns = [{"cve": {
        "id": f"CVE-2024-{1000 + i}", "sourceIdentifier": "cve@mitre.org",
        "published": f"2024-01-0{i + 1}T10:00:00.000", "lastModified": "2024-02-01T00:00:00.000",
        "vulnStatus": rng.choice(["Analyzed", "Modified"]),
        "metrics": {
            "cvssMetricV31": [metric("3.1", baseScore=rng.choice([5.3, 7.5, 9.8]),
                                     baseSeverity=rng.choice(["HIGH", "MEDIUM"]),
                                     attackVector=rng.choice(["NETWORK", "LOCAL"]))],
            "cvssMetricV2": [{**metric("2.0", baseScore=rng.choice([4.3, 5.0, 7.5]),
                                       accessVector=rng.choice(["NETWORK", "LOCAL"])),
                              "acInsufInfo": rng.choice([True, False])}]}}}
        for i in range(8)]
    return json.dumps({"resultsPerPage": 8, "vulnerabilities": vulns})


def _crossref(rng: random.Random) -> str:
    works = []
    for i in range(8):
        n = rng.randint(5, 60)
        works.append({"DOI": f"10.1000/paper.{i}", "title": [f"Paper number {i}"],
                      "reference-count": n, "references-count": n,
                      "is-referenced-by-count": rng.randint(0, 40),
                      "container-title": [rng.choice(["Nature", "Cell", "Science"])],
                      "ISSN": ["1234-5678"], "type": "journal-article",
                      "issn-type": [{"value": "1234-5678",
                                     "type": rng.choice(["print", "electronic"])}],
                      "member": rng.choice(["78", "311"]),
                      "published": {"date-parts": [[rng.choice([2019, 2020, 2021])]]}})
    return json.dumps({"status": "ok", "message-type": "work-list",
                       "message": {"items": works}})


def _trials(rng: random.Random) -> str:
    studies = [{"protocolSection": {
        "identificationModule": {"nctId": f"NCT0{i}123456", "briefTitle": f"Trial of drug {i}",
                                 "organization": {"fullName": rng.choice(["Univ A", "Clinic B"]),
                                                  "class": rng.choice(["INDUSTRY", "OTHER"])}},
        "statusModule": {"overallStatus": rng.choice(["RECRUITING", "COMPLETED"]),
                         "startDateStruct": {"date": f"2020-0{i + 1}",
                                             "type": rng.choice(["ACTUAL", "ESTIMATED"])},
                         "completionDateStruct": {"date": f"2023-0{i + 1}",
                                                  "type": rng.choice(["ACTUAL", "ESTIMATED"])}},
        "designModule": {"studyType": rng.choice(["INTERVENTIONAL", "OBSERVATIONAL"]),
                         "enrollmentInfo": {"count": rng.randint(10, 500), "type": "ACTUAL"}},
        "oversightModule": {"oversightHasDmc": rng.choice([True, False])}}}
        for i in range(8)]
    return json.dumps({"studies": studies})


def _gbif(rng: random.Random) -> str:
    # no occurrence ID or catalogue number: each is named by the field that tells it apart
    occ = [{"key": 4000 + i, "datasetKey": "50c9509d-22c7-4a22-a47d-8c48425ef4a7",
            "eventDate": f"2021-05-{10 + i}", "locality": f"Site {'ABCDEFGH'[i]}",
            "basisOfRecord": rng.choice(
                ["HUMAN_OBSERVATION", "PRESERVED_SPECIMEN"]),
            "decimalLatitude": rng.choice([55.1, 56.2, 57.3]), "isSequenced": rng.choice(
                [True, False]), "recordedBy": rng.choice(["A. Smith", "B. Jones"])}
           for i in range(8)]
    return json.dumps({"offset": 0, "results": occ})


_SOURCES = (("json", "usgs", _features), ("yaml", "apis-guru", _openapi),
            ("html", "websrc", _page), ("javascript", "eslint", _js), ("json", "nvd", _nvd),
            ("json", "crossref", _crossref), ("json", "clinicaltrials", _trials),
            ("json", "gbif", _gbif))


def _generated() -> list[tuple[str, str, str, tasks.Question]]:
    """(format, source, unit text, question) for every question of the set."""
    out = []
    for seed in range(6):
        rng = random.Random(seed)
        sets = [(fmt, src, text, records_from_text(fmt, src, text, unit_id=f"{fmt}/{src}/a"))
                for fmt, src, make in _SOURCES for text in [make(rng)]]
        sets.append(("json", "test", "", [r for u in make_units("json", 6, seed)
                                          for r in u.records]))
        for fmt, src, text, recs in sets:
            for task in TASKS:
                seen: set[str] = set()
                for _ in range(4):
                    q = tasks.generate(task, recs, random.Random(seed), seen)
                    if q is not None:
                        out.append((fmt, src, text, q))
    return out


@pytest.fixture(scope="module")
def generated():
    return _generated()


@pytest.fixture(scope="module")
def questions(generated):
    qs = [q.question for *_, q in generated]
    assert len(qs) >= 200
    return qs


def _template(question: str) -> str:
    return _QUOTED.sub(" QUOTED ", question)


def test_no_doubled_words(questions):
    for q in questions:
        words = re.findall(r"[A-Za-z]+", _template(q).lower())
        doubled = [a for a, b in zip(words, words[1:]) if a == b and a != "quoted"]
        assert not doubled, q


def _wrong_article(art: str, word: str) -> bool:
    if (word.isupper() and len(word) > 1) or re.fullmatch(r"[A-Za-z]\d*", word):
        vowel = word[0].upper() in _VOWEL_SOUND_LETTERS  # spelled: an ISSN, a URL, an r4
    elif word.lower().startswith(("uni", "use", "usu", "one", "eu")):
        vowel = False
    elif word.lower().startswith(("hour", "honest", "honor")):
        vowel = True
    else:
        vowel = word[0].lower() in "aeiou"
    return (art == "a") == vowel


def test_a_and_an_agree_with_the_next_word(questions):
    for q in questions:
        for art, word in re.findall(r"\b(a|an) ([A-Za-z]+)", _template(q)):
            if word != "QUOTED":
                assert not _wrong_article(art, word), (art, word, q)


def test_no_key_like_words_outside_quotes(questions):
    for q in questions:
        t = _template(q)
        assert not re.search(r"\b[A-Za-z]+_[A-Za-z_]+\b", t), q  # snake_case
        assert not re.search(r"\b[a-z]+[A-Z][A-Za-z]*\b", t), q  # camelCase
        assert not re.search(r"\b(?:What|Which) is the (?:required|deprecated) of\b", t), q


def test_count_conditions_mostly_match_two_or_more(questions):
    counts = []
    for seed in range(6):
        rng = random.Random(seed)
        for recs in (records_from_text("json", "usgs", _features(rng), unit_id="json/usgs/a"),
                     records_from_text("yaml", "apis-guru", _openapi(rng),
                                       unit_id="yaml/apis-guru/a")):
            q = tasks.generate("conditional_count", recs, random.Random(seed))
            if q is not None:
                counts.append(q.answer)
    assert counts and sum(c >= 2 for c in counts) >= 0.8 * len(counts), counts


def test_article_examples():
    assert [tasks.article(w) for w in ("ISSN", "URL", "HTTP method", "magnitude", "ecma version",
                                       "unit", "hour")] == ["an", "a", "an", "a", "an", "a", "an"]
    # a table header that is a letter, or a letter and a number, is spelled out
    assert [tasks.article(w) for w in ("r4", "R1", "p", "f", "x2 score", "rank")] == [
        "an", "an", "a", "an", "an", "a"]


def test_a_plural_amount_is_asked_as_the_number_of_it():
    # Wikipedia headers 'Goals', 'Points': "the highest number of goals", not "highest goals"
    assert [tasks.amount(w) for w in ("goals", "points", "total", "attendance", "status")] == [
        "number of goals", "number of points", "total", "attendance", "status"]
    recs = records_from_text("html", "wikitables", (
        "<table><tr><th>Player</th><th>Goals</th></tr>"
        + "".join(f"<tr><td>P{i}</td><td>{g}</td></tr>" for i, g in enumerate((3, 9, 4, 12, 7)))
        + "</table>"), unit_id="html/wikitables/a")
    texts = [q.question for seed in range(10) for task in ("numeric_extremum", "conditional_count")
             if (q := tasks.generate(task, recs, random.Random(seed))) is not None]
    assert any(t.startswith("What is the") for t in texts), texts
    assert any(t.startswith("How many") for t in texts), texts
    assert all(re.search(r"(highest|lowest|have a) number of goals", t) for t in texts), texts


def test_the_most_frequent_number_is_asked_as_a_value_of_the_field():
    # a medal table's 'Gold' column (one cell "n/a": not all numbers):
    # "Which value of the gold occurs ...", not "Which gold occurs ..."
    rows = [("A", 0), ("B", 2), ("C", 0), ("D", "n/a"), ("E", 0), ("F", 3)]
    recs = records_from_text("html", "wikitables", (
        "<table><tr><th>Nation</th><th>Gold</th></tr>"
        + "".join(f"<tr><td>{n}</td><td>{g}</td></tr>" for n, g in rows)
        + "</table>"), unit_id="html/wikitables/a")
    qs = [q for seed in range(10)
          if (q := tasks.generate("most_frequent", recs, random.Random(seed))) is not None]
    gold = [q for q in qs if "gold" in q.question]
    assert gold and all(q.question.startswith("Which value of the gold occurs most often")
                        and q.answer == [0] for q in gold), [q.question for q in qs]


def test_the_verb_agrees_with_the_field_phrase():
    # phrases written by hand: plural nouns, singular nouns ending in s, acronyms
    assert [tasks.be(w) for w in ("dynamic properties", "IDs", "tags", "hours")] == ["are"] * 4
    assert [tasks.be(w) for w in ("status", "address", "analysis", "radius", "species",
                                  "CVSS v3.1 base score", "HTTP method",
                                  "number of references")] == ["is"] * 8


def test_one_field_questions_use_the_verb_of_their_field_phrase():
    asked = 0
    for seed in range(6):
        rng = random.Random(seed)
        for fmt, src, make in _SOURCES:
            recs = records_from_text(fmt, src, make(rng), unit_id=f"{fmt}/{src}/a")
            q = tasks.generate("one_field", recs, random.Random(seed))
            if q is None:
                continue
            rec = next(r for r in recs if r.id == q.record_ids[0])
            name = q.spec["fields"][0]
            said = tasks.phrase(tasks.field_words(rec)[name], [rec.fields[name]])
            assert q.question.startswith(f"What {tasks.be(said)} the {said} of "), q.question
            asked += 1
    assert asked >= 20


# ------------------------------------------------------------------ source vocabulary


def _keys(fmt: str, text: str) -> set[str]:
    """Every key (JS: property name) written in a unit's text."""
    if fmt == "html":
        return set()
    if fmt == "javascript":
        return set(re.findall(r"([A-Za-z_$][\w$]*)\s*:", text))
    data = json.loads(text) if fmt == "json" else yaml.safe_load(text)
    out: set[str] = set()
    stack = [data]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            out |= {str(k) for k in v}
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return out


def _word_in(word: str, text: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) is not None


_FUNCTION_WORDS = {"in", "of", "to", "by", "on", "at", "for"}  # OpenAPI's "in" reads as "in"


def test_no_raw_key_where_the_glossary_has_a_phrase(generated):
    checked = 0
    for fmt, src, text, q in generated:
        if (fmt, src) not in sources.SOURCES:
            continue
        glossary = sources.get(fmt, src).fields
        said = " ".join(p for p in glossary.values() if p)
        template = _template(q.question)
        for key in _keys(fmt, text) & set(glossary):
            if not glossary[key] or key in _FUNCTION_WORDS:
                continue  # a container key left out of the words, or OpenAPI's "in"
            for raw in {key, _read(key)}:  # as written, and read word by word
                if not _word_in(raw, said):  # unless the source's own phrases use it
                    checked += 1
                    assert not _word_in(raw, template), (key, q.question)
    assert checked > 300


def _read(key: str) -> str:
    """A key read word by word, nothing translated: "cvssMetricV31" -> "cvss metric v31"."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", key)
    return " ".join(re.split(r"[\s_\-.]+", words)).lower().strip()


def test_kinds_are_named_from_the_source_vocabulary(generated):
    renamed = 0
    for fmt, src, _, q in generated:
        if (fmt, src) not in sources.SOURCES:
            continue
        kind = q.spec["kind"]
        words = sources.get(fmt, src).kinds.get(kind)
        if words is None and fmt == "javascript":  # items of a binding: "rule entry"
            label, _, what = kind.rpartition(" ")
            one, many = {"entry": ("entry", "entries"), "member": ("property", "properties")}[what]
            words = sources.Kind(f"{label.lower()} {one}", f"{label.lower()} {many}")
        assert words is not None, (fmt, src, kind)  # every other asked kind is declared
        assert words.singular in q.question or words.plural in q.question, q.question
        if kind != words.singular:  # the internal kind never names the records
            many = kind[:-1] + "ies" if kind.endswith("y") else kind + "s"
            said = [f'the {kind} "', f"{many} in this input", f"two {many}:", f"four {many}:",
                    f"every {kind} shown"]
            t = q.question.replace(words.plural, "KINDS").replace(words.singular, "KIND")
            assert not any(w in t for w in said), q.question
            renamed += 1
    assert renamed > 20  # operations are API operations, JS objects object literals


def _quakes_with_times(n: int = 8) -> str:
    feats = [{"type": "Feature", "id": f"ev{i}",
              "properties": {"time": 1585000000000 + 8_640_000_000 * i * i, "place": f"Town {i}",
                             "title": f"M {i} - Town {i}"},
              "geometry": {"type": "Point", "coordinates": [0.5, 0.5, i]}} for i in range(n)]
    return json.dumps({"type": "FeatureCollection", "features": feats})


def test_points_in_time_are_asked_as_earliest_and_latest():
    assert [tasks.is_time(w) for w in ("origin time", "publication date", "year", "magnitude",
                                       "time zone in minutes", "")] == [True] * 3 + [False] * 3
    recs = records_from_text("json", "usgs", _quakes_with_times(), unit_id="json/usgs/a")
    texts = []
    for seed in range(12):
        for task in ("numeric_extremum", "conditional_count"):
            q = tasks.generate(task, recs, random.Random(seed))
            if q is not None and "origin time" in q.question:
                texts.append(q.question)
    extremes = [t for t in texts if t.startswith("What is the")]
    counts = [t for t in texts if t.startswith("How many")]
    assert extremes and counts, texts
    assert all(re.match(r"What is the (earliest|latest) origin time among", t) for t in extremes)
    # raw epoch milliseconds are asked as an ISO time (the input's number is given after)
    assert all(re.search(r"have an origin time (earlier|later) than "
                         r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\?", t) for t in counts), counts
    assert not any(re.search(r"highest|lowest|greater than|less than", t) for t in texts)


def test_a_plural_field_phrase_reads_as_their_phrase_in_the_scope():
    # the phrase 'dynamic properties' is plural: not "that state a dynamic properties"
    agg = tasks.Aggregate("work", "dynamic properties", ("x",), [], [(None, "a"), (None, "b")],
                          missing=2, words="dynamic properties")
    assert agg.among().endswith("that state their dynamic properties")
    agg.words = "ISSN"
    assert agg.among().endswith("that state an ISSN")


def test_values_differing_only_in_case_are_not_counted_as_one():
    # the defect seen (JS, eslint fixtures): "How many object literals have the name
    # "foo"?" -> 3, counting an Identifier named "Foo"; a reader of code tells them apart
    items = ([{"name": "foo", "kind": "a"}] * 2 + [{"name": "Foo", "kind": "b"}]
             + [{"name": "bar", "kind": "a"}] * 3 + [{"name": "baz", "kind": "b"}] * 2)
    text = "const tests = [" + ", ".join(
        f"{{name: {json.dumps(i['name'])}, kind: {json.dumps(i['kind'])}, n: {k}}}"
        for k, i in enumerate(items)) + "];"
    recs = records_from_text("javascript", "eslint", text, unit_id="javascript/eslint/a")
    asked = [q for seed in range(40) for task in ("conditional_count", "most_frequent")
             if (q := tasks.generate(task, recs, random.Random(seed))) is not None]
    by_name = [q for q in asked if q.spec.get("field", q.spec.get("where", {}).get("field"))
               == "name"]
    assert by_name  # the field is asked about ...
    for q in by_name:  # ... but never by the value spelled two ways
        assert "foo" not in json.dumps(q.spec.get("where", {})).lower(), q.question
        assert q.spec["op"] != "most_frequent" or "foo" not in json.dumps(q.answer).lower()
    assert mixed_case(["foo", "Foo", "bar", "bar ", 1, 1.0, True]) == {"foo"}
