"""How a question says things (paper Section 4.1): grammar (articles, plurals, 'is' or
'are', amounts, points in time) and the source's vocabulary for kinds, fields and records
(:mod:`treeagent.bench.sources.vocabulary`)."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from treeagent.bench.anchoring import anchor, jsonable, jsonable_key
from treeagent.bench.model import Record, Scalar
from treeagent.bench.question import leaks
from treeagent.bench.sources import vocabulary
from treeagent.bench.sources.registry import Kind
from treeagent.bench.values import CAMEL, norm

WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}


def plural(kind: str) -> str:
    """'earthquake event' -> 'earthquake events', 'entry' -> 'entries'."""
    return vocabulary.plural_of(kind)


def article(phrase: str) -> str:
    """'a' or 'an' before ``phrase`` (by its first sound, letters spelled out for
    acronyms): 'an ISSN', 'a URL', 'an HTTP method', 'a magnitude'."""
    word = phrase.split()[0].strip('"') if phrase.split() else phrase
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


#: Raw Unix times a source writes for a point in time (USGS origin times are milliseconds
#: since 1970): unit -> (smallest, largest magnitude, units per second).
_EPOCH = {"milliseconds": (1e11, 1e14, 1000), "seconds": (1e8, 1e10, 1)}


def epoch_unit(words: str, values: Sequence[Scalar]) -> str | None:
    """'milliseconds' or 'seconds' when a point-in-time field (:func:`is_time`) holds raw
    Unix times, which is all the input shows of them; else None."""
    if not is_time(words) or not values:
        return None
    if any(isinstance(v, bool) or not isinstance(v, int | float) for v in values):
        return None
    for unit, (low, high, _) in _EPOCH.items():
        if all(low <= abs(v) < high for v in values):  # type: ignore[arg-type]
            return unit
    return None


def iso_time(value: float, unit: str) -> str:
    """A raw Unix time as an ISO date and time in UTC ('2019-07-06 04:19:15 UTC')."""
    seconds = value / _EPOCH[unit][2]
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def epoch_note(words: str, unit: str) -> str:
    """The sentence saying how the input writes a raw time field."""
    return f"The input writes each {words} as a number of {unit} since the Unix epoch."


#: Last words of a phrase that names an event a year dates ('First issued', 'Founded').
_EVENT_WORDS = frozenset({"born", "since", "until", "debut", "began", "begun", "built"})


def year_words(words: str, values: Sequence[Scalar]) -> str | None:
    """'first issued year' for a field whose phrase names an event and whose values are all
    years (a table's 'First issued' column: 1996, 2008): asked as a year, so its extremes
    are the latest and earliest; None for any other field."""
    if not words or is_time(words) or not values:
        return None
    last = words.split()[-1].lower()
    if last not in _EVENT_WORDS and not (last.endswith("ed") and not last.endswith("eed")):
        return None
    if any(isinstance(v, bool) or not isinstance(v, int | float) or v != int(v)
           or not 1000 <= v <= 2100 for v in values):
        return None
    return f"{words} year"


def plural_words(words: str) -> str:
    """A singular field phrase in the plural, its head noun before any 'of' ('name' ->
    'names', 'type of work' -> 'types of work', 'HTTP method' -> 'HTTP methods')."""
    head, sep, rest = words.partition(" of ")
    return vocabulary.plural_of(head) + sep + rest


_SINGULAR_S = frozenset({"alias", "atlas", "bias", "canvas", "gas", "news", "series",
                         "species", "yes", "this", "its", "was", "has", "whereas"})


def be(words: str) -> str:
    """'are' when a field phrase names a plural ('the dynamic properties', 'the IDs'),
    else 'is' ('the status', 'the address', 'the analysis', 'the CVSS v3.1 base score');
    the head noun is the last word before any 'of' or 'in' ('the number of references',
    'the time zone in minutes': 'is')."""
    head = words.split(" of ")[0].split(" in ")[0].split()
    last = head[-1] if head else ""
    plural = (len(last) > 2 and last.endswith("s") and last[-2] not in "sSuU'"
              and not last.endswith("is") and last.lower() not in _SINGULAR_S)
    return "are" if plural else "is"


def kind_of(rec: Record) -> Kind:
    """The words the record's source uses for its kind ('CVE entry' / 'CVE entries')."""
    return vocabulary.kind_words(*vocabulary.unit_source(rec.unit_id), rec.kind)


_PHRASE = re.compile(r"[A-Za-z][A-Za-z0-9 '(),/.+-]*\Z")


def _clean(words: str, name: str) -> bool:
    """A field phrase fit for a question: words (no key syntax); one that is not the
    record's own field name (which the checks mask) must also reveal no schema or
    location on its own (C.3)."""
    if not _PHRASE.match(words) or CAMEL.search(words) or len(words) > 60:
        return False
    return words == name or not leaks(f"What is the {words}?")


def field_words(rec: Record) -> dict[str, str]:
    """The phrase each askable field of ``rec`` is named by in a question (source
    vocabulary first, then the key as words, or the label it is: :func:`as_label`);
    fields the glossary rules out, or whose phrase another field of the record shares,
    are absent."""
    fmt, src = vocabulary.unit_source(rec.unit_id)
    items = tuple((name, jsonable_key(rec.keys[name]), name) for name in rec.fields
                  if name in rec.keys)
    return {k: as_label(v, rec.keys[k], [rec.fields[k]])
            for k, v in field_phrases(fmt, src, items).items() if v}


_LABEL_KEYS = ("@column", "@label")
#: One-word headers that name no thing: prepositions (a closed class: 'For', 'Against'),
#: bare superlatives and results-table participles ('Best', 'Won', 'Lost').
_NO_NOUN = frozenset(
    "about above across after against along among around at before behind below beneath "
    "beside besides between beyond by despite down during except for from in inside into "
    "near of off on onto out outside over past per since through to toward towards under "
    "until up upon via versus vs with within without best worst most least won lost drawn "
    "tied".split())


def shown_label(path: Sequence[Any]) -> str:
    """The header or row label a page shows for a field (HTML), "" for any other key."""
    if len(path) == 2 and path[0] in _LABEL_KEYS and isinstance(path[1], str):
        return " ".join(path[1].split()).rstrip(".:").strip()
    return ""


def as_label(words: str, path: Sequence[Any], values: Sequence[Scalar]) -> str:
    """A field phrase as a question may use it (4.1: questions as a person writes them).

    A page's header or label taken as is names its values as a noun only where it reads
    as one; otherwise the question quotes it as the label it is ('the "Joined MAC"
    value', 'the "d" value'): a header shown with capitals past its first letter, one of
    fewer than three letters, a word that names no thing ('Against', 'Best': :data:`_NO_NOUN`),
    or a plural ('Notes') whose values are texts, each one
    value (a number in a plural field is the number of it, :func:`amount`). Phrases the
    source's glossary gives, and every other key, stay as they are."""
    label = shown_label(path)
    if not label or norm(label) != norm(words):
        return words
    letters = sum(c.isalpha() for c in label)
    capitals = any(c.isupper() for c in label[1:])
    texts = any(isinstance(v, str) for v in values)
    if (capitals or letters < 3 or norm(label) in _NO_NOUN
            or (be(words) == "are" and texts)):
        return f'"{label}" value'
    return words


def labelled(words: str) -> bool:
    """Whether a field phrase is a quoted label (:func:`as_label`)."""
    return words.startswith('"')


def modifier_singular(words: str) -> str:
    """A plural key read as the modifier of a generic last key, in the singular, as
    English writes a noun before a noun ('references type' -> 'reference type',
    'entries count' -> 'entry count'); any other phrase as it is."""
    parts = words.split()
    if len(parts) < 2 or parts[-1].lower() not in vocabulary.GENERIC_KEYS | vocabulary.VAGUE:
        return words
    word = parts[-2]
    if be(word) != "are" or not word.islower():
        return words
    one = word[:-3] + "y" if word.endswith("ies") else word[:-1]
    return " ".join([*parts[:-2], one, parts[-1]])


@functools.lru_cache(maxsize=1 << 15)
def field_phrases(fmt: str, src: str, items: tuple[tuple[Any, ...], ...]) -> dict[Any, str]:
    got = vocabulary.phrases(fmt, src, items)
    names = {ident: name for ident, _, name in items}
    kept = {ident: w for ident, w in got.items() if w and _clean(w, names[ident])}
    taken = set(kept.values())
    return {ident: one if (one := modifier_singular(w)) == w or one not in taken else w
            for ident, w in kept.items()}


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
    path = jsonable(where[0][0])
    name = next((n for n, k in rec.keys.items() if jsonable(k) == path), None)
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


def listed_names(recs: Sequence[Record]) -> tuple[str, str]:
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


def quote(value: Scalar) -> str:
    return f'"{value}"' if isinstance(value, str) else norm(value)
