"""Retrieval recall over the passage corpus: how often a question's gold supporting
paragraphs and its answer come back in the top k, for each retriever.

This bounds what a one-shot retrieval method can do in the open-domain setting (standard
RAG reads the top k for the question as asked; the adaptive methods retrieve again with
their own queries), and it costs no LLM call, so it runs on every dev question:

    kgrag corpus recall --dataset hotpotqa --n 300 --k 1,3,5,10

Per retriever and k:
- `support any`: at least one supporting paragraph is in the top k (matched by title, as
  HotpotQA's and 2Wiki's supporting facts name paragraphs);
- `support all`: every supporting paragraph is (what a two-hop question needs);
- `answer`: a gold answer occurs in the top k passages' text as whole normalised words
  (SQuAD normalisation; an answer can also appear in a non-supporting paragraph);
- the median search time (dense and hybrid include embedding the question).
Questions without supporting titles count only for `answer`.

    rows = measure_recall(questions, {"bm25": BM25Retriever(store)}, ks=(5,))
    rows[0].support_all
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tqdm import tqdm

from kgrag.normalize import normalize_answer
from kgrag.types import Question
from textrag.retrieval import Retrieved, Retriever


@dataclass(frozen=True)
class RecallRow:
    retriever: str
    k: int
    n: int  # questions
    n_supported: int  # questions with supporting titles
    support_any: float
    support_all: float
    answer: float
    median_ms: float


def _titles(hits: Sequence[Retrieved], k: int) -> set[str]:
    return {h.passage.title for h in hits[:k]}


def _has_answer(answers: Sequence[str], hits: Sequence[Retrieved]) -> bool:
    text = f" {normalize_answer(' '.join(h.passage.text for h in hits))} "
    return any(f" {a} " in text for a in map(normalize_answer, answers) if a)


def measure_recall(questions: Sequence[Question], retrievers: Mapping[str, Retriever],
                   ks: Sequence[int] = (1, 3, 5, 10), progress: bool = False
                   ) -> list[RecallRow]:
    """One row per (retriever, k); each question is searched once per retriever with the
    largest k, and the smaller cut-offs read its prefix."""
    if not questions:
        raise ValueError("no questions to measure recall on")
    ks = sorted(set(ks))
    rows = []
    for name, retriever in retrievers.items():
        found: list[list[Retrieved]] = []
        seconds = []
        for q in tqdm(questions, desc=name, unit="q", disable=not progress):
            start = time.perf_counter()
            found.append(retriever.search(q.text, ks[-1]))
            seconds.append(time.perf_counter() - start)
        supported = [(q, hits) for q, hits in zip(questions, found, strict=True)
                     if q.supporting]
        for k in ks:
            rows.append(RecallRow(
                retriever=name, k=k, n=len(questions), n_supported=len(supported),
                support_any=(sum(bool(_titles(h, k) & set(q.supporting)) for q, h in supported)
                             / len(supported)) if supported else 0.0,
                support_all=(sum(set(q.supporting) <= _titles(h, k) for q, h in supported)
                             / len(supported)) if supported else 0.0,
                answer=sum(_has_answer(q.answers, h[:k]) for q, h in
                           zip(questions, found, strict=True)) / len(questions),
                median_ms=1000 * statistics.median(seconds)))
    return rows


def recall_table(rows: Sequence[RecallRow]) -> list[str]:
    out = ["| retriever | k | questions | support any % | support all % | answer in top k % "
           "| median ms |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r.retriever} | {r.k} | {r.n} | {100 * r.support_any:.1f} | "
                   f"{100 * r.support_all:.1f} | {100 * r.answer:.1f} | {r.median_ms:.1f} |")
    return out
