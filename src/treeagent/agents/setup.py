"""One agent's setup, resolved once by the same rules for every stage.

``treeagent run``, the evaluate stage, the evidence stage, the viewer and
``treeagent plan`` all take an agent's model, tokenizer, context window, per-call
limits and thinking from :func:`resolve` (or :func:`from_params`, which reads them from
the pipeline's parameters), so that sections are counted, requests limited and calls
planned exactly as the run makes them (C.1, Table 2).

The tokenizer (C.1: sections are counted with the evaluated model's tokenizer), first
that applies:

1. the one given (an object, a built-in name such as ``qwen3``, or a folder): the
   agent's ``tokenizer`` setting (``agents.<a>.tokenizer``) or ``--tokenizer``;
2. the engine's ``tokenizer`` option (``engine_options.tokenizer``), what a served
   model's client counts with;
3. the tokenizer beside the model's local weights;
4. else (a served model without local files): :class:`SetupError`, one line naming the
   agent and the setting to give; never a silent default.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from treeagent import registry
from treeagent.agents.common import Agent, Limits, Thinking, generation_limit
from treeagent.tokenizers.tokens import Tokenizer


class SetupError(ValueError):
    """An agent's setup cannot be resolved (one line naming the agent and the setting)."""


@dataclass(frozen=True)
class AgentSetup:
    """Everything a stage needs of one agent besides the examples.

    ``limits``: Table 2's row capped at ``max_new_tokens``; ``request_limit``: Table 2's
    request limit clamped to ``context_window``; ``options``: the workflow options
    (MemReread ``width``/``node_budget``, ``thinking``...) without ``max_new_tokens``."""

    agent: str
    record: Agent
    model: str | None
    revision: str
    tokenizer: Tokenizer = field(repr=False)
    tokenizer_name: str
    context_window: int | None
    limits: Limits
    request_limit: int
    max_new_tokens: int | None
    thinking: Thinking
    options: dict[str, Any]

    @property
    def thinking_budget(self) -> int:
        """Stage-1 budget of two-stage thinking (InfMem; 0: one call per reply)."""
        return int(self.thinking.budget or 0) if self.thinking.enabled else 0

    @property
    def cost_model(self) -> Any:
        """The cost model the agent's record names (:attr:`Agent.cost_model`), or None:
        the plan then says "cost unknown" for it."""
        return getattr(self.record, "cost_model", None)

    @property
    def run_options(self) -> dict[str, Any]:
        """The options a program takes (the workflow options and ``max_new_tokens``)."""
        cap = {"max_new_tokens": self.max_new_tokens} if self.max_new_tokens else {}
        return {**self.options, **cap}


def capped(limits: Limits, max_new_tokens: int | None) -> Limits:
    """Table-2 limits with every call kind capped at ``max_new_tokens`` (a knob for
    quick runs and tests on small CPU models; the paper settings use no cap)."""
    if not max_new_tokens:
        return limits
    cap = int(max_new_tokens)
    return Limits(min(limits.memory, cap), min(limits.answer, cap),
                  None if limits.controller is None else min(limits.controller, cap),
                  limits.request)


def thinking(agent: str, options: dict[str, Any]) -> Thinking:
    """The agent's :class:`Thinking` with the ``thinking``/``thinking_budget`` options
    (the budget at most ``max_new_tokens``)."""
    base = registry.AGENTS.get(agent).thinking
    enabled = options["thinking"] if "thinking" in options else base.enabled
    budget = options["thinking_budget"] if "thinking_budget" in options else base.budget
    if enabled is not None and not isinstance(enabled, bool):
        raise ValueError(f"option thinking must be true, false or null, not {enabled!r}")
    cap = options.get("max_new_tokens")
    if budget and cap:
        budget = min(int(budget), int(cap))
    return Thinking(enabled, int(budget) if budget else None)


def missing_tokenizer(agent: str | None, model: Any) -> str:
    """The one line said when a model without local files has no tokenizer setting."""
    who = f"agent {agent!r}: " if agent else ""
    key = f"agents.{agent}.tokenizer" if agent else "agents.<agent>.tokenizer"
    return (f"{who}model {str(model)!r} has no local files to take a tokenizer from; set "
            f"{key} (a tokenizer name such as qwen3 or qwen2.5, or a folder with "
            "tokenizer.json; --tokenizer for treeagent run and treeagent plan)")


def tokenizer_choice(agent: str | None, model: Any, tokenizer: str | None = None,
                     engine: Any = None, engine_options: dict[str, Any] | None = None
                     ) -> str | None:
    """The tokenizer setting that applies (a name or folder, rules 1-2 of the module
    docstring), None for the model's local files (rule 3); :class:`SetupError` when
    none applies. Loads nothing."""
    from treeagent.llm.models import ModelError, resolve_model

    named = tokenizer or (engine_options or {}).get("tokenizer")
    if not named and engine is not None:
        named = getattr(engine, "tokenizer_name", None)
    if isinstance(named, str) and named:
        return named
    try:
        local = resolve_model(_model_spec(model, engine)).local
    except ModelError:
        local = False
    if not local:
        raise SetupError(missing_tokenizer(agent, _model_spec(model, engine)))
    return None


def _model_spec(model: Any, engine: Any) -> Any:
    """The model as its weights were named: the engine's source spec when it has one."""
    if engine is None:
        return model
    return getattr(getattr(engine, "source", None), "spec", None) or engine.model


def resolve_tokenizer(agent: str | None, model: Any, tokenizer: Tokenizer | str | None = None,
                      engine: Any = None, engine_options: dict[str, Any] | None = None
                      ) -> tuple[Tokenizer, str]:
    """(tokenizer, its name) by the rules of the module docstring; :class:`SetupError`
    for a model without local files and no tokenizer setting."""
    from treeagent.llm.models import ModelError, resolve_model, tokenizer_dir
    from treeagent.tokenizers import tokens

    if tokenizer is not None and not isinstance(tokenizer, str):
        return tokenizer, str(getattr(tokenizer, "name", None) or type(tokenizer).__name__)
    named = tokenizer_choice(agent, model, tokenizer, engine, engine_options)
    if named is not None:
        return tokens.load(named), named
    spec = _model_spec(model, engine)
    try:
        return tokens.load(str(tokenizer_dir(spec))), resolve_model(spec).model_id
    except ModelError:
        raise SetupError(missing_tokenizer(agent, spec)) from None


def check_params(params: Any, agents: Any = None, tokenizer: str | None = None) -> None:
    """:class:`SetupError` (one line) for the first of ``agents`` (default: the evaluated
    ones) whose tokenizer cannot be resolved from ``params``; loads nothing, so a stage
    can say it before any work."""
    for agent in params.agents if agents is None else agents:
        a = params.data["agents"][agent]
        engine_options = {**params.data["engine"]["options"], **a["engine_options"]}
        tokenizer_choice(agent, a["model"], tokenizer or a.get("tokenizer"), None,
                         engine_options)


def context_window(model: Any, engine: Any = None,
                   engine_options: dict[str, Any] | None = None) -> int | None:
    """The model's context length, when it can be known: the engine's
    ``context_window``/``max_model_len`` (attribute or option), else the metadata beside
    the local weights; None for a served model that says nothing."""
    from treeagent.llm.models import ModelError, resolve_model, source_context_length

    if engine is not None:
        for name in ("context_window", "max_model_len"):
            value = getattr(engine, name, None)
            if isinstance(value, int) and value > 0:
                return value
        source = getattr(engine, "source", None)
    else:
        opts = engine_options or {}
        window = opts.get("max_model_len") or opts.get("context_window")
        if window:
            return int(window)
        if model is None:  # a tokenizer without a model: nothing says
            return None
        try:
            source = resolve_model(model)
        except ModelError:
            return None
    if getattr(source, "folder", None) is None:
        return None
    return source_context_length(source)


def resolve(agent: str, model: Any = None, *, revision: str = "auto",
            tokenizer: Tokenizer | str | None = None, max_new_tokens: int | None = None,
            options: dict[str, Any] | None = None,
            engine_options: dict[str, Any] | None = None,
            window: int | None = None, engine: Any = None) -> AgentSetup:
    """``agent``'s setup: its record (ValueError naming the agents), the tokenizer
    (:func:`resolve_tokenizer`), the context window (``window`` if given, else
    :func:`context_window`), Table 2's limits capped at ``max_new_tokens`` (or
    ``options["max_new_tokens"]``), the request limit and the thinking. ``engine``: a
    started engine, whose model, tokenizer option and context length count first."""
    record = registry.AGENTS.get(agent)
    opts = dict(options or {})
    cap = opts.pop("max_new_tokens", None) if max_new_tokens is None else max_new_tokens
    opts.pop("max_new_tokens", None)
    if engine is not None:
        model = model or engine.model
    tok, name = resolve_tokenizer(agent, model, tokenizer, engine, engine_options)
    window = window or context_window(model, engine, engine_options)
    limits = capped(record.limits, cap)
    think = thinking(agent, {**opts, **({"max_new_tokens": cap} if cap else {})})
    return AgentSetup(agent, record, None if model is None else str(model), str(revision),
                      tok, name, window, limits, generation_limit(limits, window),
                      int(cap) if cap else None, think, opts)


def from_params(params: Any, agent: str, tokenizer: Tokenizer | str | None = None
                ) -> AgentSetup:
    """``agent``'s setup from the pipeline's parameters (a
    :class:`treeagent.pipeline.config.Params`): ``agents.<a>`` (model, revision,
    ``max_new_tokens``, options, ``tokenizer``) and the engine options (``engine.options``
    under ``agents.<a>.engine_options``); ``tokenizer`` overrides the agent's setting."""
    a = params.data["agents"][agent]
    engine_options = {**params.data["engine"]["options"], **a["engine_options"]}
    return resolve(agent, a["model"], revision=str(a["revision"]),
                   tokenizer=tokenizer or a.get("tokenizer"),
                   max_new_tokens=a["max_new_tokens"], options=a["options"],
                   engine_options=engine_options)
