"""Shared record helpers (B.1): readable field names, flattening, unique descriptions.

Every record carries a description that literally appears in its unit's text and is
unique within the unit; records for which no such description exists are not emitted
("ambiguous records", B.1) and are counted by the caller.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from treeagent.bench.model import Record, Scalar

MAX_VALUE_CHARS = 200  # longer strings are prose, not answerable field values
MAX_FIELDS = 80
MIN_DESCRIPTION = 3  # shorter strings are found anywhere in a text  # per record, in document order
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEP = re.compile(r"[\s_\-./:]+")
_URI_KEY = re.compile(r"^https?://\S+/([^/]+)$")

GENERIC_KEYS = frozenset({"name", "id", "value", "type", "code", "text", "label", "uri", "url",
                          "key", "identifier"})
ALIASES = {
    "mag": "magnitude", "magType": "magnitude type", "tz": "timezone offset",
    "cdi": "community intensity", "mmi": "instrumental intensity", "sig": "significance",
    "nst": "number of stations", "dmin": "minimum distance", "rms": "rms residual",
    "gap": "azimuthal gap", "DOI": "DOI", "URL": "URL", "ISSN": "ISSN", "ISBN": "ISBN",
    "in": "location", "ocid": "OCID", "net": "network", "duns": "DUNS number",
    "uei": "UEI", "consumes": "accepted media type", "produces": "response media type",
    "operationId": "operation id", "nctId": "NCT number",
}


def humanize(key: str) -> str:
    """A key as words: ``baseScore`` -> "base score", ``award_amount`` -> "award amount"."""
    if key in ALIASES:
        return ALIASES[key]
    m = _URI_KEY.match(key)  # GBIF extension terms are URIs
    if m:
        key = m.group(1)
    words = _SEP.sub(" ", _CAMEL.sub(" ", key)).strip()
    if not words:
        return key
    return " ".join(w if w.isalpha() and w.isupper() and len(w) > 1 else w.lower()
                    for w in words.split())


def scalar(value: Any) -> Scalar | None:
    """A field value fit for a question (None when unfit): finite numbers, booleans and
    short one-line non-empty strings."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        v = value.strip()
        if not v or len(v) > MAX_VALUE_CHARS or "\n" in v or v != value:
            return None
        return value
    return None


ONLY_ITEM = "[1]"
"""Key-path step through a one-element list (transparent for a lookup; an aggregation
never uses such a field: other records may hold several items there)."""


def flatten(value: Any, skip: frozenset[str] = frozenset(),
            max_fields: int = MAX_FIELDS,
            keys_out: dict[str, tuple[Any, ...]] | None = None) -> dict[str, Scalar]:
    """Nested scalars of a mapping under readable names (B.1 ``fields``).

    Nested keys are walked in document order; a one-element list is transparent, longer
    lists are skipped (their items are other entities or unordered values). A name is
    the humanized last key; when two fields share it, each takes the shortest suffix of
    its key path that is unique; names that stay ambiguous are dropped. ``keys_out``
    receives each name's key path (:data:`ONLY_ITEM` where a one-item list was crossed).
    """
    found: list[tuple[list[str], Scalar]] = []
    paths: list[tuple[Any, ...]] = []

    def walk(v: Any, keys: list[str], path: tuple[Any, ...]) -> None:
        if isinstance(v, dict):
            for k, sub in v.items():
                if str(k) in skip:
                    continue
                walk(sub, [*keys, str(k)], (*path, str(k)))
        elif isinstance(v, list):
            if len(v) == 1:
                walk(v[0], keys, (*path, ONLY_ITEM))
        elif keys:
            s = scalar(v)
            if s is not None:
                found.append((keys, s))
                paths.append(path)

    walk(value, [], ())
    return name_fields(found, max_fields, keys_out, paths)


def name_fields(found: list[tuple[list[str], Scalar]], max_fields: int = MAX_FIELDS,
                keys_out: dict[str, tuple[Any, ...]] | None = None,
                paths: list[tuple[Any, ...]] | None = None) -> dict[str, Scalar]:
    """Readable unique names for (key path, value) pairs (see :func:`flatten`);
    ``keys_out`` receives ``paths[i]`` (default: the key path itself) under each name."""
    human = [[humanize(k) for k in keys] for keys, _ in found]
    names: list[str | None] = [None] * len(found)
    pending = list(range(len(found)))
    # a nested generic key ("name", "id") reads with its parent: "buyer name"
    least = [2 if len(keys) > 1 and keys[-1].lower() in GENERIC_KEYS else 1
             for keys, _ in found]
    depth = 1
    while pending:
        cand = {i: " ".join(human[i][-max(depth, least[i]):]) for i in pending}
        counts = Counter(cand.values())
        nxt = []
        for i in pending:
            if counts[cand[i]] == 1:
                names[i] = cand[i]
            elif depth < len(human[i]):
                nxt.append(i)
        pending = nxt
        depth += 1
    used = Counter(n for n in names if n)
    out: dict[str, Scalar] = {}
    for i, name in enumerate(names):
        if name and used[name] == 1 and len(out) < max_fields:
            out[name] = found[i][1]
            if keys_out is not None:
                keys_out[name] = tuple(paths[i]) if paths is not None else tuple(found[i][0])
    return out


def get_path(value: Any, dotted: str) -> Any:
    """``a.b.0.c`` into nested dicts/lists; None when absent."""
    cur = value
    for part in dotted.split("."):
        if isinstance(cur, dict):
            cur = cur.get(part)
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return None
    return cur


def visible(text: str, value: Any) -> str | None:
    """``value`` as it literally appears in ``text`` (strings verbatim, numbers in their
    usual spelling), or None."""
    if isinstance(value, bool) or value is None:
        return None
    s = value if isinstance(value, str) else repr(value) if isinstance(value, float) else str(value)
    s2 = s.strip()
    if len(s2) < MIN_DESCRIPTION or len(s2) > MAX_VALUE_CHARS or "\n" in s2:
        return None
    if s2 in text:
        return s2
    if isinstance(value, str):  # a JSON string written with escapes (Crossref: ``\\/``)
        enc = json.dumps(s2, ensure_ascii=False)[1:-1]
        if enc in text or enc.replace("/", "\\/") in text:
            return s2
    return None


def namelike(value: Any) -> bool:
    """A value that can name a record: text with a letter in it (never an amount, a
    count or a year: a record named by a number reads as a value, not a name)."""
    return isinstance(value, str) and any(c.isalpha() for c in value)


def choose_descriptions(text: str, entities: list[Any],
                        candidates: Iterable[Callable[[Any], Any]]) -> list[str | None]:
    """One description per entity: the first candidate value that is visible in
    ``text`` and unique among the entities (B.1); None when no candidate qualifies."""
    out: list[str | None] = [None] * len(entities)
    taken: set[str] = set()
    for cand in candidates:
        vals = []
        for e in entities:
            try:
                v = cand(e)
            except (KeyError, IndexError, TypeError, AttributeError):
                v = None
            vals.append(visible(text, v) if namelike(v) else None)
        counts = Counter(v for v in vals if v is not None)
        for i, v in enumerate(vals):
            if out[i] is None and v is not None and counts[v] == 1 and v not in taken:
                out[i] = v
                taken.add(v)
        if all(o is not None for o in out):
            break
    return out


def make_records(unit_id: str, kind: str, items: list[tuple[str, Any, dict[str, Scalar]]],
                 text: str, candidates: Iterable[Callable[[Any], Any]],
                 on_drop: Callable[[str, str], None] | None = None,
                 select: Callable[[str], tuple[Any, ...]] | None = None,
                 keys: list[dict[str, tuple[Any, ...]]] | None = None) -> list[Record]:
    """Records from ``(path, entity, fields)`` triples, described by unique visible
    values; an entity without one is kept undescribed (aggregations still count it, B.1)
    and reported through ``on_drop``. ``select`` maps a record's path to its reader-level
    pattern (:func:`pattern`); ``keys`` gives each item's field key paths."""
    descs = choose_descriptions(text, [e for _, e, _ in items], list(candidates))
    records = []
    for i, ((path, _, fields), desc) in enumerate(zip(items, descs)):
        if desc is not None and not fields:  # nothing to ask about it: counted, not named
            desc = None
        if desc is None and on_drop:
            on_drop(path, "no unique visible description")
        records.append(Record(id=f"{unit_id}#{path}", unit_id=unit_id, kind=kind,
                              description=desc or "", fields=fields, path=path,
                              select=select(path) if select else (),
                              keys=keys[i] if keys else {}))
    return records


_STEP = re.compile(r"""\.([A-Za-z_$][\w$]*)|\['((?:[^'\\]|\\.)*)'\]|\[(\d+)\]""")


def path_steps(path: str) -> list[Any]:
    """``$.a['b c'][3]`` -> ``["a", "b c", 3]`` (the inverse of ``key_step``/``index_step``)."""
    out: list[Any] = []
    pos = 1 if path.startswith("$") else 0
    while pos < len(path):
        m = _STEP.match(path, pos)
        if not m:
            raise ValueError(f"not a structural path: {path!r}")
        if m.group(1) is not None:
            out.append(m.group(1))
        elif m.group(2) is not None:
            out.append(re.sub(r"\\(.)", r"\1", m.group(2)))
        else:
            out.append(int(m.group(3)))
        pos = m.end()
    return out


def pattern(path: str, prefix: tuple[Any, ...] = ()) -> tuple[Any, ...]:
    """A record's reader-level selector: its path with every list index as ``"*"``."""
    return (*prefix, *("*" if isinstance(s, int) else s for s in path_steps(path)))


def key(*names: str) -> Callable[[Any], Any]:
    """Candidate: the first present dotted path among ``names``."""
    def get(e: Any) -> Any:
        for n in names:
            v = get_path(e, n)
            if v is not None and not isinstance(v, dict | list):
                return v
        return None
    return get


_SECRET_KEY = re.compile(
    r"(?i)(pass(word|wd)?|secret|token|api[-_]?key|apikey|access[-_]?key|private[-_]?key|"
    r"credential|auth[-_]?key|client[-_]?secret|session[-_]?id|bearer)"
)
_SECRET_VALUE = re.compile(
    r"AKIA[0-9A-Z]{16}|-----BEGIN [A-Z ]*PRIVATE KEY|gh[pousr]_[A-Za-z0-9]{30,}|"
    r"sk-[A-Za-z0-9]{20,}|xox[abpr]-[A-Za-z0-9-]{10,}|"
    r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.|AIza[0-9A-Za-z_-]{35}"
)
_HIGH_ENTROPY = re.compile(r"^[A-Za-z0-9+/_=-]{32,}$")


def sensitive(value: Any, path: str = "$") -> str | None:
    """The path and reason of the first sensitive-looking string in ``value`` (B.1):
    a non-empty string under a key naming a secret, a known credential pattern, or a
    long mixed-case/digit token; None when clean."""
    stack: list[tuple[Any, str, str]] = [(value, path, "")]
    while stack:
        v, p, k = stack.pop()
        if isinstance(v, dict):
            stack.extend((sub, f"{p}.{kk}", str(kk)) for kk, sub in reversed(v.items()))
        elif isinstance(v, list):
            stack.extend((sub, f"{p}[{i}]", k) for i, sub in reversed(list(enumerate(v))))
        elif isinstance(v, str) and v:
            if k and _SECRET_KEY.search(k) and len(v) >= 4:
                return f"{p}: string under a key that names a secret ({k!r})"
            if _SECRET_VALUE.search(v):
                return f"{p}: credential-like string"
            if _HIGH_ENTROPY.match(v) and _entropy_like(v):
                return f"{p}: long random-looking token"
    return None


def _entropy_like(s: str) -> bool:
    classes = sum(bool(re.search(c, s)) for c in (r"[a-z]", r"[A-Z]", r"[0-9]"))
    return classes == 3 and len(set(s)) >= 16


def iter_unique(values: Iterable[str]) -> Iterator[str]:
    seen: set[str] = set()
    for v in values:
        if v not in seen:
            seen.add(v)
            yield v


def parsed_or_reason(fmt: str, text: str) -> tuple[Any, str | None]:
    """``(tree, None)`` for a payload the format's parser reads, else ``(None, reason)``:
    NUL bytes, the parser's ``line:col`` message, or nesting too deep (the raw gate)."""
    from treeagent.algorithm.tree import ParseError
    from treeagent.formats import parse

    if "\0" in text:
        return None, f"binary content (NUL at offset {text.index(chr(0))})"
    try:
        return parse(text, fmt), None
    except ParseError as exc:
        return None, str(exc)
    except RecursionError:
        return None, "1:1: nesting too deep"

