"""Prefect flow ``score`` (DVC stages ``score@<agent>-<method>``): score predictions (C.4).

Thin over :func:`treeagent.report.schema.score_rows` / ``write_scores``: reads
``runs/<agent>/<method>/predictions.parquet`` and writes ``scores.parquet`` beside it
(the scored-row schema the report and the DuckDB views read).

    python flows/score.py --agent memagent --method flat
"""

from __future__ import annotations  # noqa: I001 (_common precedes prefect)

import argparse
from pathlib import Path

import _common  # noqa: F401 - first: sets Prefect's environment before Prefect is imported
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE


SCORE_CHUNK = 2000
"""Rows scored between progress updates."""


@task(name="score", cache_policy=NO_CACHE, task_run_name="score-{run_dir}")
def score_run(run_dir: str) -> dict[str, float | int]:
    """Score one run folder's predictions; returns rows and mean score."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from treeagent.pipeline.progress import Progress
    from treeagent.report.schema import score_rows, write_scores

    rows = pq.read_table(Path(run_dir) / "predictions.parquet")
    parts = []
    with Progress(f"score {run_dir}", {"rows": rows.num_rows}) as bar:
        for start in range(0, rows.num_rows, SCORE_CHUNK):
            parts.append(score_rows(rows.slice(start, SCORE_CHUNK)))
            bar.advance("rows", parts[-1].num_rows)
    table = pa.concat_tables(parts) if parts else score_rows(rows)
    write_scores(table, Path(run_dir) / "scores.parquet")
    scores = table.column("score").to_pylist()
    result = {"rows": len(scores), "mean": sum(scores) / len(scores) if scores else 0.0}
    get_run_logger().info("%s: %d rows, mean score %.3f", run_dir, result["rows"],
                          result["mean"])
    return result


@flow(name="score", log_prints=True)
def score_flow(agent: str, method: str, runs_dir: str = "runs") -> dict[str, float | int]:
    """Score ``runs/<agent>/<method>``."""
    return score_run(str(Path(runs_dir) / agent / method))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agent", required=True)
    ap.add_argument("--method", required=True)
    ap.add_argument("--runs", default="runs")
    args = ap.parse_args(argv)
    score_flow(args.agent, args.method, args.runs)


if __name__ == "__main__":
    main()
