"""The one error every stage raises for an input it cannot read (a corrupt Parquet table,
a manifest that is not JSON): :class:`ArtifactError`, one line naming the file. The CLI
prints it and exits 2; a gate that meets it fails (:func:`treeagent.pipeline.gates.guarded_suites`);
a pipeline stage ends with it and exit 2 (flows/_common.py)."""

from __future__ import annotations

from pathlib import Path


class ArtifactError(ValueError):
    """A stage's input artifact cannot be read: ``path`` and why, on one line."""

    def __init__(self, path: str | Path, why: str) -> None:
        self.path, self.why = str(path), " ".join(str(why).split())
        super().__init__(f"{self.path}: {self.why}")
