"""The wall-clock estimate under the pipeline's sharding (treeagent.pipeline.plan_wall), checked
against figures computed by hand on tiny hand-made plans (no planner involved)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from treeagent.pipeline import plan_wall as pw
from treeagent.pipeline.plan import Cost, wall_lines

E = pw.ExampleCost
FIVE = [E(1000, 100), E(2000, 200), E(3000, 100), E(1000, 300), E(4000, 100)]
"""Hand-made examples (input, output tokens) in stage order."""
RATES = pw.Rates(pw.Rate(1000, "hand"), pw.Rate(100, "hand"), pw.Rate(50, "hand"),
                 pw.Rate(0.5, "hand"))
"""1000 prompt and 100 output tokens/s per GPU, 50 for one sequence, 0.5 s per call."""


def _layout(agents=("a",), gpus=2, replicas=2, shards=4, concurrency=2, workers=4,
            shared=False) -> pw.Layout:
    return pw.Layout({a: gpus for a in agents}, {a: replicas for a in agents}, shards,
                     concurrency, workers, shared, "hand")


def test_throughput_bound_by_hand():
    # shards i % 4: {e0, e4}, {e1}, {e2}, {e3}; replicas k % 2: {e0, e4, e2}, {e1, e3}.
    # replica seconds (in/1000 + out/100): e0 2, e1 4, e2 4, e3 4, e4 5 -> 11 and 8.
    # chains (in/1000 + out/50): 3, 6, 5, 7, 6; shard bounds 6, 6, 5, 7; workers 24/4 = 6.
    assert pw.stage_seconds(FIVE, 2, 2, _layout(), RATES) == (pytest.approx(11.0),
                                                              "throughput")


def test_chain_bound_by_hand_with_tensor_parallel():
    # one replica of 2 GPUs: 2000 prompt and 200 output tokens/s; one sequence 50/s.
    # chains: 1000/2000 + 100/50 = 2.5 and 2000/2000 + 200/50 = 5 -> one slot: 7.5;
    # throughput 0.5 + 0.5 + 1 + 1 = 3.
    lay = _layout(gpus=2, replicas=1, shards=1, concurrency=1, workers=1)
    seconds, bound = pw.stage_seconds(FIVE[:2], 2, 1, lay, RATES)
    assert seconds == pytest.approx(7.5) and bound == "chain"
    lay = _layout(gpus=2, replicas=1, shards=1, concurrency=2, workers=1)
    assert pw.stage_seconds(FIVE[:2], 2, 1, lay, RATES) == (pytest.approx(5.0), "chain")


def test_each_call_adds_its_latency_to_the_chain():
    # as above with 4 and 6 calls of 0.5 s: chains 2.5 + 2 = 4.5 and 5 + 3 = 8.
    examples = [E(1000, 100, calls=4), E(2000, 200, calls=6)]
    lay = _layout(gpus=2, replicas=1, shards=1, concurrency=1, workers=1)
    assert pw.stage_seconds(examples, 2, 1, lay, RATES) == (pytest.approx(12.5), "chain")
    lay = _layout(gpus=2, replicas=1, shards=1, concurrency=2, workers=1)
    assert pw.stage_seconds(examples, 2, 1, lay, RATES) == (pytest.approx(8.0), "chain")


def test_workers_bound_by_hand():
    # as the throughput case, 10 in flight per shard: shard bounds 6, 6, 5, 7 on 1 worker.
    lay = _layout(concurrency=10, workers=1)
    assert pw.stage_seconds(FIVE, 2, 2, lay, RATES) == (pytest.approx(24.0), "workers")


def test_fewer_shards_than_replicas_spread_over_all():
    # one shard over 4 replicas: work 19 s spread evenly -> 4.75 s; chain 27/100 -> 7.
    lay = _layout(gpus=4, replicas=4, shards=1, concurrency=100, workers=1)
    assert pw.stage_seconds(FIVE, 4, 4, lay, RATES) == (pytest.approx(7.0), "chain")
    fast_chains = pw.Rates(RATES.prompt, RATES.output, pw.Rate(10**9, "hand"), RATES.call)
    assert pw.stage_seconds(FIVE, 4, 4, lay, fast_chains) == (pytest.approx(4.75),
                                                              "throughput")


def test_estimate_adds_stages_per_agent_and_runs_agents_side_by_side():
    stages = {("a", "flat"): FIVE, ("a", "treeagent"): FIVE[:1], ("b", "flat"): FIVE[:2]}
    lay = _layout(agents=("a", "b"))
    wall = pw.estimate(stages, lay, RATES)
    # a: 11 (above) + 3 (e0 alone: work 2, its chain 3) = 14;
    # b: shards {e0}, {e1} on replicas 0, 1: work 2 and 4, chains 3 and 6 -> 6.
    assert [s["seconds"] for s in wall["stages"]] == [11.0, 3.0, 6.0]
    assert wall["total_hours"] == pytest.approx(20 / 3600, abs=1e-4)
    assert wall["parallel_hours"] == pytest.approx(14 / 3600, abs=1e-4)
    shared = pw.estimate(stages, _layout(agents=("a", "b"), shared=True), RATES)
    assert shared["parallel_hours"] == shared["total_hours"]


def test_layout_from_serve_or_spread_gpus():
    served = pw.layout(["a", "b"], shards=16, concurrency=8, workers=8, tensor_parallel=2,
                       replicas=3)
    assert dict(served.gpus) == {"a": 6, "b": 6} and dict(served.replicas) == {"a": 3, "b": 3}
    spread = pw.layout(["a", "b", "c"], shards=4, concurrency=8, workers=2, gpus=8)
    assert dict(spread.gpus) == {"a": 3, "b": 3, "c": 2} and not spread.shared
    assert dict(spread.replicas) == {"a": 3, "b": 3, "c": 2}
    tp2 = pw.layout(["a", "b", "c"], shards=4, concurrency=8, workers=2, gpus=8,
                    tensor_parallel=2)
    assert dict(tp2.replicas) == {"a": 1, "b": 1, "c": 1}
    few = pw.layout(["a", "b", "c", "d"], shards=4, concurrency=8, workers=2, gpus=1)
    assert few.shared and dict(few.gpus) == dict.fromkeys("abcd", 1)


def test_rates_say_which_are_defaults():
    r = pw.rates(prompt=5000.0, output=300.0, source="measured on x")
    assert (r.prompt.value, r.prompt.source) == (5000.0, "measured on x")
    assert r.sequence.value == pw.DEFAULT_SEQUENCE_TPS and r.sequence.source == pw.DEFAULT_SOURCE
    text = "\n".join(wall_lines(pw.estimate({("a", "flat"): FIVE}, _layout(), r)))
    assert "5,000 prompt tokens/s per GPU: measured on x" in text
    assert f"{pw.DEFAULT_SEQUENCE_TPS:,.0f} decode tokens/s of one sequence: stated default" in text
    assert pw.DEFAULT_BASIS in text
    assert f"{pw.DEFAULT_CALL_SECONDS:g} s per call before its prefill" in text


def test_stage_costs_restore_the_stage_order_across_rows():
    def cost(n: int) -> Cost:
        return Cost(calls_max=n // 5, input_tokens_max=n, output_tokens_max=n // 10)

    rows = [SimpleNamespace(agent="a", method="flat",
                            example_costs=[(1, cost(10)), (3, cost(30))]),
            SimpleNamespace(agent="a", method="flat", example_costs=[(0, cost(0)), (2, cost(20))]),
            SimpleNamespace(agent="a", method="tree", example_costs=[(0, cost(5))])]
    got = pw.stage_costs(rows)
    assert [c.input_tokens for c in got[("a", "flat")]] == [0, 10, 20, 30]
    assert [c.calls for c in got[("a", "flat")]] == [0, 2, 4, 6]
    assert got[("a", "tree")] == [E(5, 0, 1)]


costs = st.lists(st.builds(E, st.integers(0, 10**6), st.integers(0, 10**5),
                           st.integers(0, 200)), max_size=40)


@given(costs, st.integers(1, 8), st.integers(1, 8), st.integers(1, 64), st.integers(1, 8))
def test_estimate_is_at_least_each_lower_bound(examples, replicas, shards, concurrency,
                                               workers):
    """Never below the work spread over every replica, nor the longest example's chain."""
    lay = _layout(gpus=replicas, replicas=replicas, shards=shards, concurrency=concurrency,
                  workers=workers)
    seconds, _ = pw.stage_seconds(examples, replicas, replicas, lay, RATES)
    work = sum(e.input_tokens / 1000 + e.output_tokens / 100 for e in examples)
    chain = max((e.calls * 0.5 + e.input_tokens / 1000 + e.output_tokens / 50
                 for e in examples), default=0)
    assert seconds >= work / replicas - 1e-6 and seconds >= chain - 1e-6
