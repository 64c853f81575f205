"""The fast extractor over WordNet's glosses (`kgrag graph wordnet --glosses`).

Each synset chunk (`kg_builder.wordnet_import`) holds the definition as a sentence and the
usage examples; spaCy's dependency parse (`kg_builder.fast_extract.FastExtractor`) reads
them like any other source text, and its facts (extractor `spacy`) and co-occurrence edges
name the synset chunk as their provenance, exactly as in a fast build.

    report = extract_glosses(store, embedder_factory, "commonsense", chunk_rows)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from tqdm import tqdm

from kg_builder.graph_io import GraphWriter, WriteReport
from kg_builder.job_rows import entity_rows, fact_rows, write_cooccurrences
from kg_builder.sources import Chunk
from kgrag.embed import Embedder
from kgrag.store import GraphStore


def as_chunks(rows: Sequence[dict[str, Any]], domain: str) -> list[Chunk]:
    return [Chunk(id=r["id"], domain=domain, document_id=r["doc"], text=r["text"],
                  source=r["source"], line=r["line"], title=r["title"]) for r in rows]


def extract_glosses(store: GraphStore, embedder_factory: Callable[[], Embedder] | None,
                    domain: str, rows: Sequence[dict[str, Any]], *, workers: int = 1,
                    batch: int = 20_000) -> WriteReport:
    """Parse the synset chunks with the fast extractor and write what it reads (MERGE:
    the chunks exist already, a second run writes nothing)."""
    from kg_builder.fast_extract import FastConfig, FastExtractor

    start = time.perf_counter()
    extractor = FastExtractor.load(domain, FastConfig(n_process=workers))
    report = WriteReport(domain)
    writer = GraphWriter(store, None, domain, embedder_factory=embedder_factory)
    chunks = as_chunks(rows, domain)
    with tqdm(total=len(chunks), unit="synset", desc="glosses", disable=None) as bar:
        for first in range(0, len(chunks), batch):
            part = chunks[first : first + batch]
            result = extractor.extract(part)
            bar.update(len(part))
            triples = list(result.all_triples())
            pairs = list(result.all_cooccurrences())
            writer.write(rows[first : first + batch], entity_rows(triples, pairs),
                         fact_rows(triples), report)
            fact_keys: dict[str, set[str]] = {}
            for t in triples:
                fact_keys.setdefault(t.record_id, set()).update((t.head_key, t.tail_key))
            write_cooccurrences(store, domain, pairs, fact_keys, report)
    report.seconds = time.perf_counter() - start
    return report
