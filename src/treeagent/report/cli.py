"""``treeagent score|query|report`` (paper 4.2-4.5, C.4-C.5).

Heavy libraries (duckdb, pandas, pyarrow, matplotlib) are imported inside the command
functions so that ``treeagent --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from treeagent.scoring import TASKS

QUERY_FORMATS = ("table", "csv", "json")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``score``, ``query`` and ``report`` subcommands."""
    p = sub.add_parser("score", help="score one response against a JSON reference (C.4)")
    p.add_argument("--task", required=True, choices=TASKS,
                   help="benchmark task whose matching rule scores the answer (C.4)")
    p.add_argument("--reference", required=True, help="reference answer as JSON text")
    p.add_argument("--prediction", required=True, help="raw model response ('-': stdin)")
    p.add_argument("--explain", action="store_true",
                   help="print the extracted answer, its values and the score as JSON")
    p.set_defaults(func=run_score)

    p = sub.add_parser("query", help="run SQL over the DuckDB views of runs/ and validated/")
    p.add_argument("sql", help="SQL text, or - to read it from standard input")
    p.add_argument("--db", help="DuckDB file (e.g. reports/treeagent.duckdb); default: "
                                "fresh in-memory views over the Parquet files under --root")
    p.add_argument("--root", default=".", help="project root holding runs/ and validated/")
    p.add_argument("--format", choices=QUERY_FORMATS, default="table", dest="out_format",
                   help="table (rich on a terminal, aligned text otherwise), csv with a "
                        "header row, or json (an array of row objects)")
    p.add_argument("--plain", action="store_true", help="plain text table even on a terminal")
    p.add_argument("--max-rows", type=int, help="rows to print (default: 200 for a table, "
                                                "all for csv and json)")
    p.add_argument("--allow-files", action="store_true",
                   help="let the SQL read and write files, attach databases and load "
                        "extensions (default: it reads only the views' Parquet files)")
    p.set_defaults(func=run_query)

    p = sub.add_parser("report", help="write Tables 1/3/4, Figures 2/3 and metrics.json")
    p.add_argument("--scores", default=None, help="scored Parquet file, folder or glob "
                                                  "(default: runs/**/scores*.parquet)")
    p.add_argument("--out", default="reports", help="output folder (default reports/)")
    p.add_argument("--dataset", default="json",
                   help="dataset for Figure 3, Tables 3-4 and the match rate (default json)")
    p.set_defaults(func=run_report)


def _fail(message: str) -> int:
    print(f"error: {' '.join(str(message).split())}", file=sys.stderr)
    return 2


def run_score(args: argparse.Namespace) -> int:
    from treeagent.scoring import extract_answer, score, split_values

    try:
        reference = json.loads(args.reference)
    except json.JSONDecodeError as exc:
        return _fail(f"--reference: {exc.msg} (line {exc.lineno} column {exc.colno})")
    prediction = sys.stdin.read() if args.prediction == "-" else args.prediction
    try:
        value = score(args.task, reference, prediction)
    except ValueError as exc:
        return _fail(f"--reference: {exc}")
    if args.explain:
        answer = extract_answer(prediction)
        print(json.dumps({"answer": answer, "values": split_values(answer), "score": value},
                         ensure_ascii=False))
    else:
        print(round(value, 6))
    return 0


def _text(value: Any) -> str:
    return "NULL" if value is None else str(value)


def format_plain(columns: list[str], rows: list[tuple]) -> str:
    """An aligned plain-text table (header, rule, rows)."""
    cells = [[_text(v) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    return "\n".join(lines)


def _json_value(value: Any) -> Any:
    """A DuckDB value as JSON: NaN/inf -> null, decimals and times as text."""
    import math

    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _print_rows(columns: list[str], rows: list[tuple], fmt: str, plain: bool) -> None:
    if fmt == "csv":
        import csv

        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
    elif fmt == "json":
        records = [{c: _json_value(v) for c, v in zip(columns, row)} for row in rows]
        print(json.dumps(records, ensure_ascii=False, allow_nan=False))
    elif sys.stdout.isatty() and not plain:
        from rich.console import Console
        from rich.table import Table

        table = Table(*columns)
        for row in rows:
            table.add_row(*[_text(v) for v in row])
        Console().print(table)
    else:
        print(format_plain(columns, rows))


_VIEW_FILE = re.compile(r"'((?:[^']|'')+?\.parquet)'")


def lock_down(con: Any) -> None:
    """No file access for the SQL that follows, beyond the Parquet files the views read
    (external access off, the configuration locked): ``query`` runs SQL it was given,
    which must not read other files, write any, attach databases or load extensions."""
    files: set[str] = set()
    for (sql,) in con.execute("SELECT sql FROM duckdb_views() WHERE NOT internal").fetchall():
        for name in _VIEW_FILE.findall(sql or ""):
            name = name.replace("''", "'")
            files |= {name, str(Path(name).resolve())}
    listed = ", ".join("'" + f.replace("'", "''") + "'" for f in sorted(files))
    con.execute(f"SET allowed_paths = [{listed}]")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def run_query(args: argparse.Namespace) -> int:
    import duckdb

    from treeagent.report import db

    sql = sys.stdin.read() if args.sql == "-" else args.sql
    if not sql.strip():
        return _fail("query: empty SQL")
    limit = args.max_rows if args.max_rows is not None else (
        200 if args.out_format == "table" else None)
    if limit is not None and limit < 0:
        return _fail("--max-rows: must be 0 or more")
    try:
        con = db.connect(args.db, args.root)
    except (FileNotFoundError, duckdb.Error) as exc:
        return _fail(f"--db: {exc}" if args.db else str(exc))
    if not args.allow_files:
        try:
            lock_down(con)
        except duckdb.Error as exc:
            con.close()
            return _fail(f"query: cannot turn file access off: {exc}")
    try:
        result = con.execute(sql)
        if result.description is None:
            return 0
        columns = [d[0] for d in result.description]
        rows = result.fetchall() if limit is None else result.fetchmany(limit + 1)
    except duckdb.Error as exc:
        return _fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    finally:
        con.close()
    more = limit is not None and len(rows) > limit
    rows = rows[:limit]
    _print_rows(columns, rows, args.out_format, args.plain)
    count = f"({len(rows)}{'+' if more else ''} row{'' if len(rows) == 1 else 's'})"
    if args.out_format == "table":
        print(count)
    elif more:
        print(f"{count}: more rows left out by --max-rows {limit}", file=sys.stderr)
    return 0


def run_report(args: argparse.Namespace) -> int:
    from pathlib import Path

    import duckdb

    from treeagent.report import db
    from treeagent.report.render import build_report

    source = args.scores or db.DEFAULT_SCORES
    files = db.scored_files(source)
    if not files:
        return _fail(f"--scores: no Parquet files match {source}")
    try:
        scores = db.load_scores(files)
        if scores.empty:
            return _fail(f"--scores: {source} holds no scored rows")
        metrics = build_report(scores, args.out, dataset=args.dataset)
    except (ValueError, OSError) as exc:
        return _fail(str(exc))
    views = db.discover(".")
    views["scores"] = files
    try:
        db.write_database(Path(args.out) / "treeagent.duckdb", views)
    except (duckdb.Error, OSError) as exc:
        return _fail(f"{args.out}/treeagent.duckdb: {exc}")
    mean = metrics.get("agent_mean", {})
    summary = ", ".join(f"{m} {v:.2f}" if v is not None else f"{m} —" for m, v in mean.items())
    print(f"wrote {args.out}/report.md, index.html, figures/, metrics.json"
          f" ({metrics['rows']} rows; agent mean AVG.: {summary})")
    return 0
