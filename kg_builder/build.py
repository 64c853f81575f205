"""What `kgrag build` runs: pick the sources and records of a domain, then a BuildJob.

Built-in domains read only their knowledge-source files (never evaluation questions).
For `commonsense` the default selection keeps the CommonsenseQA train records related to the
dev questions: the train records whose `question_concept` is one of the dev questions'
concepts (no labels or answers are read). For `wikipedia` it keeps the passages that are
context paragraphs of the HotpotQA and 2WikiMultihopQA dev questions (the distractor
setting's pool: 2 supporting and 8 distractor paragraphs per question, not told apart;
supporting facts and answers are not read), question by question. `--all-records` turns
either selection off.

>>> plan = plan_build(platform, "commonsense", sources=None, limit=300)
>>> BuildJob(platform, plan.domain, plan.chunks, plan.source_names, limit=300).run()
"""

from __future__ import annotations

import ast
import json
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kg_builder.corpora import builtin_domains, builtin_sources
from kg_builder.sources import Chunk, LoadReport, Source, load, user_source
from kgrag.errors import KgragError

if TYPE_CHECKING:
    from kgrag.platform import Platform

log = logging.getLogger(__name__)


@dataclass
class BuildPlan:
    domain: str
    chunks: list[Chunk]
    source_names: list[str]
    reports: list[LoadReport]
    selection: str

    @property
    def skipped_lines(self) -> int:
        return sum(r.skipped for r in self.reports)


def plan_build(p: Platform, domain: str, sources: Sequence[Path] | None, limit: int | None,
               *, only: Sequence[str] = (), all_records: bool = False) -> BuildPlan:
    """Chunks to extract, in a stable order; `limit` counts records (documents)."""
    srcs: list[Source]
    if sources:
        srcs = [user_source(path, domain) for path in sources]
    elif domain in builtin_domains():
        srcs = list(builtin_sources(domain, p.settings.data_dir))
        if only:
            srcs = [s for s in srcs if any(o in s.name for o in only)]
            if not srcs:
                raise KgragError(f"--only {list(only)} matches none of {domain}'s sources")
    else:
        raise KgragError(f"{domain!r} is not a built-in domain and no --source was given",
                         hint=f"built-in: {', '.join(builtin_domains())}; or pass "
                         "--source FILE (.jsonl with a text field, .md or .txt)")
    chunks: list[Chunk] = []
    reports = []
    for s in srcs:
        got, report = load(s)
        chunks += got
        reports.append(report)
    selection = "all records"
    if domain == "commonsense" and not sources and not all_records:
        concepts = dev_concepts(p.settings.data_dir)
        chunks = concept_round_robin(
            [c for c in chunks if c.meta.get("question_concept", "").lower() in concepts])
        selection = (f"train records whose concept is a dev question's concept ({len(concepts)}),"
                     " one record per concept in turn")
    if domain == "wikipedia" and not sources and not all_records:
        contexts = dev_contexts(p.settings.data_dir)
        chunks = select_contexts(chunks, contexts)
        selection = (f"passages in the contexts of the HotpotQA then 2Wiki dev questions "
                     f"({len(contexts)} questions), question by question")
    if limit is not None:
        keep: list[str] = []
        for c in chunks:
            if c.document_id not in keep:
                if len(keep) == limit:
                    break
                keep.append(c.document_id)
        wanted = set(keep)
        chunks = [c for c in chunks if c.document_id in wanted]
    if not chunks:
        raise KgragError(f"no records to build {domain!r} from ({selection})")
    return BuildPlan(domain, chunks, [s.name for s in srcs], reports, selection)


def concept_round_robin(chunks: Sequence[Chunk]) -> list[Chunk]:
    """Order records so that every concept gets its first record before any gets a second.

    A `--limit` then covers as many concepts as it can: on 2 CPU cores a build of a few
    hundred records is what a session affords, and a graph that touches every concept once
    serves the questions better than one that knows a few concepts well. Stable: concepts
    in order of first appearance, records of one concept in file order.
    """
    by_concept: dict[str, list[list[Chunk]]] = {}
    docs: dict[str, list[Chunk]] = {}
    for c in chunks:
        if c.document_id not in docs:
            docs[c.document_id] = []
            concept = c.meta.get("question_concept", "").lower()
            by_concept.setdefault(concept, []).append(docs[c.document_id])
        docs[c.document_id].append(c)
    ordered: list[Chunk] = []
    queues = list(by_concept.values())
    for turn in range(max((len(q) for q in queues), default=0)):
        for q in queues:
            if turn < len(q):
                ordered += q[turn]
    return ordered


def _dev_rows(path: Path, needed_for: str, hint: str) -> Iterator[Any]:
    """The JSON rows of a dev file read for a selection; broken lines are skipped."""
    if not path.is_file():
        raise KgragError(f"{path} not found: {needed_for}", hint=hint)
    with path.open(encoding="utf-8") as f:
        for line in f:
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue


def dev_concepts(data_dir: Path) -> set[str]:
    """The `question_concept` of each CommonsenseQA dev question, lower-cased (no labels)."""
    concepts: set[str] = set()
    for row in _dev_rows(data_dir / "commonsense" / "csqa_dev300.jsonl",
                         "the commonsense selection needs the dev concepts",
                         "pass --all-records to build from every train record"):
        try:
            concepts.add(row["question"]["question_concept"].lower())
        except (KeyError, TypeError, AttributeError):
            continue
    return concepts


_DEV_CONTEXT_FILES = ("wikipedia/hotpotqa_dev300.jsonl", "wikipedia/2wiki_dev300.jsonl")


def dev_contexts(data_dir: Path) -> list[list[tuple[str, str]]]:
    """Each dev question's context paragraphs as (title, text), in file order.

    Only the `context` field is read: no question text, answer or supporting fact.
    """
    contexts: list[list[tuple[str, str]]] = []
    for rel in _DEV_CONTEXT_FILES:
        for row in _dev_rows(data_dir / rel, "the wikipedia selection needs the dev contexts",
                             "pass --all-records to build from the corpus in file order"):
            try:
                raw = row["context"]
                ctx = ast.literal_eval(raw) if isinstance(raw, str) else raw
                contexts.append([(str(t), "".join(map(str, sents))) for t, sents in ctx])
            except (KeyError, TypeError, ValueError, SyntaxError):
                continue
    return contexts


def select_contexts(chunks: Sequence[Chunk], contexts: Sequence[Sequence[tuple[str, str]]]
                    ) -> list[Chunk]:
    """The passages named by `contexts`, question by question, each passage once.

    A paragraph is matched by title; when several passages share a title, the one whose
    text shares the longest prefix with the paragraph wins. Titles with no passage are
    skipped. Every piece of a chosen passage is kept, in order.
    """
    docs: dict[str, list[Chunk]] = {}
    by_title: dict[str, list[str]] = {}
    for c in chunks:
        if c.document_id not in docs:
            docs[c.document_id] = []
            by_title.setdefault(c.title, []).append(c.document_id)
        docs[c.document_id].append(c)

    def prefix(a: str, b: str) -> int:
        n = 0
        for x, y in zip(a, b, strict=False):
            if x != y:
                break
            n += 1
        return n

    chosen: dict[str, None] = {}
    for ctx in contexts:
        for title, text in ctx:
            ids = by_title.get(title)
            if not ids:
                continue
            best = max(ids, key=lambda d: prefix(docs[d][0].text, " ".join(text.split())))
            chosen.setdefault(best, None)
    return [c for d in chosen for c in docs[d]]
