"""Source adapters, parser units and records of the four datasets (paper 4.1, B.1).

``acquire`` writes payloads as acquired under ``raw/<format>/<source>/...`` with
``raw/manifest.json`` (one switch: ``live`` | ``mirror`` | ``sample``); ``units`` yields
parser units with records in a deterministic order with stable ids; ``records_from_text``
recovers a unit's records from its native text alone (the validator's independent path).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from treeagent.bench.model import Record, Unit, UnitFile
from treeagent.bench.sources.acquiring import acquire
from treeagent.bench.sources.raw import decode, read_manifest
from treeagent.bench.sources.registry import (
    BENCH,
    FORMATS,
    JS_REPOS,
    MODES,
    SOURCES,
    Kind,
    get,
    sources_of,
)

__all__ = [
    "description_clashes", "description_forms",
    "FORMATS", "JS_REPOS", "Kind", "MODES", "SOURCES", "acquire", "get", "records_from_text",
    "sources_of", "units",
]


def records_from_text(format: str, source: str, text: str, *, unit_id: str = "",
                      on_drop: Any = None) -> list[Record]:
    """The records of one unit read again from its native text alone (B.1 validation).

    ``unit_id`` prefixes record ids as in :func:`units`; ``on_drop(path, reason)`` hears
    of entities left out for want of a unique visible description.
    """
    if format not in BENCH:
        raise ValueError(f"unknown format {format!r} (choose from {', '.join(BENCH.names)})")
    return BENCH.get(format).records(source, text, unit_id, on_drop)


def _entries(fmt: str, raw_dir: str | Path, sources: Iterable[str] | None) -> list[dict]:
    wanted = set(sources) if sources is not None else None
    return [e for e in read_manifest(raw_dir)["files"]
            if e["format"] == fmt and (wanted is None or e["source"] in wanted)]


def units(format: str, *, raw_dir: str | Path = "raw", sources: Iterable[str] | None = None,
          rejections: list[dict[str, Any]] | None = None, dedupe: bool = True,
          js_nested: bool = True) -> Iterator[Unit]:
    """Parser units of ``format`` from ``raw/`` (B.1), in manifest file order.

    JSON: one response per unit; YAML: one OpenAPI document; HTML: tables, lists and
    repeated DOM blocks cut from each page; JavaScript: one static initializer. Ids:
    ``<format>/<source>/<file>`` (+ ``#<page path>`` for HTML, ``#<name>@L<line>`` for
    a top-level JS binding, ``#literal@L<line>C<col>`` for a nested JS literal, taken
    unless ``js_nested`` is false). A unit whose text repeats an earlier one is skipped
    when ``dedupe``; each skipped unit, dropped record and rejected initializer is
    appended to ``rejections``.
    """
    known = {s.name: s for s in sources_of(format)}  # ValueError for an unknown format
    seen: dict[str, str] = {}
    root = Path(raw_dir)

    def note(entry: dict, reason: str, **extra: Any) -> None:
        if rejections is not None:
            rejections.append({"format": format, "source": entry["source"],
                               "file": entry["file"], "reason": reason, **extra})

    for entry in _entries(format, raw_dir, sources):
        source = entry["source"]
        spec = known.get(source)
        rel = entry["file"].split("/", 2)[2]
        try:
            text = decode(format, (root / entry["file"]).read_bytes())
        except (OSError, ValueError) as exc:
            note(entry, f"unreadable: {exc}")
            continue
        base = {"file": entry["file"], "sha256": entry["sha256"],
                "license": (spec.license if spec else ""), **entry.get("provenance", {})}
        flags = spec.flags if spec else ()
        f = UnitFile(format, source, f"{format}/{source}/{rel}", rel, base, flags,
                     lambda reason, _e=entry, **extra: note(_e, reason, **extra), js_nested)
        for unit in _file_units(format, text, f):
            digest = hashlib.sha256(unit.text.encode("utf-8", "surrogatepass")).hexdigest()
            if dedupe and digest in seen:
                note(entry, f"duplicate of {seen[digest]}", unit=unit.id)
                continue
            seen[digest] = unit.id
            unit.provenance["text_sha256"] = digest
            yield unit


def _file_units(fmt: str, text: str, f: UnitFile) -> Iterator[Unit]:
    """The units of one file: its bench module's ``file_units``, else the whole file as
    one unit (its records read from its text)."""
    hooks = BENCH.get(fmt)
    if hooks.file_units is not None:
        yield from hooks.file_units(text, f)
        return
    try:
        recs = hooks.records(f.source, text, f.id, f.drop_for(f.id))
    except Exception as exc:  # noqa: BLE001 (checked at acquire; never crash a build)
        f.note(f"unparsable: {exc}")
        return
    yield Unit(id=f.id, format=fmt, source=f.source, text=text, records=recs,
               provenance=dict(f.base), flags=f.flags)


def manifest(raw_dir: str | Path = "raw") -> dict[str, Any]:
    """The manifest written by :func:`acquire`."""
    return read_manifest(raw_dir)



def description_forms(description: str) -> tuple[str, ...]:
    """The ways a description can be written in a unit text: as is, and JSON-escaped
    (``"`` and ``\\``, optionally ``\\/``) as it appears inside a JSON string."""
    import json

    enc = json.dumps(description, ensure_ascii=False)[1:-1]
    return tuple(dict.fromkeys((description, enc, enc.replace("/", "\\/"))))


def description_clashes(record: Record, units: Iterable[Unit]) -> list[str]:
    """Ids of the units other than the record's own whose text contains its description
    (in any written form). A question naming the record is unambiguous in a context only
    when this is empty for the units of that context: the build step should swap such a
    distractor for another (or drop the example) and record the clash as the reason."""
    forms = description_forms(record.description)
    return [u.id for u in units
            if u.id != record.unit_id and any(f in u.text for f in forms)]
