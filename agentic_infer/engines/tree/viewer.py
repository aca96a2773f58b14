"""A self-contained HTML viewer for a saved search tree (no hosted assets, no network).

    html = render_html(Tree.load("tree.json"))      # or a dict as saved by --save-tree
    Path("tree.html").write_text(html)

The page shows the run header (engine, env, task, feedback oracle/judge, stop reason, answer,
correctness, budget limits and spend, reflections) and the tree as nested, collapsible
`<details>` elements (no JavaScript needed to browse; a few lines of inline JS add
expand/collapse-all and a filter). Each node line shows the action, visits, mean value, own
reward, prior and a terminal/answer mark, coloured by value; opening it shows the state summary,
reward details and reflections. Nodes on the answer path are highlighted.
Not covered: very large trees (thousands of nodes render but the page gets slow), graphs/DAGs.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from agentic_infer.engines.tree.table import Tree

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fafafa}
h1{font-size:1.3em;margin:0 0 .4em} table.kv td{padding:1px 10px 1px 0;vertical-align:top}
.badge{display:inline-block;padding:1px 7px;border-radius:9px;font-weight:600;font-size:12px}
.judge{background:#dbeafe;color:#1e3a8a}.oracle{background:#fee2e2;color:#991b1b}
details{margin-left:1.1em;border-left:1px dotted #bbb;padding-left:.4em}
summary{cursor:pointer;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;padding:1px 0}
.v{display:inline-block;width:3.2em;text-align:right;font-family:monospace;margin-right:.4em;border-radius:3px}
.act{font-family:monospace}.meta{color:#666;font-size:12px;margin-left:.5em}
.term{color:#065f46;font-weight:600}.fail{color:#991b1b}.path>summary{background:#fef3c7}
.body{margin:.2em 0 .4em 1.2em;font-size:12.5px;background:#fff;border:1px solid #e5e5e5;padding:.4em;
white-space:pre-wrap;max-width:100em}.refl{color:#7c2d12}#filter{margin:.5em 0;width:20em}
"""

_JS = """
function setAll(o){document.querySelectorAll('details').forEach(d=>d.open=o)}
function filt(q){q=q.toLowerCase();document.querySelectorAll('details').forEach(d=>{
 const s=d.querySelector(':scope>summary').textContent.toLowerCase();
 d.style.opacity=(!q||s.includes(q))?1:0.35})}
"""


def _colour(v: float | None) -> str:
    if v is None:
        return "#eee"
    v = max(0.0, min(1.0, float(v)))
    return f"hsl({int(120 * v)},70%,{88 - 20 * v:.0f}%)"


def _fmt(x: Any) -> str:
    return "–" if x is None else (f"{x:.3f}" if isinstance(x, float) else str(x))


def render_html(tree: Tree | dict[str, Any], *, title: str | None = None) -> str:
    t = tree if isinstance(tree, Tree) else Tree.from_dict(tree)
    res = t.result or {}
    on_path: set[int] = set()
    if res.get("node") is not None and 0 <= int(res["node"]) < len(t.nodes):
        on_path = {n.id for n in t.path(t[int(res["node"])])}

    def node_html(nid: int, open_: bool) -> str:
        n = t[nid]
        tr = n.details.get("terminal_reward")
        mark = ""
        if n.terminal:
            ok = tr is not None and tr.get("value", 0) >= 0.5
            mark = f' <span class="{"term" if ok else "fail"}">■ terminal{"" if tr is None else " r=" + _fmt(tr.get("value"))}</span>'
        label = escape((n.action or "ROOT")[:160].replace("\n", " ⏎ "))
        meta = f"N={n.visits} r={_fmt(n.reward)} p={_fmt(n.prior)}" + ("" if n.materialised else " (not expanded)")
        head = (f'<span class="v" style="background:{_colour(n.value if n.visits else n.reward)}">{n.value:.2f}</span>'
                f'<span class="act">#{n.id} {label}</span><span class="meta">{meta}</span>{mark}')
        body_parts = [f"<b>state</b>: {escape(n.summary)}"]
        shown = {k: v for k, v in n.details.items() if k != "raw"}
        if shown:
            body_parts.append("<b>details</b>: " + escape(json.dumps(shown, indent=1, default=str)[:4000]))
        if n.reflections:
            body_parts.append('<span class="refl"><b>reflections</b>: ' + escape(" / ".join(n.reflections)) + "</span>")
        kids = "".join(node_html(c, c in on_path) for c in n.children)
        cls = ' class="path"' if nid in on_path else ""
        return (f"<details{cls}{' open' if open_ else ''}><summary>{head}</summary>"
                f'<div class="body">{"<br>".join(body_parts)}</div>{kids}</details>')

    fb = t.feedback if t.feedback in ("judge", "oracle") else "judge"
    spent = (t.budget or {}).get("spent", {})
    limits = (t.budget or {}).get("limits", {})
    rows = [("engine", t.config.get("engine", t.algorithm)), ("algorithm", t.algorithm), ("environment", t.env),
            ("task", t.task), ("answer", res.get("answer")), ("correct (scored after search)", res.get("correct")),
            ("stop reason", res.get("stop_reason")), ("nodes", len(t.nodes)),
            ("budget limits", json.dumps(limits)), ("budget spent", json.dumps(spent))]
    kv = "".join(f"<tr><td><b>{escape(str(k))}</b></td><td>{escape(_fmt(v))}</td></tr>" for k, v in rows)
    refl = "".join(f"<li>{escape(r)}</li>" for r in t.reflections)
    name = escape(title or f"{t.config.get('engine', t.algorithm)} tree: {t.task}")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{name}</title><style>{_CSS}</style>"
            f"<script>{_JS}</script></head><body><h1>{name} <span class='badge {fb}'>{fb} feedback</span></h1>"
            f"<table class='kv'>{kv}</table>"
            + (f"<h3>Reflections</h3><ol class='refl'>{refl}</ol>" if refl else "")
            + "<h3>Tree</h3><button onclick='setAll(true)'>expand all</button> "
            "<button onclick='setAll(false)'>collapse all</button> "
            "<input id='filter' placeholder='highlight nodes containing…' oninput='filt(this.value)'>"
            f"<div>{node_html(0, True)}</div></body></html>")
