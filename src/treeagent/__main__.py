"""``python -m treeagent``: the ``treeagent`` command."""

from treeagent.cli import main

raise SystemExit(main())
