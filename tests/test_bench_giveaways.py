"""Lookup questions never state their answer: the required flag of an OpenAPI path
parameter (always true) and the HTTP method of an operation whose operationId or label
holds the method word are not asked."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from treeagent.bench import lookups, tasks
from treeagent.bench.sources import yaml_records
from treeagent.bench.values import given_away

DOC = """openapi: 3.0.0
info: {title: t, version: '1'}
paths:
  /domains/{domain}:
    get:
      operationId: domainRank
      summary: Rank of a domain
      parameters:
        - name: domain
          in: path
          required: true
          schema: {type: string}
        - name: limit
          in: query
          required: false
          schema: {type: integer}
      responses:
        '200': {description: OK}
    delete:
      operationId: deleteBatch
      summary: Delete a batch
      responses:
        '204': {description: Deleted}
    put:
      operationId: update_domain_put
      summary: Put it
      responses:
        '200': {description: OK}
  /query:
    post:
      operationId: queryDb
      summary: Query the database
      responses:
        '200': {description: OK}
  /plain:
    patch:
      summary: No id
      responses:
        '200': {description: OK}
"""


def _records():
    return {r.description: r for r in yaml_records.records(DOC, "u")}


def test_the_required_flag_of_a_path_parameter_is_not_asked():
    recs = _records()
    path = recs['path parameter "domain" of the operation "domainRank"']
    query = recs['query parameter "limit" of the operation "domainRank"']
    assert path.fields["required"] is True and "required" not in lookups.lookup_fields(path)
    assert "required" in lookups.lookup_fields(query)  # a query parameter's is a question


def test_an_operation_named_by_its_method_is_not_asked_its_method():
    recs = _records()
    asked = {d: "method" in lookups.lookup_fields(r) for d, r in recs.items()
             if r.kind == "operation"}
    assert asked == {"domainRank": True, "queryDb": True, "deleteBatch": False,
                     "update_domain_put": False, "PATCH /plain": False}


def test_no_generated_question_asks_a_method_its_names_state():
    recs = list(_records().values())
    for seed in range(40):
        for task in ("one_field", "two_fields", "two_records", "four_records"):
            q = tasks.generate(task, recs, random.Random(seed), set())
            if q is None:
                continue
            fields = q.spec.get("fields") or [q.spec.get("field")]
            if "method" in fields:
                names = q.spec.get("records") or [q.spec["record"]]
                assert not any(m.lower() in n.lower() for n in names
                               for m in ("get", "post", "put", "delete", "patch")), q.question
            if "required" in fields:
                assert "path parameter" not in q.question, q.question


@given(st.sampled_from(["get", "post", "put", "delete", "patch"]),
       st.from_regex(r"[A-Z][a-z]{2,8}", fullmatch=True),
       st.sampled_from(["camel", "snake", "tail"]))
def test_a_method_word_inside_an_identifier_gives_it_away(method, rest, style):
    ident = {"camel": method + rest, "snake": f"{method}_{rest.lower()}",
             "tail": rest.lower() + method.capitalize()}[style]
    assert given_away(method.upper(), ident)
    assert not given_away(method.upper(), rest.lower() + "x" + method)  # not a word of it


def _operations(odd: int) -> str:
    """Twelve operations, ``odd`` of them POST and the rest GET, all with one summary."""
    ops = "".join(f"""  /r{i}:
    {"post" if i < odd else "get"}:
      operationId: item{i:02d}
      summary: Same text
      responses:
        '200': {{description: OK}}
""" for i in range(12))
    return "openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths:\n" + ops


@given(st.integers(0, 10_000), st.sampled_from(["two_records", "four_records"]),
       st.integers(1, 3))
def test_a_record_set_asks_varied_values_where_the_records_allow(seed, task, odd):
    """The summaries are all one text and the methods nearly all GET: the set asked is
    the methods, never a set of one value."""
    recs = [r for r in yaml_records.records(_operations(odd), "u") if r.kind == "operation"]
    q = tasks.generate(task, recs, random.Random(seed), set())
    assert q is not None
    assert len(set(map(str, q.answer))) >= 2, q.question
