"""Prefect flow ``validate`` (DVC stages ``validate_raw`` and ``validate_examples``).

Runs one Great Expectations gate of :mod:`treeagent.pipeline.gates` and writes its results to
``reports/validation/<gate>.json``; a failing gate exits non-zero with a message naming
each failed expectation, which stops ``dvc repro`` before the next stage.

    python flows/validate.py raw|examples [--params params.yaml]
"""

from __future__ import annotations  # noqa: I001 (_common precedes prefect)

import argparse
import sys

import _common  # first: sets Prefect's environment before Prefect is imported
from prefect import flow, get_run_logger, task

from treeagent.pipeline import gates
from treeagent.bench import examples_gate, splits


@task(name="gate", task_run_name="gate-{gate}")
def run_gate(gate: str, params: str, raw_dir: str, validated_dir: str, out_dir: str) -> dict:
    """Build the gate's suites from the stage outputs and check them (no retries: a
    failed expectation is a data problem, not a transient one)."""
    p = _common.load_params(params)
    if gate == "raw":
        suites = gates.raw_suites(raw_dir, p["acquire.formats"])
    elif gate == "examples":
        b = p["build"]
        suites = gates.guarded_suites(examples_gate.suites, validated_dir, b["formats"],
                                      b["lengths"], b["tasks"], b["tokenizers"],
                                      b["tolerance"])
        for split, folder, formats in splits.gated_tables(validated_dir, b["formats"],
                                                          b.get("splits") or {}):
            more = gates.guarded_suites(examples_gate.suites, folder, formats, b["lengths"],
                                        b["tasks"], b["tokenizers"], b["tolerance"])
            for suite in more:  # dev and train checked as the test tables (B.2)
                suite.name = f"{split} {suite.name}"
            suites += more
    else:
        raise ValueError(f"unknown gate {gate!r} (raw | examples; scores runs in the report)")
    doc = gates.check(gate, suites, out_dir)
    get_run_logger().info("gate %s passed: %s", gate,
                          ", ".join(f"{s['name']} ({s['rows']} rows)" for s in doc["suites"]))
    return doc


@flow(name="validate", log_prints=True)
def validate_flow(gate: str, params: str = _common.PARAMS, raw_dir: str = "raw",
                  validated_dir: str = "validated",
                  out_dir: str = str(gates.VALIDATION_DIR)) -> dict:
    """Run the ``raw`` or ``examples`` gate."""
    return run_gate(gate, params, raw_dir, validated_dir, out_dir)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("gate", choices=("raw", "examples"))
    ap.add_argument("--params", default=_common.PARAMS)
    ap.add_argument("--out", default=str(gates.VALIDATION_DIR))
    args = ap.parse_args(argv)
    _common.start(args.params)
    try:
        validate_flow(args.gate, args.params, out_dir=args.out)
    except gates.GateError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
