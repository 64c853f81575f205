"""The graph-quality report of one domain (`kgrag graph stats`, the explorer's Graphs page).

Counts come from one Cypher statement (`cypher/kg/stats.cypher`); connected components and
the relation-kind mix from the domain's facts (`cypher/kg/edges.cypher`, union-find here:
Community Edition has no GDS); duplicate candidates left are what entity resolution would
still merge; the parse-failure rate comes from the domain's latest build job.

On a graph of 100,000s of facts the counts take seconds, reading every fact and finding
the components tens of seconds, and even the fingerprint (`kg_builder.fingerprint`)
seconds. So the explorer reads the report from a file under the kgrag home,
`<home>/quality/<domain>.json`, which records the fingerprint of the graph it describes:
`refresh_cached` compares it with the graph's and computes the facts' structure again only
when the fingerprint changed (a build, import, resolution or drop); the counts are read
again at each comparison (vectors and provenance change without changing the
fingerprint). The build-job fields are always read fresh (files).

    refresh_cached(platform, "medical").structure.largest_component
    # -> 116412
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, ValidationError

from kg_builder.fingerprint import GraphFingerprint, graph_fingerprint
from kg_builder.jobs import list_jobs
from kg_builder.resolution import resolution_rows
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
    union-find of entity resolution, over key indices). `edges` is read once, as it
    comes: only the key index and the union-find are kept.

    >>> components("abcde", [("a", "b"), ("b", "c"), ("d", "d")])
    [3, 1, 1]
    """
    index = {k: i for i, k in enumerate(dict.fromkeys(keys))}
    parent = list(range(len(index)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]  # path halving
            i = parent[i]
        return i

    def node(key: str) -> int:
        i = index.get(key)
        if i is None:
            i = index[key] = len(parent)
            parent.append(i)
        return i

    for h, t in edges:
        a, b = find(node(h)), find(node(t))
        if a != b:
            parent[max(a, b)] = min(a, b)
    return sorted(Counter(find(i) for i in range(len(parent))).values(), reverse=True)


class GraphStructure(BaseModel):
    """What the quality report reads from every fact: the part worth caching."""

    components: int  # connected components without the orphan entities
    largest_component: int  # entities in the largest one
    relation_kinds: dict[str, int] = Field(default_factory=dict)
    relations_by_extractor: dict[str, int] = Field(default_factory=dict)


class CachedReport(BaseModel):
    """A cache file: the counts and fact structure of the graph with this fingerprint."""

    domain: str
    fingerprint: GraphFingerprint
    stats: dict[str, int]  # the row of `kg/stats`
    structure: GraphStructure
    checked: float  # when the fingerprint was last compared (epoch seconds)


def graph_structure(p: Platform, domain: str) -> GraphStructure:
    """Components and the relation mix of `domain`, from all its facts (`kg/edges`)."""
    kinds: Counter[str] = Counter()
    extractors: Counter[str] = Counter()

    def pairs() -> Iterator[tuple[str, str]]:
        for f in p.store.stream("kg/edges", {"domain": domain}):  # one pass, streamed
            kinds[str(f["k"])] += 1
            extractors[str(f.get("x") or "llm")] += 1
            yield f["h"], f["t"]

    sizes = components([], pairs())
    return GraphStructure(
        components=len(sizes), largest_component=sizes[0] if sizes else 0,
        relation_kinds=dict(kinds.most_common()),
        relations_by_extractor=dict(extractors.most_common()))


def cache_path(home: Path, domain: str) -> Path:
    """`<home>/quality/<domain>.json` (a domain name unsafe in a file name is hashed)."""
    name = domain if re.fullmatch(r"[A-Za-z0-9_.-]{1,100}", domain) else \
        "d-" + hashlib.sha256(domain.encode()).hexdigest()[:16]
    return home / "quality" / f"{name}.json"


def read_cached(home: Path, domain: str) -> CachedReport | None:
    """The cached report of `domain`, or None (no file, or an unreadable one)."""
    try:
        cached = CachedReport.model_validate_json(cache_path(home, domain).read_text("utf-8"))
    except (OSError, ValidationError):
        return None
    return cached if cached.domain == domain else None


def _stats(p: Platform, domain: str) -> dict[str, int]:
    rows = p.store.read("kg/stats", {"domain": domain})
    s = rows[0] if rows else {}
    if not s or s["entities"] == 0:
        raise DomainNotBuilt(domain, "has no graph")
    return {k: int(v or 0) for k, v in s.items()}


def refresh_cached(p: Platform, domain: str) -> CachedReport:
    """Compare `domain`'s fingerprint with its cache: the same graph keeps its structure
    and gets fresh counts; another graph (or no cache) is computed anew. Written atomically;
    a cache that cannot be written is logged, never an error."""
    stats = _stats(p, domain)  # first: an empty domain fails before the slow read
    fp = graph_fingerprint(p.store, domain)
    old = read_cached(p.settings.home, domain)
    structure = old.structure if old and old.fingerprint == fp else graph_structure(p, domain)
    entry = CachedReport(domain=domain, fingerprint=fp, stats=stats, structure=structure,
                         checked=time.time())
    path = cache_path(p.settings.home, domain)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(entry.model_dump_json(), encoding="utf-8")
        tmp.replace(path)  # atomic: a reader never sees half a file
    except OSError as e:
        log.warning("cannot write the quality cache %s: %s", path, e)
    return entry


def quality_report(p: Platform, domain: str, *, duplicates: bool = True) -> QualityReport:
    """The quality report of `domain` as it is now (`kgrag graph stats`): the cache brought
    up to date first (`refresh_cached`, which also serves the explorer); `duplicates`: also
    count what entity resolution would merge (slow: it reads every entity)."""
    entry = refresh_cached(p, domain)
    dupes = sum(len(r["merge"]) for r in resolution_rows(p.store, domain)[0]) if duplicates else 0
    return _report(p, domain, entry.stats, entry.structure, dupes)


def cached_quality_report(p: Platform, domain: str) -> QualityReport:
    """The report from the cache (no duplicate count), computed first when there is none.
    Whether the cache still describes the graph is `refresh_cached`'s question: the app
    asks it in the background (`app.quality`)."""
    entry = read_cached(p.settings.home, domain) or refresh_cached(p, domain)
    return report_of(p, entry)


def report_of(p: Platform, entry: CachedReport) -> QualityReport:
    """The report of a cache entry, with the build-job fields read now (files)."""
    return _report(p, entry.domain, entry.stats, entry.structure, 0)


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


class QualityTiming(BaseModel):
    """Seconds of each part of a domain's quality report (`kgrag bench quality`)."""

    domain: str
    fingerprint: str
    counts_s: float  # `kg/stats`
    fingerprint_s: float  # `graph/fingerprint` and its digest
    structure_s: float  # every fact read, components found
    cache_read_s: float  # what a view of a cached report reads
    load_average: float

    @property
    def uncached_view_s(self) -> float:
        """What every Graphs view cost before the cache: counts and structure."""
        return self.counts_s + self.structure_s

    @property
    def check_s(self) -> float:
        """A background check of a cached report: counts and fingerprint."""
        return self.counts_s + self.fingerprint_s


def time_quality(p: Platform, domain: str) -> QualityTiming:
    """Time each part once, and leave `domain`'s cache up to date."""
    t0 = time.perf_counter()
    stats = _stats(p, domain)
    t1 = time.perf_counter()
    fp = graph_fingerprint(p.store, domain)
    t2 = time.perf_counter()
    structure = graph_structure(p, domain)
    t3 = time.perf_counter()
    entry = CachedReport(domain=domain, fingerprint=fp, stats=stats, structure=structure,
                         checked=time.time())
    path = cache_path(p.settings.home, domain)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(entry.model_dump_json(), encoding="utf-8")
    t4 = time.perf_counter()
    read_cached(p.settings.home, domain)
    t5 = time.perf_counter()
    return QualityTiming(domain=domain, fingerprint=str(fp), counts_s=t1 - t0,
                         fingerprint_s=t2 - t1, structure_s=t3 - t2, cache_read_s=t5 - t4,
                         load_average=os.getloadavg()[0])
