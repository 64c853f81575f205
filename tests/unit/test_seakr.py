"""SeaKR: the Gram log-det score, query building, and the control flow with fakes.

The fakes (a scripted engine and a dictionary retriever) test control flow only; they
say nothing about answer quality.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from app import render_text
from kgrag.errors import KgragError, ModelError
from kgrag.llm.base import Capabilities
from kgrag.llm.eos_cache import EosStateCache
from kgrag.platform import Platform
from kgrag.types import Passage, Question
from tests.doubles.scripted import ScriptedModel
from textrag.retrieval import Retrieved
from textrag.seakr.method import SeaKR, SeakrConfig
from textrag.seakr.text import build_query, drop_answer_sentences
from textrag.seakr.uncertainty import (
    ChatModelSeakrEngine,
    StepOutput,
    TokenProb,
    UncertaintyConfig,
    eigen_score,
)

ALPHA = 1e-3
FULL = Capabilities(logprobs=True, parallel_samples=True, hidden_states=True)


# ---------------------------------------------------------------------- U(c)
def test_identical_vectors_score_by_hand() -> None:
    # v = (1, 2, 3) centres to (-1, 0, 1): ||v_c||^2 = 2. Three copies: Gram = 2 * ones(3),
    # eigenvalues 6, 0, 0, so det(Gram + aI) = (6 + a) a^2.
    expected = (math.log(6 + ALPHA) + 2 * math.log(ALPHA)) / 3
    assert eigen_score([[1.0, 2.0, 3.0]] * 3) == pytest.approx(expected, abs=1e-12)


def test_twenty_identical_small_vectors_sit_near_the_floor() -> None:
    v = np.array([0.005, -0.005, 0.0, 0.0])  # centred already; ||v||^2 = 5e-5
    expected = (math.log(20 * 5e-5 + ALPHA) + 19 * math.log(ALPHA)) / 20
    score = eigen_score([v] * 20)
    assert score == pytest.approx(expected, abs=1e-12)
    assert math.log(ALPHA) < score < math.log(ALPHA) + 0.05  # floor ln(a) = -6.9078


def test_diverse_vectors_score_higher_than_identical_ones() -> None:
    # two orthogonal centred vectors of squared norm 2: Gram = 2I
    diverse = eigen_score([[1.0, -1.0, 0.0, 0.0], [0.0, 0.0, 1.0, -1.0]])
    assert diverse == pytest.approx(math.log(2 + ALPHA), abs=1e-12)
    same = eigen_score([[1.0, -1.0, 0.0, 0.0]] * 2)
    assert same == pytest.approx((math.log(4 + ALPHA) + math.log(ALPHA)) / 2, abs=1e-12)
    assert diverse > same


def test_centring_is_per_vector_over_features() -> None:
    rng = np.random.default_rng(0)
    z = rng.normal(size=(5, 16))
    shifted = z + rng.normal(size=(5, 1)) * 100  # a different constant per vector
    assert eigen_score(shifted) == pytest.approx(eigen_score(z), rel=1e-9)
    # constant vectors centre to zero: the Gram is 0 and U is exactly ln(alpha)
    assert eigen_score(np.full((4, 8), 3.0)) == pytest.approx(math.log(ALPHA), abs=1e-12)


def test_eigen_score_is_float64_and_rejects_empty_input() -> None:
    z = np.array([[1e-4, -1e-4], [2e-4, 0.0]], dtype=np.float32)
    assert isinstance(eigen_score(z), float)
    with pytest.raises(ValueError):
        eigen_score(np.empty((0, 4)))


# ---------------------------------------------------------------------- caching
def test_state_cache_keys_by_token_sequence_and_returns_frozen_rows() -> None:
    cache = EosStateCache(size=2)
    k1 = EosStateCache.key("ffn_out-12", [1, 2, 3])
    assert k1 == EosStateCache.key("ffn_out-12", [1, 2, 3])
    assert k1 != EosStateCache.key("ffn_out-12", [1, 2, 4])
    assert k1 != EosStateCache.key("l_out-12", [1, 2, 3])
    row = cache.put(k1, np.arange(3, dtype=np.float32))
    assert cache.get(k1) is row and not row.flags.writeable
    cache.put(EosStateCache.key("t", [1]), np.zeros(3))
    cache.put(EosStateCache.key("t", [2]), np.zeros(3))
    assert cache.get(k1) is None  # least recently used went first


def test_top_k_is_exact_and_top_p_keeps_the_smallest_sufficient_set() -> None:
    from kgrag.llm.base import GenerationParams
    from kgrag.llm.batched import top_k_indices
    from kgrag.llm.eos_states import _truncated_cdf

    rng = np.random.default_rng(3)
    for scale in (0.3, 3.0, 30.0):  # flat to peaked: every window path of top_k_indices
        z = (rng.normal(size=20_000) * scale).astype(np.float32)
        for k in (1, 50):
            got = top_k_indices(z, k)
            assert list(z[got]) == sorted(z, reverse=True)[:k]
    logits = np.log(np.array([0.5, 0.3, 0.15, 0.05], dtype=np.float32))
    idx, cdf = _truncated_cdf(logits, GenerationParams(temperature=1.0, top_k=3, top_p=0.7))
    assert list(idx) == [0, 1]  # 0.5 < 0.7 <= 0.5 + 0.3, after top-3 renormalisation
    assert list(cdf) == pytest.approx([0.5 / 0.95, 0.8 / 0.95])  # sampled as u * cdf[-1]


def test_both_samplers_draw_from_the_one_truncation() -> None:
    from kgrag.llm.base import GenerationParams
    from kgrag.llm.batched import _pick, truncate

    logits = np.log(np.array([0.4, 0.25, 0.2, 0.1, 0.05]))
    params = GenerationParams(temperature=1.0, top_k=4, top_p=0.8, min_p=0.55)
    idx, probs = truncate(logits, params)
    # top-4 renormalised over 0.95, top-p 0.8 keeps three, min-p 0.55 * p(0) drops p = 0.2
    assert list(idx) == [0, 1] and list(probs) == pytest.approx([0.4 / 0.95, 0.25 / 0.95])
    rng = np.random.default_rng(0)
    picks = [_pick(logits, params, rng) for _ in range(400)]
    assert set(picks) == {0, 1} and 0.55 < picks.count(0) / 400 < 0.7  # 0.4 / 0.65 = 0.615
    assert _pick(logits, GenerationParams(temperature=0.0), rng) == 0


def test_protocol_engine_scores_non_empty_samples_and_caches_by_text() -> None:
    a, b = np.array([1.0, -1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0, -1.0])
    samples = ["Paris"] * 3 + ["Lyon", "  "]
    model = ScriptedModel(["Paris", *samples], capabilities=FULL,
                          hidden={"Paris": a, "Lyon": b})
    calls: list[str] = []
    real = model.hidden_state

    def counting(messages: object, completion: str, layer: int) -> np.ndarray:
        calls.append(completion)
        return real(messages, completion, layer)  # type: ignore[arg-type]

    model.hidden_state = counting  # type: ignore[method-assign]
    engine = ChatModelSeakrEngine(model, layer=3, config=UncertaintyConfig(k=5))
    out = engine.generate("Q", stop=("\n",), uncertainty=True)
    assert out.text == "Paris" and out.vectors_used == 4  # the blank sample is left out
    assert out.uncertainty == pytest.approx(eigen_score([a, a, a, b]), abs=1e-12)
    assert calls == ["Paris", "Lyon"]  # identical samples share one (bit-identical) vector
    assert model.remaining == 0


def test_no_usable_sample_scores_zero_like_the_official_code() -> None:
    model = ScriptedModel(["x", "", " "], capabilities=FULL)
    out = ChatModelSeakrEngine(model, 1, UncertaintyConfig(k=2)).generate(
        "Q", ("\n",), uncertainty=True)
    assert out.uncertainty == 0.0 and out.vectors_used == 0


# ---------------------------------------------------------------------- text
def _toks(*pairs: tuple[str, float]) -> list[TokenProb]:
    return [TokenProb(t, p) for t, p in pairs]


def test_query_keeps_sure_words_and_copied_words_then_drops_function_words() -> None:
    toks = _toks((" The", 0.99), (" film", 0.95), (" Psy", 0.5), ("cho", 0.99), (" was", 0.97),
                 (" directed", 0.93), (" by", 0.99), (" Alf", 0.4), ("red", 0.95),
                 (" Hitch", 0.3), ("cock", 0.99))
    # "Psycho" has a token at p=0.5 but occurs in the question; "Alfred Hitchcock" is
    # unsure and new; "The", "was", "by" are function words.
    q = "Who directed Psycho?"
    assert build_query(toks, q, previous_step="") == "film Psycho directed"
    # a word of the previous step survives even when unsure
    assert build_query(toks, q, previous_step="Hitchcock made it") == \
        "film Psycho directed Hitchcock"


def test_query_threshold_is_inclusive_and_empty_falls_back_to_the_question() -> None:
    assert build_query(_toks((" Rome", 0.9)), "Where?", "") == "Rome"  # 1 - 0.9 <= 0.1
    assert build_query(_toks((" Rome", 0.89)), "Where did Genina die?", "") == "Genina die"
    assert build_query([], "Where did Genina die?", "") == "Genina die"
    long = _toks(*[(f" w{i}", 1.0) for i in range(70)])
    assert build_query(long, "q", "", max_words=64).split() == [f"w{i}" for i in range(6, 70)]


def test_answer_sentence_filter() -> None:
    assert drop_answer_sentences("Genina died in Rome. So the answer is Rome.") == \
        "Genina died in Rome."


# ---------------------------------------------------------------------- control flow
Responder = Callable[[str, tuple[str, ...], bool], StepOutput]


class FakeEngine:
    """Answers by a test-supplied function of the prompt; refuses calls past `limit`."""

    def __init__(self, respond: Responder, limit: int = 60) -> None:
        self.config = UncertaintyConfig()
        self.respond, self.limit = respond, limit
        self.calls: list[tuple[str, tuple[str, ...], bool]] = []

    def generate(self, prompt: str, stop: tuple[str, ...] | list[str], *, uncertainty: bool,
                 max_tokens: int | None = None) -> StepOutput:
        tail = prompt.split("Answer: So the answer is tuberculosis.")[-1]  # after exemplars
        self.calls.append((tail, tuple(stop), uncertainty))
        if len(self.calls) > self.limit:
            raise AssertionError(f"unscripted call #{len(self.calls)}: {tail!r}")
        out = self.respond(tail, tuple(stop), uncertainty)
        return out if uncertainty else StepOutput(out.text, out.tokens, None)


class DictRetriever:
    setting = "open"

    def __init__(self, passages: list[Passage]) -> None:
        self.passages = passages
        self.queries: list[str] = []

    def search(self, query: str, k: int) -> list[Retrieved]:
        self.queries.append(query)
        return [Retrieved(p, 1.0 / (i + 1), i + 1) for i, p in enumerate(self.passages[:k])]


def out(text: str, u: float | None, probs: float = 0.99) -> StepOutput:
    return StepOutput(text, tuple(TokenProb(f" {w}", probs) for w in text.split()), u)


def seakr(engine: FakeEngine, retriever: DictRetriever, **cfg: object) -> SeaKR:
    model = ScriptedModel([], capabilities=FULL)  # any direct model call would raise
    return SeaKR(model, retriever, SeakrConfig(**cfg), engine=engine)  # type: ignore[arg-type]


P = [Passage(id=f"p{i}", title=f"T{i}", text=f"Fact number {i}.") for i in range(1, 10)]
Q = Question(id="q1", text="Where did the director of Maddalena die?")


def _trace(pred: object, stage: str) -> list[dict]:
    return [s.data for s in pred.trace if s.stage == stage]  # type: ignore[attr-defined]


def test_capabilities_are_refused_at_construction() -> None:
    for caps in (Capabilities(json_schema=True),
                 Capabilities(logprobs=True, parallel_samples=True)):
        with pytest.raises(ModelError, match="hidden_states"):
            SeaKR(ScriptedModel([], capabilities=caps), DictRetriever(P))


def test_http_backend_is_refused_at_construction_with_a_clear_message(tmp_path) -> None:
    from kgrag.config import Settings
    from kgrag.llm.openai_http import OpenAICompatibleModel

    http = OpenAICompatibleModel("http://127.0.0.1:9/v1", model="m")  # never contacted
    with pytest.raises(ModelError, match="seakr needs parallel_samples, hidden_states") as e:
        SeaKR(http, DictRetriever(P))
    assert "KGRAG_MODEL__BACKEND=llama" in e.value.hint
    # through the composition root, as `kgrag ask --method seakr-gold` builds it
    settings = Settings(home=tmp_path, model={"backend": "openai"})  # type: ignore[arg-type]
    with pytest.raises(ModelError, match="hidden_states"):
        Platform(settings).method("seakr-gold")


def test_retrieval_decision_at_the_threshold() -> None:
    def respond(tail: str, stop: tuple[str, ...], u: bool) -> StepOutput:
        if "Context:" in tail and "Answer:" in tail and stop[-1] == ". ":
            return out("So the answer is Rome", -9.0)  # a re-ranked step
        if stop[-1] == ". ":
            if "Genina" not in tail:
                return out("Maddalena was directed by Genina", -6.0)
            return out("Genina died in a city", -5.999)
        return out("So the answer is Rome", -7.0)

    engine = FakeEngine(respond)
    pred = seakr(engine, DictRetriever(P), threshold=-6.0).answer(Q)
    steps = _trace(pred, "step")
    assert [s["retrieve"] for s in steps] == [False, True]  # U = δ keeps, U > δ retrieves
    assert pred.usage.retrievals == 1 and pred.answer == "Rome"


def test_reranking_keeps_the_passage_with_the_lowest_uncertainty() -> None:
    scores = {"Fact number 1": -5.0, "Fact number 2": -8.0, "Fact number 3": -7.0}

    def respond(tail: str, stop: tuple[str, ...], u: bool) -> StepOutput:
        if stop[-1] != ". ":
            return out("So the answer is Rome", -7.0)
        if "Context:" in tail:
            doc = tail.split("Context: [1] ")[1].split(".")[0]
            return out(f"From {doc[-1]} So the answer is Rome", scores[doc])
        return out("I am unsure", -1.0)

    engine = FakeEngine(respond)
    pred = seakr(engine, DictRetriever(P)).answer(Q)
    (ret,) = _trace(pred, "retrieve")
    assert ret["chosen"] == "p2"
    assert [c["uncertainty"] for c in ret["candidates"]] == [-5.0, -8.0, -7.0]
    assert pred.evidence == ["T2: Fact number 2."]
    assert '"chosen":"p2"' in pred.model_dump_json()  # the trace is JSON-serialisable


def test_without_reranking_the_top_passage_is_used_and_no_u_is_computed() -> None:
    def respond(tail: str, stop: tuple[str, ...], u: bool) -> StepOutput:
        if stop[-1] == ". " and "Context:" not in tail:
            return out("I am unsure", -1.0)
        return out("So the answer is Rome", -7.0)

    engine = FakeEngine(respond)
    pred = seakr(engine, DictRetriever(P), rerank=False).answer(Q)
    (ret,) = _trace(pred, "retrieve")
    assert ret["chosen"] == "p1" and len(ret["candidates"]) == 1
    rag_calls = [c for c in engine.calls if "Context:" in c[0] and c[1][-1] == ". "]
    assert len(rag_calls) == 1 and rag_calls[0][2] is False


def test_self_aware_reasoning_keeps_the_lower_uncertainty_answer() -> None:
    def run(u_rationale: float, u_knowledge: float) -> str:
        def respond(tail: str, stop: tuple[str, ...], u: bool) -> StepOutput:
            if stop[-1] == ". ":  # reasoning steps: confident, answer at step 2
                return out("Genina died in Rome" if "Answer: " not in tail.split(
                    "Question:")[-1] else "So the answer is Rome", -9.0)
            if "[1] Genina died in Rome" in tail:
                return out("So the answer is Rome", u_rationale)
            return out("So the answer is Naples", u_knowledge)

        return seakr(FakeEngine(respond), DictRetriever(P)).answer(Q).answer

    assert run(-8.0, -7.0) == "Rome"  # rationales less uncertain
    assert run(-7.0, -8.0) == "Naples"  # knowledge less uncertain


def test_reasoning_ablations_use_one_strategy_without_u() -> None:
    def respond(tail: str, stop: tuple[str, ...], u: bool) -> StepOutput:
        if stop[-1] == ". ":
            if "Genina directed it." in tail:
                return out("So the answer is Rome", -9.0)
            return out("Genina directed it", -9.0)
        if "[1] Genina directed it" in tail:  # the rationales as context
            return out("So the answer is Rome", -1.0)
        return out("So the answer is Naples", -1.0)  # no passages: plain CoT

    for mode, expected in (("rationales", "Rome"), ("knowledge", "Naples")):
        engine = FakeEngine(respond)
        assert seakr(engine, DictRetriever(P), reasoning=mode).answer(Q).answer == expected
        finals = [c for c in engine.calls if c[1][-1] == "\n"]
        assert len(finals) == 1 and finals[0][2] is False


def test_always_retrieve_ablation_retrieves_at_every_step() -> None:
    def respond(tail: str, stop: tuple[str, ...], u: bool) -> StepOutput:
        if stop[-1] == ". ":
            n = tail.count("[")  # passages in context so far
            return out(f"Step with {n} passages" if n < 2 else "So the answer is Rome", -9.0)
        return out("So the answer is Rome", -9.0)

    engine = FakeEngine(respond)
    pred = seakr(engine, DictRetriever(P[:3] + P[3:]), self_aware_retrieval=False,
                 top_n=1).answer(Q)
    assert all(s["retrieve"] for s in _trace(pred, "step"))
    assert pred.usage.retrievals >= 1
    direct = [c for c in engine.calls if c[1][-1] == ". "]
    assert direct[0][2] is False  # the pseudo-generation needs no U when always retrieving


def test_step_limit() -> None:
    def respond(tail: str, stop: tuple[str, ...], u: bool) -> StepOutput:
        if stop[-1] == ". ":
            return out(f"Step {tail.count('.')}", -9.0)  # confident, never answers
        return out("So the answer is Rome", -9.0)

    pred = seakr(FakeEngine(respond), DictRetriever(P)).answer(Q)
    assert len(_trace(pred, "step")) == 7
    assert _trace(pred, "limit")[0]["steps"] == 7


def test_document_limit() -> None:
    passages = [Passage(id=f"d{i}", title=f"D{i}", text=f"Doc {i}") for i in range(20)]

    class Fresh(DictRetriever):
        def search(self, query: str, k: int) -> list[Retrieved]:
            self.queries.append(query)
            start = 3 * (len(self.queries) - 1)
            return [Retrieved(p, 1.0, i + 1) for i, p in enumerate(self.passages[start:start + k])]

    def respond(tail: str, stop: tuple[str, ...], u: bool) -> StepOutput:
        if stop[-1] == ". ":
            n = tail.count("[")
            return out(f"Unsure step {n} words", -1.0 if "Context:" not in tail else -1.0 - n)
        return out("So the answer is Rome", -9.0)

    pred = seakr(FakeEngine(respond), Fresh(passages)).answer(Q)
    assert len(pred.evidence) == 5
    assert _trace(pred, "limit")[0]["docs"] == 5


def test_repeated_query_ends_the_loop() -> None:
    def respond(tail: str, stop: tuple[str, ...], u: bool) -> StepOutput:
        if stop[-1] == ". ":
            return out("Maddalena director", -1.0)  # always uncertain, same words
        return out("So the answer is Rome", -9.0)

    retriever = DictRetriever(P)
    pred = seakr(FakeEngine(respond), retriever, top_n=1).answer(Q)
    assert len(set(retriever.queries)) == len(retriever.queries)
    assert any(r.get("stop") for r in _trace(pred, "retrieve"))


def test_forced_completion_then_fail() -> None:
    def answerless(forced_text: str) -> tuple[str, FakeEngine]:
        def respond(tail: str, stop: tuple[str, ...], u: bool) -> StepOutput:
            if tail.endswith("So the answer is"):
                return out(forced_text, None)
            if stop[-1] == ". ":
                return out("Genina directed it", -9.0) if tail.count("Genina") < 2 else \
                    out("", -9.0)
            return out("Genina died somewhere", -8.0)  # never states an answer

        engine = FakeEngine(respond)
        return seakr(engine, DictRetriever(P), max_steps=1).answer(Q).answer, engine

    answer, engine = answerless(" Rome.")
    assert answer == "Rome"
    forced = [c for c in engine.calls if c[0].endswith("So the answer is")]
    assert len(forced) == 2 and all(c[2] is False for c in forced)  # one per strategy
    answer, _ = answerless("")
    assert answer == ""  # nothing even when forced: the method fails


# ---------------------------------------------------------------------- calibration
def test_threshold_separates_wrong_from_right_answers() -> None:
    from textrag.seakr.calibrate import CalibrationPoint, best_cut, threshold_table

    us = [(-7.0, True), (-6.5, True), (-6.2, False), (-5.8, True), (-5.0, False), (-4.5, False),
          (-4.0, False)]
    points = [CalibrationPoint(str(i), u, c, "x") for i, (u, c) in enumerate(us)]
    table = threshold_table(points)
    cuts = {round(c.threshold, 3): c for c in table}
    best = best_cut(table)
    # J(-5.4) = 3/4 - 0 beats J(-6.35) = 4/4 - 1/3 and every other midpoint
    assert best.threshold == pytest.approx(-5.4)
    assert best.wrong_retrieved == pytest.approx(3 / 4) and best.right_retrieved == 0.0
    assert best.accuracy_kept == pytest.approx(3 / 4)
    assert cuts[-6.35].youden == pytest.approx(2 / 3)
    assert cuts[-6.75].retrieve_rate == pytest.approx(6 / 7)


def test_calibration_needs_both_outcomes() -> None:
    from textrag.seakr.calibrate import CalibrationPoint, threshold_table

    with pytest.raises(KgragError, match="right and wrong"):
        threshold_table([CalibrationPoint("a", -6.0, True, "x")])


def test_correctness_for_options_and_short_answers() -> None:
    from kgrag.types import Choice
    from textrag.seakr.calibrate import is_correct

    mcq = Question(id="m", text="Where do foxes live?", answers=["B"],
                   choices=[Choice(label="A", text="sea"), Choice(label="B", text="forest")])
    assert is_correct("forest", mcq) and is_correct("B", mcq)
    assert not is_correct("sea", mcq) and not is_correct(None, mcq)
    short = Question(id="s", text="Capital of Italy?", answers=["Rome"])
    assert is_correct("the city of Rome", short) and not is_correct("Romeo", short)


def test_calibrate_seakr_scores_the_first_step_and_grades_the_answer_line() -> None:
    from textrag.seakr.calibrate import calibrate_seakr

    qs = [Question(id=f"q{i}", text=f"Capital number {i}?", answers=["Rome"]) for i in range(4)]
    lines = {"0": "So the answer is Rome", "1": "So the answer is Rome",
             "2": "So the answer is Oslo", "3": "It is Oslo"}
    step_u = {"0": -7.0, "1": -6.5, "2": -4.0, "3": -3.0}

    def respond(tail: str, stop: tuple[str, ...], u: bool) -> StepOutput:
        assert "Context:" not in tail
        if tail.endswith("So the answer is"):
            return out(" Oslo.", None)  # the forced completion of q3
        i = tail.split("Capital number ")[1][0]
        if stop[-1] == ". ":  # the first step: the U that δ is compared with
            assert u
            return out("A first step", step_u[i])
        assert stop[-1] == "\n" and not u
        return out(lines[i], None)

    engine = FakeEngine(respond)
    model = ScriptedModel([], capabilities=FULL)
    cal = calibrate_seakr(model, qs, engine=engine)  # type: ignore[arg-type]
    assert cal.accuracy == 0.5 and cal.threshold == pytest.approx(-5.25)
    assert [p.answer for p in cal.points] == ["Rome", "Rome", "Oslo", "Oslo"]
    assert len(engine.calls) == 9 and cal.settings["level"] == "step"


def test_calibration_split_is_csqa_train_not_evaluation_data() -> None:
    from tests.conftest import DATA_DIR, require_data
    from textrag.seakr.calibrate import CALIBRATION_SOURCES, calibration_questions

    require_data(DATA_DIR / CALIBRATION_SOURCES["csqa-train"])
    qs = calibration_questions(DATA_DIR, n=3, source="csqa-train")
    assert len(qs) == 3 and all("Answer choices: (A) " in q.text for q in qs)
    assert all(q.answers and q.answers[0] in "ABCDE" for q in qs)


def test_saved_calibration_is_used_only_with_the_same_estimator_settings(tmp_path) -> None:
    from textrag.seakr.calibrate import (
        CalibrationPoint,
        SeakrCalibration,
        calibrated_threshold,
        calibration_path,
        save_calibration,
        threshold_table,
    )

    points = (CalibrationPoint("a", -7.0, True, "x"), CalibrationPoint("b", -3.0, False, "y"))
    cal = SeakrCalibration("m", "test", -5.0, 0.5, points, tuple(threshold_table(points)),
                           {"k": 20, "alpha": 1e-3, "tensor": "ffn_out", "n_shot": 10,
                            "level": "step"})
    assert calibrated_threshold(tmp_path, "qwen/x.gguf") is None  # nothing saved yet
    path = calibration_path(tmp_path, "qwen/x.gguf")
    save_calibration(cal, path)
    assert calibrated_threshold(tmp_path, "qwen/x.gguf") == -5.0
    other = SeakrConfig(uncertainty=UncertaintyConfig(k=10))
    assert calibrated_threshold(tmp_path, "qwen/x.gguf", other) is None


def test_registered_variants_answer_under_their_own_names() -> None:
    from kgrag.method import named
    from textrag.metarag.method import METARAG_FACTORIES
    from textrag.seakr.method import SEAKR_FACTORIES

    assert set(SEAKR_FACTORIES) == {"seakr", "seakr-gold", "seakr-no-sa-retrieval",
                                    "seakr-no-sa-rerank", "seakr-rationales-only",
                                    "seakr-knowledge-only"}
    assert set(METARAG_FACTORIES) == {"metarag", "metarag-gold"}
    assert named(SeaKR, "seakr") is SeaKR
    cls = named(SeaKR, "seakr-gold")
    assert issubclass(cls, SeaKR) and cls.name == "seakr-gold" and SeaKR.name == "seakr"
    engine = FakeEngine(lambda tail, stop, u: out("So the answer is Rome", -9.0))
    method = cls(ScriptedModel([], capabilities=FULL), DictRetriever(P), engine=engine)
    assert method.answer(Q).method == "seakr-gold"


def test_an_answer_step_stops_without_retrieval_whatever_its_uncertainty() -> None:
    engine = FakeEngine(lambda tail, stop, u: out("So the answer is Rome", 3.0))  # U > δ
    pred = seakr(engine, DictRetriever(P), threshold=-6.0).answer(Q)
    steps = _trace(pred, "step")
    assert [s["retrieve"] for s in steps] == [False]  # official order: answer test first
    assert pred.usage.retrievals == 0 and pred.answer == "Rome"
    assert "answer, stop" in next(e for e in pred.trace if e.stage == "step").summary
    (row,) = render_text.uncertainty_rows(pred.trace)  # the app says why, not "no retrieval"
    assert row["above threshold"] is True and row["decision"] == "answer, stop"
