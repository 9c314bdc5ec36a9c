"""Where the test suite's CPU goes: every Python process it starts, grouped by command.

    python benchmarks/suite_cpu.py [PYTEST ARGS ...]   # default: the README's test command

runs pytest (``-m "not vllm" -n <cores + 1> --dist loadfile``, as ``make test`` does,
unless arguments are given) with a
``sitecustomize`` module on ``PYTHONPATH`` that appends, when each Python process exits,
its command, CPU seconds (user + system, its own threads) and wall seconds to a log; then
prints the suite's wall and CPU time (``os.wait4`` of pytest: all its descendants) and
the CPU by command (the pipeline stages, ``dvc``, the xdist workers running tests in
process, ...). A process killed by a signal (Prefect's API servers, dask workers) writes
no line: their CPU is the difference between the total and the logged sum. A process
that imported Prefect's server module (a flow run without ``PREFECT_API_URL``, which
starts a temporary API server, ~10 CPU s) is counted apart.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HOOK = '''import atexit, json, os, sys, time
_t0 = time.time()
def _log():
    t = os.times()
    try:
        with open({log!r}, "a") as f:
            f.write(json.dumps({{"argv": sys.argv, "cpu": t.user + t.system,
                                "wall": time.time() - _t0,
                                "temporary_server": "prefect.server.api.server" in sys.modules,
                                "test": os.environ.get("PYTEST_CURRENT_TEST", "")
                                }}) + "\\n")
    except Exception:
        pass
atexit.register(_log)
'''


def command(argv: list[str]) -> str:
    """A short name for a process: the script or tool and its first argument."""
    if not argv or argv[0] in ("-c", ""):
        return "python -c (xdist workers: tests in process; spawned helpers)"
    parts = [Path(a).name if "/" in a else a for a in argv[:2]]
    if parts[0] in ("pytest", "-m") or argv[0].endswith("pytest/__main__.py"):
        return "pytest (main process: tests in process without xdist)"
    if len(parts) > 1 and parts[1].startswith("-"):
        parts = parts[:1]
    return " ".join(parts)


def main(args: list[str]) -> int:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    pytest_args = args or ["-m", "not vllm", "-n", str((cores or 1) + 1), "--dist", "loadfile"]
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "processes.jsonl"
        (Path(tmp) / "sitecustomize.py").write_text(HOOK.format(log=str(log)))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (tmp, env.get("PYTHONPATH")) if p)
        start = time.time()
        proc = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                 *pytest_args], cwd=ROOT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.time() - start
        rows = [json.loads(line) for line in log.read_text().splitlines()] \
            if log.exists() else []
    # wait4's usage: pytest and every descendant it (or they) waited for
    all_cpu = usage.ru_utime + usage.ru_stime
    by: dict[str, list[float]] = collections.defaultdict(list)
    temporary: collections.Counter[str] = collections.Counter()
    temporary_by_file: collections.Counter[str] = collections.Counter()
    for r in rows:
        by[command(r["argv"])].append(r["cpu"])
        if r.get("temporary_server") and r.get("test"):  # a subprocess of a test
            temporary[command(r["argv"])] += 1
            temporary_by_file[r["test"].split("::")[0]] += 1
    logged = sum(sum(v) for v in by.values())
    print(f"\nexit {os.waitstatus_to_exitcode(status)}; wall {wall:.0f} s; CPU of pytest and "
          f"its descendants {all_cpu:.0f} s; logged at exit {logged:.0f} s in {len(rows)} "
          f"processes; not logged (killed: API servers, dask workers) "
          f"{all_cpu - logged:.0f} s")
    print(f"{'CPU s':>8} {'share':>6} {'procs':>6} {'temp':>5}  command "
          "(temp: processes that started a temporary Prefect server)")
    for name, cpus in sorted(by.items(), key=lambda kv: -sum(kv[1])):
        print(f"{sum(cpus):8.1f} {sum(cpus) / all_cpu:6.1%} {len(cpus):6d} "
              f"{temporary[name]:5d}  {name}")
    if temporary_by_file:
        print("temporary Prefect servers started by the subprocesses of each test file:",
              ", ".join(f"{f} {n}" for f, n in temporary_by_file.most_common()))
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
