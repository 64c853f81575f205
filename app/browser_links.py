"""Neo4j Browser links for the saved queries of `cypher/browser/`.

Every saved query starts with one header line that reads its parameters into variables,
`WITH $domain AS domain, $triples AS triples`, and uses only those variables below it.
So the same file serves three uses:

- the app runs it with parameters (`store.read("browser/evidence_paths", params)`);
- a person pastes it into Neo4j Browser after `:params {...}` (docs/browser.md);
- a link opens Neo4j Browser with a self-contained copy whose header binds literals
  instead (`WITH "commonsense" AS domain, [["milk", "stored in", "fridge"]] AS triples`),
  because the Browser's `?cmd=edit&arg=...` pre-fills one editor and a `:params` line plus
  a query in one editor runs as a multi-statement frame that does not draw the graph.

Literals are JSON strings and numbers, which Cypher reads alike. `&`, `#` and `;` inside
strings are written as `\\u0026`, `\\u0023`, `\\u003B`: Neo4j Browser decodes the whole URL
before it looks for `arg=`, so a raw `&` or `#` would cut the query short (verified by hand
against Neo4j Browser 5.24.0, see docs/browser.md).

>>> s = statement("browser/evidence_paths", {"domain": "d", "triples": [["a", "r", "b"]]})
>>> s.splitlines()[0]
'WITH "d" AS domain, [["a", "r", "b"]] AS triples'
>>> browser_url("http://127.0.0.1:7474/browser/", s)[:52]
'http://127.0.0.1:7474/browser/?cmd=edit&arg=WITH%20%'
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import cypher

_HEADER_ITEM = re.compile(r"\$(?P<param>[A-Za-z_]\w*) AS (?P<var>[A-Za-z_]\w*)")
_ITEM = r"\$[A-Za-z_]\w* AS [A-Za-z_]\w*"
_HEADER = re.compile(rf"^WITH {_ITEM}(?:, {_ITEM})*$")
_KEY = re.compile(r"^[A-Za-z_]\w*$")
# Characters that must not appear raw in a Browser `arg` (see the module docstring).
_URL_UNSAFE = {"&": "\\u0026", "#": "\\u0023", ";": "\\u003B"}


@dataclass(frozen=True)
class BrowserQuery:
    """A saved query with its values: what the app shows for copying and links to."""

    name: str  # e.g. "browser/evidence_paths"
    params: dict[str, Any]
    statement: str  # self-contained: the header binds literals
    url: str  # opens Neo4j Browser with `statement` in the editor

    @property
    def params_command(self) -> str:
        """The `:params {...}` command to run before the file's own text in the Browser."""
        return ":params " + literal(self.params)


def body_lines(name: str) -> list[str]:
    """The statement of `cypher/<name>.cypher` without its comment lines."""
    return [line for line in cypher.load(name).splitlines()
            if line.strip() and not line.lstrip().startswith("//")]


def header_params(name: str) -> list[str]:
    """The parameter names the saved query's header line reads, in order."""
    first = body_lines(name)[0]
    if not _HEADER.match(first):
        raise ValueError(f"{name}: the first line must be `WITH $p AS p, ...`, not {first!r}")
    return [m.group("param") for m in _HEADER_ITEM.finditer(first)]


def literal(value: Any) -> str:
    """A Cypher literal for a JSON-like value (strings, numbers, booleans, lists, maps).

    >>> literal({"domain": 'say "hi" & bye', "limit": 5})
    '{domain: "say \\\\"hi\\\\" \\\\u0026 bye", limit: 5}'
    """
    if value is None or isinstance(value, bool | int | float):
        return json.dumps(value)
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        for raw, escaped in _URL_UNSAFE.items():
            text = text.replace(raw, escaped)
        return text
    if isinstance(value, Mapping):
        items = []
        for key, item in value.items():
            name = key if _KEY.match(str(key)) else "`" + str(key).replace("`", "``") + "`"
            items.append(f"{name}: {literal(item)}")
        return "{" + ", ".join(items) + "}"
    if isinstance(value, Sequence):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    raise TypeError(f"no Cypher literal for {type(value).__name__}")


def statement(name: str, params: Mapping[str, Any]) -> str:
    """The saved query `name` with its header bound to `params` as literals."""
    wanted = header_params(name)
    missing = [p for p in wanted if p not in params]
    if missing:
        raise KeyError(f"{name} needs parameters {missing}")
    first, *rest = body_lines(name)
    header = _HEADER_ITEM.sub(lambda m: f"{literal(params[m.group('param')])} AS "
                                        f"{m.group('var')}", first)
    return "\n".join([header, *rest])


def browser_url(base_url: str, text: str) -> str:
    """A link that opens Neo4j Browser at `base_url` with `text` in its editor."""
    leftovers = [c for c in _URL_UNSAFE if c in text]
    if leftovers:  # only possible if a saved query's own text has one of them
        raise ValueError(f"characters {leftovers} would cut the Browser link short")
    return f"{base_url.rstrip('/')}/?cmd=edit&arg={quote(text, safe='')}"


def browser_query(base_url: str, name: str, params: Mapping[str, Any]) -> BrowserQuery:
    """Statement and link for the saved query `name` with `params`."""
    text = statement(name, params)
    return BrowserQuery(name, dict(params), text, browser_url(base_url, text))


def evidence_query(base_url: str, domain: str, triples: Sequence[Sequence[str]]
                   ) -> BrowserQuery:
    """The `evidence_paths` query for a set of [head key, predicate, tail key] triples."""
    rows = [[str(t[0]), str(t[1]), str(t[2])] for t in triples]
    return browser_query(base_url, "browser/evidence_paths", {"domain": domain, "triples": rows})
