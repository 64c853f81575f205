"""The retriever seam shared by every text method.

Open-domain retrieval runs over the passage corpus in Neo4j (BM25 through the full-text
index, dense through the vector index, hybrid by reciprocal rank fusion); the
gold-context setting retrieves among a question's own paragraphs. Every method takes a
`Retriever` and says in its Prediction which setting produced the answer.

    hits = retriever.search("Who directed Jaws?", k=3)
    hits[0].passage.title
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from kgrag.types import Passage

Setting = Literal["open", "gold"]


@dataclass(frozen=True)
class Retrieved:
    passage: Passage
    score: float
    rank: int  # 1-based


@runtime_checkable
class Retriever(Protocol):
    setting: Setting

    def search(self, query: str, k: int) -> list[Retrieved]: ...
