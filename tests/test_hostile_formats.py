"""Hostile documents: every valid one is sectioned, every invalid
one is one error at the right place, in bounded time; tiny budgets give no empty sections
and keep numbers whole."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from treeagent import formats
from treeagent.algorithm.preprocess import section_text
from treeagent.algorithm.tree import ParseError
from treeagent.formats import yaml_format
from treeagent.tokenizers import tokens

TOK = tokens.load("cl100k_base")
_MAIN = "import sys; from treeagent.cli.main import main; sys.exit(main(sys.argv[1:]))"


def _sections_cli(path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _MAIN, "sections", str(path),
                           "--tokenizer", "cl100k_base", *args],
                          capture_output=True, text=True, timeout=120)


# ------------------------------------------------------------------ lone surrogates


SURROGATE_DOC = {"\udc00": "x" * 200, "b\ud800": ["y" * 200] * 2, "ok": 1}


@pytest.mark.parametrize("fmt,text", [
    ("json", json.dumps(SURROGATE_DOC)),
    ("javascript", "const a = " + json.dumps(SURROGATE_DOC) + ";\n"),
])
def test_lone_surrogate_keys_give_printable_paths(fmt, text):
    r = section_text(text, fmt, TOK, 20)
    paths = [s.path for s in r.sections]
    assert any("['\\udc00']" in p for p in paths)
    assert any("['b\\ud800']" in p for p in paths)
    for p in paths:
        p.encode("utf-8")  # would raise on a raw surrogate
    assert "\udc00" in {n.label for n in r.tree.nodes}  # the key itself stays decoded


@pytest.mark.parametrize("suffix,prefix", [(".json", ""), (".js", "const a = ")])
def test_cli_sections_on_surrogate_keys(tmp_path, suffix, prefix):
    f = tmp_path / f"s{suffix}"
    f.write_text(prefix + json.dumps(SURROGATE_DOC) + "\n")
    for extra in ((), ("--json",)):
        done = _sections_cli(f, "--budget", "20", *extra)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        assert "\\udc00" in done.stdout


# ------------------------------------------------------------------ big numbers


def test_json_numbers_past_pythons_digit_limit_are_sectioned():
    big = "9" * 5000
    text = f'{{"a": {big}, "b": -{big}.5e3, "c": [1, {big}]}}'
    r = section_text(text, "json", TOK, 50)
    leaves = {r.tree.path(n): r.tree.source(n) for n in r.tree.nodes if not n.children}
    assert leaves["$.a"] == f'"a": {big}' and leaves["$.c[1]"] == big
    assert leaves["$.b"] == f'"b": -{big}.5e3'
    spans = {s.path: s for s in r.sections}
    assert spans["$.a"].atomic and spans["$.a"].kind == "subtree"  # never split


@pytest.mark.parametrize("text,where", [
    ("[%s, ]" % ("9" * 5000), "1:5004"),       # "]" after a comma, after a big number
    ("[0%s]" % ("9" * 5000), "1:3"),            # leading zero: invalid JSON number
    ("[%s" % ("9" * 5000), "1:5002"),           # unterminated array
])
def test_invalid_json_around_big_numbers_is_located(text, where):
    with pytest.raises(ParseError) as err:
        formats.parse(text, "json")
    assert f"{err.value.line}:{err.value.col}" == where
    assert "digit" not in err.value.message  # not Python's int-conversion message


def test_javascript_numbers_past_pythons_digit_limit_read_as_js_does():
    big = "9" * 5000
    text = f"const a = {{{big}: -{big}, b: [1e5, {big}], c: 0x{'f' * 5000}}};\n"
    r = section_text(text, "javascript", TOK, 50)
    paths = {r.tree.path(n) for n in r.tree.nodes}
    assert "$.a.Infinity" in paths  # Number::toString of the key's value
    assert {"$.a.b[1]", "$.a.c"} <= paths
    spans = {s.path: s for s in r.sections}
    assert spans["$.a.b[1]"].atomic and spans["$.a.b[1]"].tokens > 50  # kept whole


# ------------------------------------------------------------------ deep YAML


@pytest.mark.parametrize("open_,close", [("[", "]"), ("{k: ", "}")])
def test_deep_yaml_flow_nesting_parses_in_linear_time(open_, close):
    def seconds(depth: int) -> float:
        text = "a: " + open_ * depth + "1" + close * depth + "\n"
        t0 = time.perf_counter()
        tree = yaml_format.parse(text)
        elapsed = time.perf_counter() - t0
        assert len(tree.nodes) == depth + 2
        return elapsed

    small, large = seconds(2000), seconds(16000)
    assert large < 5  # was ~50 s at 16k levels (quadratic simple-key scan)
    assert large < 8 * small * 3  # 8x the depth: linear, with room for noise


def _events(text: str, loader: type) -> list:
    try:
        return [(type(e).__name__, getattr(e, "value", None), e.start_mark.index,
                 e.end_mark.index) for e in yaml.parse(text, Loader=loader)]
    except yaml.YAMLError as exc:
        return [("error", str(exc))]


_yaml_texts = st.lists(st.sampled_from(
    ["a", ":", " ", "\n", "[", "]", "{", "}", ",", "- ", "? ", "'", '"', "#", "x" * 1030,
     "&a ", "*a", "!!str ", "  ", "k: ", "1"]), max_size=30).map("".join)


@settings(max_examples=300, deadline=None)
@given(_yaml_texts)
def test_linear_key_scan_gives_the_same_events_and_errors_as_pyyaml(text):
    assert _events(text, yaml_format._FlatKeysLoader) == _events(text, yaml.SafeLoader)


# ------------------------------------------------------------------ tiny budgets


def test_yaml_numbers_booleans_and_nulls_stay_whole():
    text = "count: 123456789012345678\npi: -3.14159265358979\nok: true\nn: null\nw: hello world\n"
    r = section_text(text, "yaml", TOK, 1, search=False)
    by_path: dict[str, list[str]] = {}
    for s in r.sections:
        by_path.setdefault(s.path, []).append(s.text(text))
    assert by_path["$.count"] == ["count: 123456789012345678"]
    assert by_path["$.pi"] == ["pi: -3.14159265358979"]
    assert by_path["$.ok"] == ["ok: true"] and by_path["$.n"] == ["n: null"]
    assert len(by_path["$.w"]) > 1  # strings are still divisible


_scalar = st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.booleans(), st.none(),
                    st.text(st.characters(codec="utf-8", exclude_characters="\r\x85\u2028\u2029"),
                            max_size=12))
_doc = st.recursive(_scalar, lambda k: st.one_of(
    st.lists(k, max_size=3), st.dictionaries(st.text("abc xy", min_size=1, max_size=5), k,
                                             max_size=3)), max_leaves=12)


@settings(max_examples=80, deadline=None)
@given(_doc, st.sampled_from(["yaml-block", "yaml-flow", "json"]), st.integers(1, 4),
       st.booleans())
def test_tiny_budgets_give_no_empty_sections(doc, style, budget, search):
    if style == "json":
        text, fmt = json.dumps({"r": doc}, ensure_ascii=False), "json"
    else:
        text = yaml.safe_dump({"r": doc}, allow_unicode=True,
                              default_flow_style=style == "yaml-flow")
        fmt = "yaml"
    r = section_text(text, fmt, TOK, budget, search=search)
    for s in r.sections:
        assert s.end > s.start, (s.path, s.start)
        node = s.node
        if s.kind == "span" and (s.start, s.end) != (node.start, node.end):
            # a fragment (not the whole leaf) keeps at least one character of content
            assert min(s.end, node.cut_end) > max(s.start, node.cut_start), s.path
        if s.node is not None and s.node.kind in ("number", "literal"):
            assert s.kind != "span"
    covered = "".join(text[s.start:s.end] for s in r.sections if s.kind == "span")
    assert len(covered) <= len(text)


# ------------------------------------------------------------------ linear cost (item 3)


@pytest.mark.parametrize("fmt,wrap,body", [
    ("json", '{{"s": {}}}', "lorem ipsum dolor "),
    ("json", '{{"s": {}}}', 'a\\n\\"b\\\\ '),  # an escape every other character
    ("javascript", "const s = {};\n", "lorem ipsum dolor "),
])
def test_long_strings_parse_without_memory_per_character(fmt, wrap, body):
    import tracemalloc

    value = '"' + body * (2**21 // len(body)) + '"'  # one 2 MB string literal
    text = wrap.format(value)
    tracemalloc.start()
    try:
        tree = formats.parse(text, fmt)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert any(n.end - n.start >= len(value) for n in tree.nodes)
    assert peak < 6 * len(text)  # the regex scan once held ~150 bytes per character


def test_long_leaves_split_by_estimates_stay_within_the_budget():
    prose = " ".join(f"word{i % 97} and some prose, sentence {i}." for i in range(6000))
    text = json.dumps({"s": prose})
    r = section_text(text, "json", TOK, 300, search=False)
    spans = [s for s in r.sections if s.kind == "span"]
    assert len(spans) > 50
    assert all(s.tokens <= 300 for s in spans)
    assert all(s.tokens >= 0.7 * 300 for s in spans[:-1])  # natural cuts keep >= 75%
    assert "".join(text[s.start:s.end] for s in spans) == text[spans[0].start:spans[-1].end]


def test_yaml_comments_stay_with_their_neighbour():
    text = ("# about the file\nname: a b c d e f g h\ncount: 12345\n"
            "items:\n  # first item\n  - alpha beta gamma delta\n  - 3.5  # pi-ish\n")
    r = section_text(text, "yaml", TOK, 6, search=False)
    joined = "\n".join(s.text(text) for s in r.sections)
    for comment in ("# about the file", "# first item", "# pi-ish"):
        assert comment in joined
    first = r.sections[0].text(text)
    assert first.startswith("# about the file\nname:")


def test_javascript_comments_stay_with_their_neighbour():
    text = ("// the settings\nconst settings = {\n  // the name of it\n  name: 'a b c d e f g h',\n"
            "  count: 12345, // how many\n  /* the items,\n     in order */\n"
            "  items: ['alpha beta gamma delta', 3.5], /* pi-ish */\n};\n")
    r = section_text(text, "javascript", TOK, 36, search=False)
    texts = [s.text(text) for s in r.sections]
    assert len(texts) >= 2, texts  # the object is split into runs of properties
    for comment, neighbour in (("// the name of it", "name: 'a b"), ("// how many", "12345"),
                               ("/* the items,\n     in order */", "items: ["),
                               ("/* pi-ish */", "3.5]")):
        holding = [t for t in texts if comment in t]
        assert len(holding) == 1 and neighbour in holding[0], (comment, texts)


def test_split_html_containers_keep_their_attributes_in_the_path():
    para = "word " * 80
    text = (f'<html><body><div class="main content" id="x" hidden data-v=3>'
            f"<p>{para}</p><p>{para}</p></div></body></html>")
    r = section_text(text, "html", TOK, 40, search=False)
    assert len(r.sections) > 2
    for s in r.sections:  # every section lies inside the split div
        assert "/div[@class='main content'][@id='x'][@hidden][@data-v='3']/" in s.path
    whole = section_text(text, "html", TOK, 10_000, search=False)
    assert [s.path for s in whole.sections] == ["/"]  # unsplit: the tag is in the text
    long = text.replace('id="x"', 'id="' + "y" * 500 + '"')
    path = section_text(long, "html", TOK, 40, search=False).sections[0].path
    assert "y" * 59 + "\u2026" in path and len(path) < 300


_json_bits = st.lists(st.sampled_from(
    ['{', '}', '[', ']', ':', ',', '"a"', '"\\u00e9"', '"\\x"', '"\x01"', '1', '-0', '01',
     '1.5e3', '1.', 'true', 'tru', 'null', ' ', '\n', 'x', '"']), max_size=14).map("".join)


@settings(max_examples=400, deadline=None)
@given(_json_bits)
def test_iterative_json_check_agrees_with_the_c_decoder(text):
    """The check used past the C decoder's recursion limit gives the same verdict, end and
    error place as the C decoder on shallow text."""
    from treeagent.formats import json_format

    def verdict(check):
        try:
            return ("ok", check())
        except ParseError as exc:
            return ("error", exc.line, exc.col, exc.message)
        except json.JSONDecodeError as exc:
            return ("error", exc.lineno, exc.colno, exc.msg)

    start = len(text) - len(text.lstrip(" \t\r\n"))
    if start == len(text):
        return
    c = verdict(lambda: json.JSONDecoder().raw_decode(text, start)[1])
    mine = verdict(lambda: json_format._validate_deep(text, start))
    assert mine == c


def test_json_nested_past_the_recursion_limit_is_sectioned():
    depth = 20_000
    text = '{"a": ' * depth + '[1, "x", true]' + "}" * depth
    r = section_text(text, "json", TOK, 2000, search=False)
    assert len(r.tree.nodes) == depth + 4
    with pytest.raises(ParseError) as err:
        formats.parse("[" * depth + "1 2" + "]" * depth, "json")
    assert (err.value.line, err.value.col, err.value.message) == \
        (1, depth + 3, "Expecting ',' delimiter")
