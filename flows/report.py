"""Prefect flow ``report`` (DVC stage ``report``): the scores gate, then ``reports/``.

First the Great Expectations ``scores`` gate (every example x agent x method scored
exactly once, scores in [0, 1]; results in ``reports/validation/scores.json``), then
:func:`treeagent.report.render.build_report` (provenance, Tables 1/3/4, Figures 2/3,
per-task tables, evidence integrity from ``runs/evidence/``, sample predictions, links
to the gate results, ``metrics.json``) and the DuckDB views file
``reports/treeagent.duckdb``.

    python flows/report.py [--params params.yaml] [--out reports]
"""

from __future__ import annotations  # noqa: I001 (_common precedes prefect)

import argparse
import sys
from pathlib import Path
from typing import Any

import _common  # first: sets Prefect's environment before Prefect is imported
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from treeagent.pipeline import gates


def score_files(agents: list[str], methods: list[str], runs_dir: str = "runs") -> list[str]:
    """The scored Parquet files of the grid, agents x methods (no stale runs)."""
    return [str(Path(runs_dir) / a / m / "scores.parquet") for a in agents for m in methods]


@task(name="gate-scores", cache_policy=NO_CACHE)
def scores_gate(files: list[str], formats: list[str], agents: list[str], methods: list[str],
                validated_dir: str, out_dir: str) -> dict[str, Any]:
    """Completeness and range of the scores (GX); raises GateError on failure."""
    import pyarrow.parquet as pq

    ids: list[str] = []
    for fmt in formats:
        ids += pq.read_table(Path(validated_dir) / "examples" / f"{fmt}.parquet",
                             columns=["id"]).column("id").to_pylist()
    doc = gates.check("scores", gates.scores_suites(files, ids, agents, methods), out_dir)
    get_run_logger().info("gate scores passed: %d examples x %d agents x %d methods",
                          len(ids), len(agents), len(methods))
    return doc


def _evidence(runs_dir: str) -> tuple[Any, Any]:
    """The evidence rows of the ``evidence`` stage (None, None where it has not run)."""
    import pyarrow.parquet as pq

    from treeagent.pipeline import evidence

    base = Path(runs_dir) / "evidence"
    if not (base / evidence.EXAMPLES_FILE).is_file():
        return None, None
    return (pq.read_table(base / evidence.EXAMPLES_FILE).to_pandas(),
            pq.read_table(base / evidence.RECORDS_FILE).to_pandas())


@task(name="render-report", cache_policy=NO_CACHE)
def render(files: list[str], out: str, params: str, runs_dir: str = "runs",
           validated_dir: str = "validated") -> dict[str, Any]:
    """Tables, figures, metrics.json and the DuckDB views file."""
    from treeagent.pipeline.progress import Progress
    from treeagent.report import db, provenance, viewer
    from treeagent.report.blocks import SMALL_MODEL_NOTE
    from treeagent.report.render import build_report

    p = _common.load_params(params)
    scores = db.load_scores(files)
    ev, ev_records = _evidence(runs_dir)
    validation = [str(Path(out) / "validation" / f"{g}.json") for g in gates.GATES
                  if (Path(out) / "validation" / f"{g}.json").is_file()]
    small = any("smollm2" in str(a.get("model", "")).lower()
                for a in (p.data["agents"][x] for x in p.agents))
    with Progress("report", {"steps": 3}) as bar:  # viewer, tables and figures, DuckDB
        bar.update(steps=0, info="per-example viewer")
        pages = viewer.write_from_pipeline(p, runs_dir, validated_dir, Path(out) / "examples",
                                           scores, ev_records)
        bar.update(steps=1, info="tables and figures")
        metrics = build_report(scores, out, dataset=p["report.dataset"], evidence=ev,
                               evidence_records=ev_records,
                               provenance=provenance.collect(p, scores, ev),
                               validation=validation, seed=int(p["seed"]),
                               note=SMALL_MODEL_NOTE if small else None,
                               grid=[(f, t, int(n)) for f in p["build.formats"]
                                     for t in p["build.tasks"] for n in p["build.lengths"]],
                               viewer=pages)
        bar.update(steps=2, info="DuckDB views")
        views = db.discover(".")
        views["scores"] = files
        db.write_database(Path(out) / "treeagent.duckdb", views)
        bar.update(steps=3, info="")
    get_run_logger().info("wrote %s/report.md, index.html, figures/, metrics.json "
                          "(agent mean: %s)", out, metrics.get("agent_mean"))
    return metrics


@flow(name="report", log_prints=True)
def report_flow(params: str = _common.PARAMS, out: str = "reports", runs_dir: str = "runs",
                validated_dir: str = "validated") -> dict[str, Any]:
    """Gate the scores of the grid, then write the report."""
    p = _common.load_params(params)
    files = score_files(p.agents, p.methods, runs_dir)
    scores_gate(files, p["build.formats"], p.agents, p.methods, validated_dir,
                str(Path(out) / "validation"))
    return render(files, out, params, runs_dir, validated_dir)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", default=_common.PARAMS)
    ap.add_argument("--out", default="reports")
    args = ap.parse_args(argv)
    _common.start(args.params)
    try:
        report_flow(args.params, args.out)
    except gates.GateError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
