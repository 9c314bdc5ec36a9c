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
Malformed replies: the first non-empty ``<query>`` block counts, text outside it is
ignored; a reply without one means "the memory suffices". Memories and sub-answers are
replies after their last ``</think>``.
"""

from __future__ import annotations

from treeagent.agents.common import TABLE2, Program, ask, strip_think, tag_blocks
from treeagent.agents.context import Context
from treeagent.agents.memagent import read_pass

NAME = "memreread"
LIMITS = TABLE2[NAME]
TEMPLATES = ("memreread_memory", "memreread_decompose", "memreread_subanswer",
             "memreread_integrate", "memreread_answer")
WIDTH = 4
NODE_BUDGET = 4
NO_SUBQUESTIONS = "None yet."


def parse_query(reply: str) -> str | None:
    """The sub-question of a decompose reply: the first non-empty ``<query>`` block."""
    for block in tag_blocks(strip_think(reply), "query"):
        if block:
            return block
    return None


def render_asked(asked: list[tuple[str, str]]) -> str:
    if not asked:
        return NO_SUBQUESTIONS
    return "\n".join(f"Q{i}: {q}\nA{i}: {a}" for i, (q, a) in enumerate(asked, 1))


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
