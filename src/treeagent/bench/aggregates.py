"""The aggregation task generators (conditional_count, most_frequent, numeric_extremum;
paper Section 4.1) and the aggregates they range over: one field over every visible record
of one kind (B.1 scope rule)."""

from __future__ import annotations

import copy
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from treeagent.bench.anchoring import ONLY_ITEM, jsonable, jsonable_key, source_of
from treeagent.bench.model import Record, Scalar
from treeagent.bench.question import Question, names_answer
from treeagent.bench.sources import vocabulary
from treeagent.bench.sources.registry import Kind
from treeagent.bench.values import answerable, human_field, id_like, native_numbers, norm, number
from treeagent.bench.wording import (
    WORDS,
    amount,
    article,
    as_label,
    be,
    epoch_note,
    epoch_unit,
    field_phrases,
    is_time,
    iso_time,
    kind_of,
    labelled,
    phrase,
    plural,
    plural_words,
    quote,
    shown_label,
    year_words,
)


@dataclass(slots=True)
class Aggregate:
    """One field over every visible record of one kind (B.1 scope rule).

    ``stated`` pairs each record stating the field (or taking the format's documented
    ``default``) with its value; ``missing`` counts records of the kind that state
    nothing (the question then says "that state it")."""

    kind: str
    name: str
    path: tuple[Any, ...]
    records: list[Record]
    stated: list[tuple[Record, Scalar]]
    missing: int
    default: Scalar = None
    words: str = ""  # the field as the question names it (:func:`askable`)
    kind_words: Kind | None = None
    # (sources, selects) of ``records`` (:func:`_where`), made once for the kind's aggregates
    where: tuple[list[str], list[Any]] | None = None

    def scope(self) -> dict[str, Any]:
        sources, selects = self.where or _where(self.records)
        scope: dict[str, Any] = {
            "over": "context", "kind": self.kind, "sources": list(sources),
            "select": copy.deepcopy(selects),
            "field": jsonable(self.path), "stated_only": self.missing > 0}
        if self.default is not None:
            scope["default"] = self.default
        return scope

    @property
    def said(self) -> str:
        return self.words or self.name

    @property
    def singular(self) -> str:
        return self.kind_words.singular if self.kind_words else self.kind

    @property
    def plural(self) -> str:
        return self.kind_words.plural if self.kind_words else plural(self.kind)

    def among(self) -> str:
        """'the parameters in this input' / '... that state an ISSN' / '... that state
        their tags' (a plural field phrase) / '... that have a "Year" value' (a field a
        page shows as a column header or row label: the rows counted are those with a
        value under that header, not every row whose cells mention a year)."""
        base = f"the {self.plural} in this input"
        said = phrase(self.said, [v for _, v in self.stated])
        if not self.missing:
            return base
        label = shown_label(self.path)
        if label:
            return f"{base} that have a {quote(label)} value"
        return f"{base} that state {'their' if be(said) == 'are' else article(said)} {said}"


def askable(aggs: Sequence[Aggregate]) -> list[Aggregate]:
    """The aggregates a question can state, worded by their source's vocabulary: the
    kind's plural names its scope and no other kind of the context shares it; the
    field has a phrase of its own among the kind's fields (fields the glossary rules
    out are left out)."""
    out: list[Aggregate] = []
    kinds: dict[str, Kind] = {}
    for agg in aggs:
        kinds.setdefault(agg.kind, kind_of(agg.records[0]))
    shared = Counter(k.plural for k in kinds.values())
    for kind, words in kinds.items():
        if not words.scope or shared[words.plural] > 1:
            continue
        group = [a for a in aggs if a.kind == kind]
        fmt, src = vocabulary.unit_source(group[0].records[0].unit_id)
        items = tuple(dict.fromkeys((jsonable_key(a.path), jsonable_key(a.path), a.name)
                                    for a in group))
        by_path = field_phrases(fmt, src, items)
        for a in group:
            said = by_path.get(jsonable_key(a.path))
            if said:  # a year-valued event field is asked as a year ('first issued year')
                values = [v for _, v in a.stated]
                said = year_words(said, values) or as_label(said, a.path, values)
                a.words, a.kind_words = said, words
                out.append(a)
    return out


def aggregates(records: Sequence[Record]) -> list[Aggregate]:
    """Every (kind, field) a question may aggregate over the whole visible scope: each
    record of the kind counts, described or not; the field has one list-free key path in
    all of them; records that state nothing take the documented default, or are left
    out and named so; an unresolved record (``$ref``) without the field forbids it, and
    so do records of another kind at the same address (USAspending awards and
    recipients both under ``results``)."""
    by_kind: dict[str, list[Record]] = {}
    kinds_at: dict[tuple[str, tuple[Any, ...]], set[str]] = {}
    for r in records:
        if r.select and r.counted:
            by_kind.setdefault(r.kind, []).append(r)
            kinds_at.setdefault((source_of(r), r.select), set()).add(r.kind)
    out = []
    for kind in sorted(by_kind):
        recs = by_kind[kind]
        if any(len(kinds_at[(source_of(r), r.select)]) > 1 for r in recs):
            continue  # records of another kind sit at the same address: no clear scope
        out += _kind_aggregates(kind, recs)
    return out


def _kind_aggregates(kind: str, recs: list[Record]) -> list[Aggregate]:
    """:func:`aggregates` for the records of one kind, in one pass over their fields
    (a long context holds tens of thousands of records and thousands of field names)."""
    paths: dict[str, set[Any]] = {}  # name -> key paths it has (None: no key path)
    default_of: dict[str, Scalar] = {}
    holders: dict[Any, list[tuple[Record, Scalar]]] = {}  # key path -> (record, value stated)
    for r in recs:
        fields = r.fields
        for n in fields:
            if human_field(n):
                paths.setdefault(n, set()).add(r.keys.get(n))
        for n, d in r.defaults.items():
            default_of.setdefault(n, d)
        at = {v: k for k, v in r.keys.items()}  # the name each key path has here
        for path, other in at.items():
            if other in fields:
                holders.setdefault(path, []).append((r, fields[other]))
    opaque = {id(r) for r in recs if r.opaque}
    where = None  # the kind's scope: one for all its aggregates
    out = []
    for name, found in paths.items():
        if len(found) != 1 or None in found:
            continue
        path = next(iter(found))
        if ONLY_ITEM in path:
            continue  # other records may hold several items there
        default = default_of.get(name)
        have = holders.get(path, [])
        if opaque and not {id(r) for r, _ in have} >= opaque:
            continue  # an unresolved record may hold the field
        if default is None:
            stated = list(have)
            missing = len(recs) - len(have)
        else:
            given = {id(r): v for r, v in have}
            stated = [(r, given.get(id(r), default)) for r in recs]
            missing = 0
        if stated:
            where = where or _where(recs)
            out.append(Aggregate(kind, name, path, recs, stated, missing, default,
                                 where=where))
    return out


def _where(records: Sequence[Record]) -> tuple[list[str], list[Any]]:
    """The sources and selects of ``records``, as a scope states them (sorted)."""
    return (sorted({source_of(r) for r in records}),
            sorted((jsonable(s) for s in {r.select for r in records}), key=repr))


def asked(records: Sequence[Record]) -> list[Aggregate]:
    """``askable(aggregates(records))``: what the aggregation generators range over;
    compute it once for many questions over the same records."""
    return askable(aggregates(records))


def shuffled(records: Sequence[Record], rng: random.Random, least: int,
             keep: Callable[[Aggregate], bool] = lambda a: True,
             aggs: Sequence[Aggregate] | None = None) -> list[Aggregate]:
    """The askable aggregates of ``records`` (``aggs``: their :func:`asked`, when the
    caller keeps it) stating at least ``least`` values (and ``keep`` true), in the random
    order an aggregation generator tries them."""
    out = [a for a in (asked(records) if aggs is None else aggs)
           if len(a.stated) >= least and keep(a)]
    rng.shuffle(out)
    return out


def first_asked(key: str, exclude: set[str]) -> bool:
    """True (and ``key`` noted in ``exclude``) when no question of ``key`` was asked yet."""
    if key in exclude:
        return False
    exclude.add(key)
    return True


def count_question(records: Sequence[Record], rng: random.Random,
                   exclude: set[str], aggs: Sequence[Aggregate] | None = None
                   ) -> Question | None:
    for agg in shuffled(records, rng, 3, aggs=aggs):
        kind, name, said = agg.kind, agg.name, agg.said
        vals = [v for _, v in agg.stated]
        nums = native_numbers(vals)
        note = ""
        if nums is not None and len(set(nums)) >= 3 and not id_like(name):
            ordered = sorted(set(nums))
            cmp = rng.choice(("gt", "lt"))
            cuts = [c for c in ordered[1:-1]
                    if sum(1 for x in nums if (x > c if cmp == "gt" else x < c)) >= 2]
            if not cuts:
                continue
            cut = rng.choice(cuts)
            value: Scalar = int(cut) if float(cut).is_integer() else cut
            answer = sum(1 for x in nums if (x > cut if cmp == "gt" else x < cut))
            words = {("gt", False): "greater than", ("lt", False): "less than",
                     ("gt", True): "later than", ("lt", True): "earlier than"}[
                         cmp, is_time(said)]
            cond = f"{article(amount(said))} {amount(said)} {words} {norm(value)}"
            if unit := epoch_unit(said, nums):  # raw Unix times: asked as an ISO time
                when = iso_time(cut, unit)
                cond = f"{article(said)} {said} {words} {when}"
                note = f" {epoch_note(said, unit)[:-1]} ({when} is {norm(value)})."
        else:
            counts = Counter(norm(v) for v in vals)
            mixed = mixed_case(vals)
            options = sorted(v for v, c in counts.items()
                             if 2 <= c < len(vals) and len(v) <= 60 and "\n" not in v
                             and v not in mixed)
            if not options:
                continue
            target = rng.choice(options)
            value = next(v for v in vals if norm(v) == target)
            cmp, answer = "eq", counts[target]
            cond = (f"the {phrase(said, [value])} set to {norm(value)}"
                    if isinstance(value, bool) else f"the {said} {quote(value)}")
        spec = {"op": "count", "kind": kind, "where": {"field": name, "cmp": cmp, "value": value},
                "scope": agg.scope()}
        if not first_asked(repr(("count", kind, name, cmp, norm(value))), exclude):
            continue
        text = (f"How many {agg.plural} in this input have {cond}?{note} Count every "
                f"{agg.singular} shown in the input. Answer with a single number.")
        return Question("conditional_count", text, spec, answer,
                        [r.id for r in agg.records], [norm(value), str(value)])
    return None


def mixed_case(values: Sequence[Scalar]) -> set[str]:
    """The compared forms (:func:`norm`) that ``values`` spell in more than one way
    other than by white space (``Foo`` and ``foo``): a question counting by them would
    count what a careful reader tells apart (identifiers in code are case-sensitive)."""
    spellings: dict[str, set[str]] = {}
    for v in values:
        spellings.setdefault(norm(v), set()).add(
            norm(v) if isinstance(v, bool | int | float) else " ".join(str(v).split()))
    return {k for k, forms in spellings.items() if len(forms) > 1}


def most_frequent_question(records: Sequence[Record], rng: random.Random,
                           exclude: set[str], aggs: Sequence[Aggregate] | None = None
                           ) -> Question | None:
    for agg in shuffled(records, rng, 4, aggs=aggs):
        kind, name, said = agg.kind, agg.name, agg.said
        vals = [v for _, v in agg.stated]
        if native_numbers(vals) is not None or all(number(v) is not None for v in vals):
            continue  # frequency of measurements is not a meaningful question
        counts = Counter(norm(v) for v in vals)
        ranked = counts.most_common()
        mixed = mixed_case(vals)
        for k in rng.sample((1, 2, 3), 3):
            if len(ranked) <= k or ranked[k - 1][1] < 2 or ranked[k - 1][1] == ranked[k][1]:
                continue  # ties rejected: the answer must be unique (4.1)
            if any(t in mixed for t, _ in ranked[:k + 1]):
                continue  # "Foo" and "foo" counted as one: a reader keeps them apart
            top = [v for v, _ in ranked[:k]]
            if not first_asked(repr(("freq", kind, name, k)), exclude):
                continue
            spelled = [next(v for v in vals if norm(v) == t) for t in top]
            if not all(answerable(v) for v in spelled):
                continue
            spec = {"op": "most_frequent", "kind": kind, "field": name, "k": k,
                    "scope": agg.scope(), "ordered": False}
            counted = (native_numbers(spelled) is not None and not is_time(said)
                       and not labelled(said))
            if k == 1 and (any(isinstance(v, bool) for v in vals) or be(said) == "are"
                           or counted):  # 'Which value of the gold', not 'Which gold'
                text = (f"Which value of the {phrase(said, vals)} occurs most often among "
                        f"{agg.among()}?")
            elif k == 1:
                text = f"Which {said} occurs most often among {agg.among()}?"
            elif any(isinstance(v, bool) for v in vals) or be(said) == "are" or counted:
                text = (f"Which {WORDS[k]} values of the {said} occur most often among "
                        f"{agg.among()}? List them in any order.")
            else:  # 'Which three names occur ...', not 'Which three values of the name'
                text = (f"Which {WORDS[k]} {plural_words(said)} occur most often among "
                        f"{agg.among()}? List them in any order.")
            if names_answer(text, spelled):
                continue  # the question would state an answer
            return Question("most_frequent", text, spec, list(spelled),
                            [r.id for r in agg.records], [])
    return None


def extremum_question(records: Sequence[Record], rng: random.Random,
                      exclude: set[str], aggs: Sequence[Aggregate] | None = None
                      ) -> Question | None:
    for agg in shuffled(records, rng, 3, lambda a: not id_like(a.name) and not id_like(a.said),
                        aggs):
        kind, name, said = agg.kind, agg.name, agg.said
        nums = native_numbers([v for _, v in agg.stated])
        if nums is None or len(set(nums)) < 2:
            continue
        for fn in rng.sample(("max", "min"), 2):
            ranked = sorted(nums, reverse=fn == "max")
            best = ranked[0]
            if abs(ranked[0] - ranked[1]) <= max(0.01, 0.001 * abs(best)):
                continue  # tie or near-tie: the runner-up would score as right (C.4)
            if not first_asked(repr(("ext", kind, name, fn)), exclude):
                continue
            spec = {"op": "extremum", "kind": kind, "field": name, "fn": fn,
                    "scope": agg.scope()}
            word = {("max", False): "highest", ("min", False): "lowest",
                    ("max", True): "latest", ("min", True): "earliest"}[fn, is_time(said)]
            unit = epoch_unit(said, nums)
            text = (f"What is the {word} {amount(said)} among {agg.among()}? "
                    + ("Answer with the number only." if unit is None else
                       f"Answer with the number as the input writes it. "
                       f"{epoch_note(said, unit)}"))
            answer = agg.stated[nums.index(best)][1]
            if names_answer(text, answer):
                continue  # the question would state its answer
            return Question("numeric_extremum", text, spec, answer,
                            [r.id for r in agg.records], [])
    return None
