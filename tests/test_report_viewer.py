"""The per-example viewer (reports/examples/): pages built from a real run's trace (the
scheduler and MemAgent's program over a scripted engine double), checked as files and in
headless Chromium, which clicks to a run and a step and sees that step's memory."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from helpers import CharTokenizer
from test_agents_double import TINY_JSON, ScriptedEngine
from treeagent.agents.evaluate import evaluate
from treeagent.bench.model import Example
from treeagent.report import viewer as V
from treeagent.report.schema import score_rows

HOSTILE_QUESTION = "<script>window.pwned = 1</script><img src=x onerror='window.pwned=2'> b?"


def _script(r):
    if r.kind == "answer":
        return "\\boxed{30}"
    # the memory after each step names the step's own section text (distinct per step)
    section = r.messages[0].content[-24:]
    return f"memory: saw {section!r}"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("viewer")
    ex = Example(id="json one/0", format="json", task="numeric_extremum", length=8192,
                 question=HOSTILE_QUESTION, answer=30, spec={}, source_ids=[], tokens={},
                 context=TINY_JSON, content_hash="h0")
    rows = []
    for method in ("flat", "treeagent"):
        run = out / "runs" / "memagent" / method
        run.mkdir(parents=True)
        rows += evaluate([ex], agent="memagent", method=method, engine=ScriptedEngine(_script),
                         base_budget=14, tokenizer=CharTokenizer(), trace=run / "trace.jsonl")
    scores = score_rows(rows).to_pandas()
    start = TINY_JSON.index('"b"')
    records = pd.DataFrame([{"example_id": ex.id, "agent": "memagent", "method": m,
                             "record_id": "b", "start": start, "end": start + 14,
                             "sections_spanned": 2 if m == "flat" else 1}
                            for m in ("flat", "treeagent")])
    traces = V.read_traces(out / "runs", ["memagent"], ["flat", "treeagent"])
    sections = V.sections_by_method({"memagent": CharTokenizer()}, 14)
    pages = V.write_examples(out / "examples", [ex], scores, traces, sections, records)
    return SimpleNamespace(out=out, ex=ex, pages=pages, traces=traces, scores=scores)


def test_pages_hold_their_data_and_no_markup_from_it(built):
    name = built.pages[built.ex.id]["page"]
    assert name != "json one/0.html" and "/" not in name and name.endswith(".html")
    page = (built.out / "examples" / name).read_text(encoding="utf-8")
    assert "<script>window.pwned" not in page and "<img src=x" not in page
    assert not re.search(r"<(script|link|img|iframe)\b[^>]*\b(src|href)=", page)  # no fetch
    blob = page.split('<script type="application/json" id="data">', 1)[1].split("</script>")[0]
    data = json.loads(blob)
    assert data["question"] == HOSTILE_QUESTION
    runs = {r["method"]: r for r in data["runs"]}
    assert [len(runs[m]["steps"]) for m in ("flat", "treeagent")] == [
        len(built.traces[(built.ex.id, "memagent", m)]) for m in ("flat", "treeagent")]
    tree = runs["treeagent"]
    assert [s["path"] for s in tree["sections"]] == ["$.a.x", "$.a.y", "$.b", "$.c"]
    assert tree["steps"][2]["t"] == 2 and tree["steps"][2]["path"] == "$.b"
    assert runs["flat"]["records"][0]["spanned"] == 2 and tree["score"] == 1.0


def test_chromium_clicks_to_a_step_and_sees_its_memory(built, tmp_path):
    from chromium_cdp import Page

    name = built.pages[built.ex.id]["page"]
    step = built.traces[(built.ex.id, "memagent", "treeagent")][2]
    url = (built.out / "examples" / name).as_uri()
    with Page(url, tmp_path / "profile") as page:
        assert page.eval("document.querySelector('#question').textContent") == HOSTILE_QUESTION
        assert page.eval("window.pwned === undefined")
        assert page.eval("document.querySelector('#memory')") is None  # no step chosen yet
        page.click('[data-run="memagent/treeagent"]')
        assert page.eval("document.querySelectorAll('.badge').length") == 4  # its sections
        assert page.eval("document.querySelectorAll('.rec').length") >= 1
        page.click('[data-step="2"]')
        assert page.eval("document.querySelector('#memory').textContent") == step["reply"]
        assert page.eval("document.querySelector('#step-path').textContent") == "$.b"
        current = page.eval("[...document.querySelectorAll('.seg.current')]"
                            ".map(e => e.textContent).join('')")
        assert current.strip() and current in TINY_JSON and '"b"' in current
        assert page.eval("location.hash") == "#memagent/treeagent/2"
        page.click('[data-run="memagent/flat"]')
        assert page.eval("document.querySelectorAll('.rec.split').length") >= 1
        assert page.eval("document.querySelector('#score').textContent") == "100"


def test_index_links_every_example_and_run(built, tmp_path):
    from chromium_cdp import Page

    url = (built.out / "examples" / V.INDEX).as_uri()
    name = built.pages[built.ex.id]["page"]
    with Page(url, tmp_path / "profile") as page:
        hrefs = page.eval("[...document.querySelectorAll('#examples a')]"
                          ".map(a => a.getAttribute('href'))")
        assert hrefs == [name, f"{name}#memagent/flat", f"{name}#memagent/treeagent"]
        page.click(f'a[href="{name}#memagent/treeagent"]')
        page.wait_for(f"location.pathname.endsWith({json.dumps(name)})"
                      " && document.readyState === 'complete'", "the example's page", timeout=10)
        assert page.eval("document.querySelector('[data-run=\"memagent/treeagent\"]')"
                         ".className") == "on"


def test_read_traces_names_a_bad_line(tmp_path):
    run = tmp_path / "memagent" / "flat"
    run.mkdir(parents=True)
    (run / "trace.jsonl").write_text('{"example_id": "e", "call": 0}\n{broken\n')
    traces = V.read_traces(tmp_path, ["memagent"], ["flat", "tree"])
    assert traces[("e", "memagent", "flat")] == [{"example_id": "e", "call": 0}]
    bad = traces[("None", "memagent", "flat")][0]["error"]
    assert bad.startswith(f"{run / 'trace.jsonl'}:2: ")


def test_page_names_are_safe_and_distinct():
    assert V.page_name("json-one_field-8192-0") == "json-one_field-8192-0.html"
    names = {V.page_name(x) for x in ("a/b", "a_b", "a b", "../x", ".hidden")}
    assert len(names) == 5 and all("/" not in n and not n.startswith(".") for n in names)
    assert Path(V.page_name("a/b")).name == V.page_name("a/b")


def test_treeagent_view_opens_the_index_or_an_example(built, capsys, monkeypatch):
    import webbrowser

    from treeagent.cli.main import main

    opened = []
    monkeypatch.setattr(webbrowser, "open", lambda url: opened.append(url) or True)
    reports = str(built.out)
    assert main(["view", "--reports", reports]) == 0
    assert opened == [(built.out / "examples" / V.INDEX).resolve().as_uri()]
    assert main(["view", built.ex.id, "--run", "memagent/treeagent", "--reports", reports]) == 0
    page = (built.out / "examples" / built.pages[built.ex.id]["page"]).resolve().as_uri()
    assert opened[-1] == page + "#memagent/treeagent"
    assert main(["view", built.ex.id, "--print", "--reports", reports]) == 0
    assert len(opened) == 2 and capsys.readouterr().out.splitlines()[-1] == page
    for argv, says in ((["view", "nope"], "nope: no page in"),
                       (["view", "--run", "memagent/flat"], "--run: name an example")):
        assert main([*argv, "--reports", reports]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and says in err and len(err.splitlines()) == 1
    assert main(["view", "--reports", str(built.out / "none")]) == 2
    assert "no viewer here" in capsys.readouterr().err


def test_the_report_links_samples_to_their_pages(built, tmp_path):
    from markdown_it import MarkdownIt

    from treeagent.report.render import build_report

    build_report(built.scores, tmp_path, viewer=built.pages)
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    page = built.pages[built.ex.id]["page"]
    rendered = MarkdownIt("commonmark").enable("table").render(md)
    assert f'<a href="examples/{page}#memagent/treeagent">json one/0</a>' in rendered
    assert '<a href="examples/index.html">' in rendered
    assert "| Question |" in md and "window.pwned" in md and "<script>" not in md
    html = (tmp_path / "index.html").read_text(encoding="utf-8")
    assert f'<a href="examples/{page}#memagent/flat">json one/0</a>' in html


def test_pages_per_cell_are_capped_and_long_messages_cut(built, tmp_path, monkeypatch):
    import dataclasses

    other = dataclasses.replace(built.ex, id="json one/1")
    scores = pd.concat([built.scores, built.scores.assign(example_id=other.id)])
    monkeypatch.setattr(V, "MESSAGE_CHARS", 10)
    pages = V.write_examples(tmp_path, [built.ex, other], scores, built.traces, per_cell=1)
    assert list(pages) == [built.ex.id]
    assert sorted(p.name for p in tmp_path.glob("*.html")) == sorted(
        [V.INDEX, pages[built.ex.id]["page"]])
    index = (tmp_path / V.INDEX).read_text(encoding="utf-8")
    assert "1 of 2 scored examples (at most 1 per format × task × length)." in index
    page = (tmp_path / pages[built.ex.id]["page"]).read_text(encoding="utf-8")
    data = json.loads(page.split('id="data">', 1)[1].split("</script>")[0])
    full = built.traces[(built.ex.id, "memagent", "flat")][0]["messages"][0]["content"]
    cut = data["runs"][0]["steps"][0]["messages"][0]["content"]
    assert cut.startswith(full[:10]) and f"[{len(full) - 10} more characters" in cut
