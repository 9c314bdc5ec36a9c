"""Build the paper grid (4 formats x 8 tasks x 8 lengths x 50 = 12,800 examples) from the
mirror and print wall time, peak memory, bytes on disk, counts and shortfalls.

    python benchmarks/build_grid.py [--mirror $TREEAGENT_MIRROR] [--raw raw] [--out validated]
        [--formats json html yaml javascript] [--lengths 8K ... 1M] [--per-cell 50]
        [--no-acquire] [--no-recount] [--js-repos eslint=PATH webpack=PATH ...]

Goal: <= 10 minutes (JSON, YAML, HTML) with ``--runner dask --workers 2`` on two cores,
<= 2 GB per process, every kept example valid (the GX suite over the written tables is
run again at the end). The build is sharded by (format, length) cell over ``--runner``
and ``--workers`` (:func:`treeagent.bench.cells.build_sharded`; the same files as a
serial build), and each task's process, CPU and wall seconds are printed: both workers
busy shows as CPU close to wall in each. ``--runner thread --workers 1`` builds serially
in this process.

Serial against sharded, in one run (the same units; one folder each under --out):

    python benchmarks/build_grid.py --no-acquire --versus-serial --runner dask --workers 2 ...

prints the wall time of the serial build and of the build sharded by (format, length)
cell over N workers, their ratio, and whether every written file is byte-identical.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:  # Linux; the peak above is portable
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", default=os.environ.get("TREEAGENT_MIRROR"),
                    help="mirror of the real sources (default: $TREEAGENT_MIRROR)")
    ap.add_argument("--raw", default="raw")
    ap.add_argument("--out", default="validated")
    ap.add_argument("--formats", nargs="+", default=["json", "html", "yaml", "javascript"])
    ap.add_argument("--lengths", nargs="+", default=["8K", "16K", "32K", "64K", "128K",
                                                     "256K", "512K", "1M"])
    ap.add_argument("--per-cell", type=int, default=50)
    ap.add_argument("--questions-per-context", type=int, default=5)
    ap.add_argument("--allow-reuse", action="store_true")
    ap.add_argument("--no-acquire", action="store_true")
    ap.add_argument("--js-repos", nargs="*", default=[], metavar="NAME=PATH",
                    help="local clones (bare or not) of the JS repositories (eslint, webpack, "
                         "threejs, plotly, babel, lodash), read at their pinned commits")
    ap.add_argument("--js-repo", action="append", default=[], metavar="NAME=PATH",
                    help="one repository, as `treeagent bench build --js-repo` takes it")
    ap.add_argument("--second-reader", type=int, default=240, metavar="N",
                    help="re-read N kept examples from disk with the independent reader "
                         "(spread over formats and tasks) and print how many it confirms")
    ap.add_argument("--no-recount", action="store_true",
                    help="validation trusts construction's full token count of each context")
    ap.add_argument("--reread-only", action="store_true",
                    help="build nothing: run the second reader over the tables in --out")
    ap.add_argument("--runner", choices=("thread", "dask"), default="dask",
                    help="task runner of the build sharded by (format, length) cell")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--versus-serial", action="store_true",
                    help="build twice, serially and sharded over --workers, and compare")
    args = ap.parse_args(argv)
    if args.reread_only:
        return _report_second_reader(Path(args.out), args.formats, args.second_reader)
    from treeagent.bench.cli import js_repos_from_args

    try:
        js_repos = js_repos_from_args([*args.js_repos, *args.js_repo])
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    os.environ.setdefault("PYTHONHASHSEED", "0")

    from treeagent.bench import build, sources
    from treeagent.bench.contexts import parse_bucket

    t0 = time.time()
    if not args.no_acquire:
        sources.acquire("mirror", formats=args.formats, raw_dir=args.raw,
                        mirror_dir=args.mirror, js_repos=js_repos or None, progress=False)
    t_acq = time.time()
    # lazy: each format's units are parsed when its build starts, released after it
    units = {f: sources.units(f, raw_dir=args.raw) for f in args.formats}
    print(f"acquire {t_acq - t0:.0f} s", flush=True)
    params = build.BuildParams(formats=tuple(args.formats),
                               lengths=tuple(parse_bucket(x) for x in args.lengths),
                               per_cell=args.per_cell,
                               questions_per_context=args.questions_per_context,
                               allow_reuse=args.allow_reuse, recount=not args.no_recount)
    if args.versus_serial:
        return _versus_serial(params, Path(args.raw), Path(args.out), args.runner,
                              args.workers)
    if args.runner == "thread" and args.workers == 1:
        return _build_and_report(args, params, units, t0, t_acq, None)
    from treeagent.bench import cells, independent

    # the workers share prepared formats and the second reader's readings, and the
    # re-read at the end finds them there too
    with cells.shared_scratch(args.raw) as scratch:
        independent.share_readings(scratch.folder, scratch.key)
        try:
            return _build_and_report(args, params, units, t0, t_acq, scratch)
        finally:
            independent.share_readings(None)


def _build_and_report(args, params, units, t0: float, t_acq: float, scratch) -> int:
    """Build (serially without ``scratch``, else sharded), re-check, print the report."""
    from treeagent.bench import build, examples_gate

    marks: dict[str, float] = {}

    def progress(fmt: str, done: int, total: int) -> None:
        if done == total or done - marks.get(fmt, 0) >= total / 10:
            marks[fmt] = done
            print(f"  {fmt}: {done}/{total} ({time.time() - t0:.0f} s, "
                  f"RSS {_rss_mb():.0f} MB, peak {_peak_mb():.0f} MB)", flush=True)

    if scratch is None:
        result = build.build(params, units, Path(args.out), progress=progress)
    else:
        result = _build_sharded(params, Path(args.raw), Path(args.out), args.runner,
                                args.workers, scratch)
    t_build = time.time()
    # every kept example must pass the suite again, read back from disk
    bad = 0
    for fmt in args.formats:
        df = examples_gate.stored_frame(Path(args.out) / "examples" / f"{fmt}.parquet")
        if len(df):
            res = examples_gate.run(df, params.tolerance)
            bad += len(res.failed)
    t_end = time.time()
    out = Path(args.out)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    inv = result.inventory
    print(f"\nwall {t_end - t0:.0f} s (acquire {t_acq - t0:.0f}, units + build + validate "
          f"{t_build - t_acq:.0f}, re-check {t_end - t_build:.0f}); "
          f"peak RSS {_peak_mb():.0f} MB; {size / 1e6:.1f} MB on disk in {out}/")
    print(f"examples kept {inv['examples']} of "
          f"{len(args.formats) * len(params.tasks) * len(params.lengths) * params.per_cell}; "
          f"rejected {inv['rejected']}; kept rows failing the suite on re-read: {bad}")
    for fmt, info in inv["formats"].items():
        print(f"{fmt}: {info['units']} units, {info['distinct_tokens']:,} distinct tokens")
        for b, s in info["lengths"].items():
            print(f"  {b:>5}: distinct fill {s['distinct_fill']:.0%}, contexts {s['families']}, "
                  f"fill min {s['fill_min']}, reused {s['reused_units']}, "
                  f"missing {s['missing_examples']}")
    if inv["rejections"]:
        print("rejections:", json.dumps(inv["rejections"]))
    print("\n".join(build.quality_lines(inv)))
    reread = _report_second_reader(Path(args.out), args.formats, args.second_reader)
    _report_cells(result)
    return 0 if bad == 0 and reread == 0 else 1


def _timed(fn):
    """``fn`` whose result carries (process id, CPU seconds, wall seconds) of its call."""

    def timed(item):
        t, c = time.time(), time.process_time()
        out = fn(item)
        out.timing = (os.getpid(), time.process_time() - c, time.time() - t)
        return out

    return timed


def _build_sharded(params, raw: Path, out: Path, runner: str, workers: int,
                   scratch=None):
    """:func:`treeagent.bench.cells.build_sharded` over the runner, printing each task's
    cells, process, CPU and wall seconds."""
    from treeagent.bench import cells
    from treeagent.bench.contexts import bucket_label
    from treeagent.pipeline.runners import describe, map_on_runner

    spec = {"name": runner, "address": None, "workers": workers}
    done: list = []

    def mapper(fn, items):
        results = map_on_runner(_timed(fn), items, runner=spec, name="build-cell")
        done.extend(results)
        return results

    t0 = time.time()
    result = cells.build_sharded(params, raw, out, mapper, workers=workers, scratch=scratch)
    print(f"sharded over {describe(spec)}: {len(done)} tasks, {time.time() - t0:.0f} s "
          "(cluster start, merge, gate and writes included)")
    busy: dict[int, list[float]] = {}
    for r in done:
        pid, cpu, wall = r.timing
        busy.setdefault(pid, [0.0, 0.0])
        busy[pid][0] += cpu
        busy[pid][1] += wall
        print(f"  {r.fmt:>10} {'/'.join(map(bucket_label, r.lengths)):<24} process {pid}: "
              f"CPU {cpu:.0f} s, wall {wall:.0f} s")
    for pid, (cpu, wall) in busy.items():
        print(f"  process {pid}: CPU {cpu:.0f} s over {wall:.0f} s of tasks")
    return result


def _report_cells(result) -> None:
    """Per format x length (all tasks): kept, distinct questions, distinct evidence
    units, the top unit's share of its (task, length) cell (the largest such share);
    the second reader's confirmations per format x length are printed above."""
    inv = result.inventory
    print("\nformat     length   kept  distinct q  evidence units  top unit share")
    for fmt, by_task in inv.get("quality", {}).items():
        rows = result.examples.get(fmt, [])
        cells = inv["variety"][fmt]["cells"]
        for bucket in next(iter(inv["counts"][fmt].values())):
            mine = [r for r in rows if r["bucket"] == bucket]
            distinct = sum(q["distinct_questions"].get(bucket, [0, 0])[0]
                           for q in by_task.values())
            units = {u for r in mine for u in r["source_ids"]}
            share = max((c["top_unit_examples"] / c["kept"] for k, c in cells.items()
                         if k.endswith("@" + bucket) and c["kept"]), default=0.0)
            print(f"{fmt:<10} {bucket:>6} {len(mine):>6} {distinct:>11} {len(units):>15} "
                  f"{share:>15.0%}")


def _report_second_reader(out: Path, formats: list[str], n: int) -> int:
    """Print the second reader's verdicts per format x length; 1 when any is unconfirmed."""
    t = time.time()
    confirmed, sampled, disagree, cells = second_reader(out, formats, n)
    print(f"\nsecond reader over {sampled} kept examples read back from disk "
          f"({time.time() - t:.0f} s): {confirmed} confirmed"
          + "".join(f"\n  {i}: {why}" for i, why in disagree[:10]))
    for (fmt, bucket), (ok, total) in sorted(cells.items(), key=lambda kv: (
            kv[0][0], _bucket_tokens(kv[0][1]))):
        print(f"  {fmt:>10} {bucket:>5}: {ok}/{total}")
    return 0 if confirmed == sampled else 1


def _bucket_tokens(bucket: str) -> int:
    return int(bucket[:-1]) * (1024 if bucket.endswith("K") else 1024**2)


def second_reader(out: Path, formats: list[str], n: int
                  ) -> tuple[int, int, list, dict[tuple[str, str], tuple[int, int]]]:
    """Re-read up to ``n`` kept examples from the written tables with
    :mod:`treeagent.bench.independent` only: round robin over format x task x length
    (a seeded shuffle within each), each context read once for all its sampled questions.
    Returns (confirmed, sampled, [(id, why)], {(format, bucket): (confirmed, sampled)})."""
    import random

    import pyarrow.parquet as pq

    from treeagent.bench import independent, io

    rows: dict[tuple[str, str], list[dict]] = {}
    units: dict[str, dict] = {}
    for fmt in formats:
        path = out / "examples" / f"{fmt}.parquet"
        if not path.is_file():
            continue
        t = pq.read_table(io.units_path(path, fmt), columns=["unit_id", "source", "text"])
        units[fmt] = {u: (s, x) for u, s, x in zip(*t.to_pydict().values())}
        for r in io.read_rows(path):
            rows.setdefault((fmt, r["task"], r["bucket"]), []).append(r)
    rng = random.Random(0)
    for key in sorted(rows):
        rng.shuffle(rows[key])
    picked: list[dict] = []
    while len(picked) < n and any(rows.values()):
        for key in sorted(rows):
            if rows[key] and len(picked) < n:
                picked.append(rows[key].pop())
    by_context: dict[tuple, list[dict]] = {}
    for r in picked:
        by_context.setdefault((r["format"], tuple(r["unit_ids"])), []).append(r)
    ok, bad = 0, []
    cells: dict[tuple[str, str], tuple[int, int]] = {}
    for (fmt, unit_ids), group in by_context.items():
        us = units[fmt]
        text = io.materialize(fmt, list(unit_ids), us)
        try:
            reading = independent.read_context(fmt, text)
            whys = [independent.confirm(r["task"], json.loads(r["spec"]),
                                        json.loads(r["answer"]), reading,
                                        [us[u][0] for u in unit_ids]) for r in group]
        except independent.Unconfirmed as exc:
            whys = [str(exc)] * len(group)
        for r, why in zip(group, whys):
            good, total = cells.get((fmt, r["bucket"]), (0, 0))
            cells[(fmt, r["bucket"])] = (good + (not why), total + 1)
            if why:
                bad.append((r["id"], why))
            else:
                ok += 1
    return ok, len(picked), bad, cells


def _digests(folder: Path) -> dict[str, str]:
    import hashlib

    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _versus_serial(params, raw: Path, out: Path, runner: str, workers: int) -> int:
    """Serial build, then the build sharded by cell over ``workers``: times and identity."""
    from functools import partial

    from treeagent.bench import build, cells, sources
    from treeagent.pipeline.runners import describe, map_on_runner

    spec = {"name": runner, "address": None, "workers": workers}
    t0 = time.time()
    units = {f: sources.units(f, raw_dir=raw) for f in params.formats}
    build.build(params, units, out / "serial")
    serial = time.time() - t0
    t1 = time.time()
    cells.build_sharded(params, raw, out / "sharded",
                        partial(map_on_runner, runner=spec, name="build-cell"), workers=workers)
    sharded = time.time() - t1
    a, b = _digests(out / "serial"), _digests(out / "sharded")
    same = a == b
    n = len(cells.cells(params, raw, workers))
    print(f"serial {serial:.1f} s; sharded over {describe(spec)} ({n} tasks) {sharded:.1f} s "
          f"(cluster start included); ratio {sharded / serial:.2f}")
    print(f"files byte-identical: {same} ({len(a)} files)")
    for name in sorted(set(a) | set(b)):
        print(f"  {a.get(name, '-')[:16]} {b.get(name, '-')[:16]} {name}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
