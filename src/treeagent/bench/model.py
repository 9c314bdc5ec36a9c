"""Data model of benchmark construction (paper 4.1, B.1).

A source adapter yields :class:`Unit` objects: parser units in native syntax (a JSON
response, an HTML table/list/DOM subtree, one OpenAPI document, one JS initializer),
each holding the :class:`Record` objects a question may be asked about.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
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
    question can state, e.g. the items of an unnamed JS literal). ``accepted`` maps a
    field name to the further forms a careful reader may state for its value (HTML
    "June 1, 1980 (aged 28)": also "June 1, 1980"; docs/fidelity.md "HTML values").
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
    accepted: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(slots=True)
class Unit:
    """A parser unit in native syntax with its records and provenance."""

    id: str  # stable, e.g. "json/usgs/<file>#3"
    format: str  # json | html | yaml | javascript
    source: str  # source group: usgs, nvd, websrc, apis-guru, eslint, ...
    text: str  # native serialization (a valid document of ``format`` on its own)
    records: list[Record] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)  # file, repo, commit, license, line
    flags: tuple[str, ...] = ()  # e.g. ("substitute",) for SWDE, readability, Wikipedia pages


@dataclass(slots=True)
class Example:
    """One validated benchmark example (a row of ``validated/examples/<format>.parquet``).

    ``answer`` is the reference answer (a scalar or an ordered/unordered list, as the
    task says); ``spec`` the machine-executable reference specification; ``tokens`` the
    context's token count under each construction tokenizer ({"qwen3": n, ...});
    ``accepted`` the further forms accepted for each answer value in order (empty: none;
    :func:`treeagent.scoring.score`).
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
    accepted: list[list[Any]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Frame:
    """How unit pieces become one document of a format (4.1):
    ``head + wrap(p0) + sep + wrap(p1) ... + tail``; a piece ``keep`` accepts is placed as
    written (a JavaScript statement that declares its own binding)."""

    head: str
    sep: str
    tail: str
    before: str = ""
    after: str = ""
    keep: Callable[[str], bool] | None = None

    def wrap(self, p: str, i: int) -> str:
        if self.keep is not None and self.keep(p):
            return p
        return self.before.replace("{i}", f"{i + 1:04d}") + p + self.after


def _no_binding(piece: str) -> str:
    return ""


@dataclass(frozen=True)
class UnitFile:
    """One acquired payload as its bench module cuts it into units (B.1): unit ids start
    with ``id`` (``<format>/<source>/<file>``), every unit carries ``base`` provenance
    and ``flags``; ``note(reason, **extra)`` records a rejection of (part of) this file;
    ``nested``: JavaScript literals nested in a binding are units too."""

    format: str
    source: str
    id: str
    rel: str
    base: dict[str, Any]
    flags: tuple[str, ...]
    note: Callable[..., None]
    nested: bool = True

    def drop_for(self, unit_id: str) -> Callable[[str, str], None]:
        """``on_drop(path, reason)`` of a record reader: a record left out of ``unit_id``."""
        return lambda path, why: self.note(why, unit=unit_id, path=path)


@dataclass(frozen=True)
class BenchFormat:
    """A format's benchmark hooks, declared once in its bench module
    (``treeagent/bench/sources/<format>_records.py``, ``BENCH = BenchFormat(...)``) and
    collected in :data:`treeagent.bench.sources.registry.BENCH`:

    * ``records(source, text, unit_id, on_drop)``: the records of one unit, read from its
      native text alone (construction, and validation's re-extraction);
    * ``piece(text)``: the unit's text as a composed context holds it; ``frame`` how
      pieces are composed (:class:`Frame`); ``probe``: a minimal piece (wrapper costs);
      ``unit_pieces(context)``: the composed context split back into its pieces
      (validation; raises ``ValueError``/``ParseError``);
    * ``check_raw(text)``: why an acquired payload is unusable, or None (the raw gate);
    * ``binding(piece)``: a name the piece declares that may occur once per context
      (JavaScript bindings), "" otherwise;
    * ``file_units(text, file)``: the units of one acquired file (:class:`UnitFile`);
      None: the whole file is one unit (a JSON response, an OpenAPI document);
    * ``sources``: a plug-in format's source groups
      (:class:`treeagent.bench.sources.registry.Source`; the built-ins' are declared in
      that module), acquired from a mirror folder ``<mirror>/<format>/<source>/``;
    * ``build_cost``: the CPU a cell of the format costs per context token, relative to
      JSON's (measured; docs/performance.md): a sharded build starts costlier cells first
      (:func:`treeagent.bench.cells.cells`). It orders tasks only, never changes a file.
    """

    name: str
    records: Callable[..., list[Record]]
    piece: Callable[[str], str]
    frame: Frame
    probe: str
    unit_pieces: Callable[[str], list[str]]
    check_raw: Callable[[str], str | None]
    binding: Callable[[str], str] = _no_binding
    file_units: Callable[[str, UnitFile], Iterator[Unit]] | None = None
    sources: tuple[Any, ...] = ()
    build_cost: float = 1.0

    @property
    def title(self) -> str:
        from treeagent import registry

        return registry.FORMATS.get(self.name).title

