"""MemReread (iiGray/MemReread): memory-guided rereading at depth 1.

1. Root pass: a MemAgent-style reading of every section with the question builds the
   root memory.
2. Up to ``width`` times (eval: 4), while the node budget (eval: 4) allows: a decompose
   call (``controller``, 8,192 new tokens) either emits one ``<query>sub-question</query>``
   or no such tag (the memory suffices: stop); a sub-question triggers a fresh
   MemAgent-style re-read of the whole input with the sub-question as the problem
   (memory restarts at "No previous memory"), a sub-answer call, and an integrate call
   that folds the sub-answer into the root memory (confirmed facts marked).
3. The final answer in ``\\boxed{}`` from the root memory.

Every reading pass uses the mode's observations; a re-read retrieves (TreeAgent) with
the sub-question from its own saved states. Limits: memory and integrate calls 1,024,
sub-answer and answer 1,024, decompose 8,192 new tokens; requests <= 40,960 (Table 2).

As upstream, the root is a node of the budget: the counter starts at 1 and each
decompose attempt takes a node first, so width 4 with node budget 4 asks at most three
sub-questions (the fourth attempt finds the budget spent and makes no call). Only
depth 1 exists at the evaluated setting, so re-reads do not decompose further.

Tag contract (upstream): the integrate call wraps a claim found both in the memory and
in the sub-answer in ``<confirmed>...</confirmed>`` and keeps earlier confirmed
segments verbatim; the decompose call never asks about confirmed facts. The decompose
reply's query is upstream's greedy ``<query>(.+)</query>`` (first opening tag to last
closing tag, across lines), outer braces and spaces stripped; one of 5 characters or
fewer, or none, means "the memory suffices". The query history shows each answered
sub-question as ``<query>q</query> <result>a</result>`` ("NO HISTORY" when empty); the
stack of questions above the node is "EMPTY" at the root. Thinking is off on every
call (``enable_thinking`` false, as upstream); memories and sub-answers are the replies
after their last ``</think>``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from treeagent.agents.common import Agent, Limits, Program, Thinking, ask, strip_think
from treeagent.agents.context import Context
from treeagent.agents.costing import Cost, Replies, Sizer, Step, memory_pass
from treeagent.agents.memagent import read_pass
from treeagent.agents.templates import Spec

if TYPE_CHECKING:
    from treeagent.agents.setup import AgentSetup

NAME = "memreread"
LIMITS = Limits(1024, 1024, 8192, 40960)  # Table 2: memory, answer, controller, request
TEMPLATES = {  # name -> placeholders (treeagent.agents.templates)
    "memreread_memory": Spec(("question", "memory", "section")),
    "memreread_decompose": Spec(("question", "memory"), ("history", "stack")),
    "memreread_subanswer": Spec(("question", "memory")),
    "memreread_integrate": Spec(("question", "memory", "subquestion", "subanswer"),
                                ("sub_memory",)),
    "memreread_answer": Spec(("question", "memory")),
}
WIDTH = 4
NODE_BUDGET = 4
NO_HISTORY = "NO HISTORY"
EMPTY_STACK = "EMPTY"
MIN_QUERY_CHARS = 6

_QUERY = re.compile(r"<query>(.+)</query>", re.S)


def parse_query(reply: str) -> str | None:
    """The sub-question of a decompose reply, or None (rules in the module docstring)."""
    m = _QUERY.search(strip_think(reply))
    if m is None:
        return None
    query = m.group(1).lstrip("{").rstrip("}").strip()
    return query if len(query) >= MIN_QUERY_CHARS else None


def render_asked(asked: list[tuple[str, str]]) -> str:
    if not asked:
        return NO_HISTORY
    return "\n".join(f"<query>{q}</query> <result>{a}</result>" for q, a in asked)


def run(ctx: Context) -> Program:
    """The MemReread workflow; returns the raw final reply (the prediction)."""
    calls, limits = ctx.calls, ctx.limits
    width = int(ctx.options.get("width", WIDTH))
    budget = int(ctx.options.get("node_budget", NODE_BUDGET))
    controller = limits.controller or limits.memory
    memory = yield from read_pass(ctx, ctx.problem, ctx.query, "memreread_memory", "root")
    asked: list[tuple[str, str]] = []
    nodes = 1  # the root
    for _ in range(width):
        nodes += 1
        if nodes > budget:
            break
        decompose = calls.request(
            "memreread_decompose", "controller", controller,
            question=ctx.problem, memory=memory, history=render_asked(asked),
            stack=EMPTY_STACK,
        )
        sub = parse_query((yield from ask(decompose)))
        ctx.note("subquestions", sub)
        if sub is None:
            break
        label = f"reread{len(asked) + 1}"
        sub_memory = yield from read_pass(ctx, sub, sub, "memreread_memory", label)
        subanswer = strip_think((yield from ask(calls.request(
            "memreread_subanswer", "answer", limits.answer, question=sub, memory=sub_memory,
        ))))
        memory = strip_think((yield from ask(calls.request(
            "memreread_integrate", "memory", limits.memory, question=ctx.problem,
            memory=memory, subquestion=sub, subanswer=subanswer, sub_memory=sub_memory,
        ))))
        asked.append((sub, subanswer))
    ctx.details["nodes"] = 1 + len(asked)
    final = calls.request(
        "memreread_answer", "answer", limits.answer, question=ctx.problem, memory=memory
    )
    return (yield from ask(final))


def cost(setup: AgentSetup, sizer: Sizer, problem: str, steps: Sequence[Step]) -> Cost:
    """Planned calls and token bounds of one example (:mod:`treeagent.pipeline.plan`): the root
    pass (T), then up to q = min(width, node_budget - 1) rounds of decompose + re-read
    (T) + sub-answer + integrate; at least one decompose (when q >= 1) that asks
    nothing; the answer."""
    cost, r, limits = Cost(), Replies(setup, sizer), setup.limits
    controller = limits.controller or limits.memory
    width = int(setup.options.get("width", WIDTH))
    nodes = int(setup.options.get("node_budget", NODE_BUDGET))
    rounds = max(0, min(width, nodes - 1))
    mem, sub, ans = (r.out_cap(limits.memory), r.out_cap(controller),
                     r.out_cap(limits.answer))
    memory_pass(cost, r, sizer, "memreread_memory", problem, steps, mem)
    for i in range(rounds):
        history = i * (sub + ans + 16)
        known = {"question": problem, "stack": EMPTY_STACK}
        decompose = sizer.call("memreread_decompose", known, 0, mem + history, 3)
        r.add(cost, decompose, controller, minimal=i == 0)
        # the re-read: the sub-question is the problem (<= the decompose reply)
        memory_pass(cost, r, sizer, "memreread_memory", "", steps, mem, q_high=sub,
                    minimal=False)
        r.add(cost, sizer.call("memreread_subanswer", {}, 0, sub + mem, 2), limits.answer,
              minimal=False)
        r.add(cost, sizer.call("memreread_integrate", {"question": problem}, 0,
                               mem + sub + ans + mem, 4), limits.memory, minimal=False)
    r.add(cost, sizer.call("memreread_answer", {"question": problem}, 0, mem, 1),
          limits.answer)
    return cost


AGENT = Agent(NAME, "MemReread", LIMITS, TEMPLATES, run,
              thinking=Thinking(False),  # upstream: enable_thinking False on every call
              paper_model="iiiiGray/MemReread-4B", paper_tokenizer="qwen3",
              cost_model=cost)
