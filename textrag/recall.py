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
- `support mean`: the share of a question's supporting paragraphs in the top k, averaged
  over questions (HippoRAG 2's recall@k, Gutiérrez et al. 2025, sec. 4; "all" is ours and
  stricter);
- `answer`: a gold answer occurs in the top k passages' text as whole normalised words
  (SQuAD normalisation; an answer can also appear in a non-supporting paragraph);
- the median search time (dense and hybrid include embedding the question).
Questions without supporting titles count only for `answer`.

A supporting title names a Wikipedia paragraph exactly. Over a domain's own passages
(`TitleMatcher.for_domain`) it names a document or a section of one: a passage matches
when the title is its heading path or a leading part of it (`Guide` and `Guide > Setup`
both match a passage under `Guide > Setup`), or its file's name without the extension;
case and spacing are folded.

    rows = measure_recall(questions, {"bm25": BM25Retriever(store)}, ks=(5,))
    rows[0].support_all, recall_json(rows)["recall"]["bm25"]["mean"]["5"]

Between two retrievers at one k, `paired_tests` compares the per-question outcomes: McNemar
(exact) on "all", a paired bootstrap on "mean" (`eval.stats`).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from tqdm import tqdm

from kgrag.normalize import normalize_answer
from kgrag.stats import mcnemar, paired_bootstrap
from kgrag.types import Passage, Question
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
    support_mean: float = 0.0
    # per supported question, in question order: all supporting in the top k; their share
    all_found: tuple[bool, ...] = field(default=(), repr=False)
    shares: tuple[float, ...] = field(default=(), repr=False)


@dataclass(frozen=True)
class TitleMatcher:
    """Which supporting titles a passage answers to (module docstring): its title alone
    (the default, Wikipedia), or, for `domain`'s chunk passages, its heading path, each
    leading part of it and its file's stem, case and spacing folded.

    >>> m = TitleMatcher.for_domain("mydocs")
    >>> p = Passage(id="mydocs:notes:L3", title="Guide > Set up", text="-")
    >>> sorted(m.of(p)), m.key(" guide ")
    (['guide', 'guide > set up', 'notes'], 'guide')
    """

    domain: str = ""  # a domain's chunk passages: folded titles, heading paths, file stems

    @classmethod
    def for_domain(cls, domain: str) -> TitleMatcher:
        return cls(domain=domain)

    def key(self, title: str) -> str:
        """A supporting title as it is compared."""
        return " ".join(title.casefold().split()) if self.domain else title

    def of(self, passage: Passage) -> set[str]:
        """The supporting titles `passage` matches (as `key` folds them)."""
        if not self.domain:
            return {passage.title}
        parts = [self.key(h) for h in passage.title.split(" > ")]
        out = {" > ".join(parts[:i]) for i in range(1, len(parts) + 1)} - {""}
        prefix = f"{self.domain}:"
        if passage.id.startswith(prefix):  # `<domain>:<file stem>:<line or record>`
            out.add(self.key(passage.id[len(prefix):].split(":", 1)[0]))
        return out


EXACT = TitleMatcher()


def _titles(hits: Sequence[Retrieved], k: int, match: TitleMatcher = EXACT) -> set[str]:
    return set().union(*(match.of(h.passage) for h in hits[:k]))


def _has_answer(answers: Sequence[str], hits: Sequence[Retrieved]) -> bool:
    text = f" {normalize_answer(' '.join(h.passage.text for h in hits))} "
    return any(f" {a} " in text for a in map(normalize_answer, answers) if a)


def measure_recall(questions: Sequence[Question], retrievers: Mapping[str, Retriever],
                   ks: Sequence[int] = (1, 3, 5, 10), progress: bool = False,
                   match: TitleMatcher = EXACT) -> list[RecallRow]:
    """One row per (retriever, k); each question is searched once per retriever with the
    largest k, and the smaller cut-offs read its prefix. `match` says which supporting
    titles a passage answers to."""
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
        supported = [({match.key(t) for t in q.supporting}, hits)
                     for q, hits in zip(questions, found, strict=True) if q.supporting]
        for k in ks:
            all_found = tuple(gold <= _titles(h, k, match) for gold, h in supported)
            shares = tuple(len(gold & _titles(h, k, match)) / len(gold)
                           for gold, h in supported)
            rows.append(RecallRow(
                retriever=name, k=k, n=len(questions), n_supported=len(supported),
                support_any=(sum(bool(_titles(h, k, match) & gold) for gold, h in supported)
                             / len(supported)) if supported else 0.0,
                support_all=sum(all_found) / len(supported) if supported else 0.0,
                answer=sum(_has_answer(q.answers, h[:k]) for q, h in
                           zip(questions, found, strict=True)) / len(questions),
                median_ms=1000 * statistics.median(seconds),
                support_mean=sum(shares) / len(supported) if supported else 0.0,
                all_found=all_found, shares=shares))
    return rows


def recall_table(rows: Sequence[RecallRow]) -> list[str]:
    out = ["| retriever | k | questions | support any % | support all % | support mean % "
           "| answer in top k % | median ms |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r.retriever} | {r.k} | {r.n} | {100 * r.support_any:.1f} | "
                   f"{100 * r.support_all:.1f} | {100 * r.support_mean:.1f} | "
                   f"{100 * r.answer:.1f} | {r.median_ms:.1f} |")
    return out


def recall_json(rows: Sequence[RecallRow]) -> dict[str, Any]:
    """`{"questions": N, "recall": {retriever: {"all": {"5": share}, "mean": {...}}}}`,
    shares in [0, 1] over the questions with supporting titles."""
    out: dict[str, Any] = {"questions": rows[0].n_supported if rows else 0, "recall": {}}
    for r in rows:
        entry = out["recall"].setdefault(r.retriever, {"all": {}, "mean": {}})
        entry["all"][str(r.k)] = round(r.support_all, 4)
        entry["mean"][str(r.k)] = round(r.support_mean, 4)
    return out


@dataclass(frozen=True)
class PairedRecall:
    a: str
    b: str
    k: int
    all_diff: float  # share of a minus share of b
    all_p: float  # McNemar, exact
    mean_diff: float
    mean_p: float  # paired bootstrap


def paired_tests(rows: Sequence[RecallRow], k: int) -> list[PairedRecall]:
    """Every pair of retrievers at cut-off `k`, on the same supported questions."""
    at_k = [r for r in rows if r.k == k and r.all_found]
    out = []
    for a, b in combinations(at_k, 2):
        boot = paired_bootstrap(a.shares, b.shares)
        out.append(PairedRecall(a.retriever, b.retriever, k, a.support_all - b.support_all,
                                mcnemar(a.all_found, b.all_found).p_exact,
                                boot.diff, boot.p_value))
    return out


def paired_table(tests: Sequence[PairedRecall]) -> list[str]:
    out = ["| a | b | k | all: a - b (points) | McNemar p | mean: a - b (points) | "
           "paired bootstrap p |", "|---|---|---|---|---|---|---|"]
    for t in tests:
        out.append(f"| {t.a} | {t.b} | {t.k} | {100 * t.all_diff:+.1f} | {t.all_p:.3g} | "
                   f"{100 * t.mean_diff:+.1f} | {t.mean_p:.3g} |")
    return out
