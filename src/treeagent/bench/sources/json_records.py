"""JSON records (B.1 "JSON dataset"): a unit is one API response; its records are the
entities in it (USGS events, NVD CVEs, GBIF occurrences, Crossref works, ClinicalTrials
studies, RePORTER projects, USAspending awards, Contracts Finder notices)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from treeagent.bench.model import BenchFormat, Frame, Record, Scalar
from treeagent.bench.sources.common import (
    flatten,
    get_path,
    humanize,
    key,
    make_records,
    parsed_or_reason,
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


BENCH = BenchFormat("json", records, piece, Frame("[\n", ",\n", "\n]\n"), "{}", unit_pieces,
                    check_raw)
