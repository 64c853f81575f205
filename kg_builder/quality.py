"""The graph-quality report of one domain (`kgrag graph stats`).

Counts come from one Cypher statement (`cypher/kg/stats.cypher`); duplicate candidates
left are what entity resolution would still merge; the parse-failure rate comes from the
domain's latest build job.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

from kg_builder.jobs import list_jobs
from kg_builder.resolution import resolution_rows
from kgrag.errors import KgragError

if TYPE_CHECKING:
    from kgrag.platform import Platform


class QualityReport(BaseModel):
    domain: str
    entities: int
    relations: int
    mean_degree: float
    orphan_entities: int
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


def quality_report(p: Platform, domain: str, *, duplicates: bool = True) -> QualityReport:
    rows = p.store.read("kg/stats", {"domain": domain})
    s = rows[0] if rows else {}
    if not s or s["entities"] == 0:
        raise KgragError(f"domain {domain!r} has no graph",
                         hint=f"build it (`kgrag build --domain {domain}`) or import an "
                         f"export (`kgrag graph import data/graphs/{domain}.jsonl.gz`)")
    dupes = sum(len(r["merge"]) for r in resolution_rows(p.store, domain)[0]) if duplicates else 0
    jobs = list_jobs(p.settings.home, domain)
    job = jobs[0] if jobs else None
    return QualityReport(
        domain=domain, entities=s["entities"], relations=s["relations"],
        mean_degree=2 * s["relations"] / s["entities"], orphan_entities=s["orphans"],
        chunks=s["chunks"], facts_with_provenance=s["with_provenance"],
        provenance_rate=s["with_provenance"] / s["relations"] if s["relations"] else 0.0,
        entities_without_embedding=s["without_embedding"], duplicate_candidates_left=dupes,
        parse_failure_rate=job.parse_failure_rate if job else None,
        last_job=job.id if job else None, last_job_status=job.shown_status if job else None,
        extraction_records_per_minute=job.records_per_minute if job else None,
        triples_per_record=(job.triples / job.records_done) if job and job.records_done else None,
    )
