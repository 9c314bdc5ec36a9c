"""JSON records (B.1 "JSON dataset"): a unit is one API response, or one JSON value inside
a response's ordered list where the whole response is too long to anchor a family
(:func:`file_units`); its records are the entities in it (USGS events, NVD CVEs, GBIF
occurrences, Crossref works, ClinicalTrials studies, RePORTER projects, USAspending awards,
Contracts Finder notices)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from treeagent.bench.model import BenchFormat, Frame, Record, Scalar, Unit, UnitFile
from treeagent.bench.sources.common import (
    flatten,
    get_path,
    humanize,
    key,
    make_records,
    parsed_or_reason,
    path_steps,
    pattern,
    scalar,
)
from treeagent.formats import parse as parse_format

Entity = tuple[str, Any]  # (JSON path inside the unit, entity value)
Keys = dict[str, tuple[Any, ...]]  # field name -> key path inside the entity

_CROSSREF_SKIP = frozenset(
    "reference author editor link license funder assertion relation content-domain abstract "
    "update-to clinical-trial-number indexed deposited created institution review".split())
_NVD_SKIP = frozenset("references configurations problemtype weaknesses descriptions".split())
_GBIF_SKIP = frozenset("extensions media facts relations identifiers gadm".split())
_CT_SKIP = frozenset("resultsSection derivedSection documentSection annotationSection "
                     "ResultsSection DerivedSection DocumentSection AnnotationSection".split())


def _items(data: Any, path: str, base: str) -> list[Entity]:
    lst = get_path(data, path)
    if not isinstance(lst, list):
        return []
    step = "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in path.split("."))
    return [(f"{base}{step}[{i}]", e) for i, e in enumerate(lst) if isinstance(e, dict)]


def _usgs(data: Any) -> list[Entity]:
    if isinstance(data, dict) and data.get("type") == "FeatureCollection":
        return _items(data, "features", "$")
    return [("$", data)] if isinstance(data, dict) and data.get("type") == "Feature" else []


def _usgs_fields(e: dict, keys: Keys) -> dict[str, Scalar]:
    fields: dict[str, Scalar] = {}
    if scalar(e.get("id")) is not None:
        fields["event id"] = e["id"]
        keys["event id"] = ("id",)
    props: Keys = {}
    fields.update(flatten(e.get("properties") or {},
                          skip=frozenset({"products", "types", "ids", "sources", "detail"}),
                          keys_out=props))
    keys.update({k: ("properties", *v) for k, v in props.items()})
    coords = get_path(e, "geometry.coordinates")
    if isinstance(coords, list):
        for i, (name, v) in enumerate(zip(("longitude", "latitude", "depth"), coords)):
            if scalar(v) is not None and not isinstance(v, bool):
                fields[name] = v
                keys[name] = ("geometry", "coordinates", i)
    return fields


def _nvd(data: Any) -> list[Entity]:
    if not isinstance(data, dict):
        return []
    if "CVE_Items" in data:
        return _items(data, "CVE_Items", "$")
    return [(p + ".cve", e["cve"]) for p, e in _items(data, "vulnerabilities", "$")
            if isinstance(e.get("cve"), dict)]


def _nvd_fields(e: dict, keys: Keys) -> dict[str, Scalar]:
    fields = flatten(e, skip=_NVD_SKIP, keys_out=keys)
    for d in get_path(e, "descriptions") or get_path(e, "cve.description.description_data") or []:
        if isinstance(d, dict) and d.get("lang") == "en" and scalar(d.get("value")) is not None:
            fields.setdefault("description", d["value"])
    return fields


def _clinicaltrials(data: Any) -> list[Entity]:
    if not isinstance(data, dict):
        return []
    if "protocolSection" in data:
        return [("$", data)]
    if "studies" in data:
        return _items(data, "studies", "$")
    full = get_path(data, "FullStudiesResponse.FullStudies")
    if isinstance(full, list):
        return [(f"$.FullStudiesResponse.FullStudies[{i}].Study", s["Study"])
                for i, s in enumerate(full) if isinstance(s, dict) and isinstance(s.get("Study"), dict)]
    return []


def _crossref(data: Any) -> list[Entity]:
    if not isinstance(data, dict):
        return []
    msg = data.get("message")
    if data.get("message-type") == "work" and isinstance(msg, dict):
        return [("$.message", msg)]
    return _items(data, "message.items", "$")


def _results(data: Any) -> list[Entity]:
    if isinstance(data, list):
        return [(f"$[{i}]", e) for i, e in enumerate(data) if isinstance(e, dict)]
    if isinstance(data, dict):
        if isinstance(data.get("results"), list):
            return _items(data, "results", "$")
        return [("$", data)]
    return []


def _contracts_finder(data: Any) -> list[Entity]:
    return _items(data, "releases", "$") if isinstance(data, dict) else []


def _usaspending_kind(entities: list[Entity]) -> str:
    keys = set().union(*(e.keys() for _, e in entities)) if entities else set()
    if keys & {"Award ID", "generated_unique_award_id", "piid", "fain", "award_id"}:
        return "federal award"
    if keys & {"recipient_id", "recipient_name", "uei", "duns"}:
        return "award recipient"
    if keys & {"toptier_code", "agency_id", "abbreviation"}:
        return "federal agency"
    return "spending record"


def _fallback(entities: list[Entity]) -> list[Callable[[Any], Any]]:
    """Top-level scalar keys of the first entity, in document order, that identify: no
    two entities hold the same value there (a category such as a basis of record names
    a record only by chance of being rare in its response)."""
    if not entities:
        return []
    out = []
    for k, v in entities[0][1].items():
        if isinstance(v, dict | list):
            continue
        values = [repr(e[k]) for _, e in entities if k in e]
        if len(values) == len(set(values)):
            out.append(key(k))
    return out


# source -> (entity finder, kind, description candidates, fields of one entity)
_SPECS: dict[str, tuple[Callable[[Any], list[Entity]], str, list[Callable[[Any], Any]],
                        Callable[[dict, Keys], dict[str, Scalar]]]] = {
    "usgs": (_usgs, "earthquake event",
             [key("properties.title"), key("properties.place"), key("id")], _usgs_fields),
    "nvd": (_nvd, "vulnerability", [key("cve.CVE_data_meta.ID", "id")], _nvd_fields),
    "clinicaltrials": (_clinicaltrials, "clinical study",
                       [key("protocolSection.identificationModule.nctId",
                            "ProtocolSection.IdentificationModule.NCTId"),
                        key("protocolSection.identificationModule.briefTitle",
                            "ProtocolSection.IdentificationModule.BriefTitle")],
                       lambda e, k: flatten(e, skip=_CT_SKIP, keys_out=k)),
    "gbif": (_gbif := _results, "species occurrence",
             [key("occurrenceID"), key("catalogNumber"), key("gbifID", "key")],
             lambda e, k: flatten(e, skip=_GBIF_SKIP, keys_out=k)),
    "crossref": (_crossref, "scholarly work", [key("DOI"), key("title.0")],
                 lambda e, k: flatten(e, skip=_CROSSREF_SKIP, keys_out=k)),
    "nih_reporter": (_results, "research project",
                     [key("project_num"), key("appl_id"), key("project_title")],
                     lambda e, k: flatten(e, skip=frozenset({"abstract_text", "phr_text",
                                                             "terms", "pref_terms"}),
                                          keys_out=k)),
    "contracts_finder": (_contracts_finder, "procurement notice",
                         [key("ocid"), key("tender.title"), key("id")],
                         lambda e, k: flatten(e, skip=frozenset({"parties", "documents"}),
                                              keys_out=k)),
    "usaspending": (_results, "", [key("Award ID", "generated_internal_id", "award_id"),
                                   key("generated_unique_award_id", "piid", "fain"),
                                   key("name", "recipient_name", "Recipient Name", "code")],
                    lambda e, k: flatten(e, keys_out=k)),
}


def entities(source: str, data: Any) -> list[Entity]:
    return _SPECS[source][0](data) if source in _SPECS else _results(data)


def records(source: str, text: str, unit_id: str = "",
            on_drop: Callable[[str, str], None] | None = None) -> list[Record]:
    """Records of one JSON response (raises ``ValueError`` on malformed JSON)."""
    data = json.loads(text)
    finder, kind, cands, fields_of = _SPECS.get(
        source, (_results, "record", [], lambda e, k: flatten(e, keys_out=k)))
    found = finder(data)
    if source == "usaspending":
        kind = _usaspending_kind(found)
    keyed: list[tuple[str, Any, dict[str, Scalar], Keys]] = []
    for p, e in found:
        k: Keys = {}
        keyed.append((p, e, fields_of(e, k), k))
    return make_records(unit_id, kind or humanize(source), [(p, e, f) for p, e, f, _ in keyed],
                        text, [*cands, *_fallback(found)], on_drop,
                        lambda p: pattern(p, _guard(source, p)), [k for *_, k in keyed])


def _guard(source: str, path: str) -> tuple[Any, ...]:
    """What tells a response that *is* one entity from one that lists them (a reader
    checks the response's own type or keys): USGS ``type: Feature``, a Crossref
    ``message-type: work``, a ClinicalTrials study, a bare record without ``results``."""
    if path == "$.message":
        return (("@if", "message-type", "work"),)
    if path != "$":
        return ()
    if source == "usgs":
        return (("@if", "type", "Feature"),)
    if source == "clinicaltrials":
        return (("@has", "protocolSection"),)
    return (("@lacks", "results"),)


# ------------------------------------------------------------------ bench hooks (4.1, B.1)


def piece(text: str) -> str:
    """A response as a composed context holds it: its JSON text, trimmed."""
    return text.strip()


def unit_pieces(context: str) -> list[str]:
    """The responses of a composed context (a JSON list of them), as written."""
    root = parse_format(context, "json").root
    if root.kind != "array":
        raise ValueError("context is not a JSON list of responses")
    return [context[c.start:c.end] for c in root.children]


def check_raw(text: str) -> str | None:
    """Why a JSON payload is unusable (NUL bytes, syntax, nesting), or None."""
    return parsed_or_reason("json", text)[1]


# ------------------------------------------------------------------ units (B.1)

MAX_WHOLE_CHARS = 8_000
"""Longest list response kept whole as one unit. A family's anchor units take at most
half of the smallest paper bucket (8K tokens: 4,096), and JSON runs 2 to 4 characters a
token, so a response up to this length anchors at every length; a longer one is cut into
the values of its record list (the paper's parser unit: "a JSON value inside an ordered
response list"), each a unit that anchors on its own."""


def _finder(source: str) -> Callable[[Any], list[Entity]]:
    return _SPECS[source][0] if source in _SPECS else _results


def record_spans(source: str, text: str) -> list[tuple[str, str]] | None:
    """(entity path, the entity's text as a document of its own) for each record of a list
    response whose records the source reads alone as one record each (a GeoJSON
    ``Feature``, a GBIF occurrence, a RePORTER project ...); None where the response is
    not such a list (one entity, records under several lists, or records that read alone
    as nothing: NVD items, Crossref works without their envelope)."""
    data = json.loads(text)
    finder = _finder(source)
    found = finder(data)
    if len(found) < 2:
        return None
    lists = {p[:p.rfind("[")] for p, _ in found}
    if len(lists) != 1 or not all(p.endswith("]") for p, _ in found):
        return None
    for _, e in found:
        alone = finder(e)
        if len(alone) != 1 or alone[0][0] != "$" or alone[0][1] is not e:
            return None
    node = parse_format(text, "json").root
    for step in path_steps(lists.pop()):
        node = next((c for c in node.children if c.label == step), None)
        if node is None:
            return None
    items = {c.label: c for c in node.children}
    out = []
    for p, _ in found:
        item = items[int(p[p.rfind("[") + 1:-1])]
        out.append((p, _dedent(text, item.start, item.end)))
    return out


def _dedent(text: str, start: int, end: int) -> str:
    """``text[start:end]`` with the indentation of its first line taken off every later
    line (a JSON string holds no raw line break, so only white space between tokens
    changes)."""
    col = start - (text.rfind("\n", 0, start) + 1)
    lines = text[start:end].split("\n")
    if col == 0 or text[start - col:start].strip():
        return "\n".join(lines)
    return "\n".join([lines[0], *(ln[col:] if not ln[:col].strip() else ln
                                  for ln in lines[1:])])


def file_units(text: str, f: UnitFile) -> Iterator[Unit]:
    """The units of one response (B.1): the response whole, or, when it is longer than
    :data:`MAX_WHOLE_CHARS` and a list of records the source reads alone, each record's
    JSON value as a unit of its own (id ``<file>#<path in the response>``)."""
    try:
        spans = record_spans(f.source, text) if len(text.strip()) > MAX_WHOLE_CHARS else None
        if spans is None:
            yield Unit(id=f.id, format=f.format, source=f.source, text=text,
                       records=records(f.source, text, f.id, f.drop_for(f.id)),
                       provenance=dict(f.base), flags=f.flags)
            return
        for path, alone in spans:
            uid = f"{f.id}#{path}"
            yield Unit(id=uid, format=f.format, source=f.source, text=alone,
                       records=records(f.source, alone, uid, f.drop_for(uid)),
                       provenance={**f.base, "record_path": path}, flags=f.flags)
    except Exception as exc:  # noqa: BLE001 (checked at acquire; never crash a build)
        f.note(f"unparsable: {exc}")


BENCH = BenchFormat("json", records, piece, Frame("[\n", ",\n", "\n]\n"), "{}", unit_pieces,
                    check_raw, file_units=file_units)
