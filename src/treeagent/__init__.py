"""treeagent: structure-aware sectioning and memory agents for long hierarchical data."""

__version__ = "0.1.0"
