"""Prefect flow ``evidence`` (DVC stage ``evidence``): evidence integrity, no inference.

Sections every validated example as each evaluated agent's tokenizer and each method
would (Flat at C; Tree, Tree+Path, TreeAgent at B*) and records, per evidence record,
how many sections its content spans (:mod:`treeagent.pipeline.evidence`). Writes
``runs/evidence/evidence_records.parquet`` and ``runs/evidence/evidence.parquet``
(DuckDB views ``evidence_records`` and ``evidence``), ``runs/evidence/summary.json`` (a
DVC metric) and runs the Great Expectations ``evidence`` gate (every example has its
evidence located; ``reports/validation/evidence.json``).

    python flows/evidence.py [--params params.yaml] [--out runs/evidence]
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


def tokenizers(p: Any) -> list[tuple[str, str, Any]]:
    """(agent, tokenizer name, tokenizer) of every evaluated agent, as the run counts
    (:func:`treeagent.agents.setup.from_params`: the same rules as the run's)."""
    from treeagent.agents.setup import from_params

    out = []
    for agent in p.agents:
        setup = from_params(p, agent)
        out.append((agent, setup.tokenizer_name, setup.tokenizer))
    return out


@task(name="evidence", cache_policy=NO_CACHE)
def compute(params: str, validated_dir: str, out_dir: str) -> dict[str, Any]:
    from treeagent.pipeline import evidence

    p = _common.load_params(params)
    summary = evidence.compute(validated_dir, p["build.formats"], tokenizers(p), p.methods,
                               int(p["sectioning.base_budget"]), out_dir)
    (Path(out_dir) / "summary.json").write_text(evidence.dumps(summary), encoding="utf-8")
    get_run_logger().info("evidence records split: %s", summary)
    return summary


@task(name="gate-evidence", cache_policy=NO_CACHE)
def gate(params: str, validated_dir: str, out_dir: str, validation_dir: str) -> dict[str, Any]:
    import pyarrow.parquet as pq

    from treeagent.pipeline import evidence

    p = _common.load_params(params)
    ids: list[str] = []
    for fmt in p["build.formats"]:
        path = Path(validated_dir) / "examples" / f"{fmt}.parquet"
        if path.is_file():
            ids += pq.read_table(path, columns=["id"]).column("id").to_pylist()
    suites = gates.evidence_suites(Path(out_dir) / evidence.EXAMPLES_FILE, ids, p.agents,
                                   p.methods)
    return gates.check("evidence", suites, validation_dir)


@flow(name="evidence", log_prints=True)
def evidence_flow(params: str = _common.PARAMS, validated_dir: str = "validated",
                  out_dir: str = "runs/evidence",
                  validation_dir: str = str(gates.VALIDATION_DIR)) -> dict[str, Any]:
    """Compute the evidence rows, then gate them."""
    summary = compute(params, validated_dir, out_dir)
    gate(params, validated_dir, out_dir, validation_dir)
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", default=_common.PARAMS)
    ap.add_argument("--validated", default="validated")
    ap.add_argument("--out", default="runs/evidence")
    ap.add_argument("--validation", default=str(gates.VALIDATION_DIR))
    args = ap.parse_args(argv)
    p = _common.start(args.params)
    from treeagent.agents.setup import SetupError, check_params

    try:  # every agent's tokenizer is known before any work starts
        check_params(p)
    except SetupError as exc:
        print(f"error: {args.params}: {exc}", file=sys.stderr)
        return 2
    try:
        with _common.artifact_errors():
            evidence_flow(args.params, args.validated, args.out, args.validation)
    except gates.GateError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
