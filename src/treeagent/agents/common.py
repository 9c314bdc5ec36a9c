"""What the four workflows share: memory conventions, Table-2 limits, building requests
that fit the request limit, and the task instruction (paper C.3).

Workflows are generators: they ``yield`` a :class:`~treeagent.llm.base.Request`, receive
its :class:`~treeagent.llm.base.Response` and finally ``return`` their answer. An
unavailable response (``text is None``) raises :class:`Unavailable` inside the workflow;
the runner turns that into an empty answer (scores 0, C.4) and the run goes on.

Request limits (Table 2 / C.3): prompt + max new tokens <= 32,768 (MemAgent, InfMem) or
40,960 (MemReread, ReMemR1), clamped to the model's context window when that is smaller
(SmolLM2: 8,192). When a call does not fit, :meth:`Calls.request` first lowers the
generation budget, but never below ``min(max_tokens, MIN_NEW_TOKENS)``; if the prompt
is still too long it truncates the call's long fields in a fixed order (the section
first, then the memory, then other blocks), keeping each field's head and marking the
cut with :data:`CUT_MARK`. Every such cut is counted in the run's details
(``clipped``). Upstream workflows send over-long requests and lose the sample to the
server's error; we keep reading instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any

from treeagent.agents.observation import Observation
from treeagent.agents.templates import Prompts, Spec
from treeagent.llm.base import Message, Request, Response, Sampling
from treeagent.scoring import SINGLE_VALUE_TASKS, TASKS, UNORDERED_TASKS
from treeagent.tokenizers.tokens import Tokenizer

NO_MEMORY = "No previous memory"
"""Initial memory m_0 of every workflow (docs/fidelity.md)."""

SEED = 42
"""Inference seed (C.3); decoding is greedy: temperature 0, top_p 1.0."""

CHAT_OVERHEAD = 64
"""Tokens reserved for the chat template around the one user message (role markers,
a default system prompt such as SmolLM2's or Qwen2.5's)."""

MIN_NEW_TOKENS = 256
CUT_MARK = "\n[... cut to fit the model's context]"

Program = Generator[Request, Response, Any]


class Unavailable(Exception):
    """An engine returned no text for a call (retries exhausted)."""

    def __init__(self, kind: str, error: str | None) -> None:
        super().__init__(f"{kind} call unavailable: {error or 'no response'}")
        self.kind = kind
        self.error = error


@dataclass(frozen=True)
class Limits:
    """Max new tokens per call kind and the request limit (Table 2, C.3)."""

    memory: int
    answer: int
    controller: int | None
    request: int


THINK_END = "</think>"


def strip_think(reply: str) -> str:
    """Memory after an update: the reply with ``<think>...</think>`` reasoning removed,
    i.e. the text after the last ``</think>`` (docs/fidelity.md), stripped."""
    return reply.rsplit(THINK_END, 1)[-1].strip()


def exchange(request: Request) -> Generator[Request, Response, Response]:
    """Yield one request; return its response, or raise :class:`Unavailable`."""
    response = yield request
    if response is None or response.text is None:
        raise Unavailable(request.kind, getattr(response, "error", None))
    return response


def ask(request: Request) -> Generator[Request, Response, str]:
    """Yield one request; return its reply text, or raise :class:`Unavailable`."""
    response = yield from exchange(request)
    return response.text or ""


def instruction_name(task: str | None) -> str:
    """The task instruction template for ``task`` (C.3): only the answer values, and
    whether their order matters; never a schema, index, path or location."""
    if task is None:
        return "instruction_open"
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r} (choose from {', '.join(TASKS)})")
    if task in SINGLE_VALUE_TASKS:
        return "instruction_single"
    if task in UNORDERED_TASKS:
        return "instruction_unordered"
    return "instruction_ordered"


def problem_text(question: str, task: str | None, prompts: Prompts) -> str:
    """The question as the agents see it: the question, then the task instruction."""
    return f"{question.strip()}\n\n{prompts.render(instruction_name(task)).strip()}"


@dataclass(frozen=True)
class Thinking:
    """Chat-template thinking of one agent's checkpoint (C.3: the released workflow).

    ``enabled``: the template's ``enable_thinking`` (None: not sent, the template's
    default). ``budget``: InfMem's two-stage thinking, see :func:`reply`."""

    enabled: bool | None = None
    budget: int | None = None

    def kwargs(self) -> dict[str, Any]:
        return {} if self.enabled is None else {"enable_thinking": self.enabled}


@dataclass(frozen=True)
class Agent:
    """One memory agent, declared in its module (``AGENT = Agent(...)``) and registered
    in :data:`treeagent.registry.AGENTS` (a plug-in: entry point ``treeagent.agents``).

    ``title``: the paper's name (reports); ``limits``: its Table 2 row; ``templates``:
    the prompt templates it declares, name -> placeholders
    (:class:`treeagent.agents.templates.Spec`; files ``prompts/<name>.txt``; it may also
    render shared ones and other agents'); ``run(ctx)``: the workflow, a generator
    program returning the raw final reply; ``thinking``: the checkpoint's chat-template
    thinking; ``paper_model``: the public checkpoint the paper evaluates (C.1), None for
    an agent outside the paper (no ``paper`` preset), with ``paper_tokenizer``, the
    tokenizer that checkpoint ships (its base model's: a :mod:`treeagent.tokenizers.tokens` name).
    ``cost_model``: its cost model, beside its workflow in its module
    (``cost_model(setup, sizer, problem, steps) -> treeagent.pipeline.plan.Cost``: the calls and
    token bounds of one example, see :mod:`treeagent.pipeline.plan`); None: the plan says
    "cost unknown" for the agent."""

    name: str
    title: str
    limits: Limits
    templates: Mapping[str, Spec]
    run: Callable[[Any], Program]
    thinking: Thinking = Thinking()
    paper_model: str | None = None
    paper_tokenizer: str | None = None
    cost_model: Callable[..., Any] | None = None


@dataclass
class Calls:
    """Builds chat requests that respect a request limit (see the module docstring).

    A field may be an :class:`~treeagent.agents.observation.Observation`: it renders
    into the section slot, and a cut shortens only its section text, never its path or
    spans (6). Every cut is kept in :attr:`clips` with the index of the request it
    belongs to (:attr:`built` counts requests; workflows yield each at once, so the
    index is the call's index in the trace)."""

    prompts: Prompts
    tokenizer: Tokenizer
    request_limit: int
    overhead: int = CHAT_OVERHEAD
    thinking: Thinking = field(default_factory=Thinking)
    built: int = 0
    clips: list[dict[str, Any]] = field(default_factory=list)
    shrink_order: tuple[str, ...] = ("section", "memory", "retrieved", "recalled",
                                     "sub_memory", "subanswer", "history")
    _count: Callable[[str], int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._count = self.tokenizer.count

    @property
    def clipped(self) -> int:
        return len(self.clips)

    def tokens(self, text: str) -> int:
        return self._count(text) + self.overhead

    def request(self, template: str, kind: str, max_tokens: int, *, system: str | None = None,
                **fields: Any) -> Request:
        """Render ``template`` with ``fields`` into a greedy, seeded request of ``kind``
        with at most ``max_tokens`` new tokens, fitted to the request limit; ``system``
        is a system message before it (InfMem's tool block), never cut."""
        texts = {k: _slot_text(v) for k, v in fields.items()}
        prompt = self.prompts.render(template, **_rendered(fields, texts))
        fixed = self._count(system) if system else 0
        n = self.tokens(prompt) + fixed
        limit = self.request_limit
        floor = min(max_tokens, MIN_NEW_TOKENS)
        if n + floor > limit:
            prompt, n = self._shrink(template, fields, texts, n - fixed, limit - floor - fixed)
            n += fixed
        new = max(1, min(max_tokens, limit - n))
        sampling = Sampling(max_tokens=new, temperature=0.0, top_p=1.0, seed=SEED)
        self.built += 1
        head = (Message("system", system),) if system else ()
        return Request((*head, Message("user", prompt)), sampling, kind=kind,
                       template_kwargs=self.thinking.kwargs())

    def prompt_tokens(self, request: Request) -> int:
        return self.overhead + sum(self._count(m.content) for m in request.messages)

    def continuation(self, request: Request, prefix: str, max_tokens: int) -> Request:
        """``request`` again with ``prefix`` as the start of the reply to continue."""
        n = self.prompt_tokens(request) + self._count(prefix)
        new = max(1, min(max_tokens, self.request_limit - n))
        sampling = Sampling(max_tokens=new, temperature=0.0, top_p=1.0, seed=SEED)
        self.built += 1
        return Request((*request.messages, Message("assistant", prefix)), sampling,
                       kind=request.kind, tools=request.tools,
                       template_kwargs=request.template_kwargs)

    def _shrink(self, template: str, fields: dict[str, Any], texts: dict[str, str], n: int,
                target: int) -> tuple[str, int]:
        texts = dict(texts)
        prompt = self.prompts.render(template, **_rendered(fields, texts))
        for name in self.shrink_order:
            if n <= target:
                break
            original = texts.get(name)
            if not original:
                continue
            before = self._count(original)
            keep = before - (n - target) - 8
            for _ in range(4):  # BPE joins at the cut can shift a count by a token or two
                keep = max(0, keep)
                texts[name] = self.tokenizer.truncate(original, keep).rstrip() + CUT_MARK
                prompt = self.prompts.render(template, **_rendered(fields, texts))
                n = self.tokens(prompt)
                if n <= target or keep == 0:
                    break
                keep -= n - target + 8
            clip = {"request": self.built, "template": template, "field": name,
                    "tokens": before, "kept": keep}
            t = getattr(fields.get(name), "t", None)
            if t is not None:
                clip["t"] = t
            self.clips.append(clip)
        return prompt, n


def _slot_text(value: Any) -> str:
    """The cuttable text of a field: an observation's section text, else the value."""
    return value.section if isinstance(value, Observation) else value


def _rendered(fields: dict[str, Any], texts: dict[str, str]) -> dict[str, str]:
    """Field values as the template shows them: an observation rendered around its
    (possibly cut) section text; every other value as its (possibly cut) text."""
    return {k: v.render(texts[k]) if isinstance(v, Observation) else texts[k]
            for k, v in fields.items()}


def reply(calls: Calls, request: Request) -> Generator[Request, Response, str]:
    """The reply text to ``request`` (see :func:`reply_with_calls`)."""
    text, _ = yield from reply_with_calls(calls, request)
    return text


def reply_with_calls(calls: Calls, request: Request
                     ) -> Generator[Request, Response, tuple[str, list[dict]]]:
    """The reply text and native tool calls for ``request``, with InfMem's two-stage
    thinking when the agent's :class:`Thinking` has a budget (upstream
    ``call_llm_text``): stage 1 generates at most ``budget`` tokens; a stage-1 reply
    without ``</think>`` gets a closing sentence (template ``thinking_stop``) and
    ``</think>`` appended, and stage 2 continues that prefix with the call's own
    budget; the reply is both stages joined. Upstream sends stage 2 even when stage 1
    closed its reasoning and stopped (it then adds nothing but the end token): we send
    it only when stage 1 used its whole budget."""
    budget = calls.thinking.budget
    if not budget or not calls.thinking.enabled:
        response = yield from exchange(request)
        return response.text or "", response.tool_calls
    room = calls.request_limit - calls.prompt_tokens(request)
    first = Request(request.messages, Sampling(max(1, min(budget, room)), 0.0, 1.0, SEED),
                    kind=request.kind, tools=request.tools,
                    template_kwargs=request.template_kwargs)
    response = yield from exchange(first)
    text = response.text or ""
    if THINK_END not in text:
        stop = calls.prompts.render("thinking_stop").strip()
        text = f"{text.rstrip()}\n\n{stop}\n{THINK_END}\n\n"
    elif response.output_tokens < first.sampling.max_tokens:
        return text, response.tool_calls
    second = calls.continuation(first, text, request.sampling.max_tokens)
    rest = yield from exchange(second)
    return (text + (rest.text or "").strip()).strip(), response.tool_calls + rest.tool_calls


def generation_limit(limits: Limits, context_window: int | None) -> int:
    """The request limit of Table 2, clamped to the model's context window."""
    if context_window and context_window > 0:
        return min(limits.request, context_window)
    return limits.request


_TAG_CACHE: dict[str, re.Pattern[str]] = {}


def tag_blocks(text: str, tag: str) -> list[str]:
    """Contents of every complete ``<tag>...</tag>`` block (non-greedy, across lines)."""
    pattern = _TAG_CACHE.get(tag)
    if pattern is None:
        pattern = _TAG_CACHE[tag] = re.compile(
            rf"<{re.escape(tag)}>(.*?)</{re.escape(tag)}>", re.S
        )
    return [m.strip() for m in pattern.findall(text)]
