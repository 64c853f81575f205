"""The graph-quality report of one domain (`kgrag graph stats`).

Counts come from one Cypher statement (`cypher/kg/stats.cypher`); connected components and
the relation-kind mix from the domain's facts (`cypher/kg/edges.cypher`, union-find here:
Community Edition has no GDS); duplicate candidates left are what entity resolution would
still merge; the parse-failure rate comes from the domain's latest build job.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from kg_builder.jobs import list_jobs
from kg_builder.resolution import resolution_rows
from kg_builder.resolve import UnionFind
from kgrag.errors import DomainNotBuilt

if TYPE_CHECKING:
    from kgrag.platform import Platform


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


def quality_report(p: Platform, domain: str, *, duplicates: bool = True) -> QualityReport:
    rows = p.store.read("kg/stats", {"domain": domain})
    s = rows[0] if rows else {}
    if not s or s["entities"] == 0:
        raise DomainNotBuilt(domain, "has no graph")
    dupes = sum(len(r["merge"]) for r in resolution_rows(p.store, domain)[0]) if duplicates else 0
    jobs = list_jobs(p.settings.home, domain)
    job = jobs[0] if jobs else None
    facts = p.store.read("kg/edges", {"domain": domain})
    sizes = components([], ((f["h"], f["t"]) for f in facts))
    n_components = len(sizes) + s["orphans"]
    return QualityReport(
        domain=domain, entities=s["entities"], relations=s["relations"],
        mean_degree=2 * s["relations"] / s["entities"], orphan_entities=s["orphans"],
        components=n_components,
        largest_component_share=(sizes[0] if sizes else 1) / s["entities"],
        chunks=s["chunks"], facts_with_provenance=s["with_provenance"],
        provenance_rate=s["with_provenance"] / s["relations"] if s["relations"] else 0.0,
        entities_without_embedding=s["without_embedding"], duplicate_candidates_left=dupes,
        parse_failure_rate=job.parse_failure_rate if job else None,
        last_job=job.id if job else None, last_job_status=job.shown_status if job else None,
        extraction_records_per_minute=job.records_per_minute if job else None,
        triples_per_record=(job.triples / job.records_done) if job and job.records_done else None,
        relation_kinds=dict(Counter(str(f["k"]) for f in facts).most_common()),
        relations_by_extractor=dict(Counter(str(f.get("x") or "llm") for f in facts)
                                    .most_common()),
        co_occurrence_edges=s.get("co_occurrences", 0),
    )
