"""The treeagent package has no import circle: the module-level imports of its modules
(those under ``if TYPE_CHECKING`` included: a circle of annotations is still a circle of
the design) form a graph without a cycle. Imports inside functions are the deliberate lazy
ones and are not edges."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def module_name(path: Path, src: Path = SRC) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements that run on import: the body and its ``if``/``try`` blocks."""
    out: list[ast.stmt] = []
    for node in body:
        out.append(node)
        if isinstance(node, ast.If):
            out += _top_level(node.body) + _top_level(node.orelse)
        elif isinstance(node, ast.Try):
            out += _top_level(node.body + node.orelse + node.finalbody)
            for handler in node.handlers:
                out += _top_level(handler.body)
    return out


def imports_of(path: Path, modules: set[str], src: Path = SRC) -> set[str]:
    """The ``modules`` (dotted names under ``src``) that ``path`` imports at module level."""
    name = module_name(path, src)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in _top_level(ast.parse(path.read_text(encoding="utf-8")).body):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:  # a submodule by name, else the module itself
                sub = f"{module}.{alias.name}"
                found.add(sub if sub in modules else module)
    return {m for m in found if m in modules and m != name}


def import_graph() -> dict[str, set[str]]:
    files = sorted(SRC.joinpath("treeagent").rglob("*.py"))
    modules = {module_name(f) for f in files}
    return {module_name(f): imports_of(f, modules) for f in files}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as ``[a, b, ..., a]``, or None (depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_find_cycle_finds_a_circle_and_only_a_circle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None  # a diamond
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"b"}}) == ["b", "c", "b"]
    assert find_cycle({"a": {"a"}}) == ["a", "a"]


def test_the_graph_sees_relative_and_type_checking_imports(tmp_path):
    pkg = tmp_path / "p"
    pkg.mkdir()
    (pkg / "m.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from .n import X\n\ndef f():\n    from p import o\n",
                              encoding="utf-8")
    assert imports_of(pkg / "m.py", {"p", "p.m", "p.n", "p.o"}, tmp_path) == {"p.n"}


def test_the_treeagent_package_has_no_import_cycle():
    graph = import_graph()
    assert "treeagent.formats.js_values" in graph and "treeagent.registry" in graph
    cycle = find_cycle(graph)
    assert cycle is None, f"import cycle: {' -> '.join(cycle or [])}"
