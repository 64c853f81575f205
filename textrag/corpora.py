"""The passage corpora of the text methods, one per domain, side by side in one Neo4j.

Each corpus has its own node label, its own full-text and vector indexes
(`cypher/schema/1[1-7]0_*passage*.cypher`) and its own statements (`cypher/textrag/` for
Wikipedia, `cypher/textrag/medical/`), so a retriever over one corpus can never return a
passage of another: Neo4j Community's vector index cannot filter by a property before
ranking (a filter after ranking returns fewer than k passages), and Neo4j 5.26 plans a
dynamic label (`MATCH (p:$($label))`) as a scan of all nodes, so labels stay static.

| corpus | label | file (under the data folder) | domains |
|---|---|---|---|
| wikipedia | `Passage` | wikipedia/wiki_passages.jsonl.gz (15,360 paragraphs) | every other |
| medical | `MedicalPassage` | medical/medquad_corpus.jsonl.gz (14,656 MedQuAD answers) | medical |

The Wikipedia corpus keeps the `Passage` label it always had (its runs read the same
nodes). A MedQuAD record becomes a passage whose title is its question and whose text is
its answer, with the id `<source>:<qid>` (`MedquadIds`: MedQuAD's qids repeat across its
nine NIH sources, and 7 (source, qid) pairs within one); records that repeat an evaluation
question (same source and qid, same question text, or same answer text as a
`medquad_dev300` question) are left out, so `rag` never reads the reference answer it is
scored against (`overlapping_records`).

>>> corpus_for_domain("medical").label
'MedicalPassage'
>>> corpus_for_domain("commonsense").name   # no corpus of its own: Wikipedia, as before
'wikipedia'
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
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

    def statement(self, name: str) -> str:
        """The name of this corpus's version of a statement (`count_passages`, …)."""
        return f"{self.statements}/{name}"


WIKIPEDIA = CorpusSpec(
    name="wikipedia", label="Passage", fulltext_index="passage_text",
    vector_index="passage_embedding", statements="textrag",
    path="wikipedia/wiki_passages.jsonl.gz",
    record="passage", domains=("wikipedia",))
MEDICAL = CorpusSpec(
    name="medical", label="MedicalPassage", fulltext_index="medical_passage_text",
    vector_index="medical_passage_embedding", statements="textrag/medical",
    path="medical/medquad_corpus.jsonl.gz",
    record="medquad", domains=("medical",), exclude_overlap_with=("medquad",))

CORPORA: Mapping[str, CorpusSpec] = MappingProxyType({c.name: c for c in (WIKIPEDIA, MEDICAL)})
DEFAULT = WIKIPEDIA


def corpus_named(name: str) -> CorpusSpec:
    """The corpus called `name` (a clear error for any other name)."""
    if name not in CORPORA:
        raise KgragError(f"unknown passage corpus {name!r}",
                         hint=f"choose one of: {', '.join(CORPORA)}")
    return CORPORA[name]


def corpus_for_domain(domain: str | None) -> CorpusSpec:
    """The corpus the text methods read for questions of `domain`: the one registered for
    it, else Wikipedia (CommonsenseQA and law keep reading Wikipedia, as they always did)."""
    for spec in CORPORA.values():
        if domain is not None and domain in spec.domains:
            return spec
    return DEFAULT


def corpus_path(spec: CorpusSpec, data_dir: Path) -> Path:
    return data_dir / spec.path


class MedquadIds:
    """Unique passage ids for MedQuAD records read in file order: `<source>:<qid>`, then
    `<source>:<qid>~2`, `~3` … for later records with the same pair (distinct questions
    that MedQuAD numbered alike).

    >>> ids = MedquadIds()
    >>> [ids({"source": "GARD", "qid": "1-1"}) for _ in range(2)], ids({"qid": "2-1"})
    (['GARD:1-1', 'GARD:1-1~2'], 'medquad:2-1')
    """

    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()

    @staticmethod
    def base(raw: Mapping[str, object]) -> str:
        return f"{raw.get('source') or 'medquad'}:{raw.get('qid') or ''}"

    def __call__(self, raw: Mapping[str, object]) -> str:
        base = self.base(raw)
        self.seen[base] += 1
        n = self.seen[base]
        return base if n == 1 else f"{base}~{n}"


def medquad_passage(raw: Mapping[str, object], ids: MedquadIds) -> dict[str, str]:
    """A MedQuAD record {source, qid, question, answer, …} as a passage {id, title, text}
    (`ids` numbers the records of one file in order)."""
    return {"id": ids(raw), "title": str(raw.get("question") or ""),
            "text": str(raw.get("answer") or "")}


def normalise(text: str) -> str:
    """Case and whitespace folded: how repeated questions and answers are recognised."""
    return " ".join(text.lower().split())


@dataclass(frozen=True)
class Overlap:
    """A corpus record left out because it repeats an evaluation question."""

    corpus_id: str
    question_id: str
    reason: Literal["qid", "question", "answer"]


def overlapping_records(records: Iterable[Mapping[str, object]],
                        questions: Iterable[Mapping[str, object]]) -> list[Overlap]:
    """The corpus records (MedQuAD shape, in file order) that repeat an evaluation
    question: the same source and qid, the same question text, or the same answer text
    (case and spacing folded). The first reason found is given; `corpus_id` is the
    passage id (`MedquadIds`). MedQuAD asks many questions twice (from two NIH sources),
    so the question text matters as much as the qid.

    >>> overlapping_records([{"qid": "1", "question": "What is A ?", "answer": "x"}],
    ...                     [{"qid": "9", "question": "what is a ?", "answer": "y"}])
    [Overlap(corpus_id='medquad:1', question_id='9', reason='question')]
    """
    by_qid: dict[str, str] = {}
    by_question: dict[str, str] = {}
    by_answer: dict[str, str] = {}
    for q in questions:
        qid = str(q.get("qid") or q.get("id") or "")
        by_qid.setdefault(MedquadIds.base(q), qid)
        by_question.setdefault(normalise(str(q.get("question") or "")), qid)
        by_answer.setdefault(normalise(str(q.get("answer") or "")), qid)
    by_question.pop("", None)
    by_answer.pop("", None)
    out = []
    ids = MedquadIds()
    for r in records:
        cid = ids(r)
        for reason, table, key in (("qid", by_qid, MedquadIds.base(r)),
                                   ("question", by_question, normalise(str(r.get("question")
                                                                           or ""))),
                                   ("answer", by_answer, normalise(str(r.get("answer") or "")))):
            if key and key in table:
                out.append(Overlap(cid, table[key], reason))  # type: ignore[arg-type]
                break
    return out


def read_records(path: Path) -> Iterator[dict[str, object]]:
    """The JSON objects of a corpus file (gzipped or not); broken lines are skipped here
    (the loader reports them)."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            for line in f:
                try:
                    raw = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(raw, dict):
                    yield raw
    except OSError as e:
        raise KgragError(f"cannot read corpus file {path}: {e}",
                         hint="give an existing JSONL(.gz) file with --file") from e


def evaluation_records(spec: CorpusSpec, data_dir: Path) -> list[dict[str, object]]:
    """The raw records of the evaluation files `spec` must not overlap. They are read only
    to leave records out of the corpus, never to add anything to it."""
    from eval.datasets import DATASETS

    out: list[dict[str, object]] = []
    for name in spec.exclude_overlap_with:
        path = data_dir / DATASETS[name].path
        if not path.is_file():
            raise KgragError(f"cannot check the {spec.name} corpus against {name}: {path} is "
                             "missing", hint="check KGRAG_DATA_DIR")
        with path.open(encoding="utf-8") as f:
            out += [json.loads(line) for line in f if line.strip()]
    return out
