"""Validation independent of construction (paper B.1), as Great Expectations suites.

Construction's records and answers are never trusted here. For each context:
re-parse it with :func:`treeagent.formats.parse`, split the parsed document into its
units (:func:`unit_pieces`), check each against the recipe (unit ids and text hashes),
re-extract records from each unit's visible text with the source adapter's
``records_from_text``, and recount tokens under the construction tokenizers. For each
example: execute the stored specification over every visible record (:func:`execute`),
compare with the stored answer, check answer uniqueness (a named description occurs
exactly once; no tie in most_frequent; one record attains the extremum), scope, source
ids and the question's C.3 contract (:func:`treeagent.bench.tasks.leaks`).

The outcomes become ``check_*`` columns ("" = passed, else the reason) of the example
table; :mod:`treeagent.bench.examples_gate` holds every rule over them (with schema,
uniqueness, bucket and token-range expectations) as the GX ``examples`` gate, where a
row that fails any expectation is rejected with the expectation and reason; nothing
is dropped silently.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from treeagent.bench import contexts, independent, tasks
from treeagent.bench.model import Record

Extractor = Callable[[str, str, str], list[Record]]
CHECKS = ("parse", "units", "length", "answer", "unique", "scope", "sources", "question",
          "independent")
SPEC_OPS = {
    "one_field": "lookup", "two_fields": "lookup", "four_fields": "lookup",
    "two_records": "lookup_records", "four_records": "lookup_records",
    "conditional_count": "count", "most_frequent": "most_frequent",
    "numeric_extremum": "extremum",
}


class Invalid(ValueError):
    """A specification that has no unique answer over the visible records."""

    def __init__(self, check: str, reason: str) -> None:
        super().__init__(reason)
        self.check = check


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# ------------------------------------------------------------------ re-parse


def unit_pieces(fmt: str, text: str) -> list[str]:
    """Re-parse a composed context and return the visible text of each unit in order
    (the format's ``unit_pieces`` hook, :class:`treeagent.bench.model.BenchFormat`).

    Raises ``treeagent.algorithm.tree.ParseError`` (bad syntax) or ``ValueError`` (a document
    that is not a composition of units: wrong root, stray content). A JSON list or a
    YAML stream is split with each distinct unit parsed once per process
    (:mod:`treeagent.bench.unit_cache`): the same pieces.
    """
    whole = contexts.hooks(fmt).unit_pieces
    if fmt in ("json", "yaml"):
        from treeagent.bench import unit_cache

        split = unit_cache.json_unit_pieces if fmt == "json" else unit_cache.yaml_unit_pieces
        return split(text, whole)
    return whole(text)


# ------------------------------------------------------------------ execution


def _described(records: Sequence[Record], description: str, kind: str) -> Record:
    hits = [r for r in records if r.description == description]
    if len(hits) != 1:
        raise Invalid("unique", f"description occurs {len(hits)} times: {description[:80]!r}")
    if hits[0].kind != kind:
        raise Invalid("scope", f"{description[:60]!r} is a {hits[0].kind}, not a {kind}")
    return hits[0]


def _value(rec: Record, name: str) -> Any:
    if name not in rec.fields or not tasks.answerable(rec.fields[name]):
        raise Invalid("answer", f"{rec.description[:60]!r} has no {name!r}")
    return rec.fields[name]


def _in_scope(spec: Mapping[str, Any], records: Sequence[Record],
              aggs: Sequence[tasks.Aggregate] | None = None) -> tasks.Aggregate:
    """The values of the asked field over every record of the kind (the construction's
    scope rule, :func:`treeagent.bench.tasks.aggregates`, on re-extracted records;
    ``aggs``: those aggregates already computed for ``records``)."""
    scope = spec.get("scope") or {}
    if scope.get("over") != "context" or scope.get("kind") != spec["kind"]:
        raise Invalid("scope", f"unsupported scope {scope!r}")
    name = spec["where"]["field"] if spec["op"] == "count" else spec["field"]
    agg = next((a for a in (tasks.aggregates(records) if aggs is None else aggs)
                if a.kind == spec["kind"] and a.name == name), None)
    if agg is None:
        raise Invalid("scope", f"no {spec['kind']} with a {name!r} in the context")
    mine = {k: v for k, v in agg.scope().items() if k != "sources"}  # ids re-extracted bare
    if mine != {k: v for k, v in scope.items() if k != "sources"}:
        raise Invalid("scope", "the stored scope is not the context's")
    return agg


def execute(spec: Mapping[str, Any], records: Sequence[Record],
            aggs: Sequence[tasks.Aggregate] | None = None) -> tuple[Any, list[Record]]:
    """Run a reference specification over every visible record (B.1); ``aggs``: the
    aggregates of ``records`` when the caller keeps them (one context, many questions).

    Returns the answer and the supporting records; raises :class:`Invalid` when the
    answer is not unique or the scope is empty/unsupported.
    """
    op = spec["op"]
    if op == "lookup":
        rec = _described(records, spec["record"], spec["kind"])
        values = [_value(rec, f) for f in spec["fields"]]
        return (values[0] if spec.get("shape") == "value" else values), [rec]
    if op == "lookup_records":
        recs = [_described(records, d, spec["kind"]) for d in spec["records"]]
        return [_value(r, spec["field"]) for r in recs], recs
    agg = _in_scope(spec, records, aggs)
    stated, scoped = agg.stated, agg.records
    if op == "count":
        where = spec["where"]
        if where["cmp"] == "eq":
            want = tasks.norm(where["value"])
            hits = [r for r, v in stated if tasks.norm(v) == want]
        else:
            bound = float(where["value"])
            sign = 1 if where["cmp"] == "gt" else -1
            nums = [(r, tasks.number(v)) for r, v in stated]
            hits = [r for r, x in nums if x is not None and sign * (x - bound) > 0]
        return len(hits), scoped
    if op == "most_frequent":
        counts = Counter(tasks.norm(v) for _, v in stated).most_common()
        k = int(spec["k"])
        if len(counts) <= k or counts[k - 1][1] < 2 or counts[k - 1][1] == counts[k][1]:
            raise Invalid("unique", f"most frequent {k}: tie or too few values ({counts[:k + 1]})")
        return [v for v, _ in counts[:k]], scoped
    if op == "extremum":
        nums = [tasks.number(v) for _, v in stated]
        if any(x is None for x in nums):
            raise Invalid("scope", f"non-numeric {spec['field']!r} in scope")
        best = max(nums) if spec["fn"] == "max" else min(nums)  # type: ignore[type-var]
        if nums.count(best) != 1:
            raise Invalid("unique", f"{spec['fn']} {best} attained {nums.count(best)} times")
        return best, scoped
    raise Invalid("answer", f"unknown op {op!r}")


def same_answer(task: str, got: Any, stored: Any) -> bool:
    """Executed vs stored answer: numbers exactly (1e-9), text by :func:`tasks.norm`;
    order ignored only for most_frequent."""
    def one(a: Any, b: Any) -> bool:
        x, y = tasks.number(a), tasks.number(b)
        if x is not None and y is not None:
            return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9)
        return tasks.norm(a) == tasks.norm(b)

    if isinstance(got, list) != isinstance(stored, list):
        return False
    if not isinstance(got, list):
        return one(got, stored)
    if len(got) != len(stored):
        return False
    if task == "most_frequent":
        return sorted(map(tasks.norm, got)) == sorted(map(tasks.norm, stored))
    return all(one(a, b) for a, b in zip(got, stored))


# ------------------------------------------------------------------ per-row checks


@dataclass(slots=True)
class ContextCheck:
    """What re-parsing one context found (shared by the examples asked over it)."""

    errors: dict[str, str] = field(default_factory=dict)
    records: list[Record] = field(default_factory=list)
    unit_of: dict[int, str] = field(default_factory=dict)  # id(record) -> unit id
    tokens: dict[str, int] = field(default_factory=dict)
    format: str = ""
    text: str = ""
    unit_sources: list[str] = field(default_factory=list)
    _reading: Any = None
    _aggregates: list[tasks.Aggregate] | None = None

    def aggregates(self) -> list[tasks.Aggregate]:
        """:func:`treeagent.bench.tasks.aggregates` of the records (once per context)."""
        if self._aggregates is None:
            self._aggregates = tasks.aggregates(self.records)
        return self._aggregates

    def reading(self) -> independent.Reading:
        """The context as the second reader parses it (once per context)."""
        if self._reading is None:
            try:
                self._reading = independent.read_context(self.format, self.text)
            except independent.Unconfirmed as exc:
                self._reading = str(exc)
        if isinstance(self._reading, str):
            raise independent.Unconfirmed(self._reading)
        return self._reading


def check_context(fmt: str, text: str, unit_ids: Sequence[str],
                  units: Mapping[str, tuple[str, str]], extract: Extractor,
                  count: Callable[[str], dict[str, int]] | None,
                  cache: dict[str, list[Record]] | None = None) -> ContextCheck:
    """Re-parse ``text``; ``units`` maps unit id -> (source, sha256 of its piece)."""
    out = ContextCheck(format=fmt, text=text,
                       unit_sources=[units[u][0] if u in units else "" for u in unit_ids])
    try:
        pieces = unit_pieces(fmt, text)
    except ValueError as exc:  # ParseError is a ValueError
        out.errors["parse"] = f"re-parse failed: {exc}"
        return out
    if len(pieces) != len(unit_ids):
        out.errors["units"] = f"{len(pieces)} units parsed, recipe lists {len(unit_ids)}"
        return out
    cache = {} if cache is None else cache
    for uid, p in zip(unit_ids, pieces):
        if uid not in units:
            out.errors["units"] = f"unknown unit id {uid!r}"
            return out
        source, digest = units[uid]
        if sha256(p) != digest:
            out.errors["units"] = f"unit {uid!r} text differs from the unit table"
            return out
        key = f"{source}\0{digest}"
        if key not in cache:
            try:
                cache[key] = list(extract(fmt, source, p))
            except Exception as exc:  # noqa: BLE001 - any extractor failure rejects
                cache[key] = []
                out.errors["parse"] = f"record re-extraction failed in {uid!r}: {exc}"
            for rec in cache[key]:  # re-extracted records know their source (scopes)
                if not rec.unit_id:
                    rec.unit_id = f"{fmt}/{source}/{digest[:16]}"
        for rec in cache[key]:
            out.records.append(rec)
            out.unit_of[id(rec)] = uid
    if count is not None:
        out.tokens = count(text)
    return out


def check_example(row: Mapping[str, Any], ctx: ContextCheck, tolerance: float) -> dict[str, str]:
    """``check_<name>`` -> "" or the reason, for every name in :data:`CHECKS`."""
    res = {f"check_{c}": "" for c in CHECKS}
    for name, reason in ctx.errors.items():
        res[f"check_{name}"] = reason
    spec = json.loads(row["spec"])
    if SPEC_OPS.get(row["task"]) != spec.get("op"):
        res["check_answer"] = f"spec op {spec.get('op')!r} does not fit task {row['task']!r}"
    length = int(row["length"])
    lo = math.ceil(length * (1 - tolerance))
    stored_tokens = json.loads(row["tokens"])
    for name, n in (ctx.tokens or stored_tokens).items():
        if not lo <= n <= length:
            res["check_length"] = f"{name}: {n} tokens outside [{lo}, {length}]"
        elif ctx.tokens and stored_tokens.get(name) != n:
            res["check_length"] = f"{name}: stored {stored_tokens.get(name)} != recounted {n}"
    if ctx.errors.get("parse") or ctx.errors.get("units"):
        return res
    try:
        got, support = execute(spec, ctx.records, ctx.aggregates())
    except Invalid as exc:
        res[f"check_{exc.check}"] = str(exc)
        support = []
    else:
        if not same_answer(row["task"], got, json.loads(row["answer"])):
            res["check_answer"] = f"spec gives {json.dumps(got)[:120]}, stored {row['answer'][:120]}"
    why = accepted_problem(json.loads(row["answer"]), json.loads(row.get("accepted") or "[]"))
    if why:
        res["check_answer"] = why
    units = {ctx.unit_of[id(r)] for r in support}
    claimed = set(row["source_ids"])
    if support and (units != claimed if spec["op"] in ("count", "most_frequent", "extremum")
                    else not units <= claimed):
        res["check_sources"] = f"evidence in {sorted(units)[:4]}, source ids {sorted(claimed)[:4]}"
    visible = [*spec.get("records", []), *([spec["record"]] if "record" in spec else [])]
    if "where" in spec:
        visible += [str(spec["where"]["value"]), tasks.norm(spec["where"]["value"])]
    found = tasks.leaks(row["question"], visible, tasks.spec_fields(spec),
                        [r.path for r in support if spec["op"].startswith("lookup")])
    if found:
        res["check_question"] = "question reveals " + ", ".join(found)
    res["check_independent"] = second_reader(row, spec, ctx)
    return res


def accepted_problem(answer: Any, accepted: Any) -> str:
    """Why an example's accepted forms are malformed ("" when they are none or sound): one
    list per answer value, each form the value's own text without its trailing
    parenthetical remark (docs/fidelity.md "HTML values")."""
    if accepted == []:
        return ""
    values = answer if isinstance(answer, list) else [answer]
    if not isinstance(accepted, list) or len(accepted) != len(values):
        return f"accepted forms {json.dumps(accepted)[:80]} do not give one list per value"
    for value, forms in zip(values, accepted):
        for form in forms if isinstance(forms, list) else [None]:
            rest = str(value)[len(form):].strip() if isinstance(form, str) and form.strip() \
                and str(value).startswith(form) else ""
            if not (rest.startswith("(") and rest.endswith(")")):
                return f"accepted form {form!r} is not {str(value)[:60]!r} without a remark"
    return ""


def second_reader(row: Mapping[str, Any], spec: Mapping[str, Any], ctx: ContextCheck) -> str:
    """The independent reader's verdict (:mod:`treeagent.bench.independent`): "" when
    it confirms the stored answer, else why not. An example of a format built without a
    second reader carries the flag :data:`~treeagent.bench.second_readers.UNCONFIRMED`
    and is not checked here (the flag is honoured only where the format has none)."""
    from treeagent.bench import second_readers

    if second_readers.UNCONFIRMED in (row.get("flags") or ()) and \
            not second_readers.available(ctx.format or row["format"]):
        return ""
    try:
        reading = ctx.reading()
    except independent.Unconfirmed as exc:
        return f"second reader: {exc}"
    why = independent.confirm(row["task"], spec, json.loads(row["answer"]), reading,
                              ctx.unit_sources)
    return f"second reader: {why}" if why else ""
