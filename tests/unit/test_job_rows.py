"""Build-job rows: facts carry their kind of extraction, co-occurrence pairs collapse per
entity pair with per-chunk weights (what `kg/merge_cooccurs` adds up once per chunk)."""

from __future__ import annotations

from kg_builder.extract import CoOccurrence, Triple
from kg_builder.job_rows import cooccurrence_rows, entity_rows, fact_rows


def test_fact_rows_keep_the_extractor_and_all_chunks() -> None:
    rows = fact_rows([Triple("Fox", "live in", "forest", "spatial", "fox", "forest", "c1",
                             1.0, "spacy"),
                      Triple("foxes", "live in", "forests", "spatial", "fox", "forest", "c2",
                             1.0, "spacy"),
                      Triple("owl", "eat", "mouse", "other", "owl", "mouse", "c1")])
    assert rows[0] == {"h": "fox", "r": "live in", "t": "forest", "k": "spatial",
                       "chunks": ["c1", "c2"], "conf": 1.0, "x": "spacy"}
    assert rows[1]["x"] == "llm"  # the default: facts from before read as llm


def test_cooccurrence_rows_order_keys_and_sum_weights_per_chunk() -> None:
    pairs = [CoOccurrence("fox", "forest", "fox", "forest", "c1", 2),
             CoOccurrence("forest", "fox", "forest", "fox", "c2", 1),
             CoOccurrence("fox", "forest", "fox", "forest", "c1", 1)]
    assert cooccurrence_rows(pairs) == [{"h": "forest", "t": "fox", "chunks": ["c1", "c2"],
                                         "ws": [3, 1]}]
    names = {e["key"]: e["name"] for e in entity_rows([], pairs)}
    assert names == {"fox": "fox", "forest": "forest"}
