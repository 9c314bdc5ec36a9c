"""One evaluate stage on 1 worker against N workers, in one run: median wall time of
each runner over --runs repetitions (every repetition with an empty call cache), the
ratio to the first runner, and the sha256 of predictions.parquet and summary.json under
each (they must agree: the runner changes no output).

    python benchmarks/evaluate_workers.py --validated validated [--params params.yaml]
        [--agent memagent] [--method treeagent] [--shards 2] [--runs 3]
        [--runners thread:1 thread:2 dask:2]

The engine is the one params.yaml names (the demo: SmolLM2-135M-Instruct on the CPU with
transformers), so on a 2-core machine this measures how two workers share two cores.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "flows"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--validated", default="validated")
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--agent", default="memagent")
    ap.add_argument("--method", default="treeagent")
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--runners", nargs="+", default=["thread:1", "thread:2", "dask:2"])
    args = ap.parse_args(argv)

    import _common  # noqa: F401 (Prefect's environment first)
    import evaluate as stage
    from treeagent.pipeline import config
    from treeagent.pipeline.runners import describe, from_params

    tmp = Path(tempfile.mkdtemp(prefix="evaluate-workers-"))
    times: dict[str, list[float]] = {}
    digests: dict[str, set[tuple[str, str]]] = {}
    try:
        for rep in range(args.runs):
            for spec in args.runners:
                name, _, workers = spec.partition(":")
                runner = {"name": name, "address": None, "workers": int(workers or 1)}
                data = config.load(args.params).data
                config.assign(data, "runner", runner)
                config.assign(data, "evaluate.shards", args.shards)
                work = tmp / f"{spec.replace(':', '-')}-{rep}"
                config.assign(data, "evaluate.cache", str(work / "calls.sqlite"))
                work.mkdir(parents=True)
                params = work / "params.yaml"
                params.write_text(config.dump(config.validate(data).data))
                t0 = time.perf_counter()
                stage.evaluate_flow.with_options(task_runner=from_params(runner))(
                    args.agent, args.method, str(params), args.validated, str(work / "runs"))
                times.setdefault(spec, []).append(time.perf_counter() - t0)
                out = work / "runs" / args.agent / args.method
                digests.setdefault(spec, set()).add(tuple(
                    hashlib.sha256((out / f).read_bytes()).hexdigest()[:16]
                    for f in ("predictions.parquet", "summary.json")))
                shutil.rmtree(work)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    base = statistics.median(times[args.runners[0]])
    print(f"\n{args.agent}/{args.method}, {args.shards} shards, {args.runs} runs each "
          "(median wall seconds, engine start included)")
    for spec in args.runners:
        name, _, workers = spec.partition(":")
        med = statistics.median(times[spec])
        label = describe({"name": name, "address": None, "workers": int(workers or 1)})
        print(f"  {label:<34} {med:8.1f} s  x{med / base:.2f}  "
              f"predictions/summary sha256 {sorted(digests[spec])}")
    same = len({d for v in digests.values() for d in v}) == 1
    print(f"outputs identical across runners and runs: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
