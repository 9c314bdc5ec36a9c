"""InfMem (UCMP13753/InfMem): retrieval-controlled memory with early stopping.

Each step t: (1) a planner call (``controller``, 1,024 new tokens) sees the question,
the retrieval history and the memory, and either calls the tool
``retrievesearch(query, top_k in 3..20, default 8)`` or says STOP; (2) on a call, BM25
returns the top-k 500-token sub-chunks of the other sections, at most 2 per section,
near-duplicates (Jaccard >= 0.8) dropped (:mod:`treeagent.agents.bm25`); (3) a write
call (``memory``) with ``<problem>``, ``<retrieved_chunk>``, ``<recurrent_chunk>`` (the
mode's observation o_t) and ``<memory>`` gives m_t. Three consecutive STOPs end reading
early; then the answer call (``\\boxed{}``). Requests <= 32,768 tokens (Table 2).

Tool protocol (portable across engines): the tool's JSON schema is described in the
planner prompt and the reply text is parsed for a Qwen-style
``<tool_call>{"name": "retrievesearch", "arguments": {...}}</tool_call>`` (arguments as
an object or a JSON string; an unclosed final block is accepted). Native tool calls an
engine returns in ``Response.tool_calls`` are used first.

Upstream rules we keep: reasoning (text up to the last ``</think>``) is dropped before
parsing; a reply containing the word STOP is a STOP even if it also holds a call; a call
with unreadable arguments searches for the question with top_k 8; a reply with neither
a call nor STOP ("malformed") makes no search and restarts the STOP count at 1 (upstream
resets the count on any non-STOP reply, then counts a reply without a call); a step
without a search writes with an empty ``<retrieved_chunk>``; the answer comes right
after the third consecutive STOP, without a write for that step.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from treeagent.agents.bm25 import BM25Index, Hit
from treeagent.agents.common import NO_MEMORY, TABLE2, Program, ask, exchange, strip_think
from treeagent.agents.context import Context

NAME = "infmem"
LIMITS = TABLE2[NAME]
TEMPLATES = ("infmem_plan", "infmem_write", "infmem_answer")
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

_STOP = re.compile(r"\bSTOP\b")
_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.S)
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class Plan:
    """A planner decision: ``search`` (with query, top_k), ``stop`` or ``none``."""

    action: str
    query: str | None = None
    top_k: int = TOP_K_DEFAULT


def _top_k(value: object) -> int:
    try:
        k = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return TOP_K_DEFAULT
    return max(TOP_K_MIN, min(TOP_K_MAX, k))


def _arguments(raw: object) -> dict | None:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None
    return None


def _search(call: dict, question: str) -> Plan | None:
    """A search plan from one call object, or None if it is not our tool."""
    function = call.get("function") if isinstance(call.get("function"), dict) else call
    if function.get("name") != TOOL_NAME:
        return None
    args = _arguments(function.get("arguments", function.get("parameters")))
    if args is None:  # upstream: unreadable arguments search for the question
        return Plan("search", question, TOP_K_DEFAULT)
    query = args.get("query")
    query = query.strip() if isinstance(query, str) and query.strip() else question
    return Plan("search", query, _top_k(args.get("top_k", TOP_K_DEFAULT)))


def parse_plan(text: str, question: str, tool_calls: list[dict] | None = None) -> Plan:
    """The planner's decision from its reply (rules in the module docstring)."""
    body = strip_think(text)
    if _STOP.search(body):
        return Plan("stop")
    for call in tool_calls or ():
        plan = _search(call, question) if isinstance(call, dict) else None
        if plan is not None:
            return plan
    for m in _CALL.finditer(body):
        try:
            value, _ = _DECODER.raw_decode(m.group(1))
        except json.JSONDecodeError:
            continue
        plan = _search(value, question) if isinstance(value, dict) else None
        if plan is not None:
            return plan
    return Plan("none")


def render_hits(hits: list[Hit]) -> str:
    return "\n\n".join(f"[Passage {i}] {h.text.strip()}" for i, h in enumerate(hits, 1))


def render_history(searches: list[Plan], t: int, total: int) -> str:
    lines = [f"Reading step {t + 1} of at most {total}."]
    if not searches:
        lines.append("No searches yet.")
    lines += [f"Search {i}: query={p.query!r}, top_k={p.top_k}"
              for i, p in enumerate(searches, 1)]
    return "\n".join(lines)


def run(ctx: Context) -> Program:
    """The InfMem workflow; returns the raw final reply (the prediction)."""
    doc, calls, limits = ctx.doc, ctx.calls, ctx.limits
    controller = limits.controller or limits.memory
    index = BM25Index.from_sections([doc.text(t) for t in range(len(doc))], ctx.tokenizer)
    reader = ctx.reader()
    tool = json.dumps(TOOL, ensure_ascii=False)
    memory = NO_MEMORY
    searches: list[Plan] = []
    stops = 0
    for t in range(len(doc)):
        plan_request = calls.request(
            "infmem_plan", "controller", controller, question=ctx.problem,
            history=render_history(searches, t, len(doc)), memory=memory, tool=tool,
        )
        response = yield from exchange(plan_request)
        plan = parse_plan(response.text or "", ctx.query, response.tool_calls)
        ctx.note("plans", {"t": t, "action": plan.action, "query": plan.query,
                           "top_k": plan.top_k if plan.action == "search" else None})
        if plan.action != "stop":
            stops = 0
        if plan.action != "search":
            stops += 1
            if stops >= EARLY_STOP:
                ctx.details["early_stop"] = t
                break
        hits: list[Hit] = []
        if plan.action == "search":
            searches.append(plan)
            hits = index.search(plan.query or ctx.query, plan.top_k, exclude_section=t)
            ctx.note("retrieved", {"t": t, "chunks": [h.chunk for h in hits]})
        obs = reader.observe(t)
        ctx.observed("read", obs)
        write = calls.request(
            "infmem_write", "memory", limits.memory, question=ctx.problem,
            retrieved=render_hits(hits), section=obs.render(), memory=memory,
            history=render_history(searches, t, len(doc)),
        )
        memory = strip_think((yield from ask(write)))
        reader.save(t, memory)
    answer = calls.request(
        "infmem_answer", "answer", limits.answer, question=ctx.problem, memory=memory
    )
    return (yield from ask(answer))
