"""DVC stage ``models`` (always run, ahead of every evaluate stage): ``treeagent models
lock`` over ``params.yaml``, writing ``models.lock`` (:mod:`treeagent.llm.lock`). A model
whose weights or hub commit did not change writes the same bytes, so no evaluate stage
reruns; a changed one changes only its agent's entry, and only that agent's
``evaluate@<agent>-*`` stages (which read their own entry) rerun. No Prefect server: the
stage is a few hashes or one hub request per agent.

    python flows/models.py [--params params.yaml] [--allow-moving]
"""

from __future__ import annotations

import argparse

import _common


def models_flow(params: str = _common.PARAMS, allow_moving: bool = False) -> None:
    """Write ``models.lock`` for ``params`` (the stage's body; ``flows/benchmark.py
    --no-dvc`` calls it in process). SystemExit 2 after one ``error:`` line."""
    from treeagent.cli.models import lock

    status = lock(params, "models.lock", allow_moving=allow_moving)
    if status:
        raise SystemExit(status)


def main(argv: list[str] | None = None) -> int:
    from treeagent.cli.models import lock

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", default=_common.PARAMS)
    ap.add_argument("--allow-moving", action="store_true")
    args = ap.parse_args(argv)
    return lock(args.params, "models.lock", allow_moving=args.allow_moving)


if __name__ == "__main__":
    raise SystemExit(main())
