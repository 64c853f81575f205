"""The MetaKGRAG paper's graph protocol, as a labelled experiment (issue 43, item 5).

The paper's Appendix B (Table 8) builds its CommonsenseQA graph from each *evaluation*
question with its options, core concept and correct answer. This module builds that
graph, and only that graph, so the KG rows can be measured on it beside the project's
own graphs, which never read an evaluation file (`kg_builder.build`):

- it reads the CommonsenseQA evaluation file (`kgrag.datasets.DATASETS["csqa"]`) and
  nothing else, one question per prompt,
  with Table 8's prompt (`prompts/extract_paper_protocol.txt`; the reply is the
  extractor's JSON instead of `subject\\predicate\\object` lines);
- it writes into `PAPER_PROTOCOL_DOMAIN` only, through the same resumable, idempotent
  `BuildJob` as `kgrag build` (provenance: each chunk is the question as prompted);
- that domain is reserved: `kgrag build`, `kgrag graph wordnet` and renaming imports
  refuse it (`check_not_reserved`), and it is no dataset's default graph.

    plan = plan_paper_protocol(Path("../shared/data"), n=3)
    BuildJob(platform, plan.domain, plan.chunks, plan.source_names,
             extractor=PaperProtocolExtractor(platform.chat_model)).run()
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kg_builder.build import BuildPlan
from kg_builder.corpora import _CsqaRow
from kg_builder.domains import (
    BASE_KINDS,
    PAPER_PROTOCOL_DOMAIN,
    PAPER_PROTOCOL_TITLE,
    DomainSpec,
    check_not_reserved,
)
from kg_builder.extract import ExtractConfig, TripleExtractor
from kg_builder.normalize import collapse
from kg_builder.sources import Chunk, JsonlSource, RowContext, load
from kgrag.errors import KgragError
from kgrag.llm.base import ChatModel, Message

__all__ = ["PAPER_PROTOCOL_DOMAIN", "PAPER_PROTOCOL_TITLE", "PaperProtocolExtractor",
           "check_not_reserved", "parse_csqa_paper", "plan_paper_protocol"]

PAPER_PROTOCOL_DATASETS = ("csqa",)  # Table 8 is CommonsenseQA's prompt
_PROMPT = "extract_paper_protocol"


def parse_csqa_paper(row: Any, ctx: RowContext) -> list[Chunk]:
    """A CommonsenseQA evaluation question as Table 8 reads it: the question, all
    options, the core concept and the correct answer (kept whole, in `meta` too)."""
    r = _CsqaRow.model_validate(row)
    answer = next((c.text for c in r.question.choices if c.label == r.answer_key), None)
    if answer is None:
        raise ValueError(f"answerKey {r.answer_key!r} is not one of the choices")
    question = collapse(r.question.stem)
    options = " ".join(f"({c.label}) {collapse(c.text)}" for c in r.question.choices)
    concept = collapse(r.question.question_concept)
    text = (f"Question: {question}\nOptions: {options}\nCore Concept: {concept}\n"
            f"Correct Answer: {collapse(answer)}")
    meta = {"question": question, "options": options, "question_concept": concept,
            "answer": collapse(answer), "answer_key": r.answer_key,
            "protocol": "paper Appendix B, Table 8"}
    return ctx.chunks(ctx.document_id(r.id), text, meta=meta)


def plan_paper_protocol(data_dir: Path, n: int | None, dataset: str = "csqa") -> BuildPlan:
    """The first `n` (all: None) questions of the CommonsenseQA evaluation file, one
    chunk each, in file order, for `PAPER_PROTOCOL_DOMAIN`."""
    if dataset not in PAPER_PROTOCOL_DATASETS:
        raise KgragError(f"the paper's Appendix B protocol is defined for "
                         f"{', '.join(PAPER_PROTOCOL_DATASETS)} only, not {dataset!r}",
                         hint="use --dataset csqa")
    from kgrag.datasets import DATASETS

    path = data_dir / DATASETS[dataset].path
    if not path.is_file():
        raise KgragError(f"{path} not found", hint="the data folder is ../shared/data from "
                         "the project root")
    chunks, report = load(JsonlSource(PAPER_PROTOCOL_DOMAIN, path, parse_csqa_paper,
                                      max_chars=None))
    if n is not None:
        chunks = chunks[:n]  # one chunk per question (never split)
    if not chunks:
        raise KgragError(f"no questions to build {PAPER_PROTOCOL_DOMAIN!r} from")
    selection = "all questions" if n is None else f"the first {len(chunks)} questions"
    return BuildPlan(PAPER_PROTOCOL_DOMAIN, chunks, [path.name], [report],
                     f"{selection}, in file order, with options and correct answer")


class PaperProtocolExtractor(TripleExtractor):
    """The LLM extractor with Table 8's prompt: one evaluation question per prompt, its
    fields (question, options, core concept, correct answer) in the prompt's own slots.

        ex = PaperProtocolExtractor(ScriptedModel(['{"triples": []}']))
        ex.messages([chunk])[-1].content   # … Correct Answer: midwest …
    """

    def __init__(self, model: ChatModel, config: ExtractConfig | None = None) -> None:
        config = (config or ExtractConfig()).model_copy(update={"batch_size": 1})
        super().__init__(model, PAPER_PROTOCOL_DOMAIN, config,
                         spec=DomainSpec(PAPER_PROTOCOL_DOMAIN, _PROMPT, BASE_KINDS))

    def messages(self, batch: Sequence[Chunk]) -> list[Message]:
        if len(batch) != 1:
            raise ValueError("the paper's protocol prompts one question at a time")
        m = batch[0].meta
        if not all(m.get(k) for k in ("question", "options", "answer")):
            raise ValueError(f"{batch[0].id} is not a paper-protocol question chunk")
        return self.template.render(
            kinds=self.spec.kinds_block(), question=m["question"], options=m["options"],
            question_concept=m.get("question_concept", ""), correct_answer=m["answer"],
            max_triples=self.config.max_triples_per_record)
