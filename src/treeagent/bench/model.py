"""Data model of benchmark construction (paper 4.1, B.1).

A source adapter yields :class:`Unit` objects: parser units in native syntax (a JSON
response, an HTML table/list/DOM subtree, one OpenAPI document, one JS initializer),
each holding the :class:`Record` objects a question may be asked about.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Scalar = str | int | float | bool | None


@dataclass(slots=True)
class Record:
    """One entity inside a unit, addressable in a natural-language question.

    ``description`` is visible in the unit's text and unique within any context the
    record appears in (e.g. 'the earthquake "M 4.6 - 21 km SSW of Pahala, Hawaii"');
    ``fields`` maps a human field name ("magnitude", "place") to its visible value;
    ``kind`` names the entity type in words ("earthquake event", "operation").

    A record with an empty ``description`` has no unique visible name: it is never
    looked up, but aggregations count it like any other (B.1 "every visible record").
    ``select`` says where a reader finds records of this kind in a unit (key steps from
    the unit's value: ``"*"`` any list item, ``"~"`` any mapping member, ``("@any",
    k1, ...)`` one of these keys; JS selectors start with the binding name; HTML ones name
    what the page shows, ``["@table-row"]`` ...); ``keys`` maps each field name to its key
    path inside the record (``"@key:-1"``: the record's own key, ``"@key:-2"`` the one
    above, ``"@up"``: the enclosing container; ``"[1]"``: the only item of a one-item
    list); ``anchor`` the (key path, value) pairs that pick the record out as its
    description says (empty: a field whose value is the description); ``defaults`` the
    value the format documents for an absent field (OpenAPI ``required: false``);
    ``opaque``: fields not listed are unknown (an unresolved ``$ref``). A record with an
    empty ``select`` is never asked about (no reader-level address); one with
    ``counted`` false is looked up but never aggregated (its kind has no scope a
    question can state, e.g. the items of an unnamed JS literal).
    """

    id: str  # stable: f"{unit_id}#{local id}"
    unit_id: str
    kind: str
    description: str
    fields: dict[str, Scalar]
    path: str = ""  # structural path inside the unit (never shown in questions)
    select: tuple[Any, ...] = ()
    keys: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    anchor: tuple[tuple[tuple[Any, ...], Scalar], ...] = ()
    defaults: dict[str, Scalar] = field(default_factory=dict)
    opaque: bool = False
    counted: bool = True


@dataclass(slots=True)
class Unit:
    """A parser unit in native syntax with its records and provenance."""

    id: str  # stable, e.g. "json/usgs/<file>#3"
    format: str  # json | html | yaml | javascript
    source: str  # source group: usgs, nvd, websrc, apis-guru, eslint, ...
    text: str  # native serialization (a valid document of ``format`` on its own)
    records: list[Record] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)  # file, repo, commit, license, line
    flags: tuple[str, ...] = ()  # e.g. ("substitute",) for SWDE/readability pages


@dataclass(slots=True)
class Example:
    """One validated benchmark example (a row of ``validated/examples/<format>.parquet``).

    ``answer`` is the reference answer (a scalar or an ordered/unordered list, as the
    task says); ``spec`` the machine-executable reference specification; ``tokens`` the
    context's token count under each construction tokenizer ({"qwen3": n, ...}).
    """

    id: str
    format: str
    task: str  # one of treeagent.scoring.TASKS
    length: int  # bucket in construction tokens: 8192, 16384, ..., 1048576
    question: str
    answer: Any
    spec: dict[str, Any]
    source_ids: list[str]
    tokens: dict[str, int]
    context: str
    content_hash: str
