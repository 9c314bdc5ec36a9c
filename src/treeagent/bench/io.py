"""Reading and writing the validated benchmark tables (Parquet, byte-deterministic).

Layout under ``validated/``::

    examples/<format>.parquet   one row per example; the context as a recipe
    units/<format>.parquet      the unit pieces the recipes name (id, source, text, sha256)
    rejections.parquet          every rejected candidate with its reason
    inventory.json, inventory.md

A context is stored as a recipe -- its ordered unit ids -- because the paper grid's
contexts hold ~10^8 tokens (hundreds of MB of text, the same units repeated across
lengths and examples) while the distinct units they use are a few tens of MB; the
recipe plus the unit table re-compose the exact text (:func:`materialize`), checked
against the stored ``context_hash``.

Every read goes through :func:`read_table` / :func:`example_batches`: a missing or
corrupt table raises :class:`ArtifactError`, one line naming the file, never a library
traceback.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from treeagent.bench.contexts import compose
from treeagent.bench.model import Example
from treeagent.bench.validate import sha256
from treeagent.pipeline.artifacts import ArtifactError

__all__ = ["ArtifactError", "example_batches", "load_units", "materialize", "read_examples",
           "read_rows", "read_table", "write_examples", "write_table"]

EXAMPLE_FIELDS: list[tuple[str, pa.DataType]] = [
    ("id", pa.string()), ("format", pa.string()), ("task", pa.string()),
    ("length", pa.int64()), ("bucket", pa.string()), ("tolerance", pa.float64()),
    ("family", pa.int64()),
    ("question", pa.string()), ("spec", pa.string()), ("answer", pa.string()),
    ("accepted", pa.string()),
    ("source_ids", pa.list_(pa.string())), ("record_ids", pa.list_(pa.string())),
    ("unit_ids", pa.list_(pa.string())), ("tokens", pa.string()),
    ("reused", pa.int64()), ("flags", pa.list_(pa.string())),
    ("context_hash", pa.string()), ("content_hash", pa.string()),
]
UNIT_FIELDS: list[tuple[str, pa.DataType]] = [
    ("unit_id", pa.string()), ("source", pa.string()), ("text", pa.string()),
    ("sha256", pa.string()), ("provenance", pa.string()), ("flags", pa.list_(pa.string())),
]
REJECTION_FIELDS: list[tuple[str, pa.DataType]] = [
    ("id", pa.string()), ("format", pa.string()), ("task", pa.string()),
    ("length", pa.int64()), ("reason", pa.string()), ("expectations", pa.string()),
    ("detail", pa.string()),
]


def token_column(name: str) -> str:
    """Column holding the count under one tokenizer: ``tokens_qwen3``, ``tokens_qwen2_5``."""
    return "tokens_" + "".join(c if c.isalnum() else "_" for c in name)


def write_table(rows: Sequence[dict[str, Any]], fields: list[tuple[str, pa.DataType]],
                path: Path, row_group_size: int = 128) -> int:
    """Write rows with a fixed schema and fixed writer options (same rows -> same bytes).

    Rows are converted and written one row group at a time, so Arrow never holds the
    whole table: the recipes of a format's 512K/1M-token contexts are millions of unit
    ids (converted at once for the paper grid's JS table: +550 MB of RSS; by 128 rows: +130 MB).
    """
    schema = pa.schema(fields)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with pq.ParquetWriter(tmp, schema, compression="zstd", compression_level=9,
                          use_dictionary=True, write_statistics=False,
                          store_schema=False) as writer:
        for i in range(0, max(len(rows), 1), row_group_size):
            part = [{k: r.get(k) for k, _ in fields} for r in rows[i : i + row_group_size]]
            writer.write_table(pa.Table.from_pylist(part, schema=schema))
    tmp.replace(path)
    pa.default_memory_pool().release_unused()  # hand Arrow's freed buffers back to the OS
    return path.stat().st_size


def write_examples(rows: Sequence[dict[str, Any]], path: Path, tokenizers: Sequence[str]) -> int:
    fields = EXAMPLE_FIELDS + [(token_column(n), pa.int64()) for n in tokenizers]
    full = []
    for r in rows:
        counts = json.loads(r["tokens"])
        full.append({**r, **{token_column(n): counts.get(n) for n in tokenizers}})
    return write_table(full, fields, path)


def content_hash(question: str, spec: str, answer: str, context_hash: str) -> str:
    """sha256 of an example's content: question, specification, answer and context."""
    return sha256(json.dumps([question, spec, answer, context_hash], ensure_ascii=False))


def _unreadable(path: str | Path, exc: BaseException) -> ArtifactError:
    if isinstance(exc, FileNotFoundError):
        return ArtifactError(path, "no such file")
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return ArtifactError(path, f"not a readable Parquet table ({first})")


def read_table(path: str | Path, columns: Sequence[str] | None = None) -> pa.Table:
    """A stored table (``columns`` only, when given); :class:`ArtifactError` naming the
    file when it is missing or not a readable Parquet table (or lacks a column)."""
    try:
        return pq.read_table(path, columns=list(columns) if columns is not None else None)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise _unreadable(path, exc) from None


def load_units(path: Path) -> dict[str, tuple[str, str]]:
    """unit id -> (source, text) from a ``units/<format>.parquet`` table."""
    t = read_table(path, columns=["unit_id", "source", "text"]).to_pydict()
    return {u: (s, x) for u, s, x in zip(t["unit_id"], t["source"], t["text"])}


def materialize(fmt: str, unit_ids: Sequence[str], units: dict[str, tuple[str, str]]) -> str:
    """Compose a context from its recipe (the unit texts are stored as pieces)."""
    return compose(fmt, [units[u][1] for u in unit_ids])


def units_path(examples_path: Path, fmt: str) -> Path:
    return Path(examples_path).resolve().parent.parent / "units" / f"{fmt}.parquet"


def read_examples(path: str | Path, *, ids: Sequence[str] | None = None,
                  verify: bool = True) -> Iterator[Example]:
    """Examples of one ``examples/<format>.parquet`` with their contexts materialized.

    ``ids`` restricts to those example ids; ``verify`` checks each context against its
    stored hash (a changed unit table raises ``ValueError``).
    """
    path = Path(path)
    table = read_table(path)
    wanted = set(ids) if ids is not None else None
    units: dict[str, dict[str, tuple[str, str]]] = {}
    for batch in table.to_batches(max_chunksize=256):
        for row in batch.to_pylist():
            if wanted is not None and row["id"] not in wanted:
                continue
            fmt = row["format"]
            if fmt not in units:
                units[fmt] = load_units(units_path(path, fmt))
            context = materialize(fmt, row["unit_ids"], units[fmt])
            if verify and sha256(context) != row["context_hash"]:
                raise ArtifactError(units_path(path, fmt), f"example {row['id']}: its "
                                    "materialized context does not match its hash")
            yield Example(
                id=row["id"], format=fmt, task=row["task"], length=int(row["length"]),
                question=row["question"], answer=json.loads(row["answer"]),
                spec=json.loads(row["spec"]), source_ids=list(row["source_ids"]),
                tokens=json.loads(row["tokens"]), context=context,
                content_hash=row["content_hash"],
                accepted=json.loads(row.get("accepted") or "[]"),
            )


def example_batches(path: str | Path, batch_size: int = 256) -> Iterator[pa.RecordBatch]:
    """A stored example table a few rows at a time (1M-token recipes are large)."""
    try:
        batches = pq.ParquetFile(path).iter_batches(batch_size=batch_size)
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                return
            yield batch
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise _unreadable(path, exc) from None


def count_recipes(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with ``unit_ids`` replaced by each row's unit count (null stays null)."""
    import pyarrow.compute as pc

    if "unit_ids" not in batch.schema.names:
        return batch
    i = batch.schema.get_field_index("unit_ids")
    return batch.set_column(i, "unit_ids", pc.list_value_length(batch.column(i)))


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """The stored rows of a table, without materializing contexts."""
    return read_table(path).to_pylist()
