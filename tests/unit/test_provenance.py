"""Source sentences of graph evidence (`metakg.provenance`), and open-ended KG answers
that end with their answer line, a cut reply marked (control flow, scripted model)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kgrag.llm.base import Generation
from kgrag.types import Choice, Question
from metakg.config import MetaKGConfig
from metakg.graph import Triple
from metakg.methods import KGVanilla
from metakg.provenance import (
    Budget,
    SourceSentence,
    best_sentence,
    fact_words,
    source_passages,
    source_sentences,
    with_sources,
)
from tests.doubles.scripted import ScriptedModel
from tests.unit.test_metakg_methods import CONCEPTS_FOX, QUESTION, backend, only

NOTE = ("The observatory sits on a hill. In 1934 the observatory's director, Paul Okafor, "
        "discovered the comet that now bears his name. It returns every 71 years.")


class RowsStore:
    """Answers `metakg/evidence_sources` with fixed rows and records the call."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows, self.calls = rows, []  # type: ignore[var-annotated]

    def read(self, name: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        self.calls.append((name, dict(params)))
        return self.rows


def test_the_sentence_sharing_most_of_the_fact_words_backs_it() -> None:
    assert best_sentence(NOTE, fact_words("paul okafor", "discovered", "comet")) == (
        "In 1934 the observatory's director, Paul Okafor, discovered the comet that now "
        "bears his name.")
    assert best_sentence(NOTE, fact_words("comet", "returns_every", "71 years")) == (
        "It returns every 71 years.")
    assert best_sentence(NOTE, fact_words("moon", "made_of", "cheese")) is None


def test_one_round_trip_reads_every_fact_and_the_budget_bounds_the_sentences() -> None:
    triples = [Triple("paul okafor", "discovered", "comet"), Triple("moon", "is", "cheese"),
               Triple("comet", "returns_every", "71 years")]
    store = RowsStore([{"i": 1, "chunk": "d:n:L1", "text": NOTE},
                       {"i": 3, "chunk": "d:n:L1", "text": NOTE}])
    backed = source_sentences(store, "d", triples)  # type: ignore[arg-type]
    assert len(store.calls) == 1 and store.calls[0][0] == "metakg/evidence_sources"
    assert [f["i"] for f in store.calls[0][1]["facts"]] == [1, 2, 3]
    assert [(s.fact, s.sentence[:7]) for s in backed] == [(1, "In 1934"), (3, "It retu")]
    # 17 words of the first sentence cost ~23 tokens: a budget of 25 keeps it alone
    small = source_sentences(store, "d", triples, Budget(max_tokens=25))  # type: ignore[arg-type]
    assert [s.fact for s in small] == [1]
    clipped = source_sentences(store, "d", triples, Budget(max_words=5))  # type: ignore[arg-type]
    assert clipped[0].sentence == "In 1934 the observatory's director, …"


def test_source_passages_rank_by_the_question_words_and_fit_the_budget() -> None:
    triples = [Triple("okafor", "is", "director"), Triple("comet", "returns", "71 years"),
               Triple("okafor", "discovered", "comet")]
    hill = "The observatory sits on a hill above the town, with two domes."
    store = RowsStore([{"i": 1, "chunk": "c-hill", "text": hill, "title": "Observatory"},
                       {"i": 2, "chunk": "c-note", "text": NOTE, "title": "Comet Okafor"},
                       {"i": 3, "chunk": "c-note", "text": NOTE, "title": "Comet Okafor"}])
    question = "Who discovered the comet that returns every 71 years?"
    backed = source_passages(store, "d", triples, question)  # type: ignore[arg-type]
    assert store.calls[0][0] == "metakg/evidence_sources"
    # the note holds "discovered", "comet", "returns", "71", "years": first, once, for 2 facts
    assert [(s.chunk, s.facts, s.fact) for s in backed] == [("c-note", [2, 3], 2),
                                                          ("c-hill", [1], 1)]
    lines = with_sources(["Evidence 1: a", "Evidence 2: b", "Evidence 3: c"], backed)
    assert lines[:3] == ["Evidence 1: a", "Evidence 2: b", "Evidence 3: c"]
    assert lines[3].startswith("Source passage 1 (backs evidence 2, 3) — Comet Okafor: The")
    assert lines[4] == f"Source passage 2 (backs evidence 1) — Observatory: {hill}"
    # the note costs ~40 tokens, the hill ~17: a budget of 30 keeps the hill alone
    small = source_passages(store, "d", triples, question, Budget(max_tokens=30))  # type: ignore[arg-type]
    assert [s.chunk for s in small] == ["c-hill"]
    assert source_passages(store, "d", [], question) == []


def test_each_fact_line_is_followed_by_its_sentence() -> None:
    lines = with_sources(["Evidence 1: a r b", "Evidence 2: c r d"],
                         [SourceSentence(fact=1, chunk="x", sentence="A r B.")])
    assert lines == ['Evidence 1: a r b\n  Source: "A r B."', "Evidence 2: c r d"]


def test_source_sentences_default_to_open_questions_only() -> None:
    method = KGVanilla(ScriptedModel([]), backend(), "woods")
    assert method.uses_sources(QUESTION)
    mcq = Question(id="q2", text=QUESTION.text, kind="multiple_choice",
                   choices=[Choice(label="A", text="den"), Choice(label="B", text="sky")])
    assert not method.uses_sources(mcq)
    off = KGVanilla(ScriptedModel([]), backend(), "woods",
                    MetaKGConfig(source_sentences="off"))
    assert not off.uses_sources(QUESTION)


def test_an_open_answer_cut_by_the_token_limit_is_marked_and_completed() -> None:
    cut = Generation("Foxes dig dens under the trees and", 10, 320, finish_reason="length")
    model = ScriptedModel([CONCEPTS_FOX, cut, " a den"])
    q = QUESTION.model_copy(update={"kind": "open_ended"})
    pred = KGVanilla(model, backend(), "woods").answer(q)
    gen = only(pred, "generate")
    assert gen["cut"] is True and gen["max_tokens"] == 320
    assert pred.answer.endswith("\nSo the answer is: a den")
    assert only(pred, "answer")["forced"] is True
    prompt = model.prompts[1][-1].content
    assert prompt.rstrip().endswith('finish with a line of the form "So the answer is: '
                                    '<short answer>".')


def test_an_open_answer_with_its_answer_line_is_kept_whole_and_not_marked() -> None:
    model = ScriptedModel([CONCEPTS_FOX, "Foxes live in dens.\nSo the answer is: a den"])
    q = QUESTION.model_copy(update={"kind": "open_ended"})
    pred = KGVanilla(model, backend(), "woods").answer(q)
    assert "cut" not in only(pred, "generate") and pred.usage.llm_calls == 2
    assert pred.answer == "Foxes live in dens.\nSo the answer is: a den"


def test_kgrag_ask_prints_the_stated_answer_and_marks_a_cut_reply() -> None:
    from kgrag.cli import _print_answer
    from kgrag.commands import console
    from kgrag.types import Prediction, TraceStep

    cut = [TraceStep(stage="generate", summary="", data={"cut": True, "max_tokens": 320}),
           TraceStep(stage="answer", summary="a den", data={"forced": True})]
    pred = Prediction(question_id="q", method="kg-vanilla", trace=cut,
                      answer="Foxes dig dens under\nSo the answer is: a den")
    with console.capture() as out:
        _print_answer("kg-vanilla", pred)
    text = " ".join(out.get().split())  # the console wraps long lines
    assert "Answer (kg-vanilla): a den" in text and "Foxes dig dens under" in text
    assert "cut at the token limit (320 tokens)" in text and "completed by a second" in text
    whole = Prediction(question_id="q", method="kg-vanilla", answer="So the answer is: a den")
    with console.capture() as out:
        _print_answer("kg-vanilla", whole)
    assert out.get().strip() == "Answer (kg-vanilla): a den"


def test_a_long_one_line_reply_without_its_answer_line_gets_one() -> None:
    reply = "The organ that filters the blood to make urine is the kidney, as the facts say."
    model = ScriptedModel([CONCEPTS_FOX, reply, " kidney"])
    pred = KGVanilla(model, backend(), "woods").answer(QUESTION)
    assert pred.answer == reply + "\nSo the answer is: kidney" and pred.usage.llm_calls == 3
