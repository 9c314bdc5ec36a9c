"""The eight task generators of paper Section 4.1, with reference specifications.

Each generator turns records (:class:`~treeagent.bench.model.Record`) into a
:class:`Question`: a natural-language question and a machine-executable reference
specification (JSON) with the answer construction computed for it. Questions speak the
source's vocabulary (:mod:`treeagent.bench.sources.vocabulary`): record kinds
as the source's readers name them ("CVE entries", "API operations"), fields by its
glossary ("magnitude", "CVSS v3.1 base score"), a record by its visible ``description``
when that is its name or id, else by the field that tells it apart ('the table row with
model "Alpha 1"'). Specifications keep the records' internal kind and field names. Questions
reveal no schema key path, index, structural path or location (C.3) -- :func:`leaks`
checks that -- and say whether several values must keep the order asked.

Specifications (executed independently by :mod:`treeagent.bench.validate`, B.1):

* ``{"op": "lookup", "kind", "record": description, "fields": [...], "shape"}`` --
  one_field (``shape="value"``), two_fields, four_fields (ordered lists);
* ``{"op": "lookup_records", "kind", "records": [descriptions], "field"}`` --
  two_records, four_records (ordered list, in the order the question names them);
* ``{"op": "count", "kind", "where": {"field", "cmp": "eq"|"gt"|"lt", "value"},
  "scope"}`` -- conditional_count; ``eq`` compares :func:`norm` texts, ``gt``/``lt``
  numbers (:func:`number`); records without the field never match;
* ``{"op": "most_frequent", "kind", "field", "k", "scope"}`` -- the ``k`` most frequent
  :func:`norm` values (unordered); unique only when the k-th count beats the (k+1)-th;
* ``{"op": "extremum", "kind", "field", "fn": "max"|"min", "scope"}`` -- a number,
  unique only when exactly one record attains it.

``scope`` is ``{"over": "context", "kind": kind}``: every visible record of that kind in
the whole input, counted per occurrence (B.1: aggregation answers are recomputed on the
final context, after distractors are added).
"""

from __future__ import annotations

import functools
import math
import random
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from treeagent.bench.model import Record, Scalar
from treeagent.bench.sources import vocabulary
from treeagent.bench.sources.registry import Kind
from treeagent.scoring import TASK_RECORDS, TASKS

LOOKUP_TASKS = tuple(t.name for t in TASK_RECORDS if t.family == "lookup")
AGGREGATE_TASKS = tuple(t.name for t in TASK_RECORDS if t.family == "aggregation")
MAX_VALUE_CHARS = 100
_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}
_HUMAN_NAME = re.compile(r"[A-Za-z][A-Za-z0-9 '()/-]*\Z")
_CAMEL = re.compile(r"[a-z][A-Z]")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?\Z")


@dataclass(slots=True)
class Question:
    """A generated question with its reference specification and answer."""

    task: str
    question: str
    spec: dict[str, Any]
    answer: Any
    record_ids: list[str] = field(default_factory=list)  # supporting records
    visible: list[str] = field(default_factory=list)  # descriptions/values quoted in it


# ------------------------------------------------------------------ value semantics


def norm(value: Scalar) -> str:
    """The text a value is compared by: case-folded, whitespace collapsed."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return " ".join(str(value).split()).casefold()


def number(value: Scalar) -> float | None:
    """A value as a finite number (ints, floats, plain numeric strings); else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        x = float(value)
    elif isinstance(value, str) and _NUMBER.match(value.strip()):
        x = float(value.strip())
    else:
        return None
    return x if math.isfinite(x) else None


def human_field(name: str) -> bool:
    """A field name fit for a question: words, not a key (no ``_ . [ $``, no camelCase)."""
    return bool(_HUMAN_NAME.match(name)) and not _CAMEL.search(name) and len(name) <= 60


def answerable(value: Scalar) -> bool:
    """A value a model can be asked to write back (non-empty, one line, short)."""
    if value is None:
        return False
    if isinstance(value, str):
        s = value.strip()
        return bool(s) and "\n" not in s and len(s) <= MAX_VALUE_CHARS
    return not (isinstance(value, float) and not math.isfinite(value))


def present(value: Scalar) -> bool:
    """A value counted by aggregations: not null, not an empty string."""
    return value is not None and (not isinstance(value, str) or bool(value.strip()))


def given_away(value: Scalar, description: str) -> bool:
    """True when ``value`` stands as a word sequence in ``description`` (the question
    would give the answer away: the path of API path "/pets", magnitude of "M 4.6 - ...")."""
    text = norm(value)
    return bool(text) and re.search(rf"(?<!\w){re.escape(text)}(?!\w)",
                                    norm(description)) is not None


ONLY_ITEM = "[1]"  # key-path step through a one-item list (sources.common.ONLY_ITEM)
_ID_LIKE = re.compile(r"\b(?:id|ids|identifier|code|codes|zip|postcode|phone|key|doi|issn|"
                      r"isbn)\b|\b(?:number|no)\Z", re.I)


def source_of(rec: Record) -> str:
    """The source group of a record's unit (unit ids read ``<format>/<source>/...``)."""
    parts = rec.unit_id.split("/", 2)
    return parts[1] if len(parts) > 2 else ""


def anchor(rec: Record) -> list[list[Any]]:
    """How a reader picks the record out by its description: ``[[key path, value], ...]``
    ([] when no field holds the description: the record is not looked up)."""
    if rec.anchor:
        return [[list(p), v] for p, v in rec.anchor]
    want = norm(rec.description)
    for name, value in rec.fields.items():
        if name in rec.keys and norm(value) == want:
            return [[list(rec.keys[name]), rec.description]]
    return []


def ambiguous(q: Question, records: Sequence[Record]) -> bool:
    """True when a lookup's record is not the only one of the context its description
    picks out: another record (described or not) of the same address holds the same
    value in the anchoring field, so a reader could not tell which is meant."""
    if q.spec["op"] not in ("lookup", "lookup_records"):
        return False
    ats = [q.spec["at"]] if q.spec["op"] == "lookup" else q.spec["at"]
    for at in ats:
        pairs = [(tuple(p), v) for p, v in at["anchor"]]
        hits = 0
        for r in records:
            if source_of(r) != at["source"] or _jsonable(r.select) != at["select"]:
                continue
            by_path = {v: k for k, v in r.keys.items()}
            if any(p not in by_path for p, _ in pairs):
                if r.anchor and all(norm(a) == norm(b) for (_, a), (_, b) in
                                    zip(sorted(r.anchor, key=repr), sorted(pairs, key=repr))):
                    hits += 1  # a composite anchor (method + path, name + location ...)
                continue
            if all(norm(r.fields[by_path[p]]) == norm(v) for p, v in pairs):
                hits += 1
        if hits != 1:
            return True
    return False


def lookup_fields(rec: Record) -> list[str]:
    """Fields a lookup may ask of a described record with a reader-level address: human
    names with a key path, answerable values not given away."""
    if not rec.description or not rec.select or not anchor(rec) or naming(rec) is None:
        return []
    words = field_words(rec)
    return [k for k, v in rec.fields.items()
            if k in rec.keys and k in words and human_field(k) and answerable(v)
            and not given_away(v, rec.description)]


def id_like(name: str) -> bool:
    """A field of identifiers, codes or versions (never an extremum)."""
    return bool(_ID_LIKE.search(name))


def plural(kind: str) -> str:
    """'earthquake event' -> 'earthquake events', 'entry' -> 'entries'."""
    return vocabulary.plural_of(kind)


def article(phrase: str) -> str:
    """'a' or 'an' before ``phrase`` (by its first sound, letters spelled out for
    acronyms): 'an ISSN', 'a URL', 'an HTTP method', 'a magnitude'."""
    word = phrase.split()[0] if phrase.split() else phrase
    spelled = (word.isupper() and len(word) > 1) or (  # an acronym, or 'r4', 'p' (a letter)
        word[:1].isascii() and word[:1].isalpha() and (len(word) == 1 or word[1:].isdigit()))
    if spelled:
        return "an" if word[0].upper() in "AEFHILMNORSX" else "a"
    if word.lower().startswith(("uni", "use", "usu", "eu", "one")):
        return "a"
    if word.lower().startswith(("hour", "honest", "honor")):
        return "an"
    return "an" if word[:1].lower() in "aeiou" else "a"


def phrase(name: str, values: Sequence[Scalar] = ()) -> str:
    """A field as a question names it: a yes/no field is a flag ('the required flag')."""
    if values and all(isinstance(v, bool) for v in values) and not name.endswith("flag"):
        return f"{name} flag"
    return name


def amount(words: str) -> str:
    """A numeric field as an amount: a plural phrase is the number of it ('goals' ->
    'number of goals': 'the highest number of goals', not 'the highest goals')."""
    return f"number of {words}" if be(words) == "are" else words


def is_time(words: str) -> bool:
    """A field phrase naming a point in time ('origin time', 'publication date', 'year'):
    its extremes are the latest and earliest, not the highest and lowest."""
    return bool(words) and words.split()[-1].lower() in ("time", "date", "year")


_SINGULAR_S = frozenset({"alias", "atlas", "bias", "canvas", "gas", "news", "series",
                         "species", "yes", "this", "its", "was", "has", "whereas"})


def be(words: str) -> str:
    """'are' when a field phrase names a plural ('the dynamic properties', 'the IDs'),
    else 'is' ('the status', 'the address', 'the analysis', 'the CVSS v3.1 base score');
    the head noun is the last word before any 'of' ('the number of references': 'is')."""
    head = words.split(" of ")[0].split()
    last = head[-1] if head else ""
    plural = (len(last) > 2 and last.endswith("s") and last[-2] not in "sSuU'"
              and not last.endswith("is") and last.lower() not in _SINGULAR_S)
    return "are" if plural else "is"


# ------------------------------------------------------------------ wording


def kind_of(rec: Record) -> Kind:
    """The words the record's source uses for its kind ('CVE entry' / 'CVE entries')."""
    return vocabulary.kind_words(*vocabulary.unit_source(rec.unit_id), rec.kind)


_PHRASE = re.compile(r"[A-Za-z][A-Za-z0-9 '(),/.+-]*\Z")


def _clean(words: str, name: str) -> bool:
    """A field phrase fit for a question: words (no key syntax); one that is not the
    record's own field name (which the checks mask) must also reveal no schema or
    location on its own (C.3)."""
    if not _PHRASE.match(words) or _CAMEL.search(words) or len(words) > 60:
        return False
    return words == name or not leaks(f"What is the {words}?")


def field_words(rec: Record) -> dict[str, str]:
    """The phrase each askable field of ``rec`` is named by in a question (source
    vocabulary first, then the key as words); fields the glossary rules out, or whose
    phrase another field of the record shares, are absent."""
    fmt, src = vocabulary.unit_source(rec.unit_id)
    items = tuple((name, _jsonable_key(rec.keys[name]), name) for name in rec.fields
                  if name in rec.keys)
    return {k: v for k, v in _phrases(fmt, src, items).items() if v}


def _jsonable_key(path: Any) -> tuple[Any, ...]:
    return tuple(_jsonable_key(p) if isinstance(p, list | tuple) else p for p in path)


@functools.lru_cache(maxsize=1 << 15)
def _phrases(fmt: str, src: str, items: tuple[tuple[Any, ...], ...]) -> dict[Any, str]:
    got = vocabulary.phrases(fmt, src, items)
    names = {ident: name for ident, _, name in items}
    return {ident: w for ident, w in got.items() if w and _clean(w, names[ident])}


def name_field(rec: Record) -> tuple[str, str] | None:
    """How a question says which record it means: ``("phrase", "")`` for a kind whose
    descriptions are phrases ('the query parameter "limit" of the operation "listPets"'),
    ``("name", "")`` for a natural name or id ('the CVE entry "CVE-2021-1234"', 'the API
    operation "GET /pets"': method and path as OpenAPI writes them), ``("with", words)``
    for another field that tells it apart ('the work with URL "https://..."'); None when
    the record cannot be named (its description is a value no phrase can introduce)."""
    if kind_of(rec).phrase:
        return "phrase", ""
    where = anchor(rec)
    if len(where) > 1:
        return "name", ""
    fmt, src = vocabulary.unit_source(rec.unit_id)
    if not where or vocabulary.is_name(fmt, src, where[0][0]):
        return "name", ""
    path = _jsonable(where[0][0])
    name = next((n for n, k in rec.keys.items() if _jsonable(k) == path), None)
    words = field_words(rec).get(name) if name else None
    return ("with", words) if words else None


def naming(rec: Record) -> str | None:
    """How a question names a record (see :func:`name_field`), with its article."""
    how = name_field(rec)
    if how is None:
        return None
    kind = kind_of(rec)
    style, words = how
    if style == "phrase":
        return f"the {rec.description}"
    if style == "with":
        return f'the {kind.singular} with {words} "{rec.description}"'
    return f'the {kind.singular} "{rec.description}"'


def named(rec: Record) -> str:
    """How a question names a record (see :func:`naming`)."""
    return naming(rec) or f'the {kind_of(rec).singular} "{rec.description}"'


def _listed(recs: Sequence[Record]) -> tuple[str, str]:
    """(words after the kind, list) for records of one kind named in one question:
    quoted names, or 'named by their model: "Alpha 1"; "Beta 2"' when one field names
    them all; else each record as :func:`naming` says it."""
    hows = [name_field(r) for r in recs]
    if all(h is not None and h[0] == "name" for h in hows):
        return "", "; ".join(f'"{r.description}"' for r in recs)
    if all(h is not None and h[0] == "with" for h in hows) and len({h[1] for h in hows}) == 1:
        return (f", named by their {hows[0][1]}",  # type: ignore[index]
                "; ".join(f'"{r.description}"' for r in recs))
    return "", "; ".join(named(r) for r in recs)


def _quote(value: Scalar) -> str:
    return f'"{value}"' if isinstance(value, str) else norm(value)


# ------------------------------------------------------------------ leak check (C.3)

_LEAKS = (
    (re.compile(r"\$[.\[]"), "structural path"),
    (re.compile(r"\[\s*\d+\s*\]"), "index"),
    (re.compile(r"(?:^|\s)/[a-z][\w-]*(?:\[\d+\])?(?:/|\b)"), "markup path"),
    (re.compile(r"\b[A-Za-z]\w*\.[A-Za-z_]\w*\b"), "dotted key path"),
    (re.compile(r"\b\w+_\w+\b"), "schema key"),
    (re.compile(r"#\s*\d|\bno\.\s*\d|\b(?:entry|record|element|item|response|document|"
                r"page|unit|node|row|object)\s+\d+", re.I), "index"),
    (re.compile(r"\b(?:index|offset|line number|position|json ?path|xpath|key path|schema)\b",
                re.I), "location word"),
    (re.compile(r"\b(?:first|second|third|fourth|fifth|last|\d+(?:st|nd|rd|th))\b", re.I),
     "ordinal location"),
)


def leaks(question: str, visible: Sequence[str] = (), fields: Sequence[str] = (),
          paths: Sequence[str] = ()) -> list[str]:
    """Why ``question`` reveals schema or location (C.3); ``[]`` when it does not.

    The quoted ``visible`` texts (record descriptions, condition values) and the human
    ``fields`` names are content the question must name: field names must be words
    (:func:`human_field`), and all of them are masked before the template is checked;
    ``paths`` are the records' structural paths, which must not appear at all.
    """
    reasons = [f"structural path {p!r}" for p in paths if len(p) > 2 and p in question]
    reasons += [f"field name {f!r} is a key" for f in fields if not human_field(f)]
    skeleton = question
    for text in sorted({str(v) for v in (*visible, *fields)}, key=len, reverse=True):
        if text:
            skeleton = skeleton.replace(text, " \u2026 ")
    for pattern, reason in _LEAKS:
        if pattern.search(skeleton):
            reasons.append(reason)
    return reasons


def spec_fields(spec: dict[str, Any]) -> list[str]:
    """The field names a specification names."""
    if "fields" in spec:
        return list(spec["fields"])
    if "where" in spec:
        return [spec["where"]["field"]]
    return [spec["field"]] if "field" in spec else []


# ------------------------------------------------------------------ lookups


def _where(rec: Record) -> dict[str, Any]:
    """The reader-level address of one record in a lookup specification."""
    return {"source": source_of(rec), "select": _jsonable(rec.select), "anchor": anchor(rec)}


def _jsonable(x: Any) -> Any:
    if isinstance(x, tuple | list):
        return [_jsonable(v) for v in x]
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    return x


def _one_record(task: str, n: int, records: Sequence[Record], rng: random.Random,
                exclude: set[str]) -> Question | None:
    cands = [r for r in records if len(lookup_fields(r)) >= n]
    rng.shuffle(cands)
    for rec in cands:
        names = rng.sample(lookup_fields(rec), n)
        spec = {"op": "lookup", "kind": rec.kind, "record": rec.description, "fields": names,
                "shape": "value" if n == 1 else "list", "ordered": n > 1,
                "at": _where(rec), "keys": [_jsonable(rec.keys[f]) for f in names]}
        key = repr(("lookup", rec.description, sorted(names)))
        if key in exclude:
            continue
        exclude.add(key)
        values = [rec.fields[f] for f in names]
        words = field_words(rec)
        said = [phrase(words[f], [v]) for f, v in zip(names, values)]
        if n == 1:
            text = (f"What {be(said[0])} the {said[0]} of {named(rec)}? "
                    "Answer with the value only.")
            answer: Any = values[0]
        else:
            listed = ", ".join(said[:-1]) + f" and {said[-1]}"
            text = (f"What are the {listed} of {named(rec)}? Give the {_WORDS[n]} "
                    "values in exactly this order.")
            answer = values
        return Question(task, text, spec, answer, [rec.id], [rec.description])
    return None


def _many_records(task: str, n: int, records: Sequence[Record], rng: random.Random,
                  exclude: set[str]) -> Question | None:
    by_key: dict[tuple[str, str, str, str], list[Record]] = {}
    for rec in records:
        words = field_words(rec)
        for name in lookup_fields(rec):  # one kind and one phrase in every record named
            by_key.setdefault((rec.kind, name, words[name], kind_of(rec).plural),
                              []).append(rec)
    keys = sorted(k for k, recs in by_key.items() if len(recs) >= n)
    rng.shuffle(keys)
    for kind, name, words_, kinds in keys:
        chosen = rng.sample(by_key[(kind, name, words_, kinds)], n)
        descs = [r.description for r in chosen]
        key = repr(("many", name, sorted(descs)))
        if key in exclude:
            continue
        exclude.add(key)
        spec = {"op": "lookup_records", "kind": kind, "records": descs, "field": name,
                "ordered": True, "at": [_where(r) for r in chosen],
                "keys": [_jsonable(r.keys[name]) for r in chosen]}
        by, listed = _listed(chosen)
        said = phrase(words_, [r.fields[name] for r in chosen])
        text = (f"What {be(said)} the {said} of each of these {_WORDS[n]} {kinds}{by}: {listed}? "
                "Give the values in the same order as they are named here.")
        return Question(task, text, spec, [r.fields[name] for r in chosen],
                        [r.id for r in chosen], descs)
    return None


# ------------------------------------------------------------------ aggregations


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

    def scope(self) -> dict[str, Any]:
        scope: dict[str, Any] = {
            "over": "context", "kind": self.kind,
            "sources": sorted({source_of(r) for r in self.records}),
            "select": sorted((_jsonable(s) for s in {r.select for r in self.records}),
                             key=repr),
            "field": _jsonable(self.path), "stated_only": self.missing > 0}
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
        their tags' (a plural field phrase)."""
        base = f"the {self.plural} in this input"
        said = phrase(self.said, [v for _, v in self.stated])
        if not self.missing:
            return base
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
        items = tuple(dict.fromkeys((_jsonable_key(a.path), _jsonable_key(a.path), a.name)
                                    for a in group))
        by_path = _phrases(fmt, src, items)
        for a in group:
            said = by_path.get(_jsonable_key(a.path))
            if said:
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
    for r in recs:
        for n in r.fields:
            if human_field(n):
                paths.setdefault(n, set()).add(r.keys.get(n))
        for n, d in r.defaults.items():
            default_of.setdefault(n, d)
    holders: dict[Any, list[tuple[int, Scalar]]] = {}  # key path -> (record, value stated)
    for i, r in enumerate(recs):
        at = {v: k for k, v in r.keys.items()}  # the name each key path has here
        for path, other in at.items():
            if other in r.fields:
                holders.setdefault(path, []).append((i, r.fields[other]))
    opaque = [i for i, r in enumerate(recs) if r.opaque]
    out = []
    for name, found in paths.items():
        if len(found) != 1 or None in found:
            continue
        path = next(iter(found))
        if ONLY_ITEM in path:
            continue  # other records may hold several items there
        default = default_of.get(name)
        have = holders.get(path, [])
        if opaque and not {i for i, _ in have} >= set(opaque):
            continue  # an unresolved record may hold the field
        if default is None:
            stated = [(recs[i], v) for i, v in have]
            missing = len(recs) - len(have)
        else:
            given = dict(have)
            stated = [(r, given.get(i, default)) for i, r in enumerate(recs)]
            missing = 0
        if stated:
            out.append(Aggregate(kind, name, path, recs, stated, missing, default))
    return out


def _native_numbers(values: Sequence[Scalar]) -> list[float] | None:
    """Numbers stored as numbers (never numeric strings: codes, years as text)."""
    if any(isinstance(v, bool) or not isinstance(v, int | float) for v in values):
        return None
    return [float(v) for v in values]


def _count(records: Sequence[Record], rng: random.Random, exclude: set[str]) -> Question | None:
    aggs = [a for a in askable(aggregates(records)) if len(a.stated) >= 3]
    rng.shuffle(aggs)
    for agg in aggs:
        kind, name, said = agg.kind, agg.name, agg.said
        vals = [v for _, v in agg.stated]
        nums = _native_numbers(vals)
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
        else:
            counts = Counter(norm(v) for v in vals)
            options = sorted(v for v, c in counts.items()
                             if 2 <= c < len(vals) and len(v) <= 60 and "\n" not in v)
            if not options:
                continue
            target = rng.choice(options)
            value = next(v for v in vals if norm(v) == target)
            cmp, answer = "eq", counts[target]
            cond = (f"the {phrase(said, [value])} set to {norm(value)}"
                    if isinstance(value, bool) else f"the {said} {_quote(value)}")
        spec = {"op": "count", "kind": kind, "where": {"field": name, "cmp": cmp, "value": value},
                "scope": agg.scope()}
        key = repr(("count", kind, name, cmp, norm(value)))
        if key in exclude:
            continue
        exclude.add(key)
        text = (f"How many {agg.plural} in this input have {cond}? Count every "
                f"{agg.singular} shown in the input. Answer with a single number.")
        return Question("conditional_count", text, spec, answer,
                        [r.id for r in agg.records], [norm(value), str(value)])
    return None


def _most_frequent(records: Sequence[Record], rng: random.Random,
                   exclude: set[str]) -> Question | None:
    aggs = [a for a in askable(aggregates(records)) if len(a.stated) >= 4]
    rng.shuffle(aggs)
    for agg in aggs:
        kind, name, said = agg.kind, agg.name, agg.said
        vals = [v for _, v in agg.stated]
        if _native_numbers(vals) is not None or all(number(v) is not None for v in vals):
            continue  # frequency of measurements is not a meaningful question
        counts = Counter(norm(v) for v in vals)
        ranked = counts.most_common()
        for k in rng.sample((1, 2, 3), 3):
            if len(ranked) <= k or ranked[k - 1][1] < 2 or ranked[k - 1][1] == ranked[k][1]:
                continue  # ties rejected: the answer must be unique (4.1)
            top = [v for v, _ in ranked[:k]]
            key = repr(("freq", kind, name, k))
            if key in exclude:
                continue
            exclude.add(key)
            spelled = [next(v for v in vals if norm(v) == t) for t in top]
            if not all(answerable(v) for v in spelled):
                continue
            spec = {"op": "most_frequent", "kind": kind, "field": name, "k": k,
                    "scope": agg.scope(), "ordered": False}
            counted = _native_numbers(spelled) is not None and not is_time(said)
            if k == 1 and (any(isinstance(v, bool) for v in vals) or be(said) == "are"
                           or counted):  # 'Which value of the gold', not 'Which gold'
                text = (f"Which value of the {phrase(said, vals)} occurs most often among "
                        f"{agg.among()}?")
            elif k == 1:
                text = f"Which {said} occurs most often among {agg.among()}?"
            else:
                text = (f"Which {_WORDS[k]} values of the {said} occur most often among "
                        f"{agg.among()}? List them in any order.")
            return Question("most_frequent", text, spec, list(spelled),
                            [r.id for r in agg.records], [])
    return None


def _extremum(records: Sequence[Record], rng: random.Random,
              exclude: set[str]) -> Question | None:
    aggs = [a for a in askable(aggregates(records))
            if len(a.stated) >= 3 and not id_like(a.name) and not id_like(a.said)]
    rng.shuffle(aggs)
    for agg in aggs:
        kind, name, said = agg.kind, agg.name, agg.said
        nums = _native_numbers([v for _, v in agg.stated])
        if nums is None or len(set(nums)) < 2:
            continue
        for fn in rng.sample(("max", "min"), 2):
            ranked = sorted(nums, reverse=fn == "max")
            best = ranked[0]
            if abs(ranked[0] - ranked[1]) <= max(0.01, 0.001 * abs(best)):
                continue  # tie or near-tie: the runner-up would score as right (C.4)
            key = repr(("ext", kind, name, fn))
            if key in exclude:
                continue
            exclude.add(key)
            spec = {"op": "extremum", "kind": kind, "field": name, "fn": fn,
                    "scope": agg.scope()}
            word = {("max", False): "highest", ("min", False): "lowest",
                    ("max", True): "latest", ("min", True): "earliest"}[fn, is_time(said)]
            text = (f"What is the {word} {amount(said)} among {agg.among()}? "
                    "Answer with the number only.")
            answer = agg.stated[nums.index(best)][1]
            return Question("numeric_extremum", text, spec, answer,
                            [r.id for r in agg.records], [])
    return None


Generator = Callable[[Sequence[Record], random.Random, set[str]], "Question | None"]

GENERATORS: dict[str, Generator] = {
    "one_field": lambda r, g, e: _one_record("one_field", 1, r, g, e),
    "two_fields": lambda r, g, e: _one_record("two_fields", 2, r, g, e),
    "four_fields": lambda r, g, e: _one_record("four_fields", 4, r, g, e),
    "two_records": lambda r, g, e: _many_records("two_records", 2, r, g, e),
    "four_records": lambda r, g, e: _many_records("four_records", 4, r, g, e),
    "conditional_count": _count,
    "most_frequent": _most_frequent,
    "numeric_extremum": _extremum,
}
assert tuple(GENERATORS) == TASKS


def generate(task: str, records: Sequence[Record], rng: random.Random,
             exclude: set[str] | None = None) -> Question | None:
    """One question of ``task`` over ``records`` (None when they support none).

    ``exclude`` collects keys of questions already asked, so repeated calls give distinct
    questions. Lookup tasks take the supporting (anchor) records; aggregation tasks take
    every record of the final context (B.1 scope rule).
    """
    if task not in GENERATORS:
        raise ValueError(f"unknown task {task!r} (choose from {', '.join(TASKS)})")
    return GENERATORS[task](records, rng, set() if exclude is None else exclude)
