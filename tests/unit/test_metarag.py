"""MetaRAG's monitor → evaluate → plan loop with a scripted model and fake retriever.

Control flow only: the scripted replies say nothing about answer quality.
"""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest

from kgrag.errors import ModelError
from kgrag.llm.base import Capabilities
from kgrag.types import Passage, Question
from tests.doubles.scripted import ScriptedModel
from textrag.metarag.method import (
    Diagnosis,
    MetaRAG,
    MetaRAGConfig,
    directives,
    jaccard,
    plan,
    usable,
)
from textrag.retrieval import Retrieved


class BagOfWords:
    """A deterministic embedder: L2-normalised hashed word counts (same words → cos 1)."""

    name, dimensions = "bow", 4096

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, zlib.crc32(w.encode()) % self.dimensions] += 1
            out[i] /= max(np.linalg.norm(out[i]), 1e-9)
        return out


class KeywordRetriever:
    setting = "open"

    def __init__(self) -> None:
        self.queries: list[str] = []

    def search(self, query: str, k: int) -> list[Retrieved]:
        self.queries.append(query)
        n = len(self.queries)
        return [Retrieved(Passage(id=f"q{n}p{i}", title=f"T{n}.{i}", text=f"text {n}.{i}"),
                          1.0, i + 1) for i in range(k)]


def answer(text: str, reason: str = "because") -> str:
    return json.dumps({"reason": reason, "answer": text})


def expert(text: str) -> str:
    return json.dumps({"answer": text})


def diagnosis(internal: bool, external: bool, errors: tuple[str, ...] = (),
              sub_query: str = "", feedback: str = "check the dates") -> str:
    return json.dumps({"internal_sufficient": internal, "external_sufficient": external,
                       "errors": list(errors), "feedback": feedback, "sub_query": sub_query})


Q = Question(id="q", text="Where was the director of Psycho born?")


def run(replies: list[str], **cfg: object) -> tuple[object, ScriptedModel, KeywordRetriever]:
    model = ScriptedModel(replies)
    retriever = KeywordRetriever()
    method = MetaRAG(model, retriever, BagOfWords(), MetaRAGConfig(**cfg))  # type: ignore[arg-type]
    pred = method.answer(Q)
    assert pred.error is None, pred.error
    assert model.remaining == 0  # every scripted reply was used, none was missing
    return pred, model, retriever


def stages(pred: object, stage: str) -> list[dict]:
    return [s.data for s in pred.trace if s.stage == stage]  # type: ignore[attr-defined]


def test_needs_constrained_json() -> None:
    with pytest.raises(ModelError, match="json_schema"):
        MetaRAG(ScriptedModel([], capabilities=Capabilities()), KeywordRetriever(), BagOfWords())


def test_monitor_accepts_an_answer_close_to_the_expert_reader() -> None:
    pred, model, retriever = run([answer("Leytonstone London"), expert("Leytonstone, London")])
    assert pred.answer == "Leytonstone London"  # type: ignore[attr-defined]
    (mon,) = stages(pred, "monitor")
    assert mon["accept"] and mon["similarity"] > 0.3 and stages(pred, "round") == []
    assert retriever.queries == [Q.text]
    assert model.prompts[1][0].content == "Act as a strict extractive reader."


def test_insufficient_knowledge_retrieves_with_the_sub_query_then_accepts() -> None:
    pred, model, retriever = run([
        answer("Paris"), expert("London"),  # monitor: dissimilar
        diagnosis(False, False, sub_query="Alfred Hitchcock birthplace"),
        answer("London"), expert("London"),  # new passages: the expert reads again
    ])
    assert retriever.queries == [Q.text, "Alfred Hitchcock birthplace"]
    (rnd,) = stages(pred, "round")
    assert rnd["action"]["category"] == "insufficient_knowledge"
    assert rnd["action"]["new_passages"] == [f"q2p{i}" for i in range(5)]
    reanswer = model.prompts[3][-1].content
    assert "text 2.0" in reanswer and directives()["insufficient_knowledge"] in reanswer
    assert "check the dates" in reanswer  # the critic's feedback goes along
    assert pred.answer == "London" and pred.usage.retrievals == 2  # type: ignore[attr-defined]
    assert len(pred.evidence) == 10  # type: ignore[attr-defined]
    assert "insufficient_knowledge" in pred.model_dump_json()  # type: ignore[attr-defined]


@pytest.mark.parametrize(("internal", "external", "errors", "expected"), [
    (True, False, (), "internal_knowledge_only"),
    (False, True, (), "external_knowledge_only"),
    (True, True, (), "reasoning_error"),
])
def test_planning_by_category_writes_a_directive_without_retrieval(
        internal: bool, external: bool, errors: tuple[str, ...], expected: str) -> None:
    pred, model, retriever = run([
        answer("Paris"), expert("London"), diagnosis(internal, external, errors),
        answer("London"),  # refs unchanged: the expert's answer is reused, no new call
    ])
    (rnd,) = stages(pred, "round")
    assert rnd["action"]["category"] == expected and rnd["action"]["sub_query"] is None
    reanswer = model.prompts[3][-1].content
    assert directives()[expected] in reanswer
    assert ("check the dates" in reanswer) == (expected != "reasoning_error")  # nothing found
    assert retriever.queries == [Q.text]
    assert stages(pred, "monitor")[0]["accept"]  # round 2 monitor, same expert answer


def test_reasoning_error_types_pick_their_own_directives() -> None:
    d = Diagnosis(internal_sufficient=True, external_sufficient=True,
                  errors=["misread_question", "answer_redundancy", "misread_question"])
    p = plan(d, "q")
    assert p.category == "reasoning_error" and p.sub_query is None
    assert p.directive == directives()["misread_question"] + " " + \
        directives()["answer_redundancy"]
    empty = plan(Diagnosis(internal_sufficient=False, external_sufficient=False), "the q")
    assert empty.sub_query == "the q"  # no sub-query proposed: search the question


def test_consecutive_similar_answers_stop_the_loop() -> None:
    pred, _, _ = run([
        answer("Alfred Hitchcock"), expert("Leytonstone"),
        diagnosis(True, True, ("incomplete_reasoning",)),
        answer("alfred hitchcock."),  # Jaccard 1.0 >= 0.85
    ])
    (stop,) = stages(pred, "stop")
    assert stop["jaccard"] == 1.0 and "converged" in pred.trace[-1].summary  # type: ignore
    assert len(stages(pred, "round")) == 1


def test_at_most_three_rounds() -> None:
    replies = [answer("A0"), expert("zzz")]
    for i in range(1, 4):
        replies += [diagnosis(True, True), answer(f"A{i}")]
    pred, _, _ = run(replies)  # a fourth diagnosis would exhaust the script
    assert [r["round"] for r in stages(pred, "round")] == [1, 2, 3]
    assert pred.answer == "A3"  # type: ignore[attr-defined]
    assert "round limit" in pred.trace[-1].summary  # type: ignore[attr-defined]


def test_an_unusable_new_answer_is_not_adopted() -> None:
    pred, _, _ = run([
        answer("Leytonstone"), expert("zzz"), diagnosis(True, True),
        answer("unknown"), diagnosis(True, True),
        answer("Leytonstone"),
    ], max_rounds=2)
    assert [r["adopted"] for r in stages(pred, "round")] == [False, True]
    assert pred.answer == "Leytonstone"  # type: ignore[attr-defined]


def test_an_unparsable_diagnosis_falls_back_to_reasoning_error() -> None:
    pred, model, _ = run([answer("Paris"), expert("zzz"), "not json", answer("Paris")])
    (rnd,) = stages(pred, "round")
    assert rnd["parsed"] is False and rnd["action"]["category"] == "reasoning_error"
    assert directives()["reasoning_error"] in model.prompts[3][-1].content
    assert "mistakes" not in model.prompts[3][-1].content  # nothing was found wrong


def test_helpers() -> None:
    assert jaccard("New York City", "new york") == pytest.approx(2 / 3)
    assert jaccard("", "") == 1.0 and jaccard("a", "") == 0.0
    assert usable("Alfred Hitchcock") and not usable("Unknown") and not usable("")
    assert not usable("one two three four five six seven eight nine ten eleven")


def test_reply_schemas_require_every_field_and_bound_no_string_length() -> None:
    # llama.cpp unrolls maxLength into one grammar rule per character and crashes on
    # a few hundred (seen with the real model), so the schemas must not carry it.
    from textrag.metarag.method import AnswerReply, ExpertReply, _reply_schema

    for model in (AnswerReply, ExpertReply, Diagnosis):
        schema = _reply_schema(model)
        assert set(schema["required"]) == set(schema["properties"])  # type: ignore[arg-type]
        assert "maxLength" not in json.dumps(schema)
