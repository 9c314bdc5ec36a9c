"""Prompt templates: files under ``treeagent/prompts/``, loaded by name, overridable.

Every prompt is a text file ``<name>.txt`` (paper C.3: each agent keeps its released
prompts; ours are written in our own words). A user folder (``--prompts DIR``) may hold
any subset of the files; a file there replaces the packaged one of the same name, so a
checkpoint's released templates can be dropped in verbatim.

Template syntax (compatible with Python ``str.format`` templates as released):

* ``{name}`` is a placeholder when ``name`` is one the template declares (see
  :func:`spec_of`: :data:`SPECS` and each agent's record) or an alias of one (:data:`ALIASES`: upstream names such as ``prompt``,
  ``chunk``, ``recalled_memory``);
* ``{{`` and ``}}`` render as ``{`` and ``}``;
* any other brace text (``\\boxed{}``, JSON) is literal.

Loading checks that a template uses every required placeholder of its kind and no unknown
one (a typo would otherwise silently drop, e.g., the section from every prompt).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

_TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")

ALIASES: dict[str, str] = {
    "prompt": "question",  # MemAgent, InfMem, ReMemR1
    "problem": "question",
    "chunk": "section",  # MemAgent, InfMem, MemReread, ReMemR1
    "recurrent_chunk": "section",
    "recalled_memory": "recalled",  # ReMemR1
    "retrieve": "retrieved",  # InfMem
    "retrieval_history": "history",  # InfMem
    "decomposed_history": "history",  # MemReread
    "decomposition_stack": "stack",  # MemReread
    "submemory": "sub_memory",  # MemReread
    "answer": "subanswer",  # MemReread's integrate template
    "sub_question": "subquestion",
    "sub_answer": "subanswer",
    "tool_descs": "tools",  # Qwen-Agent's function-call system prompt
}
"""Upstream placeholder names accepted as synonyms of ours (each template set of the
four public workflows loads with ``--prompts``; tests/test_agents_templates.py)."""


@dataclass(frozen=True)
class Spec:
    required: tuple[str, ...]
    optional: tuple[str, ...] = ()


SPECS: dict[str, Spec] = {
    # task instruction appended to the question (C.3): answer values and order only
    "instruction_single": Spec(()),
    "instruction_ordered": Spec(()),
    "instruction_unordered": Spec(()),
    "instruction_open": Spec(()),
    # InfMem's two-stage thinking: the sentence that closes a reasoning cut at its budget
    "thinking_stop": Spec(()),
}
"""The templates every agent shares; each agent declares its own in its record
(:attr:`treeagent.agents.common.Agent.templates`, e.g. ``memagent_memory``)."""


def declared() -> dict[str, Spec]:
    """Every known template, name -> placeholders: the shared ones and each registered
    agent's, in registry order."""
    from treeagent import registry

    out = dict(SPECS)
    for agent in registry.AGENTS:
        out.update(agent.templates)
    return out


def spec_of(name: str) -> Spec | None:
    """The placeholders of template ``name``: shared, or declared by a registered agent."""
    if name in SPECS:
        return SPECS[name]
    from treeagent import registry

    for agent in registry.AGENTS:
        if name in agent.templates:
            return agent.templates[name]
    return None


class TemplateError(ValueError):
    """A template file that is missing or uses placeholders its kind does not have."""


def _packaged(name: str) -> str:
    return (resources.files("treeagent") / "prompts" / f"{name}.txt").read_text(encoding="utf-8")


def placeholders(text: str) -> set[str]:
    """Canonical names of the ``{name}`` tokens in ``text`` (aliases resolved)."""
    return {ALIASES.get(m.group(1), m.group(1)) for m in _TOKEN.finditer(text) if m.group(1)}


def check(name: str, text: str, origin: str = "") -> None:
    spec = spec_of(name)
    if spec is None:
        raise TemplateError(f"unknown template {name!r}")
    used = placeholders(text)
    where = origin or name
    missing = [p for p in spec.required if p not in used]
    unknown = sorted(used - set(spec.required) - set(spec.optional))
    if missing:
        raise TemplateError(f"{where}: missing placeholder(s) {', '.join(missing)}")
    if unknown:
        raise TemplateError(
            f"{where}: unknown placeholder(s) {', '.join(unknown)} "
            f"(allowed: {', '.join(spec.required + spec.optional) or 'none'}; "
            "write {{ and }} for literal braces)"
        )


def fill(text: str, fields: dict[str, str]) -> str:
    """Substitute placeholders in one pass (field values are never re-scanned)."""

    def sub(m: re.Match[str]) -> str:
        tok = m.group(0)
        if tok == "{{":
            return "{"
        if tok == "}}":
            return "}"
        key = ALIASES.get(m.group(1), m.group(1))
        return fields[key] if key in fields else tok

    return _TOKEN.sub(sub, text)


class Prompts:
    """The template set of one run: packaged files, each replaceable from ``folder``."""

    def __init__(self, folder: str | Path | None = None) -> None:
        self.folder = Path(folder) if folder is not None else None
        if self.folder is not None and not self.folder.is_dir():
            raise TemplateError(f"{self.folder}: not a folder")
        self._cache: dict[str, str] = {}
        if self.folder is not None:  # fail early on a bad user file, not mid-run
            for path in sorted(self.folder.glob("*.txt")):
                if spec_of(path.stem) is not None:
                    self.text(path.stem)

    def text(self, name: str) -> str:
        """The raw template ``name`` (user folder first, then the packaged file)."""
        hit = self._cache.get(name)
        if hit is None and spec_of(name) is None:
            raise TemplateError(f"unknown template {name!r}")
        if hit is None:
            user = self.folder / f"{name}.txt" if self.folder is not None else None
            if user is not None and user.is_file():
                hit, origin = user.read_text(encoding="utf-8"), str(user)
            else:
                hit, origin = _packaged(name), f"treeagent/prompts/{name}.txt"
            check(name, hit, origin)
            self._cache[name] = hit
        return hit

    def render(self, name: str, **fields: str) -> str:
        return fill(self.text(name), fields)

    def overridden(self) -> list[str]:
        """Names of the templates the user folder replaces."""
        if self.folder is None:
            return []
        return sorted(p.stem for p in self.folder.glob("*.txt")
                      if spec_of(p.stem) is not None)
