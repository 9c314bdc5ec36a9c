"""Contexts (4.1, B.1): native composition, buckets hit from below, flagged reuse."""

from __future__ import annotations

import random

import pytest

from test_bench_tasks import make_units
from treeagent import formats
from treeagent.bench import contexts, validate
from treeagent.tokenizers import tokens

FORMATS = ("json", "html", "yaml", "javascript")


@pytest.fixture(scope="module")
def counter():
    return contexts.Counter(("qwen3", "qwen2.5"))


def _pool(fmt, counter, n=40, seed=0, per_unit=(1, 6)):
    units = make_units(fmt, n, seed, per_unit)
    pieces = [contexts.piece(fmt, u.text) for u in units]
    keys = [frozenset("d:" + r.description.casefold() for r in u.records) for u in units]
    return units, contexts.make_pool(fmt, [u.id for u in units], pieces, keys, counter)


@pytest.mark.parametrize("fmt", FORMATS)
def test_composition_is_one_valid_document_that_splits_back_into_its_units(fmt):
    units = make_units(fmt, 5, 3)
    pieces = [contexts.piece(fmt, u.text) for u in units]
    text = contexts.compose(fmt, pieces)
    formats.parse(text, fmt)  # one valid document of its format
    assert validate.unit_pieces(fmt, text) == pieces


def test_pieces_drop_document_framing_only():
    assert contexts.piece("yaml", "# c\n%YAML 1.2\n---\na: 1\n...\n") == "a: 1\n"
    assert contexts.piece("html", "<html><body><table><tr><td>x</td></tr></table></body></html>"
                          ) == "<table><tr><td>x</td></tr></table>"
    assert contexts.piece("javascript", "const rules = {a: 1};") == "const rules = {a: 1};"
    assert contexts.piece("javascript", "[1, 2];") == "[1, 2]"
    text = contexts.compose("javascript", ["const rules = {a: 1};", "[1, 2]"])
    assert text == "const rules = {a: 1};\nconst entry_0002 = [1, 2];\n"
    assert validate.unit_pieces("javascript", text) == ["const rules = {a: 1};", "[1, 2]"]


@pytest.mark.parametrize("statement", [
    "var \\u0061 = {\\u0061: 1};",  # escaped identifier (a real ESLint test initializer)
    "const caf\u00e9 = [1];",
    "let $x_1 = {b: [2]};",
    "exports.\\u0062 = {c: 3};",
])
def test_js_bindings_with_any_identifier_stay_statements(statement):
    """A binding statement is never wrapped as ``const entry_N = <statement>`` (found by the
    paper-grid build: 1,401 JS contexts failed their re-parse at the wrapped statement)."""
    pieces = [contexts.piece("javascript", statement), "[1, 2]"]
    text = contexts.compose("javascript", pieces)
    assert text.startswith(statement)
    formats.parse(text, "javascript")
    assert validate.unit_pieces("javascript", text) == pieces


@pytest.mark.parametrize("fmt", ["json", "yaml"])
@pytest.mark.parametrize("length", [2048, 8192])
def test_lengths_hit_their_bucket_from_below_under_both_tokenizers(fmt, length, counter):
    units, pool = _pool(fmt, counter, 120, 1)
    ctx = contexts.build_context(pool, counter, [0, 1], length, random.Random(7), 0.5)
    lo = -(-length * 95 // 100)
    for name in ("qwen3", "qwen2.5"):
        n = tokens.load(name).count(ctx.text)  # independent full count
        assert n == ctx.tokens[name]
        assert lo <= n <= length, (name, n)
    # anchors stay together at the family's depth; no unit repeats without reuse
    at = ctx.order.index(0)
    assert ctx.order[at:at + 2] == [0, 1]
    assert len(set(ctx.order)) == len(ctx.order) and ctx.reused == 0
    # per-unit estimate is close to the full count (a token or two per boundary at most)
    assert abs(ctx.estimate["qwen3"] - ctx.tokens["qwen3"]) <= 2 * len(ctx.order) + 8


def test_same_anchors_across_lengths_and_more_distractors(counter):
    _, pool = _pool("json", counter, 120, 2)
    a = contexts.build_context(pool, counter, [5], 2048, random.Random(1), 0.3)
    b = contexts.build_context(pool, counter, [5], 8192, random.Random(1), 0.3)
    assert 5 in a.order and 5 in b.order and len(b.order) > len(a.order)


def test_reuse_is_explicit_and_counted(counter):
    _, pool = _pool("json", counter, 6, 4, (1, 2))
    short = contexts.build_context(pool, counter, [0], 8192, random.Random(0), 0.5)
    assert short.reused == 0 and short.fill < 0.95  # distinct units cannot fill 8K
    full = contexts.build_context(pool, counter, [0], 8192, random.Random(0), 0.5,
                                  allow_reuse=True)
    assert full.reused > 0 and 0.95 <= full.fill <= 1.0
    assert full.order.count(0) == 1  # anchors are never repeated


def test_counter_alias_only_where_the_tokenizers_agree(counter):
    plain = "key: value\n" * 50
    special = "a <think> b </think> c <tool_response> d"
    q3, q25 = tokens.load("qwen3"), tokens.load("qwen2.5")
    got = counter.many([plain, special])
    assert list(got[0]) == [q3.count(plain), q25.count(plain)]
    assert list(got[1]) == [q3.count(special), q25.count(special)]
    assert got[1][0] != got[1][1]  # Qwen3's added tokens are single tokens
    assert counter.full(special) == {"qwen3": q3.count(special), "qwen2.5": q25.count(special)}
    # Qwen2.5 reuses Qwen3's counts (same BPE model), except for texts holding one of the
    # added tokens only Qwen3 has
    assert counter._same[0] is None
    first, differing = counter._same[1]
    assert first == 0 and "<think>" in differing and "<|im_start|>" not in differing


def test_buckets_parse_and_label():
    assert contexts.parse_bucket("1M") == 1 << 20 and contexts.parse_bucket("demo-2K") == 2048
    assert [contexts.bucket_label(n) for n in contexts.BUCKETS.values()] == list(contexts.BUCKETS)
    with pytest.raises(ValueError, match="unknown length"):
        contexts.parse_bucket("3Q")
