"""The ``examples`` gate in one place (paper B.1).

What every stored example must meet, as one list of Great Expectations expectations
(:func:`expectations`) over a prepared table (:func:`prepare`: token range, bucket floor,
row number, and the ``check_*`` columns of :mod:`treeagent.bench.validate`'s per-row
re-check, "" = passed). It runs two ways, both in the one GX context of
:func:`treeagent.pipeline.gx.gx_context`:

* inside the build, over a format's new rows (:func:`run`): a row that fails any
  expectation is rejected with the expectation and its reasons (:func:`rejections`);
* as the pipeline's ``examples`` gate over the stored tables (:func:`suites`, checked
  by :func:`treeagent.pipeline.gx.check`): every row re-checked from its recipe and unit table
  (:func:`stored_frame`), plus the grid (only the params' formats, tasks and lengths; a
  count under every construction tokenizer).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from treeagent import formats
from treeagent.bench import io, validate
from treeagent.pipeline.gx import Suite, gx_context
from treeagent.scoring import TASKS

QUESTION_LEAK = r"\$[.\[]|\[\s*\d+\s*\]|/html/|\bjson ?path\b|\bxpath\b"
"""Addressing syntax a question must not contain (C.3: questions never give paths)."""


def expectations(E: Any) -> list[Any]:
    """The expectations every example row must pass (``E``: ``gx.expectations``)."""
    from treeagent.bench.contexts import ALL_BUCKETS

    out: list[Any] = [E.ExpectColumnValuesToNotBeNull(column=col) for col in (
        "id", "format", "task", "length", "question", "spec", "answer", "unit_ids",
        "source_ids", "tokens", "content_hash")]
    out += [
        E.ExpectColumnValuesToBeUnique(column="id"),
        E.ExpectColumnValuesToBeInSet(column="task", value_set=list(TASKS)),
        E.ExpectColumnValuesToBeInSet(column="format", value_set=list(formats.FORMATS)),
        E.ExpectColumnValuesToBeInSet(column="length", value_set=sorted(ALL_BUCKETS.values())),
        E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="length", column_B="tokens_max",
                                                  or_equal=True),
        E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="tokens_min",
                                                  column_B="length_floor", or_equal=True),
        E.ExpectColumnValuesToBeBetween(column="tolerance", min_value=0.0, max_value=0.25),
        E.ExpectColumnValueLengthsToEqual(column="content_hash", value=64),
        E.ExpectColumnValuesToNotMatchRegex(column="question", regex=QUESTION_LEAK),
        E.ExpectColumnValuesToBeInSet(column="answer_is_null", value_set=[False]),
        E.ExpectColumnValuesToBeInSet(column="repeat_of", value_set=[""]),
    ]
    out += [E.ExpectColumnValuesToBeInSet(column=f"check_{c}", value_set=[""])
            for c in validate.CHECKS]
    return out


def prepare(df: Any, tolerance: float) -> Any:
    """Derived columns the expectations read (tokens range, bucket floor, row number);
    ``check_*`` columns a table lacks are "" (a stored table: table-level rules only)."""
    df = df.reset_index(drop=True).copy()
    counts = [json.loads(t) if isinstance(t, str) else {} for t in df["tokens"]]
    df["tokens_min"] = [min(c.values()) if c else -1 for c in counts]
    df["tokens_max"] = [max(c.values()) if c else 1 << 62 for c in counts]
    df["tolerance"] = df["tolerance"].fillna(tolerance) if "tolerance" in df.columns else tolerance
    df["length_floor"] = [math.ceil(n * (1 - t)) for n, t in zip(df["length"], df["tolerance"])]
    df["answer_is_null"] = [a is None or a == "null" for a in df["answer"]]
    for c in validate.CHECKS:
        if f"check_{c}" not in df.columns:
            df[f"check_{c}"] = ""
    df["repeat_of"] = repeats(df)
    df["_row"] = range(len(df))
    return df


def repeats(df: Any) -> list[str]:
    """Per row, the id of an earlier row of the same format and task with the same
    question and answer (at any length), else "": no (question, answer) is asked twice
    (:mod:`treeagent.bench.variety`). Rows failing a per-row check neither repeat nor
    are repeated (they are rejected for that)."""
    checks = [f"check_{c}" for c in validate.CHECKS if f"check_{c}" in df.columns]
    failed = df[checks].astype(bool).any(axis=1).tolist() if checks else [False] * len(df)
    seen: dict[tuple[str, str, str, str], str] = {}
    out = []
    for i, key in enumerate(zip(df["format"], df["task"], df["question"], df["answer"])):
        if failed[i]:
            out.append("")
            continue
        out.append(seen.get(key, ""))
        seen.setdefault(key, df["id"].iloc[i])
    return out


# ------------------------------------------------------------------ in the build


@dataclass(slots=True)
class SuiteResult:
    """Outcome of :func:`run`: ``failed`` maps row -> failed expectations."""

    success: bool
    failed: dict[int, list[str]]
    expectations: list[tuple[str, str, bool, int]]  # (type, column(s), success, unexpected)
    raw: Any = None


def run(df: Any, tolerance: float = 0.05) -> SuiteResult:
    """Run :func:`expectations` over an example table (pandas), row by row.

    Each row is held to its own ``tolerance`` column (``tolerance`` here only for rows
    without one): ``ceil(length * (1 - tolerance)) <= tokens <= length``. Rows without
    ``check_*`` columns (a stored table) are held to the table-level expectations only;
    :func:`treeagent.bench.build.build` adds them for new rows.
    """
    import great_expectations as gx

    df = prepare(df, tolerance)
    ctx = gx_context()
    asset = ctx.data_sources.add_pandas("treeagent_bench").add_dataframe_asset("examples")
    batch = asset.add_batch_definition_whole_dataframe("all").get_batch(
        batch_parameters={"dataframe": df})
    suite = gx.ExpectationSuite(name="treeagent.bench.examples")
    for e in expectations(gx.expectations):
        suite.add_expectation(e)
    res = batch.validate(suite, result_format={
        "result_format": "COMPLETE", "unexpected_index_column_names": ["_row"]})
    failed: dict[int, list[str]] = {}
    summary = []
    for r in res.results:
        cfg = r.expectation_config
        kw = cfg.kwargs
        cols = kw.get("column") or f"{kw.get('column_A')},{kw.get('column_B')}"
        label = f"{cfg.type}({cols})"
        rows = r.result.get("unexpected_index_list") or []
        summary.append((cfg.type, cols, bool(r.success), int(r.result.get("unexpected_count") or 0)))
        for item in rows:
            i = int(item["_row"]) if isinstance(item, dict) else int(item)
            failed.setdefault(i, []).append(label)
        if not r.success and not rows:  # a table-level failure names every row
            for i in range(len(df)):
                failed.setdefault(i, []).append(label)
    return SuiteResult(bool(res.success), failed, summary, res)


def rejections(df: Any, result: SuiteResult) -> list[dict[str, Any]]:
    """One rejection per failing row: the failed expectations and the plain reasons."""
    out = []
    checks = [c for c in validate.CHECKS if f"check_{c}" in df.columns]
    repeat_of = list(df["repeat_of"]) if "repeat_of" in df.columns else repeats(df)
    for i, labels in sorted(result.failed.items()):
        row = df.iloc[i]
        reasons = [str(row[f"check_{c}"]) for c in checks if row[f"check_{c}"]]
        check = next((c for c in checks if row[f"check_{c}"]), labels[0])
        if check == labels[0] and repeat_of[i]:
            check = "repeated"
            reasons.append(f"same question and answer as {repeat_of[i]}")
        out.append({"id": row["id"], "format": row["format"], "task": row["task"],
                    "length": int(row["length"]), "reason": check,
                    "expectations": "; ".join(labels), "detail": " | ".join(reasons)})
    return out


# ------------------------------------------------------------------ over stored tables


def stored_frame(path: str | Path,
                 per_row: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> Any:
    """A stored example table as a pandas DataFrame, recipes as unit counts
    (:func:`treeagent.bench.io.count_recipes`); with ``per_row``, the dicts it returns
    for each row (given in full, recipe included) become extra columns. The expectations
    only need a recipe to be present; read whole, the recipes of 512K/1M-token contexts
    cost most of the memory (the paper grid's JS table: ~380 MB of Arrow buffers, ~730 MB
    as Python lists), so rows are read a few at a time."""
    import pandas as pd
    import pyarrow as pa

    parts, extra = [], []
    for batch in io.example_batches(path):
        if per_row is not None:
            extra += [per_row(row) for row in batch.to_pylist()]
        parts.append(io.count_recipes(batch))
    if not parts:
        return pd.DataFrame()
    df = pa.Table.from_batches(parts).to_pandas()
    return pd.concat([df, pd.DataFrame(extra)], axis=1) if extra else df


def recheck(path: Path, fmt: str, tolerance: float) -> Callable[[dict], dict[str, str]]:
    """The per-row re-check of one format's stored rows (:mod:`treeagent.bench.validate`:
    re-parse the materialized context, re-extract records, execute the spec, uniqueness,
    scope, source ids, question contract, second reader), against its unit table. The
    rows of one context follow each other (a table is sorted by task, length, family):
    the last context's re-parse serves every row of it, as in the build."""
    from treeagent.bench.sources import records_from_text

    units = io.read_table(io.units_path(path, fmt), columns=["unit_id", "source", "text",
                                                             "sha256"]).to_pydict()
    texts = dict(zip(units["unit_id"], zip(units["source"], units["text"])))
    digests = dict(zip(units["unit_id"], zip(units["source"], units["sha256"])))
    cache: dict[str, Any] = {}
    last: dict[tuple[str, ...], validate.ContextCheck] = {}

    def check(row: dict) -> dict[str, str]:
        unit_ids = row["unit_ids"] or []
        missing = [u for u in unit_ids if u not in texts]
        if missing:
            return ({f"check_{c}": "" for c in validate.CHECKS}
                    | {"check_units": f"unit {missing[0]!r} not in the unit table"})
        key = tuple(unit_ids)
        ctx = last.get(key)
        if ctx is None:
            text = io.materialize(fmt, unit_ids, texts)
            ctx = validate.check_context(fmt, text, unit_ids, digests, records_from_text,
                                         None, cache)
            last.clear()
            last[key] = ctx
        return validate.check_example(row, ctx, tolerance)

    return check


def frame(validated_dir: str | os.PathLike[str], formats: Sequence[str],
          recheck_rows: bool = True, tolerance: float = 0.05) -> Any:
    """The stored examples of ``formats`` as one DataFrame; with ``recheck_rows`` every
    row re-checked independently of construction into ``check_*`` columns."""
    import pandas as pd

    frames = []
    for fmt in formats:
        path = Path(validated_dir) / "examples" / f"{fmt}.parquet"
        if not path.exists():
            raise FileNotFoundError(f"{path}: no examples for format {fmt!r} (run the build)")
        df = stored_frame(path, recheck(path, fmt, tolerance) if recheck_rows else None)
        if len(df):
            frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def suites(validated_dir: str | os.PathLike[str], formats: Sequence[str],
           lengths: Sequence[int], tasks: Sequence[str], tokenizers: Sequence[str],
           tolerance: float = 0.05, recheck_rows: bool = True) -> list[Suite]:
    """Suites of the pipeline's ``examples`` gate: the grid (only the params' formats,
    tasks and lengths, a count under every construction tokenizer, within the bucket)
    and :func:`expectations` over the re-checked rows."""
    df = frame(validated_dir, formats, recheck_rows, tolerance)
    grid: list[Any] = [
        lambda e: e.ExpectTableRowCountToBeBetween(min_value=1),
        lambda e: e.ExpectColumnValuesToBeInSet(column="format", value_set=list(formats)),
        lambda e: e.ExpectColumnValuesToBeInSet(column="task", value_set=list(tasks)),
        lambda e: e.ExpectColumnValuesToBeInSet(column="length", value_set=list(lengths)),
    ]
    for col in (io.token_column(tok) for tok in tokenizers):
        grid.append(lambda e, c=col: e.ExpectColumnValuesToNotBeNull(column=c))
        grid.append(lambda e, c=col: e.ExpectColumnPairValuesAToBeGreaterThanB(
            column_A="length", column_B=c, or_equal=True))
    out = [Suite("grid", df, grid, labels="id")]
    if len(df):  # an empty table fails the grid's row count; nothing else to say
        out.append(Suite("examples", prepare(df, tolerance), [expectations],
                               labels="id"))
    return out
