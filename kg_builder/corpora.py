"""The four built-in domains' knowledge-source files and their row formats.

Only knowledge sources are listed (the shared data README's `*_train`, `*_kg_source`,
`*_corpus`, `medmcqa_dev`, the Wikipedia passages and LegalBench's tasks: their train
records only), never evaluation questions. Every record of
every source is read: no selection by the evaluation questions (not even by their
concepts). One exception takes away, never adds: a source's records that repeat an
evaluation question (480 of MedQuAD's corpus records) are left out, as the passage corpus
leaves them out. They are read from the committed list `kgrag/leave_out.json`
(`kgrag.leave_out.left_out_lines`): a build never opens an evaluation file.

    [s.path.name for s in builtin_sources("medical", Path("../shared/data"))]
    # -> ['medmcqa_dev.jsonl', 'medquad_corpus.jsonl.gz']
    chunks, report = load(builtin_sources("commonsense", Path("../shared/data"))[0])
    chunks[0].id, report.skipped
    # -> ('commonsense:csqa_train:075e483d21c29a511267ef62bedc0461', 0)
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kg_builder.normalize import collapse
from kg_builder.sources import (
    Chunk,
    JsonlSource,
    RowContext,
    RowParser,
    Source,
    parse_passage,
)
from kgrag.errors import KgragError
from kgrag.leave_out import left_out_lines


class _Row(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _CsqaChoice(_Row):
    label: str
    text: str


class _CsqaQuestion(_Row):
    stem: str
    question_concept: str = ""
    choices: list[_CsqaChoice]


class _CsqaRow(_Row):
    id: str
    answer_key: str = Field(alias="answerKey")
    question: _CsqaQuestion


def parse_csqa(row: Any, ctx: RowContext) -> list[Chunk]:
    """CommonsenseQA: the question and its correct choice as a statement-like text."""
    r = _CsqaRow.model_validate(row)
    answer = next((c.text for c in r.question.choices if c.label == r.answer_key), None)
    if answer is None:
        raise ValueError(f"answerKey {r.answer_key!r} is not one of the choices")
    concept = r.question.question_concept
    return ctx.chunks(ctx.document_id(r.id), f"Question: {collapse(r.question.stem)}\n"
                      f"Answer: {answer}", focus=concept,
                      meta={"question_concept": concept, "answer": answer})


class _MedMcqaRow(_Row):
    id: str
    question: str
    opa: str
    opb: str
    opc: str
    opd: str
    cop: int = Field(ge=1, le=4)  # 1-based correct option
    exp: str | None = None
    subject_name: str | None = None
    topic_name: str | None = None


def parse_medmcqa(row: Any, ctx: RowContext) -> list[Chunk]:
    """MedMCQA: question + correct option (+ the expert explanation when there is one)."""
    r = _MedMcqaRow.model_validate(row)
    answer = (r.opa, r.opb, r.opc, r.opd)[r.cop - 1]
    head = f"Question: {collapse(r.question)}\nAnswer: {collapse(answer)}"
    body = f"Explanation: {collapse(r.exp)}" if r.exp and r.exp.strip() else ""
    meta = {k: v for k, v in (("subject", r.subject_name), ("topic", r.topic_name)) if v}
    return ctx.chunks(ctx.document_id(r.id), head, body, focus=r.topic_name or "", meta=meta)


# GARD "symptoms" answers (2,072 of them) wrap their symptom list in ~1,000 characters of
# boilerplate about the Human Phenotype Ontology; extracting from it wastes a call per
# record and yields triples about the HPO, not the disease. The list itself is kept.
_MEDQUAD_BOILERPLATE = (
    re.compile(r"The Human Phenotype Ontology \(HPO\) has collected information on how often"
               r".*?In these cases, the sign or symptom may be rare or common\."),
    re.compile(r"The Human Phenotype Ontology provides the following list of signs and "
               r"symptoms for .+?\. If the information is available, the table below includes"
               r" how often the symptom is seen in people with this condition\. You can use "
               r"the MedlinePlus Medical Dictionary to look up the definitions for these "
               r"medical terms\."),
    re.compile(r"Signs and Symptoms Approximate number of patients \(when available\)"),
)


class _MedQuadRow(_Row):
    question: str
    answer: str
    focus: str | None = None
    qtype: str = ""
    url: str = ""


def parse_medquad(row: Any, ctx: RowContext) -> list[Chunk]:
    """MedQuAD: question + answer (boilerplate removed), long answers split. Ids use the
    line number, because `qid` repeats across the NIH sub-collections (even within one)."""
    r = _MedQuadRow.model_validate(row)
    answer = collapse(r.answer)
    for pattern in _MEDQUAD_BOILERPLATE:
        answer = pattern.sub(" ", answer)
    answer = collapse(answer)
    if not answer:
        raise ValueError("empty answer")
    meta = {k: v for k, v in (("qtype", r.qtype), ("url", r.url)) if v}
    return ctx.chunks(ctx.document_id(None), f"Question: {collapse(r.question)}",
                      f"Answer: {answer}", focus=r.focus or "", meta=meta)


class _LawRow(_Row):
    id: str
    question: str
    options: dict[str, str]
    answer: str


def parse_mmlu_law(row: Any, ctx: RowContext) -> list[Chunk]:
    """MMLU professional law: the fact pattern and the correct answer text (kept whole)."""
    r = _LawRow.model_validate(row)
    if r.answer not in r.options:
        raise ValueError(f"answer {r.answer!r} is not one of the options")
    head = f"Question: {collapse(r.question)}\nAnswer: {collapse(r.options[r.answer])}"
    return ctx.chunks(ctx.document_id(r.id), head)


class _LegalBenchRow(_Row):
    text: str
    label: str = ""


def parse_legalbench(row: Any, ctx: RowContext) -> list[Chunk]:
    """LegalBench: a fact pattern, clause or question (`text`); for `rule_qa` the answer
    (`label`) too. Classification labels ("Yes", "generic") are kept as metadata only."""
    r = _LegalBenchRow.model_validate(row)
    if not r.text.strip():
        raise ValueError("empty text")
    if ctx.stem.rsplit(".", 1)[0].endswith("rule_qa"):  # `legalbench.<task>.<file>`
        head = f"Question: {collapse(r.text)}\nAnswer: {collapse(r.label)}"
        return ctx.chunks(ctx.document_id(None), head)
    return ctx.chunks(ctx.document_id(None), "", collapse(r.text),
                      meta={"label": r.label} if r.label else None)


def legalbench_sources(data_dir: Path, max_chars: int | None = 1000) -> list[Source]:
    """Every LegalBench task under `legal/legalbench/`: its train records (`*_train`, a
    knowledge source by the data folder's README), sorted by task so ids are stable.
    Nothing else in a task's folder is read, neither its test split (evaluation data,
    read by builds before 2026-12-01) nor its README (read until 2026-12-07): a build
    takes back what it made of them (`source_folders`)."""
    out: list[Source] = []
    root = data_dir / "legal" / "legalbench"
    for task in sorted(p for p in root.glob("*") if p.is_dir()):
        path = task / "train.jsonl"
        if path.is_file():
            out.append(JsonlSource("legal", path, parse_legalbench, max_chars,
                                   label=f"legalbench/{task.name}/{path.name}"))
    return out

# Knowledge-source files only (the data folder's README: `*_train`, `*_kg_source`, `*_corpus`
# and `medmcqa_dev`, MedMCQA's own dev split, whose questions are in no evaluation file).
_BUILTIN: dict[str, tuple[tuple[str, RowParser], ...]] = {
    "commonsense": (("commonsense/csqa_train.jsonl", parse_csqa),),
    "medical": (("medical/medmcqa_dev.jsonl", parse_medmcqa),
                ("medical/medquad_corpus.jsonl.gz", parse_medquad)),
    "legal": (("legal/mmlu_professional_law_kg_source.jsonl", parse_mmlu_law),),
    "wikipedia": (("wikipedia/wiki_passages.jsonl.gz", parse_passage),),
}


_SOURCE_FOLDERS: dict[str, tuple[str, ...]] = {"legal": ("legalbench/",)}


def source_folders(domain: str) -> list[str]:
    """The folders of a built-in domain's sources from which a build reads some files
    only. A document an earlier build read from such a folder, from a file this build
    does not read, is taken back (`BuildJob`): no file is named, so none is opened."""
    return list(_SOURCE_FOLDERS.get(domain, ()))


def knowledge_source_files(data_dir: Path) -> frozenset[Path]:
    """Every knowledge-source file of the shared data folder that a built-in domain reads
    (the files `builtin_sources` opens, whether or not they exist here), resolved."""
    paths = [data_dir / rel for specs in _BUILTIN.values() for rel, _ in specs]
    for task in (data_dir / "legal" / "legalbench").glob("*"):
        paths.append(task / "train.jsonl")
    return frozenset(p.resolve() for p in paths)


def check_user_source(path: Path, data_dir: Path) -> None:
    """A `--source` file is the user's own document or one of the shared knowledge
    sources. Any other file of the shared data folder (its evaluation questions among
    them) is refused: a build reads knowledge-source files only, and this rule names
    none of the others. The only graph built from evaluation questions is the
    paper-protocol experiment (`kgrag graph paper-protocol`), in a domain of its own."""
    resolved, root = path.resolve(), data_dir.resolve()
    if resolved.is_relative_to(root) and resolved not in knowledge_source_files(data_dir):
        raise KgragError(f"{path} is in the shared data folder but is not a knowledge "
                         "source: a build reads knowledge-source files only",
                         hint="build a built-in domain (its knowledge sources) or your own "
                         "documents; the paper's Appendix B protocol graph is built only by "
                         "`kgrag graph paper-protocol --dataset csqa`")


def builtin_domains() -> tuple[str, ...]:
    return tuple(_BUILTIN)


def builtin_sources(domain: str, data_dir: Path, *, max_chars: int | None = 1000
                    ) -> list[Source]:
    """The knowledge-source files of a built-in domain (never its evaluation files)."""
    if domain not in _BUILTIN:
        raise KgragError(f"{domain!r} is not a built-in domain ({', '.join(_BUILTIN)})",
                         hint="build a user domain from your own files instead")
    sources: list[Source] = []
    for rel, parser in _BUILTIN[domain]:
        path = data_dir / rel
        if not path.is_file():
            raise KgragError(f"knowledge source {path} not found",
                             hint="the data folder is ../shared/data from the project root")
        sources.append(JsonlSource(domain, path, parser, max_chars,
                                   leave_out=left_out_lines(rel, data_dir)))
    if domain == "legal":
        sources += legalbench_sources(data_dir, max_chars)
    return sources
