"""``treeagent models lock``: resolve each evaluated agent's model to an immutable
revision and write ``models.lock`` (:mod:`treeagent.llm.lock`; docs/pipeline.md, "Rerun
when a model changes").

Prints one line per agent (``agent  source  model  revision``) and whether the file
changed. A bad params file, a model that does not resolve, a moving hub label that
cannot be looked up (without ``--allow-moving``) or a served endpoint that does not
answer is one ``error:`` line, exit 2; the lock file is then left as it was.
"""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("models", help="pin the agents' models: models lock")
    verbs = p.add_subparsers(dest="models_command", required=True, metavar="VERB")
    lock = verbs.add_parser("lock", help="resolve each evaluated agent's model to an "
                            "immutable revision and write models.lock")
    lock.add_argument("--params", default="params.yaml", help="pipeline parameters")
    lock.add_argument("-o", "--output", default="models.lock", help="the lock file")
    lock.add_argument("--allow-moving", action="store_true",
                      help="lock a hub label (e.g. main) that cannot be looked up as is; "
                           "its calls bypass the call cache")
    lock.set_defaults(func=run_lock)


def run_lock(args: argparse.Namespace) -> int:
    return lock(args.params, args.output, allow_moving=args.allow_moving)


def lock(params_path: str, output: str = "models.lock", *, allow_moving: bool = False) -> int:
    """Write the lock for ``params_path``; print one line per agent; exit status."""
    from treeagent.llm.lock import LockError, lock_entries, write_lock
    from treeagent.pipeline import config

    try:
        params = config.load(params_path)
        entries = lock_entries(params, allow_moving=allow_moving)
        changed = write_lock(output, entries)
    except config.ParamsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except LockError as exc:
        print(f"error: {params_path}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {output}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    for agent, entry in entries.items():
        note = "  (moving label: calls bypass the cache)" if entry.moving else ""
        print(f"{agent}  {entry.source}  {entry.model_id}  {entry.revision}{note}")
    print(f"{output}: {'written' if changed else 'unchanged'}")
    return 0
