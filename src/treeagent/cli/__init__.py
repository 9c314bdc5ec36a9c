"""The ``treeagent`` command line: one module per subcommand, ``main`` dispatches."""
