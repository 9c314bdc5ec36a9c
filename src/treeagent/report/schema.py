"""The scored-row schema (one row per example x agent x method) and scoring of tables.

Scores follow Section 4.2 / Appendix C.4 via :mod:`treeagent.scoring`. A scored file is
a Parquet file with exactly :data:`SCORED_SCHEMA`; extra input columns are dropped.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from treeagent.scoring import score

COLUMN_DOCS: dict[str, str] = {
    "example_id": "stable id of the benchmark example (unique within a dataset)",
    "dataset": "json | html | yaml | javascript",
    "task": "one of treeagent.scoring.TASKS",
    "length": "context length bucket in construction tokens, e.g. 8192",
    "agent": "memory agent id, e.g. memagent",
    "method": "flat | tree | tree+path | treeagent",
    "model": "model id evaluated by the agent",
    "model_revision": "model revision (commit/hash) evaluated",
    "prediction": "raw final response; null = unavailable response (scores 0)",
    "reference": "reference answer as JSON text (a scalar or a list)",
    "accepted": "JSON text: per reference value, further forms the scorer accepts "
                "(null or []: none)",
    "score": "answer score in [0, 1] (4.2 Metrics, C.4)",
    "calls": "model calls over the whole inference of this example",
    "input_tokens": "cumulative input tokens over all calls (complete model inputs)",
    "output_tokens": "cumulative generated tokens over all calls",
    "sections": "sections read by the agent for this example",
    "flat_sections": "T_flat: the Flat section count of this example (budget matching, 4.5)",
    "seconds": "wall-clock seconds spent on this example",
    "clipped": "prompt fields cut to fit the request limit over all calls (0: none; "
               "null: not recorded)",
}

_TYPES: dict[str, pa.DataType] = {
    "example_id": pa.string(), "dataset": pa.string(), "task": pa.string(),
    "length": pa.int64(), "agent": pa.string(), "method": pa.string(),
    "model": pa.string(), "model_revision": pa.string(), "prediction": pa.string(),
    "reference": pa.string(), "accepted": pa.string(), "score": pa.float64(),
    "calls": pa.int64(),
    "input_tokens": pa.int64(), "output_tokens": pa.int64(), "sections": pa.int64(),
    "flat_sections": pa.int64(), "seconds": pa.float64(), "clipped": pa.int64(),
}

REQUIRED: tuple[str, ...] = (
    "example_id", "dataset", "task", "length", "agent", "method", "reference",
)
"""Columns :func:`score_rows` needs; the others may be absent (then null)."""

_NOT_NULL = frozenset(REQUIRED + ("score",))

SCORED_SCHEMA = pa.schema(
    [
        pa.field(name, typ, nullable=name not in _NOT_NULL,
                 metadata={"doc": COLUMN_DOCS[name]})
        for name, typ in _TYPES.items()
    ],
    metadata={"treeagent": "scored rows (paper 4.2, C.4)"},
)


def _as_table(rows: Any) -> pa.Table:
    if isinstance(rows, pa.Table):
        return rows
    if hasattr(rows, "to_arrow"):  # duckdb relation / polars frame
        return rows.to_arrow()
    if hasattr(rows, "columns") and hasattr(rows, "to_dict"):  # pandas
        return pa.Table.from_pandas(rows, preserve_index=False)
    if isinstance(rows, list):
        return pa.Table.from_pylist(rows)
    raise TypeError(f"cannot read a table from {type(rows).__name__}")


def _is_text(typ: pa.DataType) -> bool:
    return (pa.types.is_string(typ) or pa.types.is_large_string(typ)
            or pa.types.is_string_view(typ) or pa.types.is_null(typ))


def conform(rows: Any) -> pa.Table:
    """Cast to :data:`SCORED_SCHEMA`: select its columns, fill absent optional ones."""
    table = _as_table(rows)
    missing = [c for c in REQUIRED if c not in table.column_names]
    if missing:
        raise ValueError(f"scored rows need columns: {', '.join(missing)}")
    columns = []
    for field in SCORED_SCHEMA:
        if field.name in table.column_names:
            col = table.column(field.name)
            if field.name == "reference" and not _is_text(col.type):
                raise ValueError("column reference must hold JSON text")
            col = col.cast(field.type)
        else:
            col = pa.nulls(table.num_rows, field.type)
        if not field.nullable and col.null_count:
            raise ValueError(f"column {field.name} has {col.null_count} null value(s)")
        columns.append(col)
    return pa.Table.from_arrays(columns, schema=SCORED_SCHEMA)


def score_rows(predictions: Any) -> pa.Table:
    """Fill ``score`` from task/reference/prediction; returns a :data:`SCORED_SCHEMA` table.

    ``predictions`` is a pyarrow Table, pandas DataFrame or list of dicts with the
    :data:`REQUIRED` columns (``score`` may be absent). A reference that is not valid
    JSON is a data error and raises ValueError naming the example.
    """
    table = _as_table(predictions)
    if "score" not in table.column_names:
        table = table.append_column("score", pa.array([0.0] * table.num_rows, pa.float64()))
    table = conform(table)
    tasks = table.column("task").to_pylist()
    refs = table.column("reference").to_pylist()
    preds = table.column("prediction").to_pylist()
    ids = table.column("example_id").to_pylist()
    accepted = table.column("accepted").to_pylist()
    scores = []
    for example_id, task, ref, pred, acc in zip(ids, tasks, refs, preds, accepted):
        try:
            reference = json.loads(ref)
            forms = json.loads(acc) if acc else None
        except json.JSONDecodeError as exc:
            raise ValueError(f"example {example_id}: reference is not JSON: {exc}") from exc
        try:
            scores.append(score(task, reference, pred, forms))
        except ValueError as exc:
            raise ValueError(f"example {example_id}: {exc}") from exc
    index = SCORED_SCHEMA.get_field_index("score")
    return table.set_column(index, SCORED_SCHEMA.field("score"), pa.array(scores, pa.float64()))


def write_scores(table: Any, path: str | os.PathLike[str]) -> Path:
    """Write scored rows to Parquet atomically (temp file, then rename)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    pq.write_table(conform(table), tmp)
    os.replace(tmp, out)
    return out
