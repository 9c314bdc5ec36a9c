"""``python -m treeagent.llm save-hf|tokenizer|revision [SPEC]`` (see ``models.main``)."""

from treeagent.llm.models import main

raise SystemExit(main())
