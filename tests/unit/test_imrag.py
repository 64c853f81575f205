"""IM-RAG: Progress Tracker arithmetic (hand-computed), Refiner, and the loop's control
flow with a scripted model, a fake retriever and fake embedders.

The scripted replies test control flow only; nothing here says anything about quality.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence

import numpy as np
import pytest

from app import render_text
from kgrag.errors import ModelError
from kgrag.llm.base import Capabilities, Generation, GenerationParams, Message
from kgrag.types import Passage, Prediction, Question
from tests.doubles.scripted import ScriptedModel
from textrag.imrag.method import IMRAG, IMRAGConfig, decide, monologue_text
from textrag.imrag.progress import ProgressTracker, passage_text
from textrag.imrag.refine import EmbeddingRefiner, PassThroughRefiner, split_sentences
from textrag.retrieval import Retrieved


# ---------------------------------------------------------------------- fakes
class TableEmbedder:
    """Hand-chosen vectors by text (deliberately not all unit length)."""

    name, dimensions = "table", 3

    def __init__(self, table: dict[str, Sequence[float]]) -> None:
        self.table = table

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.array([self.table[t] for t in texts], dtype=np.float32)


class BagOfWords:
    """L2-normalised hashed word counts: the same words give cosine 1."""

    name, dimensions = "bow", 4096

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().replace(".", " ").replace(":", " ").split():
                out[i, zlib.crc32(w.encode()) % self.dimensions] += 1
            out[i] /= max(float(np.linalg.norm(out[i])), 1e-9)
        return out


class FakeRetriever:
    """Round n returns passages p{n}.1 … p{n}.k, unless `fixed` passages are given."""

    setting = "open"

    def __init__(self, fixed: Sequence[Passage] = ()) -> None:
        self.fixed = list(fixed)
        self.calls: list[tuple[str, int]] = []

    def search(self, query: str, k: int) -> list[Retrieved]:
        self.calls.append((query, k))
        n = len(self.calls)
        docs = self.fixed or [Passage(id=f"p{n}.{i}", title=f"T{n}.{i}", text=f"text {n} {i}.")
                              for i in range(1, 11)]
        return [Retrieved(p, 10.0 - r, r) for r, p in enumerate(docs[:k], 1)]


class RecordingModel(ScriptedModel):
    """A scripted model that also keeps every call's generation parameters."""

    def __init__(self, replies: Sequence[str]) -> None:
        super().__init__(replies)
        self.params: list[GenerationParams] = []

    def chat(self, messages: Sequence[Message], params: GenerationParams) -> Generation:
        self.params.append(params)
        return super().chat(messages, params)


def search(text: str) -> str:
    return json.dumps({"action": "search", "text": text})


def ready(text: str = "") -> str:
    return json.dumps({"action": "answer", "text": text})


def answer(text: str, reason: str = "because") -> str:
    return json.dumps({"reason": reason, "answer": text})


Q = Question(id="q", text="Where was the designer of the Analytical Engine born?")


def run(replies: list[str], config: IMRAGConfig | None = None, question: Question = Q,
        retriever: FakeRetriever | None = None, embedder: object | None = None
        ) -> tuple[Prediction, RecordingModel, FakeRetriever]:
    model = RecordingModel(replies)
    retriever = retriever or FakeRetriever()
    method = IMRAG(model, retriever, embedder or BagOfWords(), config)  # type: ignore[arg-type]
    pred = method.answer(question)
    assert pred.error is None, pred.error
    assert model.remaining == 0  # every scripted reply was used, none was missing
    return pred, model, retriever


def stages(pred: Prediction) -> list[str]:
    return [s.stage for s in pred.trace]


def data(pred: Prediction, stage: str) -> list[dict]:
    return [s.data for s in pred.trace if s.stage == stage]


# ---------------------------------------------------------------------- Progress Tracker
A = Passage(id="a", title="A", text="gold a")
B = Passage(id="b", title="B", text="gold b")
X = Passage(id="x", title="X", text="found x")
Y = Passage(id="y", title="Y", text="found y")
Z = Passage(id="z", title="Z", text="found z")
N = Passage(id="n", title="N", text="opposite")
# A = (0.6, 0.8, 0) and B = (0.8, 0.6, 0) as unit vectors; X is (3, 0, 0), i.e. (1, 0, 0)
TABLE = {passage_text(A): (0.6, 0.8, 0.0), passage_text(B): (8.0, 6.0, 0.0),
         passage_text(X): (3.0, 0.0, 0.0), passage_text(Y): (0.0, 1.0, 0.0),
         passage_text(Z): (0.0, 0.0, 1.0), passage_text(N): (-1.0, 0.0, 0.0)}


def tracker(gamma: float = 0.9) -> ProgressTracker:
    return ProgressTracker(TableEmbedder(TABLE), [A, B], gamma=gamma, phi_r=0.3)


def test_progress_matches_hand_computed_eq_1_2_5() -> None:
    t = tracker()
    # round 1, pr = X = (1,0,0): cos(X, A) = 0.6, cos(X, B) = 0.8 -> closest B (Eq. 1),
    # d1 = 1 - 0.8 = 0.2 (Eq. 2), term gamma^1 (1 - d1) = 0.9 * 0.8 = 0.72 = D (Eq. 5)
    r1 = t.observe(X)
    assert (r1.closest, r1.remaining) == ("B", 1)
    assert r1.similarity == pytest.approx(0.8) and r1.distance == pytest.approx(0.2)
    assert r1.reward == pytest.approx(0.72) and r1.accumulated == pytest.approx(0.72)
    assert r1.above_threshold  # 0.72 > phi_r = 0.3
    # round 2, pr = Y = (0,1,0): B is gone, so A: cos = 0.8, d2 = 0.2,
    # term 0.9^2 * 0.8 = 0.648, D = 0.72 + 0.648 = 1.368
    r2 = t.observe(Y)
    assert r2.closest == "A" and r2.distance == pytest.approx(0.2)
    assert r2.reward == pytest.approx(0.648) and r2.accumulated == pytest.approx(1.368)
    # round 3: no gold passage left -> d3 = 1 by our rule, term 0, D unchanged
    r3 = t.observe(Z)
    assert (r3.closest, r3.similarity, r3.distance, r3.reward) == (None, None, 1.0, 0.0)
    assert r3.accumulated == pytest.approx(1.368)
    s = t.summary()
    assert (s.passage_em, s.passage_recall, s.tops) == (False, 0.0, ("X", "Y", "Z"))


def test_progress_is_not_clamped_and_an_empty_round_removes_nothing() -> None:
    t = tracker(gamma=0.5)
    # no refined passage: d1 = 1, nothing removed
    r1 = t.observe(None)
    assert (r1.distance, r1.reward, r1.remaining, r1.top) == (1.0, 0.0, 2, None)
    # pr = N = (-1,0,0): cos(N, A) = -0.6, cos(N, B) = -0.8 -> closest A, d2 = 1.6,
    # term 0.5^2 * (1 - 1.6) = -0.15 (Eq. 2 and 5 as written: no clamping)
    r2 = t.observe(N)
    assert r2.closest == "A" and r2.distance == pytest.approx(1.6)
    assert r2.accumulated == pytest.approx(-0.15) and not r2.above_threshold


def test_passage_em_when_the_tops_are_the_gold_passages() -> None:
    t = tracker()
    # pr1 = B itself: d1 = 0, term 0.9; pr2 = A itself: d2 = 0, term 0.81; D = 1.71
    assert t.observe(B).gold_hit and t.observe(A).gold_hit
    s = t.summary()
    assert s.accumulated == pytest.approx(1.71)
    assert (s.passage_em, s.passage_recall, s.gold) == (True, 1.0, ("A", "B"))


def test_tracker_for_question_uses_supporting_contexts_only() -> None:
    q = Question(id="g", text="?", contexts=[A, X, B], supporting=["A", "B"])
    t = ProgressTracker.for_question(q, TableEmbedder(TABLE), gamma=0.9, phi_r=0.3)
    assert t is not None and t.gold_titles == ("A", "B")
    assert ProgressTracker.for_question(Q, TableEmbedder(TABLE), gamma=0.9, phi_r=0.3) is None
    with pytest.raises(ValueError, match="gamma"):
        ProgressTracker(TableEmbedder(TABLE), [A], gamma=1.0, phi_r=0.3)


# ---------------------------------------------------------------------- Refiner
def hits(*passages: Passage) -> list[Retrieved]:
    return [Retrieved(p, 1.0, r) for r, p in enumerate(passages, 1)]


def test_embedding_refiner_reranks_filters_seen_and_condenses() -> None:
    far = Passage(id="f", title="Teignmouth", text="A town in Devon.")
    near = Passage(id="n", title="Charles Babbage", text=(
        "Charles Babbage was a mathematician. He liked trains. He was born in London. "
        "He died in 1871."))
    seen = Passage(id="s", title="Babbage London", text="Babbage born London.")
    refiner = EmbeddingRefiner(BagOfWords(), depth=10, keep=2, max_sentences=2)
    out = refiner.refine("Where was Babbage born?", "Babbage born London",
                         hits(far, near, seen), seen={"s"})
    assert [r.passage.id for r in out] == ["n", "f"]  # re-ranked; "s" filtered as seen
    assert [r.rank for r in out] == [2, 1] and out[0].score > out[1].score
    # first sentence (the subject) + the one closest to the query, in text order
    assert out[0].text == "Charles Babbage was a mathematician. He was born in London."
    assert out[1].text == far.text  # short enough: whole
    assert refiner.refine("q", "q", hits(seen), seen={"s"}) == []


def test_pass_through_keeps_the_retrievers_top_k_whole() -> None:
    ps = [Passage(id=str(i), title=f"T{i}", text=f"t{i}") for i in range(7)]
    out = PassThroughRefiner(5).refine("q", "q", hits(*ps), seen={"0"})
    assert [r.passage.id for r in out] == ["0", "1", "2", "3", "4"]  # no filtering
    assert all(r.text == r.passage.text for r in out)


def test_split_sentences() -> None:
    assert split_sentences("St. Louis is a city. It lies\non the river. End") == [
        "St. Louis is a city.", "It lies", "on the river.", "End"]


# ---------------------------------------------------------------------- the bad-reply policy
@pytest.mark.parametrize("reply", ["not json", '{"action": "lookup", "text": "x"}',
                                   '{"action": "search", "text": "  "}'])
def test_malformed_reply_searches_the_question_once_then_answers(reply: str) -> None:
    assert decide(reply, "q?", set()) == decide("oops", "q?", set())
    first = decide(reply, "q?", set())
    assert (first.action, first.text, first.parsed) == ("search", "q?", False)
    again = decide(reply, "q?", {"q?"})
    assert (again.action, again.text, again.parsed) == ("answer", "", False)
    assert decide(search(" Babbage "), "q?", {"q?"}).text == "Babbage"


# ---------------------------------------------------------------------- the loop
def test_needs_constrained_json() -> None:
    with pytest.raises(ModelError, match="json_schema"):
        IMRAG(ScriptedModel([], capabilities=Capabilities()), FakeRetriever(), BagOfWords())


def test_questioner_decides_to_answer_then_the_answerer_answers() -> None:
    pred, model, retriever = run([search("Analytical Engine designer"),
                                  search("Charles Babbage birthplace"), ready("Paris"),
                                  answer("London")])
    assert retriever.calls == [("Analytical Engine designer", 10),
                               ("Charles Babbage birthplace", 10)]
    assert stages(pred) == ["round", "round", "decide", "stop", "answer"]  # no gold: no progress
    assert pred.answer == "London"  # the Answerer's, not the Questioner's draft "Paris"
    assert data(pred, "decide")[0]["draft"] == "Paris"
    assert pred.usage.retrievals == 2 and pred.usage.llm_calls == 4
    answerer_prompt = model.prompts[3][-1].content
    assert "Search 2: Charles Babbage birthplace" in answerer_prompt
    assert "T2.1: text 2 1." in answerer_prompt  # refined passages are in the monologue
    assert "Searches left: 1." in model.prompts[2][-1].content
    rnd = data(pred, "round")[0]
    assert len(rnd["refined"]) == 3 and rnd["progress"] is None
    assert set(rnd["chosen"]) == {r["id"] for r in rnd["refined"]}


def test_questioner_may_answer_before_any_search() -> None:
    pred, model, retriever = run([ready("London"), answer("London")])
    assert retriever.calls == [] and pred.usage.retrievals == 0
    assert "(nothing searched yet)" in model.prompts[1][-1].content


def test_the_loop_stops_at_n_max_without_asking_the_questioner_again() -> None:
    pred, model, retriever = run([search("a"), search("b"), search("c"), answer("London")])
    assert [r["round"] for r in data(pred, "round")] == [1, 2, 3]
    (stop,) = [s for s in pred.trace if s.stage == "stop"]
    assert "N_max = 3" in stop.summary and stop.data == {"round": 3}
    assert len(retriever.calls) == 3 and pred.answer == "London"
    left = [m[-1].content for m in model.prompts[:3]]
    assert ["Searches left: 3." in left[0], "Searches left: 2." in left[1],
            "Searches left: 1." in left[2]] == [True, True, True]


def test_n_max_is_configurable() -> None:
    pred, _, retriever = run([search("a"), answer("x")], IMRAGConfig(max_rounds=1))
    assert len(retriever.calls) == 1 and stages(pred)[-2:] == ["stop", "answer"]


def test_a_malformed_questioner_reply_searches_the_question_then_hands_over() -> None:
    pred, _, retriever = run(["garbage", '{"action": "search", "text": ""}', answer("x")])
    assert retriever.calls == [(Q.text, 10)]
    (rnd,) = data(pred, "round")
    assert rnd["parsed"] is False and rnd["query"] == Q.text
    (dec,) = data(pred, "decide")
    assert dec["parsed"] is False and dec["action"] == "answer"
    assert pred.answer == "x"


def test_refined_passages_shown_before_are_not_shown_again() -> None:
    same = [Passage(id=f"d{i}", title=f"D{i}", text=f"doc {i}.") for i in range(1, 5)]
    pred, _, _ = run([search("a"), search("b"), ready(), answer("x")],
                     retriever=FakeRetriever(same))
    first, second = ([r["id"] for r in d["refined"]] for d in data(pred, "round"))
    assert len(first) == 3 and len(second) == 1 and not set(first) & set(second)


def test_no_refiner_ablation_reads_the_retrievers_top_5_whole() -> None:
    same = [Passage(id=f"d{i}", title=f"D{i}", text=f"doc {i}.") for i in range(1, 8)]
    pred, model, retriever = run([search("a"), search("b"), ready(), answer("x")],
                                 IMRAGConfig(refiner=False), retriever=FakeRetriever(same))
    assert [k for _, k in retriever.calls] == [5, 5]
    for d in data(pred, "round"):  # the same five, in the retriever's order, each round
        assert [r["id"] for r in d["refined"]] == ["d1", "d2", "d3", "d4", "d5"]
    assert "[2.5] D5: doc 5." in model.prompts[3][-1].content


def test_no_answerer_ablation_uses_the_questioners_own_answer() -> None:
    pred, model, _ = run([search("a"), ready("London")], IMRAGConfig(answerer=False))
    assert pred.answer == "London" and pred.usage.llm_calls == 2  # no Answerer call
    assert data(pred, "answer")[0] == {"answerer": False, "forced": False}


def test_no_answerer_ablation_asks_the_questioner_to_answer_at_n_max() -> None:
    pred, model, _ = run([search("a"), search("b"), search("c"), ready("London")],
                         IMRAGConfig(answerer=False))
    assert pred.answer == "London"
    assert "search budget is used up" in model.prompts[3][-1].content
    forced = model.params[3].json_schema
    assert forced is not None and forced["properties"]["action"]["enum"] == ["answer"]
    assert model.params[0].json_schema["properties"]["action"]["enum"] == ["search", "answer"]


def test_no_answerer_ablation_after_a_malformed_stop_asks_for_an_answer() -> None:
    pred, _, _ = run(["bad", "bad", ready("Leeds")], IMRAGConfig(answerer=False))
    assert pred.answer == "Leeds" and data(pred, "answer")[0]["forced"] is True


def test_an_unparsable_answerer_reply_is_used_as_text() -> None:
    pred, _, _ = run([ready(), "London, probably"])
    assert pred.answer == "London, probably" and data(pred, "answer")[0]["parsed"] is False


def test_progress_is_traced_when_gold_supporting_facts_exist() -> None:
    gold1 = Passage(id="g1", title="Analytical Engine", text="Babbage designed it.")
    gold2 = Passage(id="g2", title="Charles Babbage", text="Babbage was born in London.")
    other = Passage(id="o", title="Devon", text="A county.")
    q = Q.model_copy(update={"contexts": [gold1, other, gold2],
                             "supporting": ["Analytical Engine", "Charles Babbage"]})
    pred, _, _ = run([search("engine"), ready(), answer("London")], IMRAGConfig(refiner=False),
                     question=q, retriever=FakeRetriever([gold1, other]))
    prog = data(pred, "round")[0]["progress"]
    # pr1 = gold1 itself: cos 1 -> d1 = 0, D = 0.9^1 * 1 = 0.9
    assert prog["closest"] == "Analytical Engine" and prog["distance"] == pytest.approx(0.0)
    assert prog["accumulated"] == pytest.approx(0.9) and prog["gold_hit"] is True
    (summary,) = data(pred, "progress")
    assert summary["passage_em"] is False and summary["passage_recall"] == 0.5
    assert stages(pred)[-1] == "progress"


def test_trace_is_json_and_the_app_draws_the_rounds() -> None:
    q = Q.model_copy(update={"contexts": [X], "supporting": ["X"]})
    pred, _, _ = run([search("engine designer"), ready("x"), answer("London")], question=q)
    back = Prediction.model_validate_json(pred.model_dump_json())
    assert back.trace[0].data["query"] == "engine designer"
    rows = render_text.rounds(back.trace)
    assert [(r["round"], r["stage"]) for r in rows] == [(1, "round"), (2, "decide"), (2, "stop")]
    assert rows[0]["query"] == "engine designer" and "distance: " in rows[0]["progress"]
    (cand,) = render_text.candidate_sets(back.trace)
    assert [r["chosen"] for r in cand["rows"]].count(True) == 3
    assert len(render_text.passages(back.trace)) == 10


def test_monologue_text_and_registry() -> None:
    assert monologue_text([]) == "(nothing searched yet)"
    from textrag.methods import FACTORIES

    assert {"imrag", "imrag-gold", "imrag-no-refiner", "imrag-no-answerer"} <= set(FACTORIES)


def test_an_answerer_reply_cut_off_inside_its_reason_gives_no_answer() -> None:
    cut = '{"reason": "The passage about Brown State Fishing Lake says it is in Brown'
    pred, _, _ = run([ready(), cut])
    step = data(pred, "answer")[0]
    assert pred.answer == "" and step["parsed"] is False and step["reply"].startswith('{"reason"')
    pred, _, _ = run([ready(), '{"reason": "r", "answer": "Kansas City, Kan'])
    assert pred.answer == "Kansas City, Kan"
