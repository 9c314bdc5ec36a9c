"""Question words from each source's vocabulary.

A record's fields and kind are named in questions as the source's readers name them:
the source's glossary first (:attr:`~treeagent.bench.sources.registry.Source.fields`,
matched on the longest dotted suffix of a field's key path), then the key read as words
(:func:`~treeagent.bench.sources.common.humanize`, acronyms spelled as such). A field's
phrase is the shortest run of trailing words that tells it from the other fields of the
same group (one record, or one record kind of a context). Wording only: the records and
the reference specifications keep their internal names.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Hashable, Iterable
from functools import lru_cache
from typing import Any

from treeagent.bench.sources.common import GENERIC_KEYS, ONLY_ITEM, humanize
from treeagent.bench.sources.registry import ACRONYMS, SOURCES, Kind, Source

_WILD = re.compile(r".*\*\Z")
_JS_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*\Z")
#: Last words that do not stand alone (they read with their parent: "organization
#: class", "overall official role"), besides the generic keys.
VAGUE = frozenset({"role", "class", "domain", "date", "status", "amount", "count",
                   "version", "description", "title", "category", "kind", "level", "text"})


def source(fmt: str, name: str) -> Source | None:
    """The source ``fmt``/``name`` (a plug-in format's too), None if unknown."""
    from treeagent.bench.sources.registry import get

    try:
        return SOURCES.get((fmt, name)) or get(fmt, name)
    except ValueError:
        return None


def unit_source(unit_id: str) -> tuple[str, str]:
    """(format, source) of a unit id ``<format>/<source>/...`` (("", "") otherwise)."""
    parts = unit_id.split("/", 2)
    return (parts[0], parts[1]) if len(parts) > 2 else ("", "")


def acronyms(words: str) -> str:
    """Words with known acronyms spelled as such: "event id" -> "event ID"."""
    return " ".join(ACRONYMS.get(w.lower(), w) for w in words.split())


def plural_of(noun: str) -> str:
    """English plural of a kind without a declared one ('entry' -> 'entries')."""
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "i", "o", "u"):
        return noun[:-1] + "ies"
    return noun + "s"


def kind_words(fmt: str, name: str, kind: str) -> Kind:
    """How questions name records of ``kind`` from source ``(fmt, name)``: its declared
    words, else (JavaScript) '<binding> entry' / '<binding> property' in lower case,
    else the kind itself."""
    src = source(fmt, name)
    if src is not None and kind in src.kinds:
        return src.kinds[kind]
    if fmt == "javascript":
        for suffix, one, many in ((" entry", "entry", "entries"),
                                  (" member", "property", "properties")):
            if kind.endswith(suffix):
                label = kind[: -len(suffix)].lower()
                return Kind(f"{label} {one}", f"{label} {many}")
    return Kind(kind, plural_of(kind))


def shown_header(keys: list[str]) -> str:
    """An HTML column header or row label with capitals past its first letter, as shown
    ("Andrew Cuomo (D)", "W-L-T", "Apparent Magnitude"): lower-cased it would misname a
    person or an abbreviation. "" for any other field (it reads as words: "Year" -> "year")."""
    if len(keys) == 2 and keys[0] in ("@column", "@label"):
        label = " ".join(keys[1].split()).rstrip(".:").strip()
        if any(c.isupper() for c in label[1:]):
            return label
    return ""


def _gloss(glossary: dict[str, str | None], key: str) -> tuple[bool, str | None]:
    if key in glossary:
        return True, glossary[key]
    for pat, phrase in glossary.items():
        if _WILD.match(pat) and "." not in pat and key.startswith(pat[:-1]):
            return True, phrase
    return False, None


def _string_keys(path: Iterable[Any]) -> list[str]:
    return [k for k in path if isinstance(k, str) and k != ONLY_ITEM]


@lru_cache(maxsize=1 << 16)
def units(fmt: str, name: str, path: tuple[Any, ...], field: str
          ) -> tuple[tuple[str, ...], bool] | None:
    """The words of one field, outermost first, and whether its last word is a generic
    key read as is ("name", "id": it reads with its parent); None when the glossary
    says no question asks it. ``field`` is the internal name the record gave it (used
    as is where the key path is not made of the source's keys: HTML headers and labels,
    OpenAPI path keys, USGS coordinates)."""
    src = source(fmt, name)
    glossary = dict(src.fields) if src is not None else {}
    keys = _string_keys(path)
    if fmt == "javascript" and any(not _JS_IDENTIFIER.match(k) for k in keys):
        return None  # a quoted key that is data (a rule name, a file path), not a property
    own = bool(keys) and not any(k.startswith("@") for k in keys) and any(
        " ".join(humanize(k) for k in keys[-d:]) == field for d in range(1, len(keys) + 1))
    if not own:
        found, phrase = _gloss(glossary, field)
        if found:
            return ((phrase,), False) if phrase else None
        return (shown_header(keys) or acronyms(field),), False
    out: list[str] = []
    generic = False
    i = len(keys)
    while i > 0:
        for j in range(i):  # the longest dotted suffix of keys[:i] the glossary knows
            dotted = ".".join(keys[j:i])
            found, phrase = (_gloss(glossary, dotted) if j == i - 1
                             else (dotted in glossary, glossary.get(dotted)))
            if found:
                break
        else:
            j, found, phrase = i - 1, False, None
        if found:
            if phrase is None:
                return None
            if phrase:
                out.append(phrase)
        else:
            out.append(acronyms(humanize(keys[i - 1])))
            if i == len(keys) and keys[-1].lower() in GENERIC_KEYS | VAGUE:
                generic = True
        i = j
    if not out:
        return (acronyms(field),), False
    return tuple(reversed(out)), generic


def phrases(fmt: str, name: str,
            fields: Iterable[tuple[Hashable, tuple[Any, ...], str]]) -> dict[Hashable, str | None]:
    """A phrase per ``(id, key path, internal name)`` of one group: the shortest run of
    trailing words unique in the group (two words at least for a generic last key);
    None where the glossary rules the field out or no run of words tells it apart."""
    items = list(fields)
    got = {ident: units(fmt, name, tuple(path), field) for ident, path, field in items}
    out: dict[Hashable, str | None] = {ident: None for ident, _, _ in items}
    pending = [ident for ident, _, _ in items if got[ident] is not None]
    depth = 1
    while pending:
        cand = {}
        for ident in pending:
            words, generic = got[ident]  # type: ignore[misc]
            least = 2 if generic and len(words) > 1 else 1
            cand[ident] = " ".join(words[-max(depth, least):])
        counts = Counter(cand.values())
        nxt = []
        for ident in pending:
            if counts[cand[ident]] == 1:
                out[ident] = cand[ident]
            elif depth < len(got[ident][0]):  # type: ignore[index]
                nxt.append(ident)
        pending = nxt
        depth += 1
    taken = Counter(p for p in out.values() if p)
    return {ident: (p if p and taken[p] == 1 else None) for ident, p in out.items()}


def is_name(fmt: str, name: str, path: Iterable[Any]) -> bool:
    """Whether the field at ``path`` holds a record's natural name or id in this
    source (its last key, or the reader-level marker, is among the source's names)."""
    src = source(fmt, name)
    if src is None:
        return True  # no vocabulary: the description is all a question can say
    steps = [p for p in path if isinstance(p, str) and p != ONLY_ITEM]
    if not steps:
        return False
    last = next((p for p in steps if p.startswith("@")), steps[-1])
    return last in src.names
