"""Token starts computed piece by piece in bounded batches (``pieces._piece_starts``)
equal the offsets of one whole-text encode, for any text: batch and gather sizes are
shrunk here so that every piece, batch and chunk boundary is exercised."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from treeagent.tokenizers import pieces, tokens

# lines of indentation, digits, words, non-ASCII letters, combining marks (not NFC),
# byte-fallback characters and repeats, the shapes that decide the pieces
ATOMS = st.sampled_from([
    "\n", "\n  ", "\n    ", "\t", " ", "  ", "- ", "key: ", '"v"', "{", "}", "[1, 2]", ",",
    "12", "3.5e7", "x9", "word", "Wörter", "χ12", "e\u0301", "\u212b", "日本語", "😀",
    "\U0001d11e", "<div>", "</p>", "//", "#", "'", "\r\n", "ﬁ",
    "<think>", "</think>", "<|endoftext|>", "<|im_start|>",  # Qwen3's added tokens
])  # fmt: skip
TEXTS = st.lists(ATOMS, min_size=1, max_size=120).map("".join)


def reference(tok: Any, text: str) -> list[int]:
    """Whole-text offsets from tokenizers itself (no pieces, no twin, no batches)."""
    return [o[0] for o in tok._tok.encode(text, add_special_tokens=False).offsets]


@pytest.fixture
def small_batches(monkeypatch):
    monkeypatch.setattr(pieces, "_BATCH_CHARS", 16)
    monkeypatch.setattr(pieces, "_GATHER_TOKENS", 7)


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXTS)
def test_qwen3_starts_equal_whole_text_offsets(qwen3, small_batches, text: str) -> None:
    got = qwen3.token_starts(text)
    assert got.tolist() == reference(qwen3, text)
    assert got.dtype == np.int32


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXTS)
def test_qwen3_twin_starts_equal_whole_text_offsets(qwen3, small_batches, text: str) -> None:
    qwen3.prepare()  # the tiktoken twin for NFC pieces, tokenizers for the others
    assert qwen3.token_starts(text * 3).tolist() == reference(qwen3, text * 3)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXTS)
def test_cl100k_starts_equal_token_byte_offsets(small_batches, text: str) -> None:
    tok = tokens.load("cl100k_base")
    ids = tok._enc.encode_ordinary(text)
    raw = text.encode("utf-8", "surrogatepass")
    byte_starts = np.cumsum([0] + [len(tok._enc.decode_single_token_bytes(i)) for i in ids])[:-1]
    # the character holding each token's first byte
    lead = [i for i, b in enumerate(raw) if b & 0xC0 != 0x80]
    expected = [int(np.searchsorted(lead, b, "right")) - 1 for b in byte_starts]
    assert tok.token_starts(text).tolist() == expected


def test_long_text_with_added_tokens_is_cut_between_them(qwen3, small_batches) -> None:
    # indentation before an added token is one pre-token: no line cut inside it
    text = "row 1: é\u0301 <|im_start|> 22 apples\n  more 3\n    <think>\n  x</think>\n" * 40
    assert qwen3.token_starts(text).tolist() == reference(qwen3, text)


def reference_safe_points(text: str, lines: bool) -> tuple[list[int], list[int]]:
    """The whole-text formulation of ``pieces._safe_points`` (one array per character)."""
    if not text:
        return [], []
    code = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    digit = (code >= 48) & (code <= 57)
    points = np.flatnonzero(digit[:-1] & ~digit[1:] & (code[1:] < 128)) + 1
    if not lines:
        points = points[first_per_gap(points)]
        return points.tolist(), (points - 1).tolist()
    breaks = np.flatnonzero(code == 10)
    nonblank = np.flatnonzero((code != 32) & (code != 9))
    k = np.searchsorted(nonblank, breaks + 1)
    ok = k < len(nonblank)
    breaks, first = breaks[ok], nonblank[k[ok]]
    c = code[first]
    ok = (c >= 33) & (c <= 126) & (c != 47)
    breaks, first = breaks[ok], first[ok]
    indented = first - 1 > breaks + 1
    cuts = np.concatenate([points, breaks + 1, first[indented] - 1])
    need = np.concatenate([points - 1, first, first[indented]])
    order = np.argsort(cuts, kind="stable")
    keep = first_per_gap(cuts[order])
    return cuts[order][keep].tolist(), need[order][keep].tolist()


def first_per_gap(cuts: np.ndarray) -> list[int]:
    """Positions of the first cut of every ``_POINTS_GAP`` characters (sorted cuts)."""
    return [i for i, c in enumerate(cuts)
            if i == 0 or c // pieces._POINTS_GAP != cuts[i - 1] // pieces._POINTS_GAP]


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXTS, lines=st.booleans(), gap=st.sampled_from([1, 3, 64]))
def test_safe_points_in_chunks_equal_the_whole_text_scan(monkeypatch, text: str,
                                                         lines: bool, gap: int) -> None:
    monkeypatch.setattr(pieces, "_POINTS_CHUNK", 5)
    monkeypatch.setattr(pieces, "_POINTS_GAP", gap)
    cuts, need = pieces._safe_points(text, lines)
    assert (cuts.tolist(), need.tolist()) == reference_safe_points(text, lines)



def line_pieces_between(text: str, added: Any) -> list[str]:
    """The pure-Python pieces: ``_iter_line_pieces`` of each stretch between added
    tokens, each added token a piece of its own."""
    cut, a = [], 0
    for m in added.finditer(text) if added is not None else ():
        cut += pieces._iter_line_pieces(text[a : m.start()])
        cut.append(m.group())
        a = m.end()
    return cut + list(pieces._iter_line_pieces(text[a:]))


def slotted(cls: type, text: str, added: Any, digit_safe: bool, limit: int) -> tuple:
    """Slots, order, lengths and flushed batches of the line pieces through ``cls``."""
    slot: dict[str, int] = {}
    order, lengths = pieces.array.array("q"), pieces.array.array("q")
    batches: list[list[str]] = []
    slots = cls(slot, order, lengths, limit, lambda b: batches.append(list(b)))
    pieces._line_slots(text, added, digit_safe)(slots)
    slots.close()
    return list(slot.items()), order.tolist(), lengths.tolist(), batches


@pytest.mark.skipif(pieces._COMPILED is None, reason="the compiled line-piece loop is not built")
@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXTS, limit=st.sampled_from([1, 16, 1 << 17]), chunk=st.sampled_from([2, 5, 1 << 16]),
       digit_safe=st.booleans(), with_added=st.booleans())
def test_compiled_line_slots_are_the_python_ones(qwen3, monkeypatch, text: str, limit: int,
                                                 chunk: int, digit_safe: bool,
                                                 with_added: bool) -> None:
    monkeypatch.setattr(pieces, "_CHUNK", chunk)  # long pieces cut at digit boundaries
    added = qwen3._added if with_added else None
    got = slotted(pieces._COMPILED.LineSlots, text, added, digit_safe, limit)
    assert got == slotted(pieces.PieceSlots, text, added, digit_safe, limit)
    # the pieces are those of the Python generators, slotted in text order
    cut = list(pieces._iter_capped(line_pieces_between(text, added), digit_safe))
    assert [got[0][k][0] for k in got[1]] == cut
    assert all(sum(map(len, b)) >= limit for b in got[3][:-1]) and all(got[3])

@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXTS)
def test_qwen3_starts_without_the_compiled_loop(qwen3, small_batches, monkeypatch,
                                                text: str) -> None:
    monkeypatch.setattr(pieces, "_COMPILED", None)  # an install without a C compiler
    assert qwen3.token_starts(text).tolist() == reference(qwen3, text)
