"""`kgrag graph hippo`: the index-time half of kg-ppr after HippoRAG 2 (`metakg.hippo`).

Fact vectors ("subject relation object", sec. 3.2) are written in place and resumably
through `kgrag.vectors.reembed` (scope `facts:<domain>`, so a query with another model is
refused); synonym edges (sec. 3.1, cosine ≥ 0.8 between entity vectors) are rebuilt from
scratch, in batches of entities, and counted apart from the facts.

    report = build_index(store, "wikipedia", embedder, HippoConfig())
    report.synonyms
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tqdm import tqdm

from kgrag.vectors import ReembedReport, Statements, check, reembed
from metakg.hippo import HippoConfig

if TYPE_CHECKING:
    from kgrag.embed import Embedder
    from kgrag.store import GraphStore

SYNONYM_BATCH = 500  # entities per synonym write


def facts_scope(domain: str) -> str:
    return f"facts:{domain}"


def embed_command(domain: str) -> str:
    return f"kgrag graph hippo --domain {domain}"


def check_facts(store: GraphStore, domain: str, model: str) -> None:
    """Refuse a query embedder other than the one that made `domain`'s fact vectors."""
    check(store, facts_scope(domain), model, embed_command(domain), legacy=False)


@dataclass
class HippoIndexReport:
    domain: str
    facts: ReembedReport | None = None
    synonyms: int = 0  # synonym edges (pairs) now in the domain
    synonym_seconds: float = 0.0

    def __str__(self) -> str:
        facts = str(self.facts) if self.facts else f"{self.domain}: fact vectors kept"
        return (f"{facts}\n{self.domain}: {self.synonyms:,} synonym edges (cosine ≥ the "
                f"threshold, counted apart from facts) in {self.synonym_seconds:.0f} s")


def embed_facts(store: GraphStore, domain: str, embedder: Embedder, *,
                batch_size: int = 512, progress: bool = True) -> ReembedReport:
    """Fact vectors of `domain` by `embedder` (only those another model made, or none)."""
    total = store.read("graph/count_facts", {"domain": domain})[0]["facts"]
    return reembed(store, facts_scope(domain), embedder,
                   Statements("hippo/facts_to_embed", "hippo/set_fact_embeddings",
                              {"domain": domain}),
                   lambda r: str(r["text"]), total=total, batch_size=batch_size,
                   progress=progress)


def build_synonyms(store: GraphStore, domain: str, config: HippoConfig, *,
                   progress: bool = True) -> int:
    """Replace `domain`'s synonym edges; the number of pairs joined."""
    store.run_autocommit("hippo/delete_synonyms", {"domain": domain})
    keys = [r["key"] for r in store.read("hippo/entity_keys", {"domain": domain})]
    bar = tqdm(total=len(keys), unit="entity", desc=f"synonyms {domain}",
               disable=not progress, dynamic_ncols=True)
    for start in range(0, len(keys), SYNONYM_BATCH):
        part = keys[start:start + SYNONYM_BATCH]
        store.run("hippo/merge_synonyms", {
            "domain": domain, "keys": part, "threshold": config.synonym_threshold,
            "top_k": config.synonym_top_k, "candidates": config.synonym_candidates})
        bar.update(len(part))
    bar.close()
    return int(store.read("hippo/count_synonyms", {"domain": domain})[0]["synonyms"])


def build_index(store: GraphStore, domain: str, embedder: Embedder, config: HippoConfig,
                *, facts: bool = True, synonyms: bool = True,
                progress: bool = True) -> HippoIndexReport:
    report = HippoIndexReport(domain)
    if facts:
        report.facts = embed_facts(store, domain, embedder, progress=progress)
    if synonyms:
        start = time.perf_counter()
        report.synonyms = build_synonyms(store, domain, config, progress=progress)
        report.synonym_seconds = time.perf_counter() - start
    return report
