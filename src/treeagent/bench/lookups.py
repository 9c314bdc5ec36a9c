"""The lookup task generators (one_field, two_fields, four_fields, two_records,
four_records; paper Section 4.1): questions about described records' own fields."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from treeagent.bench.anchoring import anchor, jsonable, source_of, where
from treeagent.bench.model import Record, Scalar
from treeagent.bench.question import Question, names_answer
from treeagent.bench.values import answerable, given_away, human_field, norm
from treeagent.bench.wording import (
    WORDS,
    amount,
    be,
    epoch_note,
    epoch_unit,
    field_words,
    kind_of,
    listed_names,
    named,
    naming,
    phrase,
    year_words,
)

_FIELDS: dict[int, tuple[Record, tuple[str, ...]]] = {}  # id -> (the record, its fields)
_FIELDS_KEPT = 50_000  # records whose lookup fields are kept (then all are let go)


def lookup_fields(rec: Record) -> list[str]:
    """Fields a lookup may ask of a described record with a reader-level address: human
    names with a key path, answerable values not given away. Worked out once per record
    (a record is not changed once extracted; every question of a family asks again)."""
    hit = _FIELDS.get(id(rec))
    if hit is not None and hit[0] is rec:  # the entry holds the record: its id is its own
        return list(hit[1])
    if len(_FIELDS) >= _FIELDS_KEPT:
        _FIELDS.clear()
    _FIELDS[id(rec)] = (rec, fields := _lookup_fields(rec))
    return list(fields)


def _lookup_fields(rec: Record) -> tuple[str, ...]:
    if not rec.description or not rec.select or not anchor(rec) or naming(rec) is None:
        return ()
    words = field_words(rec)
    return tuple(k for k, v in rec.fields.items()
                 if k in rec.keys and k in words and human_field(k) and answerable(v)
                 and not given_away(v, rec.description) and not fixed_by_kind(rec, k))


def fixed_by_kind(rec: Record, name: str) -> bool:
    """A field whose value the record's own kind states: OpenAPI requires every path
    parameter (``required: true``), so the required flag of a parameter ``in: path`` is
    no question."""
    return (name == "required" and rec.kind in ("parameter", "shared parameter")
            and rec.fields.get("location", rec.fields.get("in")) == "path")


def said_of(words: str, value: Scalar) -> str:
    """A looked-up field as the question names it for its value: a flag, a year ('first
    issued year'), or the number of a plural ('the number of countries' for 10)."""
    said = year_words(words, [value]) or phrase(words, [value])
    if not isinstance(value, bool) and isinstance(value, int | float):
        said = amount(said)
    return said


def _time_notes(said: Sequence[str], values: Sequence[Scalar]) -> str:
    """Sentences saying how the input writes the raw Unix times asked for ('' if none)."""
    notes = [epoch_note(w, unit) for w, v in zip(said, values)
             if (unit := epoch_unit(w, [v])) is not None]
    return "".join(f" {n}" for n in dict.fromkeys(notes))


def by_source_in_turn(items: Sequence[Any], source: Callable[[Any], str],
                      rng: random.Random) -> list[Any]:
    """``items`` shuffled, then dealt out one source at a time (sources in a random order):
    the records of a source with few of them among the anchors are asked as often as
    those of a source with many (B.1: every source with records is evidence)."""
    groups: dict[str, list[Any]] = {}
    for item in items:
        groups.setdefault(source(item), []).append(item)
    order = sorted(groups)
    rng.shuffle(order)
    for name in order:
        rng.shuffle(groups[name])
    dealt = [groups[name] for name in order]
    return [g[i] for i in range(max(map(len, dealt), default=0)) for g in dealt if i < len(g)]


def one_record_question(task: str, n: int, records: Sequence[Record], rng: random.Random,
                        exclude: set[str]) -> Question | None:
    cands = by_source_in_turn([r for r in records if len(lookup_fields(r)) >= n],
                              source_of, rng)
    for rec in cands:
        names = rng.sample(lookup_fields(rec), n)
        spec = {"op": "lookup", "kind": rec.kind, "record": rec.description, "fields": names,
                "shape": "value" if n == 1 else "list", "ordered": n > 1,
                "at": where(rec), "keys": [jsonable(rec.keys[f]) for f in names]}
        key = repr(("lookup", rec.description, sorted(names)))
        if key in exclude:
            continue
        exclude.add(key)
        values = [rec.fields[f] for f in names]
        words = field_words(rec)
        said = [said_of(words[f], v) for f, v in zip(names, values)]
        if n == 1:
            text = (f"What {be(said[0])} the {said[0]} of {named(rec)}? "
                    f"Answer with the value only.{_time_notes(said, values)}")
            answer: Any = values[0]
        else:
            listed = ", ".join(said[:-1]) + f" and {said[-1]}"
            text = (f"What are the {listed} of {named(rec)}? Give the {WORDS[n]} "
                    f"values in exactly this order.{_time_notes(said, values)}")
            answer = values
        if names_answer(text, answer):
            continue  # the question would state its answer
        return Question(task, text, spec, answer, [rec.id], [rec.description])
    return None


def _varied_sample(recs: Sequence[Record], name: str, n: int, rng: random.Random,
                   tries: int = 4) -> list[Record]:
    """``n`` of ``recs``: the most varied ``name`` values of a few draws, and never all
    one value where the records hold another (one drawn record gives way to one of
    them: ["P", "P"] becomes ["P", "Q"])."""
    values = [norm(r.fields[name]) for r in recs]
    most = min(n, len(set(values)))
    best: tuple[int, list[int]] = (0, [])
    for _ in range(tries):
        chosen = rng.sample(range(len(recs)), n)
        distinct = len({values[i] for i in chosen})
        if distinct > best[0]:
            best = (distinct, chosen)
        if distinct >= most:
            break
    chosen = best[1]
    if best[0] < 2 <= most:
        others = [i for i in range(len(recs)) if values[i] != values[chosen[0]]]
        chosen[rng.randrange(n)] = rng.choice(others)
    return [recs[i] for i in chosen]


def many_records_question(task: str, n: int, records: Sequence[Record], rng: random.Random,
                          exclude: set[str]) -> Question | None:
    by_key: dict[tuple[str, str, str, str], list[Record]] = {}
    for rec in records:
        words = field_words(rec)
        for name in lookup_fields(rec):  # one kind and one phrase in every record named
            by_key.setdefault((rec.kind, name, words[name], kind_of(rec).plural),
                              []).append(rec)
    keys = by_source_in_turn(sorted(k for k, recs in by_key.items() if len(recs) >= n),
                             lambda k: source_of(by_key[k][0]), rng)
    drawn = [(k, _varied_sample(by_key[k], k[1], n, rng)) for k in keys]
    # a set whose asked values are all one value says little (["P", "P"]): asked only
    # where no other field or kind offers a set with two values or more
    drawn.sort(key=lambda kc: len({norm(r.fields[kc[0][1]]) for r in kc[1]}) < 2)
    for (kind, name, words_, kinds), chosen in drawn:
        descs = [r.description for r in chosen]
        key = repr(("many", name, sorted(descs)))
        if key in exclude:
            continue
        exclude.add(key)
        spec = {"op": "lookup_records", "kind": kind, "records": descs, "field": name,
                "ordered": True, "at": [where(r) for r in chosen],
                "keys": [jsonable(r.keys[name]) for r in chosen]}
        by, listed = listed_names(chosen)
        values = [r.fields[name] for r in chosen]
        said = year_words(words_, values) or phrase(words_, values)
        if all(not isinstance(v, bool) and isinstance(v, int | float) for v in values):
            said = amount(said)
        text = (f"What {be(said)} the {said} of each of these {WORDS[n]} {kinds}{by}: {listed}? "
                "Give the values in the same order as they are named here."
                + _time_notes([said], [values[0]] if epoch_unit(said, values) else []))
        if names_answer(text, values):
            continue  # the question would state an answer
        return Question(task, text, spec, values, [r.id for r in chosen], descs)
    return None
