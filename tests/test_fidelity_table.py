"""docs/fidelity.md stays tied to the tests.

The fidelity table (agent x point: upstream behaviour, ours, why different) names in
its last column the tests that pin each row. Here: every named test exists (test
functions collected with ``ast``, no pytest internals), every row names at least one,
every agent of :data:`treeagent.agents.AGENTS` has a row for each required point, and
the paper-level points (agent ``all``) are covered.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

from treeagent.agents import AGENTS

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "fidelity.md"
COLUMNS = ("Agent", "Point", "Upstream", "Ours", "Why different", "Kept true by")
TEST_ID = re.compile(r"tests/[\w/]+\.py::\w+(?:::\w+)?")
AGENT_POINTS = ("Templates", "Reply parsing", "Limits", "Thinking", "Answer", "Early stop")
"""Points every agent's rows must cover."""
EXTRA_POINTS = {"infmem": ("Tool protocol", "Retrieval", "Input length"),
                "memreread": ("Tag contract", "Rereading"),
                "rememr1": ("Retrieval", "Input length")}
PAPER_POINTS = ("Sectioning", "Budget search", "Path", "Residual links", "Spans", "Methods",
                "Over-long requests", "Decoding")


def split_row(line: str) -> list[str]:
    """Cells of one Markdown table row (``\\|`` is a literal bar inside a cell)."""
    body = line.strip()
    assert body.startswith("|") and body.endswith("|"), line
    cells = re.split(r"(?<!\\)\|", body[1:-1])
    return [c.strip().replace("\\|", "|") for c in cells]


def table(text: str) -> list[dict[str, str]]:
    """The rows of the one table in ``text`` as dicts keyed by :data:`COLUMNS`."""
    lines = [line for line in text.splitlines() if line.lstrip().startswith("|")]
    assert len(lines) >= 3, "no table"
    header = split_row(lines[0])
    assert tuple(header) == COLUMNS, header
    assert all(set(c) <= set(":- ") for c in split_row(lines[1])), "no separator row"
    rows = []
    for line in lines[2:]:
        cells = split_row(line)
        assert len(cells) == len(COLUMNS), (len(cells), line[:120])
        rows.append(dict(zip(COLUMNS, cells)))
    return rows


@cache
def collected_tests(path: str) -> frozenset[str]:
    """``name`` of each module-level test function and ``Class::name`` of each test
    method in a ``Test*`` class of ``path`` (relative to the repository root)."""
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
                "test_"):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            names.update(f"{node.name}::{f.name}" for f in node.body
                         if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
                         and f.name.startswith("test_"))
    return frozenset(names)


def missing_tests(ids: list[str]) -> list[str]:
    out = []
    for test_id in ids:
        path, name = test_id.split("::", 1)
        if not (ROOT / path).is_file() or name not in collected_tests(path):
            out.append(test_id)
    return out


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    return table(DOC.read_text(encoding="utf-8"))


def agent_of(row: dict[str, str]) -> str:
    return row["Agent"].strip("`")


def test_every_row_names_tests_that_exist(rows):
    for row in rows:
        ids = TEST_ID.findall(row["Kept true by"])
        assert ids, f"{row['Agent']} / {row['Point']}: no test named"
        missing = missing_tests(ids)
        assert not missing, f"{row['Agent']} / {row['Point']}: no such test {missing}"
        for column in ("Upstream", "Ours", "Why different"):
            assert row[column], f"{row['Agent']} / {row['Point']}: empty {column}"


def test_every_agent_and_the_paper_points_have_rows(rows):
    agents = {agent_of(r) for r in rows}
    assert agents == {*AGENTS, "all"}, agents ^ {*AGENTS, "all"}
    points = {(agent_of(r), r["Point"]) for r in rows}
    for agent in AGENTS:
        for point in (*AGENT_POINTS, *EXTRA_POINTS.get(agent, ())):
            assert (agent, point) in points, f"{agent}: no row for {point}"
    for point in PAPER_POINTS:
        assert ("all", point) in points, f"paper: no row for {point}"
    assert len(points) == len(rows), "a point is listed twice for one agent"


def test_the_checks_catch_a_bad_table(tmp_path):
    """The parser and checks above reject what they must (they could pass vacuously)."""
    good = ("| Agent | Point | Upstream | Ours | Why different | Kept true by |\n"
            "|:--|:--|:--|:--|:--|:--|\n"
            "| `memagent` | Limits | a \\| b | c | — | "
            "`tests/test_fidelity_table.py::test_the_checks_catch_a_bad_table` |\n")
    [row] = table(good)
    assert row["Upstream"] == "a | b" and agent_of(row) == "memagent"
    assert missing_tests(TEST_ID.findall(row["Kept true by"])) == []
    assert missing_tests(["tests/test_fidelity_table.py::test_absent",
                          "tests/no_such_file.py::test_x"]) == [
        "tests/test_fidelity_table.py::test_absent", "tests/no_such_file.py::test_x"]
    with pytest.raises(AssertionError):
        table(good.replace("| Kept true by |", "| Tests |"))
    with pytest.raises(AssertionError):
        table(good.replace("| — |", ""))  # a row with a missing cell
