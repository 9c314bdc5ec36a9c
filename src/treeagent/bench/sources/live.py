"""Live acquisition from the public APIs (paper 4.1): paging, rate limits, retries with
exponential backoff on 429/5xx (``Retry-After`` honoured) and API keys from environment
variables, sent as headers and never written to ``raw/`` or the manifest.

Each pager yields ``(file name, response body as received, provenance)``.
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import httpx

from treeagent.bench.sources.registry import Source

SLEEP: Callable[[float], None] = time.sleep  # tests replace it
USER_AGENT = "treeagent-bench/0.1 (+https://github.com/treeagent)"

#: Environment variables holding credentials: source -> (env var, header, format).
API_KEYS: dict[str, tuple[str, str, str]] = {
    "nvd": ("NVD_API_KEY", "apiKey", "{}"),
    "crossref": ("CROSSREF_PLUS_TOKEN", "Crossref-Plus-API-Token", "Bearer {}"),
}
CONTACT_ENV = "TREEAGENT_CONTACT_EMAIL"  # Crossref's polite pool (sent in User-Agent)

#: Seconds between requests (documented or polite limits) without / with an API key.
INTERVALS = {"usgs": 0.5, "nvd": 6.0, "nih_reporter": 1.0, "clinicaltrials": 1.2,
             "gbif": 0.2, "crossref": 0.2, "contracts_finder": 0.5, "usaspending": 0.5,
             "apis-guru": 0.2}
KEYED_INTERVALS = {"nvd": 0.6}

ENDPOINTS = {
    "usgs": "https://earthquake.usgs.gov/fdsnws/event/1/query",
    "nvd": "https://services.nvd.nist.gov/rest/json/cves/2.0",
    "nih_reporter": "https://api.reporter.nih.gov/v2/projects/search",
    "clinicaltrials": "https://clinicaltrials.gov/api/v2/studies",
    "gbif": "https://api.gbif.org/v1/occurrence/search",
    "crossref": "https://api.crossref.org/works",
    "contracts_finder": "https://www.contractsfinder.service.gov.uk/Published/Notices/OCDS/Search",
    "usaspending": "https://api.usaspending.gov/api/v2/search/spending_by_award/",
    "apis-guru": "https://api.apis.guru/v2/list.json",
}

DEFAULT_QUERIES: dict[str, dict[str, Any]] = {
    "usgs": {"format": "geojson", "starttime": "2024-01-01", "endtime": "2024-02-01",
             "minmagnitude": 4.5, "orderby": "time-asc", "limit": 200},
    "nvd": {"pubStartDate": "2024-01-01T00:00:00.000", "pubEndDate": "2024-01-15T00:00:00.000",
            "resultsPerPage": 200},
    "nih_reporter": {"criteria": {"fiscal_years": [2024]}, "limit": 100},
    "clinicaltrials": {"format": "json", "pageSize": 50},
    "gbif": {"limit": 300, "license": "CC0_1_0", "hasCoordinate": "true"},
    "crossref": {"rows": 100, "filter": "from-pub-date:2024-01-01,until-pub-date:2024-01-31"},
    "contracts_finder": {"publishedFrom": "2024-01-01T00:00:00", "publishedTo":
                         "2024-01-31T23:59:59", "stages": "tender", "limit": 100},
    "usaspending": {"filters": {"award_type_codes": ["A", "B", "C", "D"], "time_period":
                                [{"start_date": "2024-01-01", "end_date": "2024-01-31"}]},
                    "fields": ["Award ID", "Recipient Name", "Award Amount", "Description",
                               "Awarding Agency", "Start Date", "End Date"],
                    "limit": 100, "page": 1, "sort": "Award Amount", "order": "desc"},
    "apis-guru": {},
}
MAX_PAGES = 50  # per source, unless ``limit`` says otherwise


class LiveError(RuntimeError):
    pass


class Http:
    """Requests with a minimum interval, retries on 429/5xx/transport errors and
    exponential backoff (``Retry-After`` wins when the server sends it)."""

    def __init__(self, client: httpx.Client, interval: float, headers: dict[str, str],
                 retries: int = 5, backoff: float = 1.0, max_delay: float = 60.0) -> None:
        self.client, self.interval, self.headers = client, interval, headers
        self.retries, self.backoff, self.max_delay = retries, backoff, max_delay
        self.last = -1e9
        self.attempts = 0

    def request(self, method: str, url: str, **kw: Any) -> httpx.Response:
        for attempt in range(self.retries + 1):
            wait = self.last + self.interval - time.monotonic()
            if wait > 0:
                SLEEP(wait)
            self.last = time.monotonic()
            self.attempts += 1
            try:
                r = self.client.request(method, url, headers=self.headers, **kw)
            except httpx.TransportError as exc:
                if attempt == self.retries:
                    raise LiveError(f"{method} {url}: {type(exc).__name__} after "
                                    f"{self.retries} retries") from None
                SLEEP(min(self.max_delay, self.backoff * 2 ** attempt))
                continue
            if r.status_code == 429 or r.status_code >= 500:
                if attempt == self.retries:
                    raise LiveError(f"{method} {url}: HTTP {r.status_code} after "
                                    f"{self.retries} retries")
                SLEEP(self._delay(r, attempt))
                continue
            if r.status_code >= 400:
                raise LiveError(f"{method} {url}: HTTP {r.status_code}")
            return r
        raise AssertionError("unreachable")

    def _delay(self, r: httpx.Response, attempt: int) -> float:
        ra = r.headers.get("Retry-After", "")
        if ra.strip().isdigit():
            return min(self.max_delay, float(ra))
        return min(self.max_delay, self.backoff * 2 ** attempt)


def _headers(source: str) -> dict[str, str]:
    ua = USER_AGENT
    if source == "crossref" and os.environ.get(CONTACT_ENV):
        ua += f" (mailto:{os.environ[CONTACT_ENV]})"
    h = {"User-Agent": ua, "Accept": "application/json"}
    spec = API_KEYS.get(source)
    if spec and os.environ.get(spec[0]):
        h[spec[1]] = spec[2].format(os.environ[spec[0]])
    return h


def _merge(base: dict[str, Any], over: dict[str, Any] | None) -> dict[str, Any]:
    out = copy.deepcopy(base)
    out.update(over or {})
    return out


def _prov(src: Source, method: str, url: str, params: Any = None, body: Any = None
          ) -> dict[str, Any]:
    req: dict[str, Any] = {"method": method, "url": url}
    if params:
        req["params"] = params
    if body is not None:
        req["body"] = body
    return {"origin": "live", "license": src.license, "request": req,
            "retrieved": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}


def payloads(src: Source, *, client: httpx.Client | None = None,
             query: dict[str, Any] | None = None, limit: int | None = None,
             writer: Any = None) -> Iterator[tuple[str, bytes, dict[str, Any]]]:
    """Pages of one source from its public API (at most ``limit`` or ``MAX_PAGES``)."""
    pager = _PAGERS.get(src.name)
    if pager is None:
        if writer is not None:
            writer.miss(src.format, src.name, "no live API for this source (use mirror mode)")
        return
    own = client is None
    client = client or httpx.Client(timeout=60.0, follow_redirects=True)
    keyed = src.name in API_KEYS and bool(os.environ.get(API_KEYS[src.name][0]))
    interval = KEYED_INTERVALS.get(src.name, INTERVALS.get(src.name, 1.0)) if keyed else \
        INTERVALS.get(src.name, 1.0)
    http = Http(client, interval, _headers(src.name))
    q = _merge(DEFAULT_QUERIES.get(src.name, {}), query)
    try:
        cap = limit if limit is not None else MAX_PAGES
        for i, page in enumerate(pager(http, src, q)):
            if i >= cap:
                break
            yield page
            if i + 1 >= cap:  # stop before the pager requests one page too many
                break
    except LiveError as exc:
        if writer is not None:
            writer.miss(src.format, src.name, f"live acquisition stopped: {exc}")
    finally:
        if own:
            client.close()


Page = tuple[str, bytes, dict[str, Any]]


def _name(i: int, ext: str = "json") -> str:
    return f"live__{i:04d}.{ext}"


def _offset_pages(http: Http, src: Source, q: dict[str, Any], size_key: str, offset_key: str,
                  first: int, done: Callable[[dict, int, int], bool]) -> Iterator[Page]:
    url = ENDPOINTS[src.name]
    size = int(q.get(size_key, 100))
    offset = int(q.get(offset_key, first))
    for i in range(10**6):
        params = {**q, size_key: size, offset_key: offset}
        r = http.request("GET", url, params=params)
        yield _name(i), r.content, _prov(src, "GET", url, params)
        if done(r.json(), offset, size):
            return
        offset += size


def _usgs(http: Http, src: Source, q: dict[str, Any]) -> Iterator[Page]:
    """FDSN event query: ``offset`` is 1-based; a short page is the last one."""
    yield from _offset_pages(http, src, q, "limit", "offset", 1,
                             lambda d, o, n: len(d.get("features") or []) < n)


def _nvd(http: Http, src: Source, q: dict[str, Any]) -> Iterator[Page]:
    yield from _offset_pages(http, src, q, "resultsPerPage", "startIndex", 0,
                             lambda d, o, n: o + n >= int(d.get("totalResults", 0)))


def _gbif(http: Http, src: Source, q: dict[str, Any]) -> Iterator[Page]:
    yield from _offset_pages(http, src, q, "limit", "offset", 0,
                             lambda d, o, n: bool(d.get("endOfRecords", True)))


def _nih(http: Http, src: Source, q: dict[str, Any]) -> Iterator[Page]:
    """POST /v2/projects/search with offset/limit (the API caps offset at 14,999)."""
    url = ENDPOINTS[src.name]
    size = int(q.get("limit", 100))
    offset = int(q.get("offset", 0))
    for i in range(10**6):
        body = {**q, "offset": offset, "limit": size}
        r = http.request("POST", url, json=body)
        yield _name(i), r.content, _prov(src, "POST", url, body=body)
        data = r.json()
        if not isinstance(data, dict):  # a bare project list: nothing to page
            return
        total = int((data.get("meta") or {}).get("total", 0))
        offset += size
        if offset >= total or offset > 14999:
            return


def _clinicaltrials(http: Http, src: Source, q: dict[str, Any]) -> Iterator[Page]:
    """/api/v2/studies with ``pageToken`` = the previous page's ``nextPageToken``."""
    url = ENDPOINTS[src.name]
    params = dict(q)
    for i in range(10**6):
        r = http.request("GET", url, params=params)
        yield _name(i), r.content, _prov(src, "GET", url, dict(params))
        token = r.json().get("nextPageToken")
        if not token:
            return
        params = {**q, "pageToken": token}


def _crossref(http: Http, src: Source, q: dict[str, Any]) -> Iterator[Page]:
    """Deep paging with ``cursor=*`` then each page's ``message.next-cursor``."""
    url = ENDPOINTS[src.name]
    params = {**q, "cursor": q.get("cursor", "*")}
    for i in range(10**6):
        r = http.request("GET", url, params=params)
        msg = r.json().get("message") or {}
        items = msg.get("items") or []
        yield _name(i), r.content, _prov(src, "GET", url, dict(params))
        cursor = msg.get("next-cursor")
        if not items or not cursor or len(items) < int(q.get("rows", 20)):
            return
        params = {**q, "cursor": cursor}


def _contracts_finder(http: Http, src: Source, q: dict[str, Any]) -> Iterator[Page]:
    """OCDS release packages; the next page is ``links.next`` (OCDS pagination
    extension) until it is absent or a page has no releases."""
    url: str | None = ENDPOINTS[src.name]
    params: dict[str, Any] | None = dict(q)
    for i in range(10**6):
        assert url is not None
        r = http.request("GET", url, params=params)
        data = r.json()
        yield _name(i), r.content, _prov(src, "GET", url, params)
        url = (data.get("links") or {}).get("next")
        if not url or not data.get("releases"):
            return
        params = None  # the next link carries the query and the cursor


def _usaspending(http: Http, src: Source, q: dict[str, Any]) -> Iterator[Page]:
    """POST spending_by_award with ``page``; ``page_metadata.hasNext`` says when to stop."""
    url = ENDPOINTS[src.name]
    page = int(q.get("page", 1))
    for i in range(10**6):
        body = {**q, "page": page}
        r = http.request("POST", url, json=body)
        yield _name(i), r.content, _prov(src, "POST", url, body=body)
        if not (r.json().get("page_metadata") or {}).get("hasNext"):
            return
        page += 1


def _apis_guru(http: Http, src: Source, q: dict[str, Any]) -> Iterator[Page]:
    """The APIs.guru directory listing, then each API's preferred version as YAML."""
    url = ENDPOINTS[src.name]
    listing = http.request("GET", url).json()
    i = 0
    for name in sorted(listing):
        api = listing[name]
        pref = api.get("preferred")
        version = (api.get("versions") or {}).get(pref) or {}
        yurl = version.get("swaggerYamlUrl")
        if not yurl:
            continue
        r = http.request("GET", yurl)
        rel = f"{name.replace(':', '/')}/{pref}/{yurl.rsplit('/', 1)[-1]}"
        yield rel, r.content, {**_prov(src, "GET", yurl), "api": name, "version": pref}
        i += 1


_PAGERS: dict[str, Callable[[Http, Source, dict[str, Any]], Iterator[Page]]] = {
    "usgs": _usgs, "nvd": _nvd, "gbif": _gbif, "nih_reporter": _nih,
    "clinicaltrials": _clinicaltrials, "crossref": _crossref,
    "contracts_finder": _contracts_finder, "usaspending": _usaspending,
    "apis-guru": _apis_guru,
}
