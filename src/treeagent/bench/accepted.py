"""Accepted forms of an answer (C.4 matching; docs/fidelity.md "HTML values").

Where a careful reader could state a value in two forms, the record lists the further
form (``Record.accepted``) and an example lists, for each answer value in order, the
forms accepted besides the reference; the scorer (:func:`treeagent.scoring.score`)
honours them. Lookups carry them; an aggregation's values are counted or compared, never
restated, and carry none.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from treeagent.bench.model import Record, Scalar

_TRAILING_REMARK = re.compile(r"(?P<stem>.*\S)\s+\([^()]*\)\Z", re.S)


def parenthetical_forms(value: Scalar) -> tuple[str, ...]:
    """A shown value that ends in a parenthetical remark may be stated without it:
    "June 1, 1980 (aged 28)" also as "June 1, 1980", "1,646 mi (2,649 km)" as
    "1,646 mi"."""
    if not isinstance(value, str):
        return ()
    m = _TRAILING_REMARK.fullmatch(value)
    return (m.group("stem"),) if m and "(" not in m.group("stem") else ()


def question_forms(spec: Mapping[str, Any], record_ids: Sequence[str],
                   records: Iterable[Record]) -> list[list[str]]:
    """For each answer value of a question, in order, the forms accepted besides the
    reference; ``[]`` when none is (every aggregation, most lookups)."""
    wanted = set(record_ids)
    by_id = {r.id: r for r in records if r.id in wanted}
    op = spec.get("op")
    if op == "lookup" and record_ids and record_ids[0] in by_id:
        rec = by_id[record_ids[0]]
        forms = [list(rec.accepted.get(name, ())) for name in spec.get("fields", ())]
    elif op == "lookup_records" and all(i in by_id for i in record_ids):
        name = spec.get("field")
        forms = [list(by_id[i].accepted.get(name, ())) for i in record_ids]
    else:
        return []
    return forms if any(forms) else []
