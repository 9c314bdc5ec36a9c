"""Great Expectations gates between pipeline stages.

Four gates, each a set of GX expectation suites (:class:`Suite`) run over pandas
DataFrames by :func:`check`:

* ``raw`` (after acquire): the manifest lists every payload once with its checksum,
  every listed payload is on disk with the manifest's size and sha256 (re-hashed, each
  failure named by its file and reason), no payload is empty, every quarantined payload
  is listed with a reason, every file under ``raw/`` is listed, every format yields
  parser units, and the units are sound (ids
  unique, text non-empty, record ids unique, no two records of a unit named alike;
  undescribed records are counted by aggregations, never named).
* ``examples`` (after build): its suites live in :mod:`treeagent.bench.examples_gate`,
  which the build runs too (every stored row re-checked: spec executed over the visible
  context, answer uniqueness, second reader, ...; lengths within the bucket under every
  construction tokenizer; the grid's formats/tasks/lengths only).
* ``evidence`` (after the evidence stage): every example x agent x method has its
  evidence records, every one located in its context.
* ``scores`` (before the report): complete (every example x agent x method has exactly
  one scored row, nothing extra) and every score in [0, 1].

:func:`check` (:mod:`treeagent.pipeline.gx`) writes the gate's results to
``reports/validation/<gate>.json`` and raises :class:`GateError` naming each failed
expectation. An input artifact that cannot be read (a corrupt manifest or Parquet table:
:class:`~treeagent.bench.sources.raw.ArtifactError`) is a failed gate naming the file, not a
traceback: :func:`guarded_suites` wraps any gate's suite builder.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from treeagent.pipeline.gx import VALIDATION_DIR, GateError, Suite, check, gx_context

__all__ = ["GATES", "VALIDATION_DIR", "GateError", "Suite", "check", "gx_context",
           "artifact_suite", "evidence_suites", "guarded_suites", "raw_suites",
           "scores_suites"]
GATES = ("raw", "examples", "evidence", "scores")


# --------------------------------------------------------------------------- artifacts

def artifact_suite(problems: dict[str, str | None]) -> Suite:
    """A suite over ``{artifact path: why it cannot be used, or None}`` that fails for
    each unusable one, naming it and why."""
    import pandas as pd

    frame = pd.DataFrame({"artifact": list(problems), "problem": list(problems.values())},
                         columns=["artifact", "problem"])
    frame["named"] = [f"{a}: {p}" if p else a for a, p in problems.items()]
    return Suite("artifacts", frame, [
        lambda e: e.ExpectColumnValuesToBeNull(column="problem"),
    ], labels="named")


def guarded_suites(build: Callable[..., list[Suite]], *args: Any, **kwargs: Any
                   ) -> list[Suite]:
    """``build(*args, **kwargs)`` (a gate's suite builder, e.g.
    :func:`treeagent.bench.examples_gate.suites`), or, when an input artifact it reads
    cannot be read, one failing suite naming that file: the gate fails with one line,
    not a library traceback."""
    from treeagent.pipeline.artifacts import ArtifactError

    try:
        return build(*args, **kwargs)
    except ArtifactError as exc:
        return [artifact_suite({exc.path: exc.why})]


# --------------------------------------------------------------------------- raw

def _field(obj: Any, name: str, default: Any = None) -> Any:
    return obj.get(name, default) if isinstance(obj, dict) else getattr(obj, name, default)


def raw_suites(raw_dir: str | os.PathLike[str], formats: Iterable[str],
               units: Callable[[str, str], Iterable[Any]] | None = None) -> list[Suite]:
    """Suites of the ``raw`` gate over ``raw_dir``'s manifest, files and parser units
    (one failing suite naming the manifest when it cannot be read)."""
    return guarded_suites(_raw_suites, raw_dir, formats, units)


def _raw_suites(raw_dir: str | os.PathLike[str], formats: Iterable[str],
                units: Callable[[str, str], Iterable[Any]] | None) -> list[Suite]:
    import pandas as pd

    from treeagent.bench import sources as S
    from treeagent.bench.sources.raw import payload_problem

    raw = Path(raw_dir)
    units = units or (lambda fmt, d: S.units(fmt, raw_dir=d))
    manifest = S.read_manifest(raw, verify=False)  # re-checked here, failures named
    cols = ["file", "format", "source", "bytes", "sha256", "reason"]
    kept = pd.DataFrame([{c: e.get(c) for c in cols} for e in manifest.get("files", [])],
                        columns=cols)
    held = pd.DataFrame([{c: e.get(c) for c in cols} for e in manifest.get("quarantine", [])],
                        columns=cols)
    listed = set(kept["file"]) | set(held["file"])
    on_disk = sorted(p.relative_to(raw).as_posix() for p in raw.rglob("*")
                     if p.is_file() and p.name != "manifest.json" and not p.name.startswith("."))
    disk = pd.DataFrame({"file": on_disk, "listed": [p in listed for p in on_disk]})
    problems = [payload_problem(raw, e) for e in manifest.get("files", [])]
    intact = pd.DataFrame({"file": list(kept["file"]), "problem": problems},
                          columns=["file", "problem"])
    intact["named"] = [f"{f}: {p}" if p else str(f)
                       for f, p in zip(intact["file"], intact["problem"])]

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
        Suite("intact", intact, [
            lambda e: e.ExpectColumnValuesToBeNull(column="problem"),
        ], labels="named"),
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


# --------------------------------------------------------------------------- scores

def scores_suites(score_files: Sequence[str], example_ids: Sequence[str],
                  agents: Sequence[str], methods: Sequence[str]) -> list[Suite]:
    """Suites of the ``scores`` gate: completeness over examples x agents x methods, and
    scores in [0, 1] (one failing suite naming a score file that cannot be read)."""
    return guarded_suites(_scores_suites, score_files, example_ids, agents, methods)


def _readable(files: Sequence[str]) -> None:
    """:class:`ArtifactError` naming the first of ``files`` that is no readable table."""
    from treeagent.bench import io

    for f in files:
        io.read_table(f)


def _scores_suites(score_files: Sequence[str], example_ids: Sequence[str],
                   agents: Sequence[str], methods: Sequence[str]) -> list[Suite]:
    import pandas as pd
    import pyarrow as pa

    from treeagent.report import db

    missing_files = [f for f in score_files if not Path(f).exists()]
    present = [f for f in score_files if Path(f).exists()]
    try:
        scores = db.load_scores(present)
    except (pa.ArrowException, OSError):
        _readable(present)  # names the file
        raise
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
    at least one evidence record, and every record located in its context (one failing
    suite naming the evidence file when it cannot be read)."""
    return guarded_suites(_evidence_suites, evidence_file, example_ids, agents, methods)


def _evidence_suites(evidence_file: str | os.PathLike[str], example_ids: Sequence[str],
                     agents: Sequence[str], methods: Sequence[str]) -> list[Suite]:
    import pandas as pd

    from treeagent.bench import io

    rows = io.read_table(evidence_file).to_pandas()
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
