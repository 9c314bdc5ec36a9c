"""``python -m treeagent``: the ``treeagent`` command."""

from treeagent.cli.main import main

raise SystemExit(main())
