"""Triple extraction from real knowledge-source records with a real GGUF model."""

from __future__ import annotations

import pytest

from kg_builder.corpora import builtin_sources
from kg_builder.extract import ExtractConfig, TripleExtractor
from kg_builder.sources import load
from tests.conftest import DATA_DIR, needs_data


@needs_data
@pytest.mark.parametrize("domain", ["commonsense", "legal"])
def test_real_model_extracts_parseable_triples(domain: str, test_model_name: str) -> None:
    from kgrag.config import load_settings
    from kgrag.platform import Platform

    s = load_settings()
    s.model = s.model.model_copy(update={"chat": test_model_name})
    model = Platform(s).chat_model
    chunks, report = load(builtin_sources(domain, DATA_DIR)[0])
    assert report.skipped == 0
    extractor = TripleExtractor(model, domain, ExtractConfig(batch_size=2))
    batch = next(iter(extractor.batches(chunks[:2])))
    result = extractor.extract_batch(batch)
    assert not result.failures, result.failures  # constrained decoding: valid JSON
    triples = list(result.all_triples())
    assert triples, "the model extracted nothing"
    ids = {c.id for c in batch}
    for t in triples:
        assert t.record_id in ids  # provenance maps back to a record of the batch
        assert t.head_key != t.tail_key and t.head and t.tail and t.relation
