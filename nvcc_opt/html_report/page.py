"""The HTML page: one file, inline CSS, inline SVG, and a small inline script that checks that
every figure has data. Nothing refers outside the file but the relative links to trace files.

The script counts each figure's plotted marks (`[id^="mark-"]` inside its <svg>) and reads its
`data-points`; the page's <body> gets `data-report-ok="true"` (and the title " [ok]") when every
figure has both, else `"false"` (and " [FAILED: ...]" naming the figures without data).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1100px;
       color: #222; line-height: 1.4; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
figure.plot { margin: 0.5em 0; } figure.plot svg { width: 100%; height: auto; }
figcaption { font-size: 0.9em; color: #444; }
.missing { background: #fff6e0; border-left: 4px solid #e0a000; padding: 0.5em 1em; }
table { border-collapse: collapse; width: 100%; font-size: 0.85em; }
th, td { border: 1px solid #ddd; padding: 0.3em 0.5em; vertical-align: top; text-align: left; }
th { background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.text { min-width: 22em; }
pre { white-space: pre-wrap; margin: 0; font-size: 0.95em; }
details.trace { margin: 0.4em 0; } .call { color: #555; margin-left: 1.5em; }
.failed { color: #d62728; }
"""

CHECK = """
(function () {
  var figures = document.querySelectorAll("figure.plot");
  var bad = [];
  figures.forEach(function (f) {
    var marks = f.querySelectorAll('svg [id^="mark-"]').length;
    var points = parseInt(f.getAttribute("data-points") || "0", 10);
    f.setAttribute("data-marks", String(marks));
    if (!(marks > 0 && points > 0)) { bad.push(f.id); }
  });
  var ok = figures.length > 0 && bad.length === 0;
  document.body.setAttribute("data-report-ok", ok ? "true" : "false");
  document.body.setAttribute("data-figures", String(figures.length));
  document.title += ok ? " [ok]" : " [FAILED: " + (bad.join(", ") || "no figures") + "]";
})();
"""


@dataclass(frozen=True)
class Section:
    """A part of the page: its heading, id and HTML body."""

    id: str
    title: str
    body: str


def figure(fig_id: str, svg: str, points: int, caption: str) -> str:
    return (
        f'<figure class="plot" id="{fig_id}" data-points="{points}">{svg}'
        f"<figcaption>{escape(caption)}</figcaption></figure>"
    )


def missing(why: str) -> str:
    """What a section lacks, said where the section would be."""
    return f'<p class="missing">{escape(why)}</p>'


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    numeric: Sequence[int] = (),
    wide: Sequence[int] = (),
) -> str:
    """A table of already-escaped HTML cells; columns in `numeric` right-aligned, those in
    `wide` (prose) kept wide."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{cell}</td>'
            if i in numeric
            else f'<td class="text">{cell}</td>'
            if i in wide
            else f"<td>{cell}</td>"
            for i, cell in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render(title: str, intro: str, sections: Sequence[Section]) -> str:
    toc = "".join(f'<li><a href="#{s.id}">{escape(s.title)}</a></li>' for s in sections)
    parts = "".join(
        f'<section id="{s.id}"><h2>{escape(s.title)}</h2>{s.body}</section>' for s in sections
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>"
        f"<h1>{escape(title)}</h1>{intro}<ul>{toc}</ul>{parts}"
        f"<script>{CHECK}</script></body></html>\n"
    )
