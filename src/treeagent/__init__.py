"""treeagent: structure-aware sectioning and memory agents for long hierarchical data.

>>> import treeagent
>>> chunks = treeagent.chunk(open("events.json").read(), chunk_size=512)
>>> chunks[0].path, chunks[0].token_count, chunks[0].start_index

``chunk``, ``TreeChunker`` and ``Chunk`` are imported on first use (the command line
starts without them).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"
__all__ = ["Chunk", "TreeChunker", "chunk"]


def __getattr__(name: str) -> Any:
    if name in __all__:  # the library API; the pipeline's stages never load it
        return getattr(importlib.import_module("treeagent.chunking"), name)
    raise AttributeError(f"module 'treeagent' has no attribute {name!r}")
