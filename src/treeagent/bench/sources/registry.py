"""Source groups of the four datasets (paper 4.1, B.1): where each lives and its license.

A source is ``(format, name)``; ``mirror`` is its folder under a mirror laid out like
``shared/sources`` (``<format>/<folder>/...``); ``sample`` its folder in the package's
``samples/bench``; ``flags`` mark substitute groups (SWDE, readability pages).
"""

from __future__ import annotations

from dataclasses import dataclass, field

MODES = ("live", "mirror", "sample")


@dataclass(frozen=True, slots=True)
class Source:
    format: str
    name: str
    license: str
    mirror: str = ""  # folder name under <mirror>/<format>/ (default: name)
    suffixes: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    extra: dict = field(default_factory=dict)

    @property
    def folder(self) -> str:
        return self.mirror or self.name


_JSON = (".json", ".geojson")
_JS_LICENSE = "MIT"

#: JS repositories at the paper's pinned commits (B.1): url, commit prefix, license.
JS_REPOS: dict[str, dict[str, str]] = {
    "eslint": {"url": "https://github.com/eslint/eslint", "commit": "6ddf8587e5cf"},
    "webpack": {"url": "https://github.com/webpack/webpack", "commit": "2043f6e66e87"},
    "threejs": {"url": "https://github.com/mrdoob/three.js", "commit": "27e70ddf91e9"},
    "plotly": {"url": "https://github.com/plotly/plotly.js", "commit": "0af79ccbd45f"},
    "babel": {"url": "https://github.com/babel/babel", "commit": "86b96c84eef3"},
    "lodash": {"url": "https://github.com/lodash/lodash", "commit": "a666ba591064"},
}

SOURCES: dict[tuple[str, str], Source] = {
    (s.format, s.name): s
    for s in (
        Source("json", "usgs", "US public domain (USGS ComCat)", suffixes=_JSON),
        Source("json", "nvd", "US public domain (NIST NVD)", suffixes=_JSON),
        Source("json", "nih_reporter", "US government public data (NIH RePORTER)", suffixes=_JSON),
        Source("json", "clinicaltrials", "ClinicalTrials.gov public data (NLM)", suffixes=_JSON),
        Source("json", "gbif", "per-record license (CC0 / CC BY 4.0 / CC BY-NC 4.0)",
               suffixes=_JSON),
        Source("json", "crossref", "Crossref metadata: facts / CC0 (abstracts may be "
               "publisher copyright)", suffixes=_JSON),
        Source("json", "contracts_finder", "Open Government Licence v3.0 (UK Contracts Finder)",
               suffixes=_JSON),
        Source("json", "usaspending", "US public domain (USAspending)", suffixes=_JSON),
        Source("html", "websrc", "CC BY 4.0 as declared for WebSRC; pages via "
               "X-LANCE/WebSRC-Baseline (MIT)", mirror="websrc-v1.0-sample",
               suffixes=(".html", ".htm")),
        Source("html", "swde", "research use, no explicit license (SWDE book vertical)",
               mirror="swde-book-subset", suffixes=(".html", ".htm"), flags=("substitute",)),
        Source("html", "readability", "publishers' content; mozilla/readability fixtures "
               "(Apache-2.0)", mirror="mozilla-readability-test-pages",
               suffixes=(".html", ".htm"), flags=("substitute",)),
        Source("yaml", "apis-guru", "CC0 1.0 (APIs.guru directory); per-document info.license",
               mirror="apis-guru-openapi-directory", suffixes=(".yaml", ".yml")),
        *(Source("javascript", name, _JS_LICENSE, suffixes=(".js", ".mjs", ".cjs"),
                 extra=spec) for name, spec in JS_REPOS.items()),
        Source("javascript", "treeagent", "MIT (original sample written for treeagent)",
               suffixes=(".js", ".mjs", ".cjs"), extra={"sample_only": True}),
    )
}

FORMATS = ("json", "html", "yaml", "javascript")


def sources_of(fmt: str, names: list[str] | tuple[str, ...] | None = None) -> list[Source]:
    """The sources of ``fmt`` (all, or those named), in registry order."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
    found = [s for (f, _), s in SOURCES.items() if f == fmt]
    if names is None:
        return found
    known = {s.name for s in found}
    return [s for s in found if s.name in set(names)] if set(names) & known else []


def get(fmt: str, name: str) -> Source:
    try:
        return SOURCES[(fmt, name)]
    except KeyError:
        raise ValueError(f"unknown source {fmt}/{name}") from None
