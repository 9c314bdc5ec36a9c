"""Shared start-up of the pipeline flows: environment defaults, hash seed, parameters.

Import this module before Prefect: it turns Prefect's and DVC's analytics off and gives
the temporary Prefect server time to start on a busy machine. Set ``PREFECT_API_URL`` (a
running ``prefect server start``, or what ``flows/benchmark.py`` exports to the DVC
stages it runs) so that stage processes share one server instead of starting one each.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "src") not in sys.path and (ROOT / "src" / "treeagent").is_dir():
    sys.path.insert(0, str(ROOT / "src"))  # a checkout without `pip install -e .`

from treeagent.pipeline import config, environment  # noqa: E402

environment.prefect_environment()  # before Prefect is imported

PARAMS = os.environ.get("TREEAGENT_PARAMS", "params.yaml")


def ensure_hashseed(seed: int) -> None:
    """Re-run this process with ``PYTHONHASHSEED=seed`` unless it already has it (C.3:
    deterministic preprocessing fixes the Python hash seed)."""
    if os.environ.get("PYTHONHASHSEED") != str(seed):
        os.environ["PYTHONHASHSEED"] = str(seed)
        os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])


def load_params(path: str | os.PathLike[str] = PARAMS) -> config.Params:
    """Validated parameters; on error print the problems and exit 2 (a DVC stage fails)."""
    try:
        return config.load(path)
    except config.ParamsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


@contextlib.contextmanager
def environ(name: str, value: str) -> Iterator[None]:
    """``$name`` set to ``value`` in this process, and so in every stage it starts, for
    the duration; afterwards its previous value (or its absence) is back, also on failure."""
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


@contextlib.contextmanager
def artifact_errors() -> Iterator[None]:
    """A stage input that cannot be read (a corrupt Parquet table or manifest) ends the
    stage with one line naming it and exit 2, not a library traceback."""
    from treeagent.pipeline.artifacts import ArtifactError

    try:
        yield
    except ArtifactError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def start(params_path: str | os.PathLike[str] = PARAMS) -> config.Params:
    """Load the parameters and fix the hash seed (re-executing once if needed)."""
    params = load_params(params_path)
    ensure_hashseed(params["pythonhashseed"])
    return params
