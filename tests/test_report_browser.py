"""The HTML report as a reader sees it: rendered by Debian's headless Chromium.

``--dump-dom`` gives the DOM after load (provenance, every table and figure present);
``--screenshot`` a page that is not blank; the DevTools protocol (tests/chromium_cdp.py)
the layout of index.html copied alone (every figure loaded from the page itself, shown at
its native size). CI installs the browser (`.ci/run`: ``apt-get install chromium``) so
this runs there, never skipped.
"""

from __future__ import annotations

import datetime as dt
import html.parser
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from test_report import synthetic_rows
from treeagent.pipeline import config
from treeagent.report import provenance
from treeagent.report.render import build_report

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars"]
WIDTH, HEIGHT = 1280, 2000


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise AssertionError("no Chromium: install Debian's package (apt-get install chromium); "
                         ".ci/run does this before `make test`")


def _evidence_rows(scores: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    examples, records = [], []
    for i, (ex, ds, task, length) in enumerate(
            scores[["example_id", "dataset", "task", "length"]].drop_duplicates()
            .itertuples(index=False)):
        for method in ("flat", "treeagent"):
            split = int(method == "flat" and i % 3 == 0)
            base = {"example_id": ex, "format": ds, "task": task, "length": length,
                    "agent": "memagent", "method": method, "tokenizer": "qwen3"}
            examples.append({**base, "base_budget": 512, "budget": 512 if method == "flat"
                             else 700, "sections": 6, "flat_sections": 6,
                             "aggregation": task == "conditional_count", "records": 2,
                             "located": 2, "split": split, "split_share": split / 2,
                             "in_scope_split_share": split / 2, "max_sections_spanned": 1
                             + split})
            for j in range(2):
                records.append({**base, "record_id": f"{ex}#r{j}", "start": 100 * j,
                                "end": 100 * j + 80, "sections_spanned": 1 + (j < split),
                                "whole": j >= split})
    return pd.DataFrame(examples), pd.DataFrame(records)


class _Dom(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.tables = 0
        self.imgs: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "table":
            self.tables += 1
        elif tag == "img":
            self.imgs.append(a.get("data-file", ""))
            assert a.get("src", "").startswith("data:image/png;base64,")
        elif tag == "a":
            self.links.append(a.get("href", ""))


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = tmp_path_factory.mktemp("browser")
    scores = pd.DataFrame(synthetic_rows())
    ev, ev_records = _evidence_rows(scores)
    (out / "validation").mkdir()
    for gate in ("raw", "examples", "evidence", "scores"):
        (out / "validation" / f"{gate}.json").write_text('{"success": true}')
    params = SimpleNamespace(data=config.preset("demo"))
    prov = provenance.collect(params, scores, ev,
                              now=dt.datetime(2026, 12, 4, 12, 0, tzinfo=dt.UTC))
    build_report(scores, out, evidence=ev, evidence_records=ev_records, provenance=prov,
                 validation=[str(p) for p in sorted((out / "validation").glob("*.json"))],
                 note="A 135M model scores near zero.")
    browser = _chromium()
    profile = out / "profile"
    url = (out / "index.html").resolve().as_uri()
    common = [browser, *FLAGS, f"--user-data-dir={profile}", f"--window-size={WIDTH},{HEIGHT}"]
    dom = subprocess.run([*common, "--dump-dom", url], capture_output=True, text=True,
                         timeout=120)
    shot = out / "shot.png"
    subprocess.run([*common, f"--screenshot={shot}", url], capture_output=True, timeout=120)
    return SimpleNamespace(out=out, dom=dom, shot=shot)


def test_dom_has_provenance_every_table_and_figure(rendered):
    assert rendered.dom.returncode == 0, rendered.dom.stderr[-2000:]
    dom = _Dom()
    dom.feed(rendered.dom.stdout)
    needed = {"provenance", "table1", "table3", "table4", "match-rate", "figure3-data",
              "tasks-json", "tasks-yaml", "evidence", "samples-memagent-flat",
              "samples-memagent-treeagent", "samples-infmem-tree", "figure2", "figure3",
              "figure-evidence", "missing"}
    assert needed <= dom.ids, needed - dom.ids
    assert dom.tables >= len({i for i in needed if not i.startswith("figure")})
    page = rendered.dom.stdout
    for text in ("git commit", "params hash", "qwen3", "m @ r1", "A 135M model scores"):
        assert text in page, text
    assert sorted(dom.imgs) == ["figures/evidence.png", "figures/figure2.png",
                                "figures/figure3.png"]
    assert {"validation/raw.json", "validation/scores.json"} <= set(dom.links)


def test_index_html_alone_shows_every_figure_at_native_size(rendered, tmp_path):
    from chromium_cdp import Page

    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(rendered.out / "index.html", alone / "index.html")  # no figures/ beside it
    with Page((alone / "index.html").as_uri(), tmp_path / "profile", width=WIDTH) as page:
        imgs = page.eval("[...document.images].map(i => [i.complete, i.naturalWidth, "
                         "i.naturalHeight, i.clientWidth, i.clientHeight])")
        captions = page.eval("[...document.querySelectorAll('figcaption')].length")
    assert len(imgs) == 3
    for complete, nw, nh, w, h in imgs:
        assert complete and nw >= 900, imgs
        assert (w, h) == (nw, nh), imgs  # one CSS pixel per image pixel: native size
    assert captions == 0  # this report's figures have no note


def test_figures_are_print_size():
    import matplotlib.pyplot as plt

    out = Path(pytest.importorskip("tempfile").mkdtemp())
    scores = pd.DataFrame(synthetic_rows())
    ev, _ = _evidence_rows(scores)
    build_report(scores, out, evidence=ev)
    for name in ("figure2.png", "figure3.png", "evidence.png"):
        h, w = plt.imread(out / "figures" / name).shape[:2]
        assert w >= 900 and h >= 300, (name, w, h)


def test_screenshot_is_a_rendered_page(rendered):
    import matplotlib.pyplot as plt
    import numpy as np

    assert rendered.shot.is_file(), "chromium wrote no screenshot"
    img = plt.imread(rendered.shot)
    assert img.shape[:2] == (HEIGHT, WIDTH)
    gray = img[..., :3].mean(axis=2)
    assert (gray < 0.5).mean() > 0.01  # text and figures, not a blank page
    assert (gray > 0.9).mean() > 0.3  # on a light background
    assert float(np.std(gray)) > 0.05
