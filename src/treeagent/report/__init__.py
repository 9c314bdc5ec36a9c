"""Scored rows, DuckDB views, Tables 1/3/4, Figures 2/3 and metrics (paper 4.2-4.5, C.4-C.5).

Modules: ``schema`` (scored-row schema, :func:`~treeagent.report.schema.score_rows`),
``db`` (DuckDB views over runs/ and validated/), ``tables`` (C.4 aggregation),
``figures`` (PNG figures), ``render`` (report.md, index.html, metrics.json) and ``cli``.
Nothing heavy is imported here, so ``treeagent.report.cli`` loads fast.
"""
