"""Live adapters against recorded responses (httpx MockTransport): paging, retries on
429/5xx with backoff, API keys from the environment never written to raw/ or the
manifest. Responses are real recordings (package samples, or the mirror in $TREEAGENT_MIRROR when
present) except the labelled constructed ones in tests/fixtures/recorded/."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from treeagent.bench import sources as S
from treeagent.bench.sources import live
from treeagent.bench.sources.acquiring import sample_root

RECORDED = Path(__file__).parent / "fixtures" / "recorded"
SAMPLE = sample_root() / "json"


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch):
    slept: list[float] = []
    monkeypatch.setattr(live, "SLEEP", slept.append)
    return slept


def _client(handler: Callable[[httpx.Request], httpx.Response]) -> httpx.Client:
    return httpx.Client(transport=httpx.MockTransport(handler))


def _ok(path: Path) -> httpx.Response:
    return httpx.Response(200, content=path.read_bytes(),
                          headers={"Content-Type": "application/json"})


def _acquire(tmp_path, source, handler, fmt="json", **kw):
    raw = tmp_path / "raw"
    m = S.acquire("live", formats=[fmt], sources=[source], raw_dir=raw, client=_client(handler),
                  progress=False, **kw)
    return raw, m


def test_usgs_pages_by_offset_until_a_short_page(tmp_path):
    pages = {"1": SAMPLE / "usgs/libcomcat__dataframes_association__5.json",  # 15 events
             "16": SAMPLE / "usgs/libcomcat__dataframes_association__2.json"}  # 4 events
    seen = []

    def handler(req):
        assert req.url.host == "earthquake.usgs.gov" and req.url.params["format"] == "geojson"
        seen.append((req.url.params["offset"], req.url.params["limit"]))
        return _ok(pages[req.url.params["offset"]])

    raw, m = _acquire(tmp_path, "usgs", handler, queries={"usgs": {"limit": 15}})
    assert seen == [("1", "15"), ("16", "15")]
    assert [e["file"] for e in m["files"]] == ["json/usgs/live__0000.json",
                                               "json/usgs/live__0001.json"]
    assert (raw / m["files"][1]["file"]).read_bytes() == pages["16"].read_bytes()  # as received
    assert m["files"][0]["provenance"]["request"]["params"]["offset"] == 1
    # the first page (11.7 KB) is over 8,000 characters: one unit per event; the short
    # last page (3.4 KB) stays one unit of its 4 events
    assert [len(u.records) for u in S.units("json", raw_dir=raw)] == [1] * 15 + [4]


def test_nvd_api_key_comes_from_env_and_is_never_written(tmp_path, monkeypatch, no_sleep):
    secret = "nvd-key-7f3a9c0e-do-not-write"
    monkeypatch.setenv("NVD_API_KEY", secret)
    body = SAMPLE / "nvd/nvdlib__simple_search.json"  # resultsPerPage 2, totalResults 2

    def handler(req):
        assert req.headers["apiKey"] == secret and secret not in str(req.url)
        assert req.url.params["startIndex"] == "0"
        return _ok(body)

    raw, m = _acquire(tmp_path, "nvd", handler, queries={"nvd": {"resultsPerPage": 2}})
    assert len(m["files"]) == 1
    for p in raw.rglob("*"):
        if p.is_file():
            assert secret.encode() not in p.read_bytes(), p
    assert secret not in json.dumps(m)
    assert [len(u.records) for u in S.units("json", raw_dir=raw)] == [2]


def test_retries_429_and_5xx_with_backoff_and_retry_after(tmp_path, no_sleep):
    body = SAMPLE / "usgs/libcomcat__dataframes_association__2.json"
    replies = [httpx.Response(429, headers={"Retry-After": "7"}), httpx.Response(503),
               httpx.Response(502)]

    def handler(req):
        return replies.pop(0) if replies else _ok(body)

    raw, m = _acquire(tmp_path, "usgs", handler, queries={"usgs": {"limit": 20}})
    assert len(m["files"]) == 1 and m["missing"] == []
    assert 7.0 in no_sleep and 2.0 in no_sleep and 4.0 in no_sleep  # Retry-After, 1*2, 1*4


def test_transport_errors_are_retried(tmp_path):
    body = SAMPLE / "usgs/libcomcat__dataframes_association__2.json"
    calls = []

    def handler(req):
        calls.append(1)
        if len(calls) == 1:
            raise httpx.ConnectError("refused", request=req)
        return _ok(body)

    _, m = _acquire(tmp_path, "usgs", handler, queries={"usgs": {"limit": 20}})
    assert len(calls) == 2 and len(m["files"]) == 1


def test_persistent_errors_stop_one_source_with_a_reason_not_the_run(tmp_path):
    def handler(req):
        if req.url.host == "earthquake.usgs.gov":
            return httpx.Response(500)
        return _ok(SAMPLE / "nvd/nvdlib__simple_search.json")

    raw = tmp_path / "raw"
    m = S.acquire("live", formats=["json"], sources=["usgs", "nvd"], raw_dir=raw,
                  client=_client(handler), queries={"nvd": {"resultsPerPage": 2}}, progress=False)
    (miss,) = m["missing"]
    assert miss["source"] == "usgs" and "HTTP 500 after 5 retries" in miss["reason"]
    assert [e["source"] for e in m["files"]] == ["nvd"]


def test_client_errors_are_not_retried(tmp_path):
    calls = []

    def handler(req):
        calls.append(1)
        return httpx.Response(404)

    _, m = _acquire(tmp_path, "gbif", handler)
    assert len(calls) == 1 and "HTTP 404" in m["missing"][0]["reason"]


def test_usaspending_posts_page_numbers(tmp_path, sources):
    pages = {1: SAMPLE / "usaspending/usaspending-orm__awards__search_results_grants.json"}
    if sources is not None:  # a recorded page 2 of the same endpoint (hasNext true)
        pages[2] = sources / "json/usaspending/usaspending-orm__awards__search_results_idvs.json"
    bodies = []

    def handler(req):
        assert req.method == "POST" and req.url.path == "/api/v2/search/spending_by_award/"
        body = json.loads(req.content)
        bodies.append(body)
        return _ok(pages[body["page"]])

    raw, m = _acquire(tmp_path, "usaspending", handler, limit=len(pages))
    assert [b["page"] for b in bodies] == list(pages)  # page 1 says hasNext: page 2 follows
    assert bodies[0]["filters"]["award_type_codes"] == ["A", "B", "C", "D"]
    units = S.units("json", raw_dir=raw)  # each page is over 8,000 characters: a unit per result
    assert [len(u.records) for u in units] == [1] * (3 * len(pages))


def test_nih_reporter_posts_offset_and_limit(tmp_path):
    bodies = []

    def handler(req):
        bodies.append(json.loads(req.content))
        return _ok(SAMPLE / "nih_reporter/nih-reporter-dept-lookup__grants_sample.json")

    raw, m = _acquire(tmp_path, "nih_reporter", handler)
    assert bodies == [{"criteria": {"fiscal_years": [2024]}, "limit": 100, "offset": 0}]
    units = S.units("json", raw_dir=raw)  # over 8,000 characters: a unit per project
    assert [len(u.records) for u in units] == [1] * 5


def test_contracts_finder_follows_links_next(tmp_path):
    """CONSTRUCTED responses (see tests/fixtures/recorded/README.md)."""
    urls = []

    def handler(req):
        urls.append(str(req.url))
        page = 2 if "cursor=" in str(req.url) else 1
        return _ok(RECORDED / f"contracts_finder__CONSTRUCTED__page{page}.json")

    raw, m = _acquire(tmp_path, "contracts_finder", handler,
                      queries={"contracts_finder": {"limit": 2}})
    assert len(urls) == 2 and urls[1].endswith("&cursor=Q09OU1RSVUNURUQ")
    assert "stages=tender" in urls[0] and "limit=2" in urls[0]
    recs = [r for u in S.units("json", raw_dir=raw) for r in u.records]
    assert [r.kind for r in recs] == ["procurement notice"] * 3
    assert recs[1].description == "ocds-b5fd17-00000000-0000-4000-8000-000000000002"
    assert recs[1].fields["amount"] == 845000.5 and recs[1].fields["buyer name"] == \
        "Example Health Trust"


def test_apis_guru_listing_then_documents(tmp_path):
    """Listing CONSTRUCTED; the YAML documents are the real shipped samples."""
    docs = sample_root() / "yaml" / "apis-guru"

    def handler(req):
        if req.url.path == "/v2/list.json":
            return _ok(RECORDED / "apis_guru__CONSTRUCTED__list.json")
        name, version, file = req.url.path.split("/")[-3:]
        return httpx.Response(200, content=(docs / name / version / file).read_bytes())

    raw, m = _acquire(tmp_path, "apis-guru", handler, fmt="yaml")
    assert [e["file"] for e in m["files"]] == ["yaml/apis-guru/axesso.de/1.0.0/openapi.yaml",
                                               "yaml/apis-guru/color.pizza/1.0.0/openapi.yaml"]
    assert all(len(u.records) > 5 for u in S.units("yaml", raw_dir=raw))


def test_html_has_no_live_api_and_says_so(tmp_path):
    m = S.acquire("live", formats=["html"], sources=["websrc"], raw_dir=tmp_path / "raw",
                  client=_client(lambda r: httpx.Response(500)), progress=False)
    assert "no live API" in m["missing"][0]["reason"]


# ------------------------------------------------------------------ with a mirror ($TREEAGENT_MIRROR)


def test_crossref_deep_paging_with_next_cursor(tmp_path, sources):
    if sources is None:
        pytest.skip("no mirror of the real sources (set $TREEAGENT_MIRROR)")
    chain = [sources / f"json/crossref/habanero__test_workscontainer_with_cursor__{i}.json"
             for i in range(4)]
    cursors = []

    def handler(req):
        cursors.append(req.url.params["cursor"])
        return _ok(chain[len(cursors) - 1])

    _, m = _acquire(tmp_path, "crossref", handler, limit=4, queries={"crossref": {"rows": 5}})
    assert cursors[0] == "*" and len(m["files"]) == 4
    for prev, cur in zip(chain, cursors[1:]):
        assert cur == json.loads(prev.read_text())["message"]["next-cursor"]


def test_gbif_offset_paging(tmp_path, sources):
    if sources is None:
        pytest.skip("no mirror of the real sources (set $TREEAGENT_MIRROR)")
    pages = [sources / "json/gbif/pygbif__test_search_identified_by_id__0.json",
             sources / "json/gbif/pygbif__test_search_recorded_by_id__0.json"]
    offsets = []

    def handler(req):
        offsets.append(req.url.params["offset"])
        assert req.url.params["license"] == "CC0_1_0"
        return _ok(pages[len(offsets) - 1])

    _, m = _acquire(tmp_path, "gbif", handler, limit=2, queries={"gbif": {"limit": 3}})
    assert offsets == ["0", "3"] and len(m["files"]) == 2  # endOfRecords false: keep paging
