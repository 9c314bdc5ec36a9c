"""Great Expectations gates between pipeline stages (DESIGN "The pipeline").

Three gates, each a set of GX expectation suites run over pandas DataFrames in an
ephemeral GX context:

* ``raw`` (after acquire): the manifest lists every payload once with its checksum, no
  payload is empty, every quarantined payload is listed with a reason, every file under
  ``raw/`` is listed, every format yields parser units, and the units are sound (ids
  unique, text non-empty, record ids unique, no two records of a unit named alike;
  undescribed records are counted by aggregations, never named).
* ``examples`` (after build): issue 4's examples suite (answer uniqueness, spec executed
  over the visible context, ...) plus ids unique, lengths within the bucket under every
  construction tokenizer, and the grid's formats/tasks/lengths only.
* ``scores`` (before the report): complete (every example x agent x method has exactly
  one scored row, nothing extra) and every score in [0, 1].

:func:`check` writes the gate's results to ``reports/validation/<gate>.json`` (pass or
fail; run-dependent ids and times removed so reruns write identical bytes) and raises
:class:`GateError` naming each failed expectation. Great Expectations is imported
lazily (2-4 s).
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FunctionType
from typing import Any

VALIDATION_DIR = Path("reports") / "validation"
GATES = ("raw", "examples", "evidence", "scores")


class GateError(RuntimeError):
    """A gate failed. ``failures`` holds one line per failed expectation."""

    def __init__(self, gate: str, failures: list[str], path: Path) -> None:
        self.gate, self.failures, self.path = gate, failures, path
        lines = "\n  ".join(failures)
        super().__init__(f"gate {gate!r} failed ({len(failures)} expectation(s)); results in "
                         f"{path}:\n  {lines}")


@dataclass
class Suite:
    """One GX suite over one DataFrame: ``expectations`` are GX expectation objects, or
    functions ``gx.expectations -> expectation | list`` called once a GX context exists
    (so the caller need not import GX)."""

    name: str
    frame: Any  # pandas.DataFrame
    expectations: list[Any] = field(default_factory=list)
    labels: str | None = None  # column whose values name unexpected rows in messages


# --------------------------------------------------------------------------- running

def _context() -> Any:
    import great_expectations as gx

    ctx = gx.get_context(mode="ephemeral")
    try:
        from great_expectations.data_context.types.base import ProgressBarsConfig

        ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
    except Exception:  # noqa: BLE001 - cosmetic only
        pass
    return ctx


def _clean(value: Any) -> Any:
    """JSON-safe copy: NaN -> None, run ids/times dropped, tuples -> lists."""
    volatile = {"run_id", "validation_time", "run_time", "batch_id", "active_batch_definition",
                "checkpoint_id", "validation_id", "id", "batch_spec", "batch_markers"}
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if k not in volatile}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item") and not isinstance(value, str | bytes):  # numpy scalars
        try:
            return _clean(value.item())
        except (TypeError, ValueError):
            return str(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _short(values: Any, limit: int = 5) -> Any:
    values = list(values)
    return values if len(values) <= limit else f"<{len(values)} values>"


def _result_json(result: Any) -> dict[str, Any]:
    doc = _clean(result.to_json_dict())
    kwargs = doc.get("expectation_config", {}).get("kwargs", {})
    if "value_set" in kwargs:
        kwargs["value_set"] = _short(kwargs["value_set"], 20)
    return doc


def _describe(suite: Suite, result: Any) -> str:
    cfg = result.expectation_config
    kwargs = {k: v for k, v in cfg.kwargs.items() if k not in ("batch_id", "value_set")}
    if "value_set" in cfg.kwargs:
        kwargs["value_set"] = _short(cfg.kwargs["value_set"])
    args = ", ".join(f"{k}={v}" for k, v in kwargs.items())
    res = result.result or {}
    detail = ""
    if res.get("unexpected_count") is not None:
        sample = res.get("partial_unexpected_list") or []
        index = res.get("partial_unexpected_index_list") or []
        if suite.labels and index and suite.labels in suite.frame.columns:
            sample = [suite.frame[suite.labels].iloc[i] for i in index if i < len(suite.frame)]
        sample = [_clean(v) for v in sample[:5]]
        detail = f": {res['unexpected_count']} unexpected, e.g. {sample}"
    elif "observed_value" in res:
        detail = f": observed {_clean(res['observed_value'])}"
    exc = (result.exception_info or {}).get("exception_message")
    if exc:
        detail += f" (error: {exc})"
    return f"{suite.name}: {cfg.type}({args}){detail}"


def check(gate: str, suites: Sequence[Suite], out_dir: str | os.PathLike[str] = VALIDATION_DIR
          ) -> dict[str, Any]:
    """Run ``suites``, write ``<out_dir>/<gate>.json`` and return its content; raise
    :class:`GateError` if any expectation failed."""
    import great_expectations as gx

    ctx = _context()
    source = ctx.data_sources.add_pandas(f"gate_{gate}")
    doc: dict[str, Any] = {"gate": gate, "success": True, "suites": []}
    failures: list[str] = []
    for suite in suites:
        batch = (source.add_dataframe_asset(suite.name)
                 .add_batch_definition_whole_dataframe("all")
                 .get_batch(batch_parameters={"dataframe": suite.frame}))
        gx_suite = gx.ExpectationSuite(name=f"{gate}.{suite.name}")
        for item in suite.expectations:
            made = item(gx.expectations) if isinstance(item, FunctionType) else item
            for e in made if isinstance(made, list) else [made]:
                if getattr(e, "id", None):  # bound to another suite: add a fresh copy
                    e = e.copy(update={"id": None})
                gx_suite.add_expectation(e)
        result = batch.validate(gx_suite, result_format="SUMMARY")
        failed = [_describe(suite, r) for r in result.results if not r.success]
        failures += failed
        doc["suites"].append({
            "name": gx_suite.name, "rows": int(len(suite.frame)),
            "success": bool(result.success), "failed": failed,
            "statistics": _clean(result.statistics),
            "results": [_result_json(r) for r in result.results],
        })
    doc["success"] = not failures
    doc["failed"] = failures
    out = Path(out_dir) / f"{gate}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, out)
    if failures:
        raise GateError(gate, failures, out)
    return doc


# --------------------------------------------------------------------------- raw

def _field(obj: Any, name: str, default: Any = None) -> Any:
    return obj.get(name, default) if isinstance(obj, dict) else getattr(obj, name, default)


def raw_suites(raw_dir: str | os.PathLike[str], formats: Iterable[str],
               units: Callable[[str, str], Iterable[Any]] | None = None) -> list[Suite]:
    """Suites of the ``raw`` gate over ``raw_dir``'s manifest, files and parser units."""
    import pandas as pd

    from treeagent.bench import sources as S

    raw = Path(raw_dir)
    units = units or (lambda fmt, d: S.units(fmt, raw_dir=d))
    manifest = S.read_manifest(raw)
    cols = ["file", "format", "source", "bytes", "sha256", "reason"]
    kept = pd.DataFrame([{c: e.get(c) for c in cols} for e in manifest.get("files", [])],
                        columns=cols)
    held = pd.DataFrame([{c: e.get(c) for c in cols} for e in manifest.get("quarantine", [])],
                        columns=cols)
    listed = set(kept["file"]) | set(held["file"])
    on_disk = sorted(p.relative_to(raw).as_posix() for p in raw.rglob("*")
                     if p.is_file() and p.name != "manifest.json" and not p.name.startswith("."))
    disk = pd.DataFrame({"file": on_disk, "listed": [p in listed for p in on_disk]})

    unit_rows, record_rows = [], []
    fmts = list(formats)
    for fmt in fmts:
        for u in units(fmt, str(raw)):
            unit_rows.append({"id": u.id, "format": u.format, "source": u.source,
                              "chars": len(u.text or ""), "records": len(u.records)})
            named = Counter(r.description for r in u.records if r.description)
            record_rows += [{"id": r.id, "unit_id": r.unit_id,
                             "description": r.description or None,
                             # undescribed records are counted, never named (B.1); a
                             # described one is named by what no other record of its
                             # unit is named by
                             "named_ok": not r.description or named[r.description] == 1}
                            for r in u.records]
    unit_df = pd.DataFrame(unit_rows, columns=["id", "format", "source", "chars", "records"])
    record_df = pd.DataFrame(record_rows, columns=["id", "unit_id", "description", "named_ok"])
    per_format = pd.DataFrame({"format": fmts,
                               "units": [int((unit_df["format"] == f).sum()) for f in fmts]})
    return [
        Suite("payloads", kept, [
            lambda e: e.ExpectTableRowCountToBeBetween(min_value=1),
            lambda e: e.ExpectColumnValuesToBeUnique(column="file"),
            lambda e: e.ExpectColumnValuesToNotBeNull(column="sha256"),
            lambda e: e.ExpectColumnValuesToBeBetween(column="bytes", min_value=1),
            lambda e: e.ExpectColumnValuesToBeInSet(column="format", value_set=fmts),
        ], labels="file"),
        Suite("quarantine", held, [
            lambda e: e.ExpectColumnValuesToNotBeNull(column="reason"),
            lambda e: e.ExpectColumnValuesToBeUnique(column="file"),
        ], labels="file"),
        Suite("files", disk, [
            lambda e: e.ExpectColumnValuesToBeInSet(column="listed", value_set=[True]),
        ], labels="file"),
        Suite("formats", per_format, [
            lambda e: e.ExpectColumnValuesToBeBetween(column="units", min_value=1),
        ], labels="format"),
        Suite("units", unit_df, [
            lambda e: e.ExpectColumnValuesToBeUnique(column="id"),
            lambda e: e.ExpectColumnValuesToBeBetween(column="chars", min_value=1),
        ], labels="id"),
        Suite("records", record_df, [
            lambda e: e.ExpectColumnValuesToBeUnique(column="id"),
            lambda e: e.ExpectColumnValuesToBeInSet(column="named_ok", value_set=[True]),
        ], labels="id"),
    ]


# --------------------------------------------------------------------------- examples

def examples_frame(validated_dir: str | os.PathLike[str], formats: Iterable[str],
                   recheck: bool = True, tolerance: float = 0.05) -> Any:
    """The stored examples of ``formats`` as one DataFrame (recipes as unit counts:
    :func:`treeagent.bench.io.count_recipes`). With ``recheck`` every row is validated
    again independently of construction (issue 4's per-row checks: re-parse the
    materialized context, re-extract records, execute the spec, answer uniqueness, scope,
    source ids, question contract) into ``check_*`` columns ("" = passed)."""
    import pandas as pd

    from treeagent.bench import io

    frames = []
    for fmt in formats:
        path = Path(validated_dir) / "examples" / f"{fmt}.parquet"
        if not path.exists():
            raise FileNotFoundError(f"{path}: no examples for format {fmt!r} (run the build)")
        df = io.examples_frame(path, _rechecker(path, fmt, tolerance) if recheck else None)
        if len(df):
            frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _rechecker(path: Path, fmt: str, tolerance: float) -> Callable[[dict], dict[str, str]]:
    """Issue 4's per-row checks of one format's stored rows, against its unit table."""
    import pyarrow.parquet as pq

    from treeagent.bench import io, validate
    from treeagent.bench.sources import records_from_text

    units = pq.read_table(io.units_path(path, fmt), columns=["unit_id", "source", "text",
                                                             "sha256"]).to_pydict()
    texts = dict(zip(units["unit_id"], zip(units["source"], units["text"])))
    digests = dict(zip(units["unit_id"], zip(units["source"], units["sha256"])))
    cache: dict[str, Any] = {}

    def check(row: dict) -> dict[str, str]:
        unit_ids = row["unit_ids"] or []
        missing = [u for u in unit_ids if u not in texts]
        if missing:
            return ({f"check_{c}": "" for c in validate.CHECKS}
                    | {"check_units": f"unit {missing[0]!r} not in the unit table"})
        text = io.materialize(fmt, unit_ids, texts)
        ctx = validate.check_context(fmt, text, unit_ids, digests, records_from_text, None,
                                     cache)
        return validate.check_example(row, ctx, tolerance)

    return check


def examples_suites(validated_dir: str | os.PathLike[str], formats: Sequence[str],
                    lengths: Sequence[int], tasks: Sequence[str], tokenizers: Sequence[str],
                    tolerance: float = 0.05, recheck: bool = True) -> list[Suite]:
    """Suites of the ``examples`` gate: issue 4's examples suite (answer uniqueness, spec
    re-executed, lengths per bucket and tokenizer within ``[(1 - tolerance) * bucket,
    bucket]``, ...) over the re-checked rows, plus the grid: only the params' formats,
    tasks and lengths, a count under every construction tokenizer."""
    from treeagent.bench import validate
    from treeagent.bench.io import token_column

    df = examples_frame(validated_dir, formats, recheck, tolerance)
    grid: list[Any] = [
        lambda e: e.ExpectTableRowCountToBeBetween(min_value=1),
        lambda e: e.ExpectColumnValuesToBeInSet(column="format", value_set=list(formats)),
        lambda e: e.ExpectColumnValuesToBeInSet(column="task", value_set=list(tasks)),
        lambda e: e.ExpectColumnValuesToBeInSet(column="length", value_set=list(lengths)),
    ]
    for col in (token_column(tok) for tok in tokenizers):
        grid.append(lambda e, c=col: e.ExpectColumnValuesToNotBeNull(column=c))
        grid.append(lambda e, c=col: e.ExpectColumnPairValuesAToBeGreaterThanB(
            column_A="length", column_B=c, or_equal=True))
    suites = [Suite("grid", df, grid, labels="id")]
    if len(df):  # an empty table fails the grid's row count; nothing else to say
        suites.append(Suite("examples", validate._prepared(df, tolerance),
                            [lambda e: list(validate.examples_suite().expectations)],
                            labels="id"))
    return suites


# --------------------------------------------------------------------------- scores

def scores_suites(score_files: Sequence[str], example_ids: Sequence[str],
                  agents: Sequence[str], methods: Sequence[str]) -> list[Suite]:
    """Suites of the ``scores`` gate: completeness over examples x agents x methods, and
    scores in [0, 1]."""
    import pandas as pd

    from treeagent.report import db

    missing_files = [f for f in score_files if not Path(f).exists()]
    scores = db.load_scores([f for f in score_files if Path(f).exists()])
    scores = scores.assign(key=scores["agent"] + "/" + scores["method"] + "/"
                           + scores["example_id"])
    expected = pd.DataFrame({"key": [f"{a}/{m}/{e}" for a in agents for m in methods
                                     for e in example_ids]})
    files = pd.DataFrame({"file": list(score_files),
                          "exists": [f not in missing_files for f in score_files]})
    scored = scores["key"].tolist()
    return [
        Suite("files", files, [
            lambda e: e.ExpectColumnValuesToBeInSet(column="exists", value_set=[True]),
        ], labels="file"),
        Suite("complete", expected, [
            lambda e: e.ExpectColumnValuesToBeInSet(column="key", value_set=scored),
        ]),
        Suite("scores", scores, [
            lambda e: e.ExpectColumnValuesToBeInSet(column="key",
                                                    value_set=expected["key"].tolist()),
            lambda e: e.ExpectColumnValuesToBeUnique(column="key"),
            lambda e: e.ExpectColumnValuesToNotBeNull(column="score"),
            lambda e: e.ExpectColumnValuesToBeBetween(column="score", min_value=0.0,
                                                      max_value=1.0),
        ], labels="key"),
    ]


# --------------------------------------------------------------------------- evidence

def evidence_suites(evidence_file: str | os.PathLike[str], example_ids: Sequence[str],
                    agents: Sequence[str], methods: Sequence[str]) -> list[Suite]:
    """Suites of the ``evidence`` gate: every example x agent x method has an evidence row,
    at least one evidence record, and every record located in its context."""
    import pandas as pd
    import pyarrow.parquet as pq

    rows = pq.read_table(evidence_file).to_pandas()
    rows = rows.assign(key=rows["agent"] + "/" + rows["method"] + "/" + rows["example_id"],
                       unlocated=rows["records"] - rows["located"])
    expected = pd.DataFrame({"key": [f"{a}/{m}/{e}" for a in agents for m in methods
                                     for e in example_ids]})
    return [
        Suite("complete", expected, [
            lambda e: e.ExpectColumnValuesToBeInSet(column="key",
                                                    value_set=rows["key"].tolist()),
        ]),
        Suite("located", rows, [
            lambda e: e.ExpectColumnValuesToBeUnique(column="key"),
            lambda e: e.ExpectColumnValuesToBeBetween(column="records", min_value=1),
            lambda e: e.ExpectColumnValuesToBeInSet(column="unlocated", value_set=[0]),
            lambda e: e.ExpectColumnValuesToBeBetween(column="split_share", min_value=0.0,
                                                      max_value=1.0),
        ], labels="key"),
    ]
