"""The HTML twin of a report: the Markdown kgrag writes, turned into one self-contained page.

Only the Markdown the report writer emits is understood: `#` headings, pipe tables,
`> ` notes, `![alt](file.png)` images (embedded as base64 data URIs, so the page can be
mailed or opened from anywhere), and paragraphs with `code` spans and **bold**.

>>> "<table>" in markdown_to_html("| a |\\n|---|\\n| 1 |", Path("."))
True
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

_IMAGE = re.compile(r"^!\[([^\]]*)\]\(([^)]+)\)\s*$")
_CSS = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1200px;
       padding: 0 1rem; color: #222; }
table { border-collapse: collapse; margin: 1rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: right; }
th { background: #f3f3f3; } td:first-child, td:nth-child(2) { text-align: left; }
tr.group td { background: #fafafa; font-weight: bold; text-align: left; }
blockquote { border-left: 4px solid #d9a400; margin: 0.5rem 0; padding: 0.25rem 0.75rem;
             background: #fffbe6; }
img { max-width: 100%; margin: 0.5rem 0; }
code { background: #f3f3f3; padding: 0 0.2rem; }
"""


def _inline(text: str) -> str:
    out = html.escape(text)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", out)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _table(rows: list[str]) -> str:
    head, body = _cells(rows[0]), [r for r in rows[1:] if not re.match(r"^\|[-:| ]+\|$", r)]
    parts = ["<table><thead><tr>", *(f"<th>{_inline(c)}</th>" for c in head),
             "</tr></thead><tbody>"]
    for row in body:
        parts.append("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in _cells(row)) + "</tr>")
    return "".join(parts) + "</tbody></table>"


def _image(alt: str, src: str, base: Path) -> str:
    path = base / src
    if path.is_file():  # embedded: the page needs no files beside it
        data = base64.b64encode(path.read_bytes()).decode()
        src = f"data:image/png;base64,{data}"
    return f'<img alt="{html.escape(alt)}" src="{html.escape(src)}">'


def markdown_to_html(md: str, base: Path, title: str = "kgrag evaluation report") -> str:
    """One HTML page from the report's Markdown; images are read relative to `base`."""
    out: list[str] = []
    lines = md.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("|"):
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            out.append(_table(lines[i:j]))
            i = j
            continue
        if m := re.match(r"^(#{1,6}) (.*)$", line):
            level = len(m.group(1))
            out.append(f"<h{level}>{_inline(m.group(2))}</h{level}>")
        elif m := _IMAGE.match(line):
            out.append(_image(m.group(1), m.group(2), base))
        elif line.startswith(">"):
            out.append(f"<blockquote>{_inline(line.lstrip('> '))}</blockquote>")
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
        i += 1
    return (f"<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title><style>{_CSS}</style></head>\n<body>\n"
            + "\n".join(out) + "\n</body></html>\n")
