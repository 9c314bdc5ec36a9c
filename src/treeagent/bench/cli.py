"""``treeagent bench build|show``: build the validated benchmark; print one example (4.1, B.1).

Heavy imports (tokenizers, pandas, Great Expectations) stay inside the commands.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from treeagent.paths import mirror_from_env
from treeagent.pipeline.config import PRESETS, Params
from treeagent.pipeline.config import preset as config_preset
from treeagent.registry import FORMATS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="build and inspect the benchmark (paper 4.1, B.1)")
    bsub = p.add_subparsers(dest="bench_command", required=True)
    b = bsub.add_parser("build", help="acquire, build and validate examples into validated/")
    b.add_argument("--preset", choices=sorted(PRESETS), default="demo",
                   help="the pipeline preset (treeagent.pipeline.config) whose build and acquire "
                        "settings every option below falls back to: demo builds what "
                        "`make demo` builds")
    b.add_argument("--formats", nargs="+", metavar="FORMAT",  # names read when shown
                   help="datasets to build (%(formats)s; default: the preset's)"
                   ).formats = FORMATS.names
    b.add_argument("--tasks", nargs="+", metavar="TASK",
                   help="tasks of Table 4 (one_field, conditional_count, ...; default: all)")
    b.add_argument("--lengths", nargs="+", metavar="LEN",
                   help="buckets: 8K 16K ... 1M, demo-2K demo-4K, or token counts")
    b.add_argument("--per-cell", type=int,
                   help="examples per (task, length) (default: the preset's)")
    b.add_argument("--questions-per-context", type=int,
                   help="questions asked of one built context (default: the preset's)")
    b.add_argument("--mode", choices=["live", "mirror", "sample"],
                   help="where acquisition reads: live APIs (network), a local mirror, or "
                        "the samples shipped in the package (default: the preset's)")
    b.add_argument("--mirror", help="mirror folder: <format>/<folder>/... with each folder's "
                   "<folder>.manifest.json (default: $TREEAGENT_MIRROR)")
    b.add_argument("--raw", default="raw", help="raw/ folder (acquire writes it)")
    b.add_argument("--no-acquire", action="store_true", help="use raw/ as it is")
    b.add_argument("--js-repo", action="append", default=[], metavar="NAME=PATH",
                   help="a local clone (bare or not) of a JavaScript repository, read at its "
                        "pinned commit (eslint, webpack, babel, ...; repeat per repository; "
                        "the pipeline's acquire.js_repos)")
    b.add_argument("--tokenizers", nargs="+", metavar="NAME",
                   help="tokenizers every context length must hold for (default: the "
                        "preset's models)")
    b.add_argument("--tolerance", type=float,
                   help="allowed relative deviation of a context's tokens from its length "
                        "bucket, in (0, 1) (default: the preset's)")
    b.add_argument("--allow-reuse", action="store_true",
                   help="let distractor units repeat inside a context (flagged per example)")
    b.add_argument("--seed", type=int,
                   help="seed of every sampling choice (default: the preset's)")
    b.add_argument("--no-second-reader", action="store_true",
                   help="build formats that declare no second reader (entry point group "
                        "treeagent.second_reader): their examples are not confirmed "
                        "independently and carry the flag 'unconfirmed: second reader "
                        "absent' (refused otherwise)")
    b.add_argument("--split", action="append", default=[], metavar="FORMAT:SPLIT=N",
                   help="build a train or dev split of N examples of FORMAT besides its test "
                        "grid, from disjoint source documents (e.g. json:dev=80; repeat; "
                        "replaces the preset's build.splits; paper B.2)")
    b.add_argument("--no-splits", action="store_true",
                   help="build the test grid only, whatever the preset's build.splits")
    b.add_argument("--out", default="validated", help="folder the examples are written to")
    b.add_argument("--runner", choices=("thread", "dask"), default="thread",
                   help="task runner of the (format, length) cells: threads in this process "
                        "or Dask (default: %(default)s; outputs are the same either way)")
    b.add_argument("--workers", type=int, default=1,
                   help="threads, or Dask LocalCluster worker processes (default: 1: serial)")
    b.add_argument("--address", metavar="URL",
                   help="a running Dask scheduler (tcp://HOST:8786) instead of a LocalCluster")
    b.add_argument("--allow-empty", action="store_true",
                   help="exit 0 even when a requested format or cell gets no example")
    b.set_defaults(func=run_build)
    s = bsub.add_parser("show", help="print one example and where its evidence is")
    s.add_argument("id")
    s.add_argument("--out", default="validated", help="folder the examples were written to")
    s.add_argument("--json", action="store_true", help="print the example as JSON")
    s.set_defaults(func=run_show)
    from treeagent.bench import export

    export.register(bsub)


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def params_from_args(args: argparse.Namespace) -> tuple[Any, str]:
    """BuildParams and the acquisition mode from the pipeline preset (one set of presets,
    :mod:`treeagent.pipeline.config`) and the overrides."""
    from treeagent.bench.build import BuildParams
    from treeagent.bench.contexts import parse_bucket

    preset = Params(config_preset(args.preset))
    mode = args.mode or preset["acquire.mode"]
    kw: dict[str, Any] = preset.build_kwargs()
    if args.formats:
        kw["formats"] = tuple(args.formats)
    if args.tasks:
        kw["tasks"] = tuple(args.tasks)
    if args.lengths:
        kw["lengths"] = tuple(parse_bucket(x) for x in args.lengths)
    for name in ("per_cell", "questions_per_context", "tolerance"):
        if getattr(args, name) is not None:
            kw[name] = getattr(args, name)
    if args.tokenizers:
        kw["tokenizers"] = tuple(args.tokenizers)
    if args.allow_reuse:
        kw["allow_reuse"] = True
    if args.seed is not None:
        kw["seed"] = args.seed
    if getattr(args, "no_second_reader", False):
        kw["second_reader"] = False
    if getattr(args, "no_splits", False):
        kw["splits"] = {}
    if getattr(args, "split", None):
        kw["splits"] = splits_from_args(args.split)
    return BuildParams(**kw), mode


def splits_from_args(items: list[str]) -> dict[str, dict[str, int]]:
    """``["json:dev=80", "json:train=330"]`` -> ``{"json": {"dev": 80, "train": 330}}``;
    ValueError names a malformed one."""
    out: dict[str, dict[str, int]] = {}
    for item in items:
        fmt, _, rest = item.partition(":")
        name, sep, n = rest.partition("=")
        if not (fmt and sep and name) or not n.isdigit():
            raise ValueError(f"--split {item!r}: expected FORMAT:SPLIT=N (e.g. json:dev=80)")
        out.setdefault(fmt, {})[name] = int(n)
    return out


def js_repos_from_args(pairs: list[str]) -> dict[str, str]:
    """``["eslint=PATH", ...]`` -> ``{"eslint": "PATH"}``; ValueError names a bad one."""
    from treeagent.bench.sources import JS_REPOS

    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--js-repo {pair!r}: expected NAME=PATH")
        if name not in JS_REPOS:
            raise ValueError(f"--js-repo {pair!r}: unknown repository {name!r} "
                             f"(choose from {', '.join(JS_REPOS)})")
        if not Path(path).exists():
            raise ValueError(f"--js-repo {pair!r}: {path} does not exist")
        out[name] = path
    return out


def run_build(args: argparse.Namespace) -> int:
    try:
        params, mode = params_from_args(args)
        js_repos = js_repos_from_args(getattr(args, "js_repo", []) or [])
    except ValueError as exc:
        return _fail(str(exc))
    mirror = args.mirror or (mirror_from_env() if mode == "mirror" else None)
    if mode == "mirror" and (mirror is None or not Path(mirror).is_dir()):
        return _fail(f"--mirror: {mirror or '(none)'} is not a folder")
    from treeagent.bench import build, sources
    from treeagent.pipeline.progress import Progress
    from treeagent.tokenizers import tokens

    try:
        for name in params.tokenizers:
            tokens.load(name)
    except tokens.TokenizerError as exc:
        return _fail(f"--tokenizers: {exc}")
    try:
        if not args.no_acquire:
            sources.acquire(mode, formats=params.formats, raw_dir=args.raw, mirror_dir=mirror,
                            js_repos=js_repos or None, progress=sys.stderr.isatty())
        sharded = args.workers > 1 or args.runner != "thread" or args.address
        units = {} if sharded else {f: list(sources.units(f, raw_dir=args.raw))
                                    for f in params.formats}
    except (ValueError, OSError) as exc:
        return _fail(str(exc))
    if args.workers < 1:
        return _fail(f"--workers: {args.workers} is not a positive number")
    if args.address and args.runner != "dask":
        return _fail("--address needs --runner dask")
    # examples kept per format of the grid's need; sharded, each cell task shows its own
    need = params.per_cell * len(params.tasks) * len(params.lengths)
    with Progress("build", dict.fromkeys(params.formats, need), enabled=not sharded) as bar:
        if sharded:
            from functools import partial

            from treeagent.bench.cells import build_sharded
            from treeagent.pipeline.runners import map_on_runner

            runner = {"name": args.runner, "address": args.address, "workers": args.workers}
            try:  # a worker reads the sources: what it cannot read ends in one line
                result = build_sharded(params, args.raw, Path(args.out),
                                       partial(map_on_runner, runner=runner, name="build-cell"),
                                       workers=args.workers)
            except (ValueError, OSError) as exc:
                return _fail(str(exc))
        else:
            result = build.build(params, units, Path(args.out), progress=bar.count)
    inv = result.inventory
    for line in build.quality_lines(inv):
        print(line)
    print(f"{inv['examples']} examples kept, {inv['rejected']} rejected -> {args.out}/")
    for fmt, info in inv["formats"].items():
        short = {b: s["distinct_fill"] for b, s in info["lengths"].items()
                 if s["missing_examples"] or s["distinct_fill"] < 1}
        if short:
            print(f"  {fmt}: short cells / distinct fill {short}")
    from treeagent.bench import shortfall, splits

    for line in splits.shortfall_lines(inv.get("splits", {})):
        print(f"warning: {line}", file=sys.stderr)
    test = [r for r in result.rejections if splits.split_of_id(r["format"], r["id"]) == "test"]
    empty = shortfall.report(inv, test) + splits.empty_lines(inv.get("splits", {}))
    for line in empty:
        print(f"{'warning' if args.allow_empty else 'error'}: {line}", file=sys.stderr)
    if empty and not args.allow_empty:
        print("error: pass --allow-empty to accept empty formats or cells", file=sys.stderr)
        return 1
    return 0


# ------------------------------------------------------------------ show


def _locate(fmt: str, context: str, unit_ids: list[str], spec: dict[str, Any],
            extract: Any, sources_of: dict[str, str]) -> list[str]:
    """Where the records a spec names sit in the context: unit, path and line."""
    from treeagent.algorithm.tree import LineIndex
    from treeagent.bench.validate import unit_pieces

    names = spec.get("records") or ([spec["record"]] if "record" in spec else [])
    pieces = unit_pieces(fmt, context)
    lines = LineIndex(context)
    out, pos = [], 0
    for i, (uid, p) in enumerate(zip(unit_ids, pieces)):
        start = context.index(p, pos)
        pos = start + len(p)
        recs = extract(fmt, sources_of.get(uid, ""), p) if extract else []
        for r in recs:
            if r.description in names or (not names and r.kind == spec.get("kind")):
                at = p.find(r.description)
                line = lines.line_col(start + max(at, 0))[0]
                out.append(f"unit {i + 1} of {len(unit_ids)} ({uid}), {r.path}, "
                           f"line {line}: {r.kind} \"{r.description}\"")
    return out


def run_show(args: argparse.Namespace) -> int:
    from treeagent.bench import io

    fmt = next((f for f in FORMATS.names if args.id.startswith(f + "-")), None)
    if fmt is None:
        return _fail(f"{args.id}: not an example id (<format>-<task>-<bucket>-f<n>-q<n>)")
    from treeagent.bench import splits

    path = splits.split_dir(args.out, splits.split_of_id(fmt, args.id)) / "examples" / \
        f"{fmt}.parquet"
    if not path.is_file():
        return _fail(f"{path}: not found (run `treeagent bench build` first)")
    try:
        ex = next(io.read_examples(path, ids=[args.id]), None)
    except (OSError, ValueError) as exc:
        return _fail(str(exc))
    if ex is None:
        return _fail(f"{args.id}: no such example in {path}")
    row = next(r for r in io.read_rows(path) if r["id"] == args.id)
    units = io.load_units(io.units_path(path, fmt))
    try:
        from treeagent.bench.sources import records_from_text as extract
    except ImportError:  # pragma: no cover - adapters absent
        extract = None
    evidence = _locate(fmt, ex.context, row["unit_ids"], ex.spec, extract,
                       {u: s for u, (s, _) in units.items()})
    if args.json:
        print(json.dumps({"id": ex.id, "question": ex.question, "answer": ex.answer,
                          "spec": ex.spec, "tokens": ex.tokens, "source_ids": ex.source_ids,
                          "evidence": evidence}, ensure_ascii=False, indent=1))
        return 0
    print(f"{ex.id}  [{ex.format}, {ex.task}, {row['bucket']}, tokens {ex.tokens}]")
    print(f"question: {ex.question}")
    print(f"answer:   {json.dumps(ex.answer, ensure_ascii=False)}")
    print(f"spec:     {json.dumps(ex.spec, ensure_ascii=False)}")
    print(f"sources:  {', '.join(ex.source_ids[:8])}"
          + (f" (+{len(ex.source_ids) - 8})" if len(ex.source_ids) > 8 else ""))
    print("evidence:")
    for line in evidence[:12]:
        print(f"  {line}")
    if len(evidence) > 12:
        print(f"  ... {len(evidence) - 12} more")
    return 0
