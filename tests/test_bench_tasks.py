"""Task generators (paper 4.1, C.3): questions reveal no schema/location; specs re-execute.

Also holds the hand-built units (all four formats) and their independent record
extractor that the other ``test_bench_*`` modules import.
"""

from __future__ import annotations

import json
import random
import re

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from treeagent.bench import tasks, validate
from treeagent.bench.model import Record, Unit
from treeagent.scoring import TASKS

KIND = "earthquake event"
_CELL = re.compile(r"<td>(.*?)</td>")


def _event(rng: random.Random, u: int, i: int) -> dict:
    return {
        "title": f"M {rng.randint(20, 79) / 10} - quake {u}-{i} near Town{rng.randint(1, 9)}",
        "magnitude": rng.randint(20, 79) / 10,
        "depth": rng.randint(1, 700),
        "network": rng.choice(["us", "ci", "nc", "ak", "hv"]),
        "status": rng.choice(["reviewed", "automatic"]),
        "alert level": rng.choice(["green", "yellow", "orange"]),
    }


def render(fmt: str, events: list[dict]) -> str:
    """The events in native syntax of ``fmt`` (a unit's text)."""
    if fmt == "json":
        return json.dumps({"type": "FeatureCollection", "events": events}, indent=1)
    if fmt == "yaml":
        return yaml.safe_dump({"title": "catalog", "events": events}, sort_keys=False)
    if fmt == "javascript":
        return json.dumps(events)
    head = "".join(f"<th>{k}</th>" for k in events[0])
    rows = "".join("<tr>" + "".join(f"<td>{v}</td>" for v in e.values()) + "</tr>"
                   for e in events)
    return f"<table><tr>{head}</tr>{rows}</table>"


def extract(fmt: str, source: str, text: str) -> list[Record]:
    """Independent re-extraction of the hand-built units (stands in for the adapters)."""
    if fmt == "json":
        events = json.loads(text)["events"]
    elif fmt == "yaml":
        events = yaml.safe_load(text)["events"]
    elif fmt == "javascript":
        events = json.loads(text)
    else:
        keys = re.findall(r"<th>(.*?)</th>", text)
        events = []
        for row in re.findall(r"<tr>(<td>.*?)</tr>", text):
            vals = _CELL.findall(row)
            e = dict(zip(keys, vals))
            for k in ("magnitude", "depth"):
                e[k] = float(e[k]) if "." in e[k] else int(e[k])
            events.append(e)
    # where a reader finds the events and their fields (the specification's address)
    select = {"json": ("events", "*"), "yaml": ("events", "*"),
              "javascript": ("@literal", "*"), "html": ("@table-row",)}[fmt]
    key = (lambda k: ("@column", k)) if fmt == "html" else (lambda k: (k,))
    return [Record(id=f"#{i}", unit_id="", kind=KIND, description=e["title"],
                   fields={k: v for k, v in e.items() if k != "title"}, path=f"$.events[{i}]",
                   select=select, keys={k: key(k) for k in e if k != "title"},
                   anchor=((key("title"), e["title"]),))
            for i, e in enumerate(events)]


def make_units(fmt: str, n: int = 60, seed: int = 0, per_unit: tuple[int, int] = (1, 6)
               ) -> list[Unit]:
    rng = random.Random(seed)
    out = []
    for u in range(n):
        events = [_event(rng, u, i) for i in range(rng.randint(*per_unit))]
        text = render(fmt, events)
        uid = f"{fmt}/test/u{u:03d}"
        recs = extract(fmt, "test", text)
        for r in recs:
            r.id, r.unit_id = uid + r.id, uid
        out.append(Unit(id=uid, format=fmt, source="test", text=text, records=recs,
                        provenance={"file": f"u{u}"}))
    return out


def _records(n: int = 12, seed: int = 1) -> list[Record]:
    return [r for u in make_units("json", n, seed) for r in u.records]


# ------------------------------------------------------------------ property tests

_word = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=3, max_size=8)
_field_name = st.lists(_word, min_size=1, max_size=3).map(" ".join)
_value = st.one_of(st.integers(-10**6, 10**6), st.floats(-1e6, 1e6, allow_nan=False),
                   _word, st.sampled_from(["us", "ci", "reviewed", "green"]), st.booleans())


@st.composite
def record_sets(draw):
    names = draw(st.lists(_field_name, min_size=4, max_size=7, unique=True))
    n = draw(st.integers(4, 14))
    recs = []
    for i in range(n):
        fields = {k: draw(_value) for k in names}
        desc = f"{draw(_word).title()} {draw(_word)} {i}"
        recs.append(Record(id=f"u#/items/{i}", unit_id="u", kind="widget", description=desc,
                           fields=fields, path=f"$.items[{i}].spec", select=("items", "*"),
                           keys={k: ("spec", k) for k in names},
                           anchor=((("name",), desc),)))
    return recs


@settings(max_examples=60, deadline=None)
@given(record_sets(), st.sampled_from(TASKS), st.integers(0, 10**6))
def test_questions_reveal_no_key_path_or_index_and_specs_reexecute(recs, task, seed):
    q = tasks.generate(task, recs, random.Random(seed))
    if q is None:
        return
    assert q.task == task
    # C.3: no structural path, index, key path or location in the question
    visible = [*q.spec.get("records", []), q.spec.get("record", "")]
    if "where" in q.spec:
        visible += [str(q.spec["where"]["value"]), tasks.norm(q.spec["where"]["value"])]
    assert tasks.leaks(q.question, visible, tasks.spec_fields(q.spec),
                       [r.path for r in recs]) == []
    assert "$." not in q.question and not re.search(r"\[\d+\]", q.question)
    # the question states whether order matters
    if task in ("two_fields", "four_fields", "two_records", "four_records"):
        assert "order" in q.question
    if task == "most_frequent" and q.spec["k"] > 1:
        assert "any order" in q.question
    # the stored spec re-executes (independently) to the stored answer
    got, _ = validate.execute(q.spec, recs)
    assert validate.same_answer(task, got, q.answer)
    assert json.loads(json.dumps(q.spec)) == q.spec


def test_every_task_generates_on_real_shaped_records():
    recs = _records()
    for task in TASKS:
        q = tasks.generate(task, recs, random.Random(3))
        assert q is not None, task
        got, _ = validate.execute(q.spec, recs)
        assert validate.same_answer(task, got, q.answer), (task, got, q.answer)


def test_exclude_gives_distinct_questions():
    recs, seen = _records(), set()
    qs = [tasks.generate("one_field", recs, random.Random(5), seen) for _ in range(6)]
    assert len({q.question for q in qs if q}) == len([q for q in qs if q]) == 6


def test_leaks_catches_paths_indexes_keys_and_locations():
    assert "structural path" in tasks.leaks("What is $.events[3].mag?")
    assert "index" in tasks.leaks("What is the depth of entry 4?")
    assert "schema key" in tasks.leaks("What is the mag_type of the quake?")
    assert "ordinal location" in tasks.leaks("What is the depth of the first event?")
    assert any("field name" in r for r in tasks.leaks("x", fields=["properties.mag"]))
    assert tasks.leaks('What is the depth of the quake "M 4.5 [1] first"?',
                       visible=["M 4.5 [1] first"]) == []


def test_ties_are_never_asked():
    tie = [Record(id=f"#{i}", unit_id="u", kind="k", description=f"d{i}",
                  fields={"color": c, "size": s}, select=("items", "*"),
                  keys={"color": ("color",), "size": ("size",)})
           for i, (c, s) in enumerate([("red", 1), ("red", 1), ("blue", 2), ("blue", 2)])]
    assert tasks.generate("most_frequent", tie, random.Random(0)) is None
    assert tasks.generate("numeric_extremum", tie, random.Random(0)) is None
    scope = next(a for a in tasks.aggregates(tie) if a.name == "color").scope()
    with pytest.raises(validate.Invalid, match="tie"):
        validate.execute({"op": "most_frequent", "kind": "k", "field": "color", "k": 1,
                          "scope": scope}, tie)


@settings(max_examples=40, deadline=None)
@given(record_sets(), st.integers(0, 10**6))
def test_aggregates_made_once_give_the_same_questions(recs, seed):
    """Many questions over one context: ``asked`` once, then every generator draws on it;
    the same questions, in the same order, as each generator making its own."""
    def ask(aggs):
        out = []
        for task in tasks.AGGREGATE_TASKS:
            rng, seen = random.Random(f"{seed}|{task}"), set()
            out += [tasks.generate(task, recs, rng, seen, aggs) for _ in range(5)]
        return out

    mine = ask(None)
    shared = tasks.asked(recs)
    assert [q and (q.question, q.spec, q.answer, q.record_ids) for q in ask(shared)] == \
        [q and (q.question, q.spec, q.answer, q.record_ids) for q in mine]


def test_aggregates_are_made_once_per_context(monkeypatch):
    from treeagent.bench import aggregates

    recs, made = _records(), []
    real = aggregates.aggregates
    monkeypatch.setattr(aggregates, "aggregates", lambda r: made.append(1) or real(r))
    shared = tasks.asked(recs)
    for task in tasks.AGGREGATE_TASKS:
        seen = set()
        for _ in range(5):
            tasks.generate(task, recs, random.Random(0), seen, shared)
    assert len(made) == 1
    tasks.generate("conditional_count", recs, random.Random(0))  # without: its own
    assert len(made) == 2


def test_unknown_task_is_an_error():
    with pytest.raises(ValueError, match="unknown task"):
        tasks.generate("five_fields", [], random.Random(0))


# ------------------------------------------------------------------ aggregates: one pass


def _aggregates_by_definition(records: list[Record]) -> list[tuple]:
    """The scope rule of :func:`tasks.aggregates` written out field by field, record by
    record (quadratic; the spec the one-pass version must keep)."""
    by_kind: dict[str, list[Record]] = {}
    kinds_at: dict[tuple, set[str]] = {}
    for r in records:
        if r.select and r.counted:
            by_kind.setdefault(r.kind, []).append(r)
            kinds_at.setdefault((tasks.source_of(r), r.select), set()).add(r.kind)
    out = []
    for kind in sorted(by_kind):
        recs = by_kind[kind]
        if any(len(kinds_at[(tasks.source_of(r), r.select)]) > 1 for r in recs):
            continue
        names = list(dict.fromkeys(n for r in recs for n in r.fields if tasks.human_field(n)))
        for name in names:
            paths = {r.keys.get(name) for r in recs if name in r.fields}
            if len(paths) != 1 or None in paths:
                continue
            path = paths.pop()
            if tasks.ONLY_ITEM in path:
                continue
            default = next((r.defaults[name] for r in recs if name in r.defaults), None)
            stated, missing, ok = [], 0, True
            for r in recs:
                other = {v: k for k, v in r.keys.items()}.get(path)
                if other is not None and other in r.fields:
                    stated.append((r.id, r.fields[other]))
                elif r.opaque:
                    ok = False
                    break
                elif default is not None:
                    stated.append((r.id, default))
                else:
                    missing += 1
            if ok and stated:
                out.append((kind, name, path, [r.id for r in recs], stated, missing, default))
    return out


_NAMES = ("depth", "magnitude", "status", "required", "alias")
_PATHS = (("a",), ("b",), ("c", "d"), ("c", tasks.ONLY_ITEM))


@st.composite
def _scoped_records(draw: st.DrawFn) -> list[Record]:
    out = []
    for i in range(draw(st.integers(0, 12))):
        names = draw(st.lists(st.sampled_from(_NAMES), max_size=4, unique=True))
        fields = {n: draw(st.sampled_from([1, 2.5, "x", True, None])) for n in names}
        keys = {n: draw(st.sampled_from(_PATHS)) for n in names
                if draw(st.booleans()) or n != "alias"}
        if draw(st.booleans()):  # a key path under another name (same path, other word)
            keys["alias"] = draw(st.sampled_from(_PATHS))
        defaults = {"required": False} if draw(st.integers(0, 3)) == 0 else {}
        out.append(Record(
            id=f"u{draw(st.integers(0, 2))}#{i}", unit_id=f"json/src{draw(st.integers(0, 1))}/f",
            kind=draw(st.sampled_from(["event", "station"])), description=f"d{i}",
            fields=fields, keys=keys, defaults=defaults,
            select=draw(st.sampled_from([(), ("results",), ("items",)])),
            opaque=draw(st.integers(0, 5)) == 0, counted=draw(st.integers(0, 6)) > 0))
    return out


@given(_scoped_records())
@settings(max_examples=300, deadline=None)
def test_aggregates_in_one_pass_keep_the_scope_rule(records: list[Record]) -> None:
    got = [(a.kind, a.name, a.path, [r.id for r in a.records],
            [(r.id, v) for r, v in a.stated], a.missing, a.default)
           for a in tasks.aggregates(records)]
    assert got == _aggregates_by_definition(records)


@given(st.recursive(st.one_of(st.text(max_size=3), st.integers(-3, 3), st.booleans()),
                    lambda inner: st.tuples(inner, inner) | st.tuples(inner), max_leaves=6))
def test_the_memoized_select_form_equals_its_jsonable_form(select):
    from treeagent.bench import anchoring

    select = select if isinstance(select, tuple) else (select,)
    again = anchoring._select_form(select)
    assert again == anchoring.jsonable(select)
    assert anchoring._select_form(select) == again  # from the memo now
