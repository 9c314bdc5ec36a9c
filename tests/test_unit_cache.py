"""The build's caches (treeagent.bench.unit_cache) give what the uncached paths give."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from treeagent.bench import contexts, unit_cache
from treeagent.tokenizers import pieces, tokens

# lines of the kinds a context holds: indentation, digits, punctuation, non-ASCII, a
# decomposed accent (not NFC), tabs, blank lines, CRLF
_LINE = st.one_of(
    st.sampled_from(["  - name: limit", "\tx = 1;", "", "    \"id\": 12345,", "é", "e\u0301",
                     "<td>3,141</td>", "---", "  ...", "   ", "a\r", "  description: >-"]),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30),
)
_TEXT = st.lists(_LINE, max_size=25).map("\n".join)


@pytest.fixture(scope="module", params=["qwen3", "cl100k_base"])
def tok(request):
    return tokens.load(request.param)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(_TEXT, min_size=1, max_size=6))
def test_line_counts_equal_a_plain_count_of_each_text(tok, texts):
    """One cache over several texts sharing lines (hits and misses), counted twice."""
    cache = unit_cache.LineCounts(tok, limit=200)  # small: it also starts afresh
    for text in texts + texts:
        if cache.applies(text):
            assert cache.count(text) == len(tok.encode(text))


def test_line_counts_apply_only_where_line_cuts_are_exact():
    import copy

    qwen3 = tokens.load("qwen3")
    cache = unit_cache.LineCounts(qwen3)
    assert cache.applies("a:\n  b: 1\n")
    # an added token: no line cuts near it, but Qwen3's added tokens strip no spaces and
    # hold no line break, so the blocks around it still count exactly
    text = "a:\n  <|im_start|> b\nc: 1\n<|endoftext|>\nd:\n  - 2\n"
    assert qwen3.added_local and cache.applies(text)
    assert cache.count(text) == len(qwen3.encode(text))
    stripping = copy.copy(qwen3)  # as if an added token stripped the spaces around it
    stripping.added_local = False
    assert not unit_cache.LineCounts(stripping).applies(text)
    assert unit_cache.LineCounts(stripping).applies("a:\n  b: 1\n")


def test_counter_with_line_cache_counts_long_contexts_like_the_tokenizer():
    """contexts.Counter.full/many (through the cache) on texts past the parallel-count
    threshold, sharing most lines, against plain encodes."""
    lines = [f"  - key_{i}: value {i * 7919 % 1000} é\n" for i in range(6000)]
    texts = ["".join(lines[:4000]), "".join(lines[2000:]), "".join(lines[::2])]
    counter = contexts.Counter(("qwen3", "qwen2.5"))
    q3, q25 = tokens.load("qwen3"), tokens.load("qwen2.5")
    for text in texts:
        assert counter.full(text) == {"qwen3": len(q3.encode(text)),
                                      "qwen2.5": len(q25.encode(text))}
    assert counter.many(texts)[:, 0].tolist() == [len(q3.encode(t)) for t in texts]


@given(texts=st.lists(st.text(max_size=8), max_size=30))
def test_memo_returns_what_the_function_returns(texts):
    calls: list[str] = []

    def read(text: str) -> tuple[str, int]:
        calls.append(text)
        return text[::-1], len(calls)

    cached = unit_cache.memo(read, limit=20)
    plain = {t: t[::-1] for t in texts}
    for t in texts:
        assert cached(t)[0] == plain[t]
    assert len(calls) <= len(texts)
    if len(set(texts)) < len(texts) and sum(map(len, texts)) <= 20:
        assert len(calls) == len(set(texts))  # under the limit each text is read once


# YAML documents as pieces (after ``---``), with the awkward cases: a '---' or '...' line
# inside, '--- x' on one line, a block scalar, comments, a directive, broken syntax
_DOCS = st.sampled_from([
    "a: 1\n", "paths:\n  /x:\n    get: {}\n", "s: |\n  line\n  --- not a marker\n",
    "b: |\n  x\n---\nc: 2\n", "d: 1\n...\n", "--- e: 1\n", "# only a comment\n",
    "f: [1, 2\n", "g: 'q\n---\n  r'\n", "%YAML 1.2\n", "h: x\n--- \ni: 1\n", "",
    "k:\n  - 1\n  - {a: b}\n", "l: \"é\"\n", "m: *nope\n", "n: &a 1\no: *a\n",
])


def _pieces_or_error(split, context):
    try:
        return split(context)
    except Exception as exc:  # noqa: BLE001 - the error is part of the result
        return type(exc).__name__


@settings(max_examples=150, deadline=None)
@given(docs=st.lists(_DOCS, max_size=6), head=st.sampled_from(["", "x: 0\n", "---\n"]))
def test_yaml_unit_pieces_equal_those_of_one_parse_of_the_stream(docs, head):
    from treeagent.bench.sources.yaml_records import unit_pieces as whole

    context = head + "".join("---\n" + d for d in docs)
    cached = _pieces_or_error(lambda t: unit_cache.yaml_unit_pieces(t, whole), context)
    again = _pieces_or_error(lambda t: unit_cache.yaml_unit_pieces(t, whole), context)
    assert cached == again == _pieces_or_error(whole, context)


# JSON responses as pieces: nested values, a string holding ",\n", what the C decoder
# accepts but JSON does not (NaN), whitespace around a value, broken syntax, a bare scalar
_VALUES = st.sampled_from([
    '{"a": 1}', '{\n  "b": [1, 2],\n  "c": {"d": null}\n}', '"x,\\ny"', '[]', '{}',
    'NaN', ' {"e": 1}', '{"f": 2} ', '{"g": [1,}', '3', '{"h": "é\\u00e9"}', '"a",\n"b"',
    '{"i": 1}\n]\n[\n{"j": 2}', 'true', '{"k": 1e400}',
])


@settings(max_examples=150, deadline=None)
@given(values=st.lists(_VALUES, max_size=6), frame=st.sampled_from([("[\n", "\n]\n"),
                                                                   ("[", "]"), ("", "")]))
def test_json_unit_pieces_equal_those_of_one_parse_of_the_context(values, frame):
    from treeagent.bench.sources.json_records import unit_pieces as whole

    context = frame[0] + ",\n".join(values) + frame[1]
    cached = _pieces_or_error(lambda t: unit_cache.json_unit_pieces(t, whole), context)
    again = _pieces_or_error(lambda t: unit_cache.json_unit_pieces(t, whole), context)
    assert cached == again == _pieces_or_error(whole, context)


_SCALARS = st.one_of(st.integers(), st.booleans(), st.none(),
                     st.text(alphabet="abc &!:-#'\"é", max_size=8))
_TREES = st.recursive(_SCALARS, lambda kids: st.one_of(
    st.lists(kids, max_size=4), st.dictionaries(st.text("abcxyz", min_size=1, max_size=4),
                                                kids, max_size=4)), max_leaves=25)


@given(doc=_TREES)
def test_yaml_records_loader_skips_the_alias_walk_only_where_it_could_not_refuse(doc):
    """Builder's YAML loader: a document without '*' has no alias, so the alias budget
    walk it skips could not refuse it: it loads at any budget, as PyYAML loads it."""
    import yaml

    from treeagent.bench.sources import yaml_records as Y

    text = yaml.safe_dump(doc, allow_unicode=True)
    if "*" not in text:
        assert Y.load(text, node_budget=1) == yaml.safe_load(text)
    bomb = "a: &x [1, 2]\nb: [*x, *x, *x]\n"
    with pytest.raises(Y.AliasBudgetError):  # with aliases the walk still runs
        Y.load(bomb, node_budget=3)


@given(values=st.lists(st.sampled_from(["1", "yes", "1.5", "~", "null", "0x1F", ".inf", "2001-12-14",
                                          "true", "", "1e3", "0o17", "abc"]), min_size=1,
                       max_size=8), quoted=st.lists(st.booleans(), min_size=8, max_size=8))
def test_yaml_records_loader_resolves_a_repeated_scalar_by_its_style_too(values, quoted):
    """The loader resolves each distinct scalar once: the same text plain and quoted
    (in either order, in one document and across documents) keeps each its own type."""
    import yaml

    from treeagent.bench.sources import yaml_records as Y

    lines = [f"k{i}: '{v}'" if q else f"k{i}: {v}" for i, (v, q) in enumerate(zip(values, quoted))]
    text = "\n".join(lines) + "\n"
    want = yaml.safe_load(text)
    want = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in want.items()}
    assert Y.load(text) == want
    assert Y.load(text) == want  # everything resolved from the memo now


# lines that start blocks (no indentation, an ASCII starter), lines that do not (indented,
# "/", non-ASCII, blank), so that one block starts a text in one place and follows
# another block elsewhere
_BLOCKY = st.lists(st.sampled_from(
    ["key: 1", "- item", "}", "  nested: 2", "\tx", "/path", "// c", "é", "", " ", "9",
     "\"q\": [", "  - 12345678901234567890", "a\r", "{", "<|endoftext|>", "  <think>x",
     "s: ['<|im_end|>']"]), min_size=1, max_size=12
).map("\n".join)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(_BLOCKY, min_size=1, max_size=5), order=st.randoms(use_true_random=False))
def test_line_counts_by_blocks_equal_plain_counts_wherever_a_block_sits(tok, parts, order):
    """Blocks met first at the start of a text and then inside others (or the reverse),
    through one cache, against plain encodes; and a text's line pieces are its blocks'."""
    cache = unit_cache.LineCounts(tok)
    texts = ["\n".join(parts)]
    for _ in range(3):
        shuffled = list(parts)
        order.shuffle(shuffled)
        texts.append("\n".join(shuffled))
    for text in texts:
        cuts = [0, *(m.end() for m in unit_cache._BLOCK_START.finditer(text)), len(text)]
        blocks = [text[a:b] for a, b in zip(cuts, cuts[1:])]
        assert [p for b in blocks for p in pieces._iter_line_pieces(b)] == \
            list(pieces._iter_line_pieces(text))
        if cache.applies(text):
            assert cache.count(text) == len(tok.encode(text))
