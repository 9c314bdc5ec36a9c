"""Questions as a person writes them: times as ISO dates where the input writes raw Unix
times (and the question says how the input writes them), years named as years, counts of
a plural named as a number, plural phrases for several values, and no question that
states its own answer.

Records come from the real source adapters over small hand-written units; the expected
wordings are written out by hand.
"""

from __future__ import annotations

import json
import random
import re

from treeagent.bench import tasks
from treeagent.bench.sources import records_from_text
from treeagent.bench.wording import modifier_singular


def _quakes(n: int = 8, kind: str = "earthquake") -> str:
    feats = [{"type": "Feature", "id": f"ev{i}",
              "properties": {"time": 1562386755480 + 8_640_000_000 * i * i, "place": f"Town {i}",
                             "title": f"M {i}.5 - Town {i}", "type": kind,
                             "mag": 1.0 + i * 0.7},
              "geometry": {"type": "Point", "coordinates": [0.5, 0.5, i]}} for i in range(n)]
    return json.dumps({"type": "FeatureCollection", "features": feats})


def _asked(recs, task: str, seeds: int = 30) -> list[tasks.Question]:
    out = []
    for seed in range(seeds):
        seen: set[str] = set()
        for _ in range(4):
            q = tasks.generate(task, recs, random.Random(seed), seen)
            if q is not None:
                out.append(q)
    return out


def test_raw_unix_times_are_asked_as_iso_dates_and_said_so():
    assert tasks.iso_time(1562386755480, "milliseconds") == "2019-07-06 04:19:15 UTC"
    assert tasks.epoch_unit("origin time", [1562386755480]) == "milliseconds"
    assert tasks.epoch_unit("origin time", [1562386755]) == "seconds"
    assert tasks.epoch_unit("year", [1996, 2008]) is None  # years are not Unix times
    assert tasks.epoch_unit("magnitude", [1562386755480]) is None
    recs = records_from_text("json", "usgs", _quakes(), unit_id="json/usgs/a")
    counts = [q.question for q in _asked(recs, "conditional_count") if "origin time" in q.question]
    assert counts
    for t in counts:
        m = re.search(r"have an origin time (?:earlier|later) than "
                      r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC)\? The input writes each origin "
                      r"time as a number of milliseconds since the Unix epoch \(\1 is (\d+)\)\.",
                      t)
        assert m, t
        assert tasks.iso_time(int(m.group(2)), "milliseconds") == m.group(1)
    extremes = [q.question for q in _asked(recs, "numeric_extremum")
                if "origin time" in q.question]
    assert extremes and all(t.endswith("Answer with the number as the input writes it. The "
                                       "input writes each origin time as a number of "
                                       "milliseconds since the Unix epoch.") for t in extremes)
    looked = [q.question for q in _asked(recs, "one_field") if "origin time" in q.question]
    assert looked and all("milliseconds since the Unix epoch" in t for t in looked), looked


def _plates() -> str:
    rows = [("Arizona", 1996), ("Nevada", 2008), ("Utah", 1985), ("Idaho", 1991),
            ("Oregon", 2001), ("Texas", 1977)]
    return ("<table><tr><th>State</th><th>First issued</th><th>Colours</th></tr>"
            + "".join(f"<tr><td>{s}</td><td>{y}</td><td>{n}</td></tr>"
                      for (s, y), n in zip(rows, (2, 3, 2, 4, 5, 3)))
            + "</table>")


def test_a_year_valued_event_column_is_asked_as_a_year():
    assert tasks.year_words("first issued", [1996, 2008]) == "first issued year"
    assert tasks.year_words("first issued", [12, 2008]) is None  # not all years
    assert tasks.year_words("population", [1996, 2008]) is None  # not an event
    assert tasks.year_words("speed", [1996, 2008]) is None
    recs = records_from_text("html", "wikitables", _plates(), unit_id="html/wikitables/a")
    texts = [q.question for task in ("numeric_extremum", "conditional_count")
             for q in _asked(recs, task) if "issued" in q.question]
    assert any(t.startswith("What is the") for t in texts), texts
    assert any(t.startswith("How many") for t in texts), texts
    for t in texts:
        assert re.search(r"What is the (latest|earliest) first issued year among|"
                         r"have a first issued year (later|earlier) than \d{4}\?", t), t
        assert not re.search(r"highest|lowest|greater than|less than", t), t


def test_a_count_in_a_plural_field_is_asked_as_the_number_of_it():
    # a table's 'Countries' column holding how many: "the number of countries", never
    # "What are the countries of ..." for 6
    recs = records_from_text("html", "wikitables", (
        "<table><tr><th>River</th><th>Countries</th><th>Mouth</th></tr>"
        + "".join(f"<tr><td>{r}</td><td>{c}</td><td>{m} Sea</td></tr>" for r, c, m in (
            ("Danube", 10, "Black"), ("Rhine", 6, "North"), ("Vistula", 1, "Baltic")))
        + "</table>"), unit_id="html/wikitables/a")
    texts = [q.question for q in _asked(recs, "one_field") if "countries" in q.question]
    assert texts and all(t.startswith("What is the number of countries of ") for t in texts)


def test_several_most_frequent_values_of_a_singular_field_read_as_its_plural():
    assert [tasks.plural_words(w) for w in ("name", "type of work", "HTTP method")] == [
        "names", "types of work", "HTTP methods"]
    recs = records_from_text("html", "wikitables", (
        "<table><tr><th>Player</th><th>Club</th></tr>"
        + "".join(f"<tr><td>P{i}</td><td>{c}</td></tr>" for i, c in enumerate(
            "Ajax Ajax Ajax Ajax PSV PSV PSV Feyenoord Feyenoord Twente".split()))
        + "</table>"), unit_id="html/wikitables/a")
    texts = [q.question for q in _asked(recs, "most_frequent") if q.spec["k"] > 1]
    assert texts, "no question for several values"
    assert all(re.match(r"Which (two|three) clubs occur most often among", t) for t in texts)
    assert not any("values of the club" in t for t in texts)


def test_no_question_states_its_own_answer():
    # USGS events of type "earthquake", named as "earthquake events": asking their event
    # type would give "earthquake" away
    assert tasks.names_answer('What is the event type of the earthquake event "M 4.6"?',
                              "earthquake")
    assert tasks.names_answer("Which two values ... the earthquake events?", ["quarry", "earthquake"])
    assert not tasks.names_answer('What is the event type of the earthquake event "M 4.6"?',
                                  "quarry blast")
    assert not tasks.names_answer("Is it a flag?", True)
    recs = records_from_text("json", "usgs", _quakes(), unit_id="json/usgs/a")
    asked = [q for task in ("one_field", "two_fields", "four_fields", "two_records",
                            "most_frequent") for q in _asked(recs, task)]
    assert asked
    for q in asked:
        values = q.answer if isinstance(q.answer, list) else [q.answer]
        assert "earthquake" not in [tasks.norm(v) for v in values], q.question
    # the same field is asked where its value is not in the question
    other = records_from_text("json", "usgs", _quakes(kind="quarry blast"), unit_id="json/usgs/b")
    assert any(q.answer == "quarry blast" or "quarry blast" in q.answer
               for task in ("one_field", "two_fields", "four_fields")
               for q in _asked(other, task) if "event type" in q.question)


def _results_table() -> str:
    """A results table as Wikipedia writes one: a plural 'Notes' column holding one text
    per row, a header kept as shown ('Joined MAC'), and a one-letter header ('d')."""
    rows = [("Oslo", 2008, "Personal best", 4), ("Paris", 1977, "Wind-assisted", 2),
            ("Rome", 2008, "Season best", 7), ("Athens", 1977, "Personal best", 3),
            ("Zurich", 2008, "Meeting record", 9), ("Berlin", "1990 (charter)", "Season best", 5)]
    return ("<table><tr><th>Venue</th><th>Joined MAC</th><th>Notes</th><th>d</th></tr>"
            + "".join(f"<tr><td>{v}</td><td>{y}</td><td>{n}</td><td>{d}</td></tr>"
                      for v, y, n, d in rows) + "</table>")


_TASKS = ("one_field", "two_fields", "four_fields", "two_records", "four_records",
          "conditional_count", "most_frequent", "numeric_extremum")


def test_a_plural_field_asked_for_one_value_is_asked_in_the_singular():
    # 'What are the notes of ...' asks for several values; a 'Notes' cell holds one
    recs = records_from_text("html", "wikitables", _results_table(), unit_id="html/wikitables/a")
    asked = [q for task in _TASKS for q in _asked(recs, task)]
    notes = [q.question for q in asked if "otes" in q.question]
    assert notes, "no question about the notes"
    for t in notes:
        assert not re.search(r"\bthe notes\b|\bnotes of\b", t), t
        assert '"Notes" value' in t, t
    one = [q.question for q in _asked(recs, "one_field") if "otes" in q.question]
    assert one and all(t.startswith('What is the "Notes" value of ') for t in one), one


def test_a_header_that_is_no_noun_is_quoted_as_the_label_it_is():
    # 'Which two values of the Joined MAC ...', 'the lowest d': a header is used as a
    # label where it cannot stand as a noun (kept capitals, one letter)
    recs = records_from_text("html", "wikitables", _results_table(), unit_id="html/wikitables/a")
    asked = [q.question for task in _TASKS for q in _asked(recs, task)]
    mac = [t for t in asked if "MAC" in t]
    short = [t for t in asked if re.search(r"\bd\b", t)]
    assert mac and short
    for t in mac:
        assert "values of the Joined MAC" not in t and "the Joined MAC" not in t, t
        assert '"Joined MAC" value' in t, t
    for t in short:
        assert re.search(r'"d" values?\b', t) and not re.search(r"\b(?:lowest|highest) d\b", t), t
    assert any(re.match(r'Which two "Joined MAC" values occur most often among', t)
               for t in mac), mac


def test_an_amount_of_money_or_a_unit_is_never_the_number_of_it():
    # 'time zone in minutes' is one offset, not a count of minutes; USAspending's
    # 'COVID-19 Obligations' and 'total_outlays' are dollar amounts
    assert tasks.amount("time zone in minutes") == "time zone in minutes"
    assert tasks.amount("goals") == "number of goals"
    recs = records_from_text("json", "usaspending", json.dumps({"results": [
        {"Award ID": f"AW{i}", "COVID-19 Obligations": 1000.5 * i, "total_outlays": 20.25 * i}
        for i in range(1, 7)]}), unit_id="json/usaspending/a")
    asked = [q.question for task in ("numeric_extremum", "conditional_count", "one_field")
             for q in _asked(recs, task)]
    assert any("obligat" in t for t in asked) and any("outlay" in t for t in asked), asked
    assert not any("number of COVID-19" in t or "number of total" in t for t in asked), asked


def test_a_header_that_is_a_preposition_or_a_bare_superlative_is_quoted_as_a_label():
    # 'an against less than 6', 'What is the best of ...': 'Against' and 'Best' name
    # no thing; the question quotes them as the labels they are
    recs = records_from_text("html", "wikitables", (
        "<table><tr><th>Team</th><th>Against</th><th>Best</th><th>Year</th></tr>"
        + "".join(f"<tr><td>Team {c}</td><td>{a}</td><td>{b}</td><td>{2000 + a}</td></tr>"
                  for c, a, b in (("A", 3, "12:49.5"), ("B", 7, "13:02.1"), ("C", 5, "12:55.8"),
                                  ("D", 9, "13:20.6"), ("E", 4, "12:52.3")))
        + "</table>"), unit_id="html/wikitables/a")
    asked = [q.question for task in _TASKS for q in _asked(recs, task)]
    against = [t for t in asked if "gainst" in t]
    best = [t for t in asked if "est" in t.replace("highest", "").replace("lowest", "")
            .replace("latest", "").replace("earliest", "")]
    assert against and best
    assert all('"Against" value' in t for t in against), against
    assert all('"Best" value' in t for t in best), best


def test_a_plural_key_before_a_generic_key_reads_as_a_singular_modifier():
    # ClinicalTrials' one-item 'references' list: its 'type' is "the reference type",
    # never "the references type"
    assert modifier_singular("references type") == "reference type"
    assert modifier_singular("entries count") == "entry count"
    assert modifier_singular("goals against") == "goals against"  # no generic key
    assert modifier_singular("address type") == "address type"
    assert modifier_singular("status date") == "status date"
    text = json.dumps({"protocolSection": {
        "identificationModule": {"nctId": "NCT01", "briefTitle": "A study"},
        "referencesModule": {"references": [{"pmid": "1", "type": "BACKGROUND"}]}}})
    recs = records_from_text("json", "clinicaltrials", text, unit_id="json/clinicaltrials/a")
    words = tasks.field_words(recs[0])
    assert "reference type" in words.values() and "references type" not in words.values()
