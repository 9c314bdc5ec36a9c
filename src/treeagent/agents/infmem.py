"""InfMem (UCMP13753/InfMem): retrieval-controlled memory with early stopping.

Each step t: (1) a planner call (``controller``) sees the question, the retrieval
history and the memory, with the tool ``retrievesearch(query, top_k in 3..20, default
8)`` described in a system message, and either calls it or says STOP; (2) each call
searches BM25 over the other sections' sub-chunks (:mod:`treeagent.agents.bm25`);
(3) a write call (``memory``) with ``<problem>``, ``<retrieved_chunk>``,
``<recurrent_chunk>`` (the mode's observation o_t) and ``<memory>`` gives m_t. Three
consecutive STOPs end reading early; then the answer call, which asks for "Therefore,
the answer is ...". Every call thinks in two stages (:func:`common.reply`: 1,024
thinking + 1,024 reply tokens); requests <= 32,768 tokens (Table 2).

Tool protocol, as the checkpoint was trained and evaluated: Qwen-Agent's function-call
prompt (``QwenFnCallPrompt``, English, parallel calls, function choice auto). The tool
block (template ``infmem_tools``, one ``### name`` entry per tool: ``name: description
Parameters: <JSON schema> <argument format>``) is the system message; the planner
prompt is the user message; the chat template renders both (Qwen3: thinking on). A
call in the reply is ``✿FUNCTION✿: name`` then ``✿ARGS✿: {json}``, ending at the next
marker (``✿RESULT✿``, ``✿RETURN✿``, ``✿FUNCTION✿``) or the end of the reply.

Reply rules, as upstream parses them: a reply holding "STOP" anywhere (reasoning
included) is a STOP; else every ✿FUNCTION✿ call counts (arguments cut after their last
``}``); a reply in another protocol is read too: OpenAI ``tool_calls`` a server returned,
then Qwen's ``<tool_call>{json}</tool_call>`` (arguments an object or a JSON string).
Each ``retrievesearch`` call searches (the written block shows the last one's chunks);
unreadable arguments search for the question with top_k 8; a query that is not text
or is blank searches for the question; top_k is clamped to 3..20. A call of another
tool is a call but searches nothing. A reply with neither STOP nor a call restarts the
STOP count at 1 (upstream resets it on any non-STOP reply, then counts a reply without
a call); a step without a search writes with an empty ``<retrieved_chunk>``; the answer
comes right after the third consecutive STOP, without a write for that step. The
memory is the write reply after its last ``</think>``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from treeagent.agents.bm25 import SUBCHUNK_TOKENS, BM25Index, Hit
from treeagent.agents.common import (
    NO_MEMORY,
    Agent,
    Limits,
    Program,
    Thinking,
    reply,
    reply_with_calls,
    strip_think,
)
from treeagent.agents.context import Context
from treeagent.agents.costing import Cost, Replies, Sizer, Step
from treeagent.agents.templates import Spec

if TYPE_CHECKING:
    from treeagent.agents.setup import AgentSetup

NAME = "infmem"
LIMITS = Limits(1024, 1024, 1024, 32768)  # Table 2: memory, answer, controller, request
TEMPLATES = {  # name -> placeholders (treeagent.agents.templates)
    "infmem_tools": Spec(("tools",), ("tool_names",)),  # the planner's system message
    "infmem_plan": Spec(("question", "history", "memory")),
    "infmem_write": Spec(("question", "retrieved", "section", "memory"), ("history",)),
    "infmem_answer": Spec(("question", "memory")),
}
TOOL_NAME = "retrievesearch"
TOP_K_DEFAULT, TOP_K_MIN, TOP_K_MAX = 8, 3, 20
EARLY_STOP = 3

TOOL = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": "BM25 search over passages of the document outside the current section.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Key words for the missing facts."},
                "top_k": {
                    "type": "integer", "description": "How many passages to return (3-20).",
                    "minimum": TOP_K_MIN, "maximum": TOP_K_MAX, "default": TOP_K_DEFAULT,
                },
            },
            "required": ["query"],
        },
    },
}
ARGS_FORMAT = "The arguments are one JSON object."

FN_NAME, FN_ARGS, FN_RESULT, FN_EXIT = "✿FUNCTION✿", "✿ARGS✿", "✿RESULT✿", "✿RETURN✿"
_FN_CALL = re.compile(
    rf"{FN_NAME}:\s*([^\n]+)\s*{FN_ARGS}:\s*([^✿]+?)(?={FN_RESULT}|{FN_EXIT}|{FN_NAME}|$)",
    re.S,
)
_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.S)
_DECODER = json.JSONDecoder()


def tool_description(tool: dict) -> str:
    """One tool's entry in the function-call system prompt (Qwen-Agent's layout)."""
    fn = tool.get("function", tool)
    params = json.dumps(fn["parameters"], ensure_ascii=False)
    return f"### {fn['name']}\n\n{fn['name']}: {fn['description']} Parameters: {params} {ARGS_FORMAT}"


def tool_system(ctx: Context, tools: list[dict]) -> str:
    names = ",".join(t.get("function", t)["name"] for t in tools)
    return ctx.prompts.render("infmem_tools", tools="\n\n".join(map(tool_description, tools)),
                              tool_names=names).strip()


@dataclass(frozen=True)
class Search:
    query: str  # as searched
    top_k: int  # clamped to 3..20
    asked: object = None  # the query as the model wrote it (history shows this)
    asked_k: object = TOP_K_DEFAULT  # top_k as written


@dataclass(frozen=True)
class Plan:
    """A planner decision: ``stop``, ``call`` (``searches`` may be empty when only other
    tools were called) or ``none`` (neither)."""

    action: str
    searches: tuple[Search, ...] = field(default=())


def _clamp(value: object) -> int:
    try:
        k = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return TOP_K_DEFAULT
    return max(TOP_K_MIN, min(TOP_K_MAX, k))


def _normalize(query: object, fallback: str) -> str:
    if not isinstance(query, str):
        return fallback
    return re.sub(r"\s+", " ", query).strip() or fallback


def _search(raw_args: object, question: str) -> Search:
    """A search from a call's arguments (a JSON string or an object)."""
    args = raw_args
    if isinstance(raw_args, str):
        try:
            args = json.loads(raw_args)
        except json.JSONDecodeError:
            args = None
    if not isinstance(args, dict):  # upstream: unreadable -> the question, top_k 8
        return Search(question, TOP_K_DEFAULT, question, TOP_K_DEFAULT)
    asked, asked_k = args.get("query", question), args.get("top_k", TOP_K_DEFAULT)
    return Search(_normalize(asked, question), _clamp(asked_k), asked, asked_k)


def _trim_args(args: str) -> str:
    """Arguments cut after their last ``}`` (Qwen-Agent drops trailing comments)."""
    args = args.strip()
    if args.startswith("{") and (k := args.rfind("}")) > 0:
        return args[: k + 1]
    return args


def _calls(text: str, tool_calls: list[dict] | None) -> list[tuple[str, object]]:
    """(name, raw arguments) of every call in a reply, in the first protocol found."""
    found = [(m.group(1).strip(), _trim_args(m.group(2))) for m in _FN_CALL.finditer(text)]
    if found:
        return found
    for call in tool_calls or ():
        fn = call.get("function") if isinstance(call.get("function"), dict) else call
        if isinstance(fn, dict) and fn.get("name"):
            found.append((fn["name"], fn.get("arguments", fn.get("parameters"))))
    if found:
        return found
    for m in _TOOL_CALL.finditer(strip_think(text)):
        try:
            value, _ = _DECODER.raw_decode(m.group(1))
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and isinstance(value.get("name"), str):
            found.append((value["name"], value.get("arguments", value.get("parameters"))))
    return found


def parse_plan(text: str, question: str, tool_calls: list[dict] | None = None) -> Plan:
    """The planner's decision from its whole reply (rules in the module docstring)."""
    if "STOP" in text:
        return Plan("stop")
    calls = _calls(text, tool_calls)
    if not calls:
        return Plan("none")
    return Plan("call", tuple(_search(args, question) for name, args in calls
                              if name == TOOL_NAME))


def render_hits(hits: list[Hit]) -> str:
    return "\n\n".join(f"[Retrieved #{i}] {h.text}" for i, h in enumerate(hits, 1))


def render_history(searches: list[Search], t: int, total: int) -> str:
    """The planner's retrieval history (upstream's layout: the step line, then one
    line per earlier search with the query and top_k as the model wrote them)."""
    lines = [f"Current retrieval step: {t + 1}  Maximum allowed retrieval steps: {total}"]
    lines += [f"Step {i}: query={s.asked!r}, top_k={s.asked_k!r}"
              for i, s in enumerate(searches, 1)]
    return "\n".join(lines)


def run(ctx: Context) -> Program:
    """The InfMem workflow; returns the raw final reply (the prediction)."""
    doc, calls, limits = ctx.doc, ctx.calls, ctx.limits
    controller = limits.controller or limits.memory
    index = BM25Index.from_sections([doc.text(t) for t in range(len(doc))], ctx.tokenizer)
    reader = ctx.reader()
    system = tool_system(ctx, [TOOL])
    memory = NO_MEMORY
    searches: list[Search] = []
    stops = 0
    for t in range(len(doc)):
        history = render_history(searches, t, len(doc))
        plan_request = calls.request("infmem_plan", "controller", controller, system=system,
                                     question=ctx.problem, history=history, memory=memory)
        text, native = yield from reply_with_calls(calls, plan_request)
        plan = parse_plan(text, ctx.query, native)
        ctx.note("plans", {"t": t, "action": plan.action,
                           "searches": [[s.query, s.top_k] for s in plan.searches]})
        if plan.action != "stop":
            stops = 0
        if plan.action != "call":
            stops += 1
            if stops >= EARLY_STOP:
                ctx.details["early_stop"] = t
                break
        hits: list[Hit] = []
        for search in plan.searches:  # upstream shows the last search's chunks
            searches.append(search)
            hits = index.search(search.query, search.top_k, exclude_section=t)
            ctx.note("retrieved", {"t": t, "chunks": [h.chunk for h in hits]})
        obs = reader.observe(t)
        ctx.observed("read", obs)
        write = calls.request("infmem_write", "memory", limits.memory, question=ctx.problem,
                              retrieved=render_hits(hits), section=obs, memory=memory,
                              history=history)
        memory = strip_think((yield from reply(calls, write)))
        reader.save(t, memory)
    answer = calls.request(
        "infmem_answer", "answer", limits.answer, question=ctx.problem, memory=memory
    )
    return (yield from reply(calls, answer))


def cost(setup: AgentSetup, sizer: Sizer, problem: str, steps: Sequence[Step]) -> Cost:
    """Planned calls and token bounds of one example (:mod:`treeagent.pipeline.plan`): per step
    a planner reply and a write reply, the answer after the last step or right after the
    ``EARLY_STOP``-th consecutive STOP (no write for that step)."""
    cost, r, limits = Cost(), Replies(setup, sizer), setup.limits
    controller = limits.controller or limits.memory
    mem, plan_out = r.out_cap(limits.memory), r.out_cap(controller)
    fn = TOOL["function"]
    system = sizer.count(sizer.prompts.render(
        "infmem_tools", tools=tool_description(TOOL), tool_names=fn["name"])) + 16
    retrieved = TOP_K_MAX * (SUBCHUNK_TOKENS + 8)
    T = len(steps)
    stop_at = EARLY_STOP - 1 if T >= EARLY_STOP else None  # the step whose plan ends reading
    for t, step in enumerate(steps):
        history = 16 + t * (plan_out + 32)  # "Reading step ..." + earlier searches
        memory = mem if t else sizer.count(NO_MEMORY)
        plan = sizer.call("infmem_plan", {"question": problem}, 0, history + memory, 2,
                          system=system)
        r.add(cost, plan, controller, minimal=stop_at is None or t <= stop_at)
        write = sizer.call("infmem_write", {"question": problem}, step.low,
                           step.high + retrieved + memory + history, 4)
        r.add(cost, write, limits.memory, minimal=stop_at is None or t < stop_at)
    r.add(cost, sizer.call("infmem_answer", {"question": problem}, 0, mem, 1), limits.answer)
    return cost


AGENT = Agent(NAME, "InfMem", LIMITS, TEMPLATES, run,
              thinking=Thinking(True, 1024),  # upstream: thinking on, 1,024 think + 1,024 reply
              paper_model="ucmp137538/infmem-4B", paper_tokenizer="qwen3",
              cost_model=cost)
