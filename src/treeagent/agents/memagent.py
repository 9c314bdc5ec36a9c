"""MemAgent (BytedTsinghua-SIA/MemAgent): overwrite-memory reading, then an answer.

Per section t: prompt = instruction + ``<problem>`` + ``<memory>`` m_{t-1} + ``<section>``
(the mode's observation o_t, see :mod:`treeagent.agents.observation`), ending with an
"Updated memory:" cue; m_t = the reply after its last ``</think>``. After the last
section: ``<problem>`` + ``<memory>``, asking for the answer in ``\\boxed{}``. No
controller, no early stop (docs/fidelity.md). Limits: 1,024 new tokens per memory and answer
call, requests <= 32,768 tokens (Table 2).

Malformed replies: MemAgent has no tag contract for the memory reply, so any reply text
(even an empty one) becomes the memory, as upstream does. An unavailable response ends
the example with an empty answer (upstream drops the sample; C.4 scores it 0).
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import TYPE_CHECKING

from treeagent.agents.common import NO_MEMORY, Agent, Limits, Program, Thinking, ask, strip_think
from treeagent.agents.context import Context
from treeagent.agents.costing import Cost, Replies, Sizer, Step, memory_pass
from treeagent.agents.templates import Spec
from treeagent.llm.base import Request, Response

if TYPE_CHECKING:
    from treeagent.agents.setup import AgentSetup

NAME = "memagent"
LIMITS = Limits(1024, 1024, None, 32768)  # Table 2: memory, answer, controller, request
TEMPLATES = {  # name -> placeholders (treeagent.agents.templates)
    "memagent_memory": Spec(("question", "memory", "section")),
    "memagent_answer": Spec(("question", "memory")),
}


def read_pass(
    ctx: Context, problem: str, query: str, template: str, label: str
) -> Generator[Request, Response, str]:
    """One MemAgent-style pass over every section; returns the final memory m_T.

    Used by MemAgent and by MemReread's root pass and re-reads (each pass saves its own
    memory states, so TreeAgent retrieval in a pass reads that pass's H_{t-1}).
    """
    reader = ctx.reader(query)
    memory = NO_MEMORY
    for t in range(len(ctx.doc)):
        obs = reader.observe(t)
        ctx.observed(label, obs)
        request = ctx.calls.request(
            template, "memory", ctx.limits.memory,
            question=problem, memory=memory, section=obs,
        )
        memory = strip_think((yield from ask(request)))
        reader.save(t, memory)
    return memory


def run(ctx: Context) -> Program:
    """The MemAgent workflow; returns the raw final reply (the prediction)."""
    memory = yield from read_pass(ctx, ctx.problem, ctx.query, "memagent_memory", "read")
    request = ctx.calls.request(
        "memagent_answer", "answer", ctx.limits.answer, question=ctx.problem, memory=memory
    )
    return (yield from ask(request))


def cost(setup: AgentSetup, sizer: Sizer, problem: str, steps: Sequence[Step]) -> Cost:
    """Planned calls and token bounds of one example (:mod:`treeagent.pipeline.plan`): T memory
    calls + 1 answer, exactly."""
    cost, r, limits = Cost(), Replies(setup, sizer), setup.limits
    mem = r.out_cap(limits.memory)
    memory_pass(cost, r, sizer, "memagent_memory", problem, steps, mem)
    r.add(cost, sizer.call("memagent_answer", {"question": problem}, 0, mem, 1), limits.answer)
    return cost


AGENT = Agent(NAME, "MemAgent", LIMITS, TEMPLATES, run,
              thinking=Thinking(),  # Qwen2.5 base: no thinking switch
              paper_model="BytedTsinghua-SIA/RL-MemoryAgent-7B",
              paper_tokenizer="qwen2.5", cost_model=cost)
