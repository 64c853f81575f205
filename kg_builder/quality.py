"""The graph-quality report of one domain (`kgrag graph stats`, the explorer's Graphs page).

Counts come from one Cypher statement (`cypher/kg/stats.cypher`); connected components and
the relation-kind mix from the domain's facts (`cypher/kg/edges.cypher`, union-find here:
Community Edition has no GDS); duplicate candidates left are what entity resolution would
still merge; the parse-failure rate comes from the domain's latest build job.

Reading every fact and finding the components is the slow part (seconds on a graph of
100,000s of facts), so `cached_quality_report` keeps that part in a file under the kgrag
home, keyed by the domain and its graph fingerprint (`kg_builder.fingerprint`): it is
computed once per fingerprint and again when a build, import, resolution or drop changes
the fingerprint. The counts and the build-job fields are read fresh each time (vectors
and provenance change without changing the fingerprint).

    cached_quality_report(platform, "medical").largest_component_share
    # -> 0.83
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, ValidationError

from kg_builder.fingerprint import GraphFingerprint, graph_fingerprint
from kg_builder.jobs import list_jobs
from kg_builder.resolution import resolution_rows
from kg_builder.resolve import UnionFind
from kgrag.errors import DomainNotBuilt

if TYPE_CHECKING:
    from kgrag.platform import Platform

log = logging.getLogger(__name__)


class QualityReport(BaseModel):
    domain: str
    entities: int
    relations: int  # :REL facts (co-occurrence edges are counted apart, below)
    mean_degree: float
    orphan_entities: int
    components: int = 0  # connected components, facts taken as undirected; orphans count
    largest_component_share: float = 0.0  # of all entities; a walk never leaves its own
    chunks: int
    facts_with_provenance: int
    provenance_rate: float
    entities_without_embedding: int
    duplicate_candidates_left: int
    parse_failure_rate: float | None
    last_job: str | None
    last_job_status: str | None
    extraction_records_per_minute: float | None
    triples_per_record: float | None
    relation_kinds: dict[str, int] = Field(default_factory=dict)
    relations_by_extractor: dict[str, int] = Field(default_factory=dict)  # llm, spacy, …
    co_occurrence_edges: int = 0  # :CO_OCCURS (fast extractor), not relation facts


def components(keys: Iterable[str], edges: Iterable[tuple[str, str]]) -> list[int]:
    """Sizes of the connected components of an undirected graph, largest first (the
    union-find of entity resolution, over key indices).

    >>> components("abcde", [("a", "b"), ("b", "c"), ("d", "d")])
    [3, 1, 1]
    """
    index = {k: i for i, k in enumerate(dict.fromkeys(keys))}
    pairs = [(index.setdefault(h, len(index)), index.setdefault(t, len(index)))
             for h, t in edges]
    uf = UnionFind(len(index))
    for a, b in pairs:
        uf.union(a, b)
    return sorted(Counter(uf.find(i) for i in range(len(index))).values(), reverse=True)


class GraphStructure(BaseModel):
    """What the quality report reads from every fact: the part worth caching."""

    components: int  # connected components without the orphan entities
    largest_component: int  # entities in the largest one
    relation_kinds: dict[str, int] = Field(default_factory=dict)
    relations_by_extractor: dict[str, int] = Field(default_factory=dict)


class CachedStructure(BaseModel):
    """A cache file: the structure of the graph with this fingerprint."""

    domain: str
    fingerprint: GraphFingerprint
    structure: GraphStructure


def graph_structure(p: Platform, domain: str) -> GraphStructure:
    """Components and the relation mix of `domain`, from all its facts (`kg/edges`)."""
    facts = p.store.read("kg/edges", {"domain": domain})
    sizes = components([], ((f["h"], f["t"]) for f in facts))
    return GraphStructure(
        components=len(sizes), largest_component=sizes[0] if sizes else 0,
        relation_kinds=dict(Counter(str(f["k"]) for f in facts).most_common()),
        relations_by_extractor=dict(Counter(str(f.get("x") or "llm") for f in facts)
                                    .most_common()))


def cache_path(home: Path, domain: str) -> Path:
    """`<home>/quality/<domain>.json` (a domain name unsafe in a file name is hashed)."""
    name = domain if re.fullmatch(r"[A-Za-z0-9_.-]{1,100}", domain) else \
        "d-" + hashlib.sha256(domain.encode()).hexdigest()[:16]
    return home / "quality" / f"{name}.json"


def cached_structure(p: Platform, domain: str) -> GraphStructure:
    """`graph_structure` computed once per graph fingerprint: a cache file whose
    fingerprint differs from the graph's is recomputed and overwritten; an unreadable one
    is recomputed (a cache never fails the report)."""
    fp = graph_fingerprint(p.store, domain)
    path = cache_path(p.settings.home, domain)
    try:
        cached = CachedStructure.model_validate_json(path.read_text(encoding="utf-8"))
        if cached.domain == domain and cached.fingerprint == fp:
            return cached.structure
    except (OSError, ValidationError):
        pass
    structure = graph_structure(p, domain)
    entry = CachedStructure(domain=domain, fingerprint=fp, structure=structure)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(entry.model_dump_json(), encoding="utf-8")
        tmp.replace(path)  # atomic: a reader never sees half a file
    except OSError as e:
        log.warning("cannot write the quality cache %s: %s", path, e)
    return structure


def quality_report(p: Platform, domain: str, *, duplicates: bool = True,
                   cached: bool = False) -> QualityReport:
    """The quality report of `domain`. `cached`: the facts' structure from the cache
    (`cached_structure`); `duplicates`: also count what entity resolution would merge
    (slow: it reads every entity)."""
    rows = p.store.read("kg/stats", {"domain": domain})
    s = rows[0] if rows else {}
    if not s or s["entities"] == 0:
        raise DomainNotBuilt(domain, "has no graph")
    structure = cached_structure(p, domain) if cached else graph_structure(p, domain)
    dupes = sum(len(r["merge"]) for r in resolution_rows(p.store, domain)[0]) if duplicates else 0
    return _report(p, domain, s, structure, dupes)


def cached_quality_report(p: Platform, domain: str) -> QualityReport:
    """The explorer's report: the cached structure, no duplicate count."""
    return quality_report(p, domain, duplicates=False, cached=True)


def _report(p: Platform, domain: str, s: Mapping[str, Any], structure: GraphStructure,
            dupes: int) -> QualityReport:
    jobs = list_jobs(p.settings.home, domain)
    job = jobs[0] if jobs else None
    return QualityReport(
        domain=domain, entities=s["entities"], relations=s["relations"],
        mean_degree=2 * s["relations"] / s["entities"], orphan_entities=s["orphans"],
        components=structure.components + s["orphans"],
        largest_component_share=(structure.largest_component or 1) / s["entities"],
        chunks=s["chunks"], facts_with_provenance=s["with_provenance"],
        provenance_rate=s["with_provenance"] / s["relations"] if s["relations"] else 0.0,
        entities_without_embedding=s["without_embedding"], duplicate_candidates_left=dupes,
        parse_failure_rate=job.parse_failure_rate if job else None,
        last_job=job.id if job else None, last_job_status=job.shown_status if job else None,
        extraction_records_per_minute=job.records_per_minute if job else None,
        triples_per_record=(job.triples / job.records_done) if job and job.records_done else None,
        relation_kinds=structure.relation_kinds,
        relations_by_extractor=structure.relations_by_extractor,
        co_occurrence_edges=s.get("co_occurrences", 0),
    )
