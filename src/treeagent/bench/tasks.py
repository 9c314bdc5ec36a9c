"""The eight task generators of paper Section 4.1, with reference specifications.

The public entry of question generation; the work is split by job into
:mod:`~treeagent.bench.values` (value semantics), :mod:`~treeagent.bench.question` (the
question record and the C.3 leak check), :mod:`~treeagent.bench.anchoring` (finding a
record again), :mod:`~treeagent.bench.wording` (grammar and vocabulary),
:mod:`~treeagent.bench.lookups` and :mod:`~treeagent.bench.aggregates` (the generators).

Each generator turns records (:class:`~treeagent.bench.model.Record`) into a
:class:`Question`: a natural-language question and a machine-executable reference
specification (JSON) with the answer construction computed for it. Questions speak the
source's vocabulary (:mod:`treeagent.bench.sources.vocabulary`): record kinds
as the source's readers name them ("CVE entries", "API operations"), fields by its
glossary ("magnitude", "CVSS v3.1 base score"), a record by its visible ``description``
when that is its name or id, else by the field that tells it apart ('the table row with
model "Alpha 1"'). Specifications keep the records' internal kind and field names. Questions
reveal no schema key path, index, structural path or location (C.3) -- :func:`leaks`
checks that -- and say whether several values must keep the order asked.

Specifications (executed independently by :mod:`treeagent.bench.validate`, B.1):

* ``{"op": "lookup", "kind", "record": description, "fields": [...], "shape"}`` --
  one_field (``shape="value"``), two_fields, four_fields (ordered lists);
* ``{"op": "lookup_records", "kind", "records": [descriptions], "field"}`` --
  two_records, four_records (ordered list, in the order the question names them);
* ``{"op": "count", "kind", "where": {"field", "cmp": "eq"|"gt"|"lt", "value"},
  "scope"}`` -- conditional_count; ``eq`` compares :func:`norm` texts, ``gt``/``lt``
  numbers (:func:`number`); records without the field never match;
* ``{"op": "most_frequent", "kind", "field", "k", "scope"}`` -- the ``k`` most frequent
  :func:`norm` values (unordered); unique only when the k-th count beats the (k+1)-th;
* ``{"op": "extremum", "kind", "field", "fn": "max"|"min", "scope"}`` -- a number,
  unique only when exactly one record attains it.

``scope`` is ``{"over": "context", "kind": kind}``: every visible record of that kind in
the whole input, counted per occurrence (B.1: aggregation answers are recomputed on the
final context, after distractors are added).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from treeagent.bench.aggregates import (
    Aggregate,
    aggregates,
    askable,
    asked,
    count_question,
    extremum_question,
    most_frequent_question,
)
from treeagent.bench.anchoring import ONLY_ITEM, ambiguous, anchor, source_of
from treeagent.bench.lookups import lookup_fields, many_records_question, one_record_question
from treeagent.bench.model import Record
from treeagent.bench.question import Question, leaks, names_answer, spec_fields
from treeagent.bench.values import (
    MAX_VALUE_CHARS,
    answerable,
    given_away,
    human_field,
    id_like,
    norm,
    number,
    present,
)
from treeagent.bench.wording import (
    amount,
    article,
    be,
    epoch_unit,
    field_words,
    is_time,
    iso_time,
    kind_of,
    name_field,
    named,
    naming,
    phrase,
    plural,
    plural_words,
    year_words,
)
from treeagent.scoring import TASK_RECORDS, TASKS

__all__ = [
    "AGGREGATE_TASKS", "GENERATORS", "LOOKUP_TASKS", "MAX_VALUE_CHARS", "ONLY_ITEM",
    "Aggregate", "Generator", "Question", "aggregates", "ambiguous", "amount", "anchor",
    "answerable", "article", "askable", "asked", "be", "epoch_unit", "field_words", "generate",
    "given_away", "human_field", "id_like", "is_time", "iso_time", "kind_of", "leaks",
    "lookup_fields", "name_field", "named", "names_answer", "naming", "norm", "number", "phrase", "plural",
    "plural_words", "present", "source_of", "spec_fields", "year_words",
]

LOOKUP_TASKS = tuple(t.name for t in TASK_RECORDS if t.family == "lookup")
AGGREGATE_TASKS = tuple(t.name for t in TASK_RECORDS if t.family == "aggregation")


Generator = Callable[[Sequence[Record], random.Random, set[str]], "Question | None"]

GENERATORS: dict[str, Generator] = {
    "one_field": lambda r, g, e: one_record_question("one_field", 1, r, g, e),
    "two_fields": lambda r, g, e: one_record_question("two_fields", 2, r, g, e),
    "four_fields": lambda r, g, e: one_record_question("four_fields", 4, r, g, e),
    "two_records": lambda r, g, e: many_records_question("two_records", 2, r, g, e),
    "four_records": lambda r, g, e: many_records_question("four_records", 4, r, g, e),
    "conditional_count": count_question,
    "most_frequent": most_frequent_question,
    "numeric_extremum": extremum_question,
}
assert tuple(GENERATORS) == TASKS


def generate(task: str, records: Sequence[Record], rng: random.Random,
             exclude: set[str] | None = None,
             aggs: Sequence[Aggregate] | None = None) -> Question | None:
    """One question of ``task`` over ``records`` (None when they support none).

    ``exclude`` collects keys of questions already asked, so repeated calls give distinct
    questions. Lookup tasks take the supporting (anchor) records; aggregation tasks take
    every record of the final context (B.1 scope rule) and ``aggs``, its
    :func:`~treeagent.bench.aggregates.asked` when the caller keeps it (many questions,
    one context): the same questions, the aggregates made once.
    """
    if task not in GENERATORS:
        raise ValueError(f"unknown task {task!r} (choose from {', '.join(TASKS)})")
    exclude = set() if exclude is None else exclude
    if aggs is not None and task in AGGREGATE_TASKS:
        return GENERATORS[task](records, rng, exclude, aggs)  # aggregations take aggs too
    return GENERATORS[task](records, rng, exclude)
