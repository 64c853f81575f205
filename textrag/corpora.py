"""The passage corpora of the text methods, one per domain, side by side in one Neo4j.

Every domain built with `kgrag build` is a passage corpus: its chunks are written as
`ChunkPassage` nodes (`kg_builder.passages`, the chunk's id, title, text and vector) and
`corpus_for_domain` finds them by the domain's name. The design, and why:

- One static label for all domains, not a label per domain: Neo4j 5.26 plans a dynamic
  label (`MATCH (p:$($label))`) as a scan of all nodes, and a label made from a user's
  domain name would need escaping in every statement.
- BM25 filters before ranking: the full-text index `chunk_passage_text` also indexes
  `corpus`, a token made from the domain name (`kgrag.passages.corpus_token`: `c` + 24
  hex digits of its sha256, one Lucene term whatever the name's case or punctuation), and
  every query requires it (`textrag.retrievers.domain_query`).
- Dense search is numpy over the domain's vectors, read once per retriever: Neo4j
  Community's vector index cannot filter by a property before ranking (a filter after
  ranking returns fewer than k passages of a small domain beside a large one).

Two built-in corpora keep labels of their own, because the committed runs read them: each
has its own node label, full-text and vector indexes (`cypher/schema/1[1-7]0_*passage*.cypher`)
and statements (`cypher/textrag/` for Wikipedia, `cypher/textrag/medical/`), so a retriever
over one never returns a passage of another.

| corpus | label | file (under the data folder) | domains |
|---|---|---|---|
| wikipedia | `Passage` | wikipedia/wiki_passages.jsonl.gz (15,360 paragraphs) | wikipedia, |
| | | | commonsense, legal |
| medical | `MedicalPassage` | medical/medquad_corpus.jsonl.gz (14,656 answers) | medical |
| any other | `ChunkPassage` | its `kgrag build --source` files, as chunked | itself |

CommonsenseQA and law questions keep reading Wikipedia, as their committed runs did; this
table is the remaining special case (`kgrag corpus load` loads its two files).

The Wikipedia corpus keeps the `Passage` label it always had (its runs read the same
nodes). A MedQuAD record becomes a passage whose title is its question and whose text is
its answer, with the id `medquad:L<line>` (`medquad_id`: MedQuAD's qids repeat across its
nine NIH sources, and 7 (source, qid) pairs within one); records that repeat an evaluation
question (same source and qid, same question text, or same answer text as a
`medquad_dev300` question) are left out, so `rag` never reads the reference answer it is
scored against (`corpus_overlaps`: the committed list `kgrag/leave_out.json` for the shared
file, as a graph build reads it; `overlapping_records` made that list).

>>> corpus_for_domain("medical").label
'MedicalPassage'
>>> corpus_for_domain("commonsense").name   # Wikipedia, as its committed runs read
'wikipedia'
>>> corpus_for_domain("mydocs").label, corpus_for_domain("mydocs").params
('ChunkPassage', {'domain': 'mydocs'})
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from kgrag.errors import KgragError

RecordShape = Literal["passage", "medquad"]


@dataclass(frozen=True)
class CorpusSpec:
    """One passage corpus: where its records are and how Neo4j keeps them apart."""

    name: str
    label: str  # node label (fixed here and in its statements, never from user text)
    fulltext_index: str
    vector_index: str
    statements: str  # the folder of its Cypher statements, under cypher/
    path: str  # relative to the data folder
    record: RecordShape  # {id, title, text} or a MedQuAD record
    domains: tuple[str, ...] = ()  # the domains whose questions read this corpus
    # built-in evaluation sets whose questions must not find their own reference answer
    exclude_overlap_with: tuple[str, ...] = ()
    # how a domain graph's documents name this corpus's passages (`kg-ppr`): the document
    # `<domain>:<graph_source>:<x>` is the passage `<passage_prefix><x>`
    graph_source: str = ""
    passage_prefix: str = ""
    # a domain's chunk corpus (`ChunkPassage`): the domain whose passages it holds
    domain: str = ""

    @property
    def params(self) -> dict[str, str]:
        """The parameters every statement of this corpus takes besides its own."""
        return {"domain": self.domain} if self.domain else {}

    @property
    def is_chunks(self) -> bool:
        """Whether this is a domain's chunk corpus (passages written by `kgrag build`)."""
        return bool(self.domain)

    def graph_document_prefix(self, domain: str) -> str:
        """The id prefix of `domain`'s graph documents that are passages of this corpus.

        >>> MEDICAL.graph_document_prefix("medical")
        'medical:medquad_corpus:'
        """
        return f"{domain}:{self.graph_source}:"

    def statement(self, name: str) -> str:
        """The name of this corpus's version of a statement (`count_passages`, …)."""
        return f"{self.statements}/{name}"


MEDQUAD_PREFIX = "medquad:"
WIKIPEDIA = CorpusSpec(
    name="wikipedia", label="Passage", fulltext_index="passage_text",
    vector_index="passage_embedding", statements="textrag",
    path="wikipedia/wiki_passages.jsonl.gz",
    record="passage", domains=("wikipedia",), graph_source="wiki_passages")
MEDICAL = CorpusSpec(
    name="medical", label="MedicalPassage", fulltext_index="medical_passage_text",
    vector_index="medical_passage_embedding", statements="textrag/medical",
    path="medical/medquad_corpus.jsonl.gz",
    record="medquad", domains=("medical",), exclude_overlap_with=("medquad",),
    graph_source="medquad_corpus", passage_prefix=MEDQUAD_PREFIX)

CORPORA: Mapping[str, CorpusSpec] = MappingProxyType({c.name: c for c in (WIKIPEDIA, MEDICAL)})
DEFAULT = WIKIPEDIA
PASSAGES_HINT = ("build it with `kgrag build --domain {domain} --source FILE` (its chunks "
                 "become its passages), or index the chunks of a graph built earlier with "
                 "`kgrag corpus load --domain {domain}`")
# built-in domains whose questions read Wikipedia (their committed runs did)
WIKIPEDIA_READERS = ("commonsense", "legal")


def chunk_corpus(domain: str) -> CorpusSpec:
    """The passage corpus of `domain`'s chunks (`ChunkPassage` nodes of that domain)."""
    if not domain:
        raise KgragError("a chunk corpus needs a domain name")
    return CorpusSpec(name=domain, label="ChunkPassage", fulltext_index="chunk_passage_text",
                      vector_index="", statements="textrag/chunks", path="",
                      record="passage", domains=(domain,), domain=domain)


def corpus_named(name: str) -> CorpusSpec:
    """The corpus called `name` (a clear error for any other name)."""
    if name not in CORPORA:
        raise KgragError(f"unknown passage corpus {name!r}",
                         hint=f"choose one of: {', '.join(CORPORA)}")
    return CORPORA[name]


def corpus_for_domain(domain: str | None) -> CorpusSpec:
    """The corpus the text methods read for questions of `domain`: a built-in one
    (Wikipedia for no domain, commonsense and legal), else the domain's own chunks."""
    for spec in CORPORA.values():
        if domain is not None and domain in spec.domains:
            return spec
    if domain is None or domain in WIKIPEDIA_READERS:
        return DEFAULT
    return chunk_corpus(domain)


def corpus_path(spec: CorpusSpec, data_dir: Path) -> Path:
    return data_dir / spec.path


def medquad_id(line: int) -> str:
    """The passage id of the MedQuAD record on 1-based `line` of its file: `medquad:L<n>`.
    MedQuAD's qids repeat across its nine NIH sources (2,098 of them) and even within one
    (7 pairs), so the line names a record, as in the medical graph, whose documents are
    `medical:medquad_corpus:L<n>` (`kg_builder`): the passage of a graph document is
    `MEDQUAD_PREFIX` + what follows the document prefix.

    >>> medquad_id(12)
    'medquad:L12'
    """
    return f"{MEDQUAD_PREFIX}L{line}"


def medquad_passage(raw: Mapping[str, object], line: int) -> dict[str, str]:
    """A MedQuAD record {source, qid, question, answer, …} on `line` as a passage
    {id, title, text}."""
    return {"id": medquad_id(line), "title": str(raw.get("question") or ""),
            "text": str(raw.get("answer") or "")}


def _source_qid(raw: Mapping[str, object]) -> str:
    return f"{raw.get('source') or ''}:{raw.get('qid') or ''}"


def normalise(text: str) -> str:
    """Case and whitespace folded: how repeated questions and answers are recognised."""
    return " ".join(text.lower().split())


@dataclass(frozen=True)
class Overlap:
    """A corpus record left out because it repeats an evaluation question."""

    corpus_id: str
    question_id: str
    reason: Literal["qid", "question", "answer"]
    line: int = field(default=0, repr=False)  # the record's 1-based line in its file


def overlapping_records(records: Iterable[tuple[int, Mapping[str, object]]],
                        questions: Iterable[Mapping[str, object]]) -> list[Overlap]:
    """The corpus records ((line, MedQuAD record) pairs) that repeat an evaluation
    question: the same source and qid, the same question text, or the same answer text
    (case and spacing folded). The first reason found is given; `corpus_id` is the
    passage id (`medquad_id`). MedQuAD asks many questions twice (from two NIH sources),
    so the question text matters as much as the qid.

    >>> overlapping_records([(3, {"qid": "1", "question": "What is A ?", "answer": "x"})],
    ...                     [{"qid": "9", "question": "what is a ?", "answer": "y"}])
    [Overlap(corpus_id='medquad:L3', question_id='9', reason='question')]
    """
    by_qid: dict[str, str] = {}
    by_question: dict[str, str] = {}
    by_answer: dict[str, str] = {}
    for q in questions:
        qid = str(q.get("qid") or q.get("id") or "")
        by_qid.setdefault(_source_qid(q), qid)
        by_question.setdefault(normalise(str(q.get("question") or "")), qid)
        by_answer.setdefault(normalise(str(q.get("answer") or "")), qid)
    by_question.pop("", None)
    by_answer.pop("", None)
    out = []
    for line, r in records:
        cid = medquad_id(line)
        for reason, table, key in (("qid", by_qid, _source_qid(r)),
                                   ("question", by_question, normalise(str(r.get("question")
                                                                           or ""))),
                                   ("answer", by_answer, normalise(str(r.get("answer") or "")))):
            if key and key in table:
                out.append(Overlap(cid, table[key], reason, line))  # type: ignore[arg-type]
                break
    return out


def read_records(path: Path) -> Iterator[tuple[int, dict[str, object]]]:
    """(1-based line, JSON object) of a corpus file (gzipped or not); broken lines are
    skipped here (the loader reports them)."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                try:
                    raw = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(raw, dict):
                    yield n, raw
    except OSError as e:
        raise KgragError(f"cannot read corpus file {path}: {e}",
                         hint="give an existing JSONL(.gz) file with --file") from e


def evaluation_records(spec: CorpusSpec, data_dir: Path) -> list[dict[str, object]]:
    """The raw records of the evaluation files `spec` must not overlap. They are read only
    to leave records out of the corpus, never to add anything to it."""
    from kgrag.datasets import DATASETS

    out: list[dict[str, object]] = []
    for name in spec.exclude_overlap_with:
        path = data_dir / DATASETS[name].path
        if not path.is_file():
            raise KgragError(f"cannot check the {spec.name} corpus against {name}: {path} is "
                             "missing", hint="check KGRAG_DATA_DIR")
        with path.open(encoding="utf-8") as f:
            out += [json.loads(line) for line in f if line.strip()]
    return out


def corpus_overlaps(spec: CorpusSpec, path: Path, data_dir: Path) -> list[Overlap]:
    """The records of the corpus file `path` that `kgrag corpus load` leaves out: those
    repeating one of `spec`'s evaluation questions (none for a corpus without any).

    The shared file (`spec.path` under `data_dir`) is read through the committed list
    `kgrag/leave_out.json`, like a graph build: no evaluation file is opened, and a file
    other than the one the list was made for (another sha256) is an error. A file of the
    user's own (`--file`), which the list cannot know, is checked against the evaluation
    files themselves (`overlapping_records`)."""
    if not spec.exclude_overlap_with:
        return []
    from kgrag.leave_out import left_out_records

    if path.resolve() == (data_dir / spec.path).resolve():
        return [Overlap(medquad_id(int(r["line"])), str(r["question_id"]), r["reason"],
                        int(r["line"])) for r in left_out_records(spec.path, data_dir)]
    return overlapping_records(read_records(path), evaluation_records(spec, data_dir))


def leave_out_listing(data_dir: Path) -> dict[str, object]:
    """The decontamination list `kgrag/leave_out.json` as it should read over the files
    in `data_dir`: for every corpus with evaluation sets to protect, the sha256 of its file
    and its records that repeat one of their questions (`overlapping_records`), by line. A
    graph build reads this list instead of the evaluation files."""
    from kgrag.leave_out import REMAKE, sha256_of

    files: dict[str, object] = {}
    for spec in CORPORA.values():
        if not spec.exclude_overlap_with:
            continue
        path = data_dir / spec.path
        found = overlapping_records(read_records(path), evaluation_records(spec, data_dir))
        files[spec.path] = {
            "sha256": sha256_of(path), "protects": list(spec.exclude_overlap_with),
            "records": [{"line": o.line, "question_id": o.question_id, "reason": o.reason}
                        for o in found]}
    return {"about": "knowledge-source records that repeat an evaluation question (same "
                     "source and qid, question text or answer text, case and spacing "
                     "folded): a graph build leaves them out, as the passage corpus does",
            "made_by": REMAKE, "files": files}
