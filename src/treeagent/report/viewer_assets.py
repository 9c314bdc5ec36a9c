"""The viewer's style and scripts (inline in every page: the pages need nothing else).

The scripts read the page's JSON (``<script type="application/json" id="data">``) and build
the DOM with ``textContent`` only. A page's address ``#<agent>/<method>/<step>`` opens a
run at a step (the report links to ``#<agent>/<method>``).
"""

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;
  color:#1d1d1f;margin:1em 1.5em;background:#fff}
h1{font-size:1.4em;margin:.2em 0}h2{font-size:1.1em;margin:.8em 0 .3em}
h3{font-size:1em;margin:.6em 0 .2em}nav a{margin-right:1em}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em;margin:.5em 0}
dl.meta dt{font-weight:600}dl.meta dd{margin:0;white-space:pre-wrap}
.runs button,.steps button{font:inherit;cursor:pointer;border:1px solid #c7c7cc;
  background:#f4f4f5;border-radius:4px;padding:2px 8px;margin:2px}
.runs button.on,.steps button.on{background:#1d4ed8;color:#fff;border-color:#1d4ed8}
.cols{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,2fr);gap:1em}
pre{white-space:pre-wrap;word-break:break-word;margin:0;font:12px/1.4 ui-monospace,
  "DejaVu Sans Mono",monospace}
#context{max-height:75vh;overflow:auto;border:1px solid #e4e4e7;padding:.5em;
  position:relative}
.sec.s0{background:#eef4ff}.sec.s1{background:#fff4e5}
.sec.current{background:#fde68a}
.rec{outline:2px solid #16a34a;outline-offset:-1px}
.rec.split{outline:2px dashed #dc2626}
.badge{display:inline-block;font:11px/1.2 system-ui,sans-serif;background:#1d4ed8;
  color:#fff;border-radius:3px;padding:0 4px;margin:2px 2px 0 0}
.badge.current{background:#b45309}
.steps{max-height:30vh;overflow:auto;border:1px solid #e4e4e7;padding:.3em}
.steps button{display:block;width:100%;text-align:left}
.box{border:1px solid #e4e4e7;padding:.4em .6em;margin:.4em 0;background:#fafafa}
.answer{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em}
.legend span{margin-right:1.2em}
table{border-collapse:collapse}td,th{padding:3px 8px;border:1px solid #e4e4e7;
  text-align:left;vertical-align:top}th{background:#f4f4f5}
td.num{text-align:right}
"""

_COMMON = r"""
"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
const app = document.getElementById("app");
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k === "class") e.className = v;
    else if (k === "href" || k === "id" || k === "title" || k.startsWith("data-")) e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const k of kids) if (k !== null && k !== undefined) e.append(k);
  return e;
}
function pct(x) { return x === null || x === undefined ? "—" : (100 * x).toFixed(0); }
"""

PAGE_SCRIPT = _COMMON + r"""
let run = 0, step = -1;
function parseHash() {
  const parts = decodeURIComponent(location.hash.slice(1)).split("/");
  const i = D.runs.findIndex(r => r.agent === parts[0] && r.method === parts[1]);
  run = i >= 0 ? i : 0;
  const s = parseInt(parts[2], 10);
  step = Number.isInteger(s) && s >= 0 && s < D.runs[run].steps.length ? s : -1;
}
function header() {
  const meta = el("dl", {class: "meta"},
    el("dt", {}, "Format / task / length"),
    el("dd", {}, `${D.format} / ${D.task} / ${D.length}`),
    el("dt", {}, "Question"), el("dd", {id: "question"}, D.question),
    el("dt", {}, "Reference"), el("dd", {id: "reference"}, D.reference));
  const nav = el("nav", {}, el("a", {href: D.links.index}, "← all examples"),
                 el("a", {href: D.links.report}, "the report"));
  return [nav, el("h1", {}, D.id), meta];
}
function drawContext(r) {
  const ctx = D.context, pre = el("pre", {id: "context"});
  const secs = r.sections.map((s, i) => ({...s, t: i})).sort((a, b) => a.start - b.start);
  const cuts = new Set([0, ctx.length]);
  for (const s of secs) { cuts.add(s.start); cuts.add(s.end); }
  for (const x of r.records) { cuts.add(x.start); cuts.add(x.end); }
  const pts = [...cuts].filter(x => x >= 0 && x <= ctx.length).sort((a, b) => a - b);
  let j = 0;
  const shown = new Set();
  for (let k = 0; k + 1 < pts.length; k++) {
    const a = pts[k], b = pts[k + 1];
    while (j < secs.length && secs[j].end <= a) j++;
    const sec = j < secs.length && secs[j].start <= a && a < secs[j].end ? secs[j] : null;
    if (sec && !shown.has(sec.t)) {
      shown.add(sec.t);
      pre.append(el("span", {class: "badge", "data-t": String(sec.t)},
                    `§${sec.t}${sec.path ? " " + sec.path : ""}`));
    }
    const recs = r.records.filter(x => x.start <= a && a < x.end);
    const split = recs.some(x => x.spanned > 1);
    const cls = ["seg"];
    if (sec) cls.push("sec", "s" + (sec.t % 2));
    if (recs.length) cls.push("rec");
    if (split) cls.push("split");
    const span = el("span", {class: cls.join(" "), "data-t": sec ? String(sec.t) : null},
                    ctx.slice(a, b));
    if (recs.length) span.title = recs.map(x => x.id + (x.spanned > 1 ?
      ` (split over ${x.spanned} sections)` : "")).join("; ");
    pre.append(span);
  }
  return pre;
}
function stepLabel(s, i) {
  let text = `${i + 1}. ${s.kind || "call"}`;
  if (s.t !== null && s.t !== undefined) text += ` · section ${s.t}`;
  if (s.path) text += ` · ${s.path}`;
  return text;
}
function detail(r) {
  const box = el("div", {id: "detail"});
  if (step < 0) { box.append(el("p", {}, "Choose a step to see its prompt and the memory after it.")); return box; }
  const s = r.steps[step];
  box.append(el("h3", {}, `Call ${step + 1} of ${r.steps.length}: ${s.kind || ""}` +
                          (s.pass ? ` (pass ${s.pass})` : "")));
  const parts = el("dl", {class: "meta", id: "prompt-parts"});
  if (s.t !== null && s.t !== undefined) parts.append(el("dt", {}, "Section"), el("dd", {}, String(s.t)));
  parts.append(el("dt", {}, "Path"), el("dd", {id: "step-path"}, s.path || "—"));
  if (s.links.length) parts.append(el("dt", {}, "Link sources"), el("dd", {}, s.links.join(", ")));
  parts.append(el("dt", {}, "Tokens in / out"),
               el("dd", {}, `${s.input_tokens ?? "—"} / ${s.output_tokens ?? "—"}${s.cached ? " (cached)" : ""}`));
  box.append(parts);
  if (s.spans.length) {
    const ul = el("ul", {id: "spans"});
    for (const x of s.spans) ul.append(el("li", {}, el("b", {}, `[${x.source ?? ""}${x.order !== undefined ? " #" + x.order : ""}] `), el("pre", {}, x.text || "")));
    box.append(el("h3", {}, "Retrieved spans"), ul);
  }
  for (const c of s.clipped) box.append(el("p", {class: "box"}, `Cut to fit: ${JSON.stringify(c)}`));
  const msgs = el("details", {}, el("summary", {}, `Prompt (${s.messages.length} message${s.messages.length === 1 ? "" : "s"})`));
  for (const m of s.messages) msgs.append(el("h3", {}, m.role), el("pre", {class: "box"}, m.content));
  box.append(msgs);
  const memory = s.kind === "memory" || (s.t !== null && s.t !== undefined);
  box.append(el("h3", {}, memory ? "Memory after this step" : "Reply"),
             el("pre", {id: "memory", class: "box"},
                s.reply === null || s.reply === undefined ? `(no reply${s.error ? ": " + s.error : ""})` : s.reply));
  return box;
}
function render() {
  app.replaceChildren(...header());
  const runs = el("div", {class: "runs"});
  D.runs.forEach((r, i) => runs.append(el("button", {class: i === run ? "on" : "",
    "data-run": `${r.agent}/${r.method}`, onclick: () => go(i, -1)}, r.title)));
  app.append(el("h2", {}, "Runs"), runs);
  const r = D.runs[run];
  if (!r) return;
  app.append(el("div", {class: "box answer", id: "answer"},
    el("b", {}, "Final answer"), el("pre", {id: "prediction"}, r.prediction ?? "(no response)"),
    el("b", {}, "Reference"), el("pre", {}, D.reference),
    el("b", {}, "Score"), el("span", {id: "score"}, pct(r.score))));
  const steps = el("div", {class: "steps", id: "steps"});
  r.steps.forEach((s, i) => steps.append(el("button", {class: i === step ? "on" : "",
    "data-step": String(i), onclick: () => go(run, i)}, stepLabel(s, i))));
  if (!r.steps.length) steps.append(el("p", {}, "No trace recorded for this run."));
  const legend = el("p", {class: "legend"}, el("span", {class: "sec s0"}, "a section"),
    el("span", {class: "rec"}, "an evidence record"), el("span", {class: "rec split"}, "a split record"),
    el("span", {class: "sec current"}, "the step's section"));
  app.append(el("div", {class: "cols"},
    el("div", {}, el("h2", {}, `Context, ${r.sections.length} sections`), legend, drawContext(r)),
    el("div", {}, el("h2", {}, `Steps (${r.steps.length} calls)`), steps, detail(r))));
  const s = step >= 0 ? r.steps[step] : null;
  if (s && s.t !== null && s.t !== undefined) {
    const hit = document.querySelectorAll(`[data-t="${s.t}"]`);
    hit.forEach(x => x.classList.add("current"));
    const pane = document.getElementById("context");  // scroll the pane, not the page
    if (hit.length) pane.scrollTop = hit[0].offsetTop - 8;  // offsetTop: within the pane
  }
}
function go(i, s) {
  run = i; step = s;
  const r = D.runs[run];
  history.replaceState(null, "", `#${encodeURIComponent(r.agent)}/${encodeURIComponent(r.method)}${s >= 0 ? "/" + s : ""}`);
  render();
}
window.addEventListener("hashchange", () => { parseHash(); render(); });
parseHash();
render();
"""

INDEX_SCRIPT = _COMMON + r"""
const titles = [];
for (const e of D.examples) for (const r of e.runs) if (!titles.includes(r.title)) titles.push(r.title);
const head = el("tr", {}, ...["Example", "Format", "Task", "Length", "Question", ...titles]
  .map(t => el("th", {}, t)));
const body = el("tbody");
for (const e of D.examples) {
  const cells = [el("td", {}, el("a", {href: e.page}, e.id)), el("td", {}, e.format),
                 el("td", {}, e.task), el("td", {}, e.length), el("td", {}, e.question)];
  for (const t of titles) {
    const r = e.runs.find(x => x.title === t);
    cells.push(el("td", {class: "num"}, r ? el("a", {href: `${e.page}#${encodeURIComponent(r.agent)}/${encodeURIComponent(r.method)}`}, `${pct(r.score)} (${r.steps} calls)`) : "—"));
  }
  body.append(el("tr", {id: e.id}, ...cells));
}
app.append(el("nav", {}, el("a", {href: D.report}, "← the report")),
           el("h1", {}, "Examples, step by step"), el("p", {id: "shown"}, D.note),
           el("p", {}, "Per example and run: the score (%) and the calls traced. Open one to see the context with that method's sections, the evidence records, each step's prompt parts and the memory after it."),
           el("table", {id: "examples"}, el("thead", {}, head), body));
"""
