"""``treeagent history``: scores per version x agent x method x model revision over the
recorded result versions; ``treeagent history record``: record the current run as a new
version and ``dvc push`` its outputs (:mod:`treeagent.report.versions`; docs/pipeline.md,
"Rerun when a model changes").

Exit status: 0, also when no version is recorded yet (one line says so) and when no DVC
remote is configured (one line says nothing was pushed); 2 on bad input (not a git
repository, an agent or method no version has, a run with missing files); 1 when the
push fails (one line, credentials masked).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

FORMATS = ("table", "json", "csv")
_SECRET_NAME = re.compile(r"(SECRET|PASSWORD|PASSWD|TOKEN|KEY|CREDENTIAL)", re.I)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``history`` and its verb ``record``."""
    p = sub.add_parser("history", help="scores per version x agent x method x model "
                                       "revision over the recorded reruns; history record")
    p.add_argument("--agent", help="only this agent")
    p.add_argument("--method", help="only this method")
    p.add_argument("--format", choices=FORMATS, default="table", help="output format")
    p.add_argument("--project", default=".", help="the project (a git working tree)")
    p.add_argument("--branch", default="results", help="the branch holding the versions")
    p.set_defaults(func=run_history)
    verbs = p.add_subparsers(dest="history_command", metavar="VERB")
    r = verbs.add_parser("record", help="record the current run (models.lock, dvc.lock, "
                         "metrics, per-example scores) as a version, then dvc push")
    r.add_argument("--project", default=".", help="the project (a git working tree)")
    r.add_argument("--params", default="params.yaml", help="the project's parameters")
    r.add_argument("--branch", default="results", help="the branch holding the versions")
    r.add_argument("--no-push", dest="push", action="store_false",
                   help="record only (default: dvc push to the default DVC remote after)")
    r.set_defaults(func=run_record)


def _fail(message: str, status: int = 2) -> int:
    print(f"error: {message}", file=sys.stderr)
    return status


def history_frame(project: str | Path, branch: str) -> Any:
    """The ``history`` view's rows (:func:`treeagent.report.history.create_history`)."""
    import duckdb

    from treeagent.report.history import create_history
    from treeagent.report.versions import toplevel

    toplevel(project)  # NotARepository: one line, not an empty view
    con = duckdb.connect()
    try:
        create_history(con, project, branch)
        return con.execute("SELECT * FROM history").df()
    finally:
        con.close()


def run_history(args: argparse.Namespace) -> int:
    from treeagent.report.versions import VersionError

    try:
        rows = history_frame(args.project, args.branch)
    except VersionError as exc:
        return _fail(str(exc))
    if rows.empty:
        print(f"no recorded result version: branch {args.branch!r} does not exist yet "
              "(record one with `treeagent history record`)")
        return 0
    for column in ("agent", "method"):
        wanted = getattr(args, column)
        if wanted is None:
            continue
        if wanted not in set(rows[column]):
            known = ", ".join(sorted(set(rows[column])))
            return _fail(f"--{column} {wanted}: no recorded version has it (recorded: {known})")
        rows = rows[rows[column] == wanted]
    _print(rows, args.format)
    return 0


def _print(rows: Any, form: str) -> None:
    import csv
    import json

    records = [{k: (None if v != v else v) for k, v in r.items()}  # NaN -> None
               for r in rows.to_dict(orient="records")]
    if form == "json":
        for r in records:
            r["score"] = round(r["score"], 4)
        print(json.dumps(records, indent=2, default=str))
    elif form == "csv":
        writer = csv.DictWriter(sys.stdout, fieldnames=list(rows.columns), lineterminator="\n")
        writer.writeheader()
        writer.writerows(records)
    else:
        table = [list(rows.columns)] + [
            [str(r["version"]), r["commit"], r["recorded"], r["agent"], r["method"],
             str(r["model"] or "—"), str(r["revision"] or "—"), f"{r['score']:.2f}", str(r["n"])]
            for r in records]
        widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
        for row in table:
            print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())


def masked(text: str, environ: dict[str, str] | None = None) -> str:
    """``text`` with URL credentials (``scheme://user:pass@``) and the values of secret
    environment variables (names with SECRET, PASSWORD, TOKEN, KEY, CREDENTIAL) replaced
    by ``***``."""
    text = re.sub(r"(\w+://)[^/\s@]+@", r"\1***@", text)
    env = os.environ if environ is None else environ
    for name, value in env.items():
        if _SECRET_NAME.search(name) and len(value) >= 4:
            text = text.replace(value, "***")
    return text


def _dvc(project: str | Path, *args: str) -> subprocess.CompletedProcess[str]:
    local = Path(sys.executable).parent / "dvc"
    return subprocess.run([str(local) if local.exists() else "dvc", *args], cwd=project,
                          text=True, capture_output=True, check=False)


def push(project: str | Path) -> int:
    """``dvc push`` to the project's default remote: 0 (also when none is configured:
    one line says so), 1 with one masked line when the push fails."""
    named = _dvc(project, "remote", "default")
    remote = named.stdout.strip()
    if named.returncode or not remote:
        print("no DVC remote configured: nothing pushed (the outputs stay in this host's "
              "DVC cache); add one with `dvc remote add -d --local <name> <url>`")
        return 0
    done = _dvc(project, "push")
    if done.returncode:
        lines = [x.strip() for x in (done.stderr + done.stdout).splitlines() if x.strip()]
        why = [x for x in lines if x.startswith("ERROR")] or lines[-1:] or [f"exit {done.returncode}"]
        return _fail(f"dvc push to remote {remote!r} failed: "
                     f"{masked(why[-1].removeprefix('ERROR: '))}", 1)
    print(f"pushed the run's outputs to DVC remote {remote!r}")
    return 0


def run_record(args: argparse.Namespace) -> int:
    return record(args.project, args.params, args.branch, args.push)


def record(project: str, params: str = "params.yaml", branch: str = "results",
           push_outputs: bool = True) -> int:
    """Record the run, print one line about the version, push; exit status."""
    from treeagent.report.versions import VersionError
    from treeagent.report.versions import record as record_version

    try:
        done = record_version(project, params, branch)
    except VersionError as exc:
        return _fail(str(exc))
    v = done.version
    if done.created:
        print(f"recorded version {v.number} ({v.short}) on branch {branch!r}")
    else:
        print(f"unchanged: version {v.number} ({v.short}) already records this run")
    return push(project) if push_outputs else 0
