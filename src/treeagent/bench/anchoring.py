"""How a question's records are found again: a record's source group, the fields that
pick it out by its description (its anchor), the reader-level address a lookup
specification stores, and whether that address is ambiguous in a context."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from treeagent.bench.model import Record
from treeagent.bench.question import Question
from treeagent.bench.values import norm

ONLY_ITEM = "[1]"  # key-path step through a one-item list (sources.common.ONLY_ITEM)


def source_of(rec: Record) -> str:
    """The source group of a record's unit (unit ids read ``<format>/<source>/...``)."""
    return _unit_source(rec.unit_id)


@functools.lru_cache(maxsize=1 << 20)
def _unit_source(unit_id: str) -> str:  # once per unit: its records share its id
    parts = unit_id.split("/", 2)
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


def by_address(records: Sequence[Record]) -> dict[tuple[str, str], list[Record]]:
    """``records`` by (source, select) as a lookup specification states them (in
    order): what :func:`ambiguous` looks through, made once for many questions."""
    out: dict[tuple[str, str], list[Record]] = {}
    forms: dict[Any, str] = {}
    for r in records:
        try:
            form = forms[r.select]
        except KeyError:
            form = forms[r.select] = repr(_select_form(r.select))
        except TypeError:  # an unhashable part
            form = repr(_select_form(r.select))
        out.setdefault((source_of(r), form), []).append(r)
    return out


def ambiguous(q: Question, records: Sequence[Record],
              index: dict[tuple[str, str], list[Record]] | None = None) -> bool:
    """True when a lookup's record is not the only one of the context its description
    picks out: another record (described or not) of the same address holds the same
    value in the anchoring field, so a reader could not tell which is meant. ``index``:
    :func:`by_address` of ``records``, when the caller keeps it."""
    if q.spec["op"] not in ("lookup", "lookup_records"):
        return False
    ats = [q.spec["at"]] if q.spec["op"] == "lookup" else q.spec["at"]
    for at in ats:
        pairs = [(tuple(p), v) for p, v in at["anchor"]]
        hits = 0
        at_records = records if index is None else index.get(
            (at["source"], repr(at["select"])), [])
        for r in at_records:
            if source_of(r) != at["source"] or _select_form(r.select) != at["select"]:
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


_SELECT_FORMS: dict[Any, Any] = {}


def _select_form(select: tuple[Any, ...]) -> Any:
    """``jsonable(select)``, made once per distinct select (a context's records share a
    few; :func:`ambiguous` compares every record's for every lookup asked)."""
    try:
        return _SELECT_FORMS[select]
    except KeyError:
        if len(_SELECT_FORMS) >= 100_000:
            _SELECT_FORMS.clear()
        form = _SELECT_FORMS[select] = jsonable(select)
        return form
    except TypeError:  # an unhashable part: no memo
        return jsonable(select)


def where(rec: Record) -> dict[str, Any]:
    """The reader-level address of one record in a lookup specification."""
    return {"source": source_of(rec), "select": jsonable(rec.select), "anchor": anchor(rec)}


def jsonable(x: Any) -> Any:
    if isinstance(x, tuple | list):
        return [jsonable(v) for v in x]
    if isinstance(x, dict):
        return {k: jsonable(v) for k, v in x.items()}
    return x


def jsonable_key(path: Any) -> tuple[Any, ...]:
    return tuple(jsonable_key(p) if isinstance(p, list | tuple) else p for p in path)
