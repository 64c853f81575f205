"""Control flow of rag, ircot and flare with scripted models and an in-memory retriever.

The fakes replay scripts and raise when a method asks for one call too many; nothing
here says anything about answer quality.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from kgrag.errors import ModelError
from kgrag.llm.base import (
    Capabilities,
    Generation,
    GenerationParams,
    Message,
    TokenLogprob,
    UsageMeter,
)
from kgrag.types import Passage, Question
from tests.doubles.scripted import ScriptedModel, ScriptExhausted
from textrag.baselines import (
    FLARE,
    RAG,
    FLAREConfig,
    IRCoT,
    IRCoTConfig,
    RAGConfig,
    first_sentence_tokens,
)
from textrag.reasoning import first_sentence
from textrag.retrieval import Retrieved
from textrag.retrievers import GoldContextRetriever, shared

Q = Question(id="q1", text="In which city was the designer of the Analytical Engine born?")
DOCS = [
    Passage(id="d1", title="Analytical Engine", text="Designed by Charles Babbage in 1837."),
    Passage(id="d2", title="Charles Babbage", text="Charles Babbage was born in London."),
    Passage(id="d3", title="Difference engine", text="A mechanical calculator."),
    Passage(id="d4", title="Lovelace Medal", text="An award of the British Computer Society."),
    Passage(id="d5", title="Walworth", text="A district of south London."),
    Passage(id="d6", title="Teignmouth", text="A town in Devon."),
]


class FakeRetriever:
    """Returns the first k of its passages for any query and remembers the queries."""

    setting = "open"

    def __init__(self, passages: Sequence[Passage] = DOCS) -> None:
        self.passages = list(passages)
        self.queries: list[tuple[str, int]] = []

    def search(self, query: str, k: int) -> list[Retrieved]:
        self.queries.append((query, k))
        return [Retrieved(p, 1.0 / r, r) for r, p in enumerate(self.passages[:k], 1)]


Tokens = list[tuple[str, float]]  # (token, probability)


class ProbModel:
    """A scripted model with token probabilities: a reply is text or [(token, prob)].

    Look-ahead calls (logprobs=True) must get a token list; plain calls, text."""

    name = "prob-scripted"
    capabilities = Capabilities(logprobs=True)

    def __init__(self, replies: Sequence[str | Tokens]) -> None:
        self.usage = UsageMeter()
        self._replies = list(replies)
        self.prompts: list[list[Message]] = []
        self.params: list[GenerationParams] = []

    def chat(self, messages: Sequence[Message], params: GenerationParams) -> Generation:
        self.prompts.append(list(messages))
        self.params.append(params)
        if not self._replies:
            raise ScriptExhausted(f"unscripted call #{len(self.prompts)}")
        reply = self._replies.pop(0)
        if isinstance(reply, str):
            assert not params.logprobs, "scripted text for a call that asked for logprobs"
            g = Generation(reply, 10, len(reply.split()))
        else:
            assert params.logprobs, "scripted tokens for a call without logprobs"
            lps = tuple(TokenLogprob(t, math.log(p)) for t, p in reply)
            g = Generation("".join(t for t, _ in reply), 10, len(reply), logprobs=lps)
        self.usage.record(g)
        return g

    def sample(self, messages: Sequence[Message], n: int, params: GenerationParams
               ) -> list[Generation]:
        raise AssertionError("FLARE never samples")

    def hidden_state(self, messages: Sequence[Message], completion: str, layer: int):  # noqa: ANN201
        raise AssertionError("FLARE never reads hidden states")


def sure(text: str, p: float = 0.95) -> Tokens:
    """Whitespace-split tokens, all with probability p."""
    words = text.split(" ")
    return [(w if i == 0 else " " + w, p) for i, w in enumerate(words)]


# ---------------------------------------------------------------------- helpers
def test_first_sentence_respects_abbreviations_and_answer_lines() -> None:
    assert first_sentence("Thought: He moved to St. Louis in 1990. Then he left.") == \
        "He moved to St. Louis in 1990."
    assert first_sentence("So the answer is: J. R. R. Tolkien. Extra.") == \
        "So the answer is: J. R. R. Tolkien. Extra."
    assert first_sentence("  one line\nsecond line") == "one line"


# ---------------------------------------------------------------------- RAG
def test_rag_prompt_contains_the_passages_and_answer_is_short() -> None:
    retriever = FakeRetriever()
    model = ScriptedModel(
        ["Babbage designed it. He was born in London.\nSo the answer is: London."])
    pred = RAG(model, shared(retriever)).answer(Q)
    assert pred.error is None
    assert pred.answer == "London"
    assert retriever.queries == [(Q.text, 3)]
    prompt = model.prompts[0][-1].content
    for d in DOCS[:3]:
        assert f"{d.title}: {d.text}" in prompt
    assert DOCS[3].text not in prompt
    assert pred.usage.retrievals == 1 and pred.usage.llm_calls == 1
    assert pred.setting == "open"
    assert pred.evidence == ["Analytical Engine", "Charles Babbage", "Difference engine"]
    retrieve = next(s for s in pred.trace if s.stage == "retrieve")
    assert retrieve.data["ids"] == ["d1", "d2", "d3"]
    answer = pred.trace[-1]
    assert answer.stage == "answer" and "born in London" in answer.data["reasoning"]


def test_rag_forces_the_answer_line_once_when_missing() -> None:
    model = ScriptedModel(["Babbage was born in London.", "London"])
    pred = RAG(model, shared(FakeRetriever()), config=RAGConfig(k=2)).answer(Q)
    assert pred.answer == "London"
    assert pred.usage.llm_calls == 2
    forced = model.prompts[1][-1].content
    assert "Babbage was born in London." in forced and "So the answer is:" in forced
    assert pred.trace[-1].data["forced"] is True


def test_rag_asks_again_for_an_answer_line_that_runs_on() -> None:
    """Ours, as the KG methods do: a stated short answer of more than eight words is
    completed again; a short one is kept with no second call."""
    long_line = "So the answer is: Babbage was born in London in 1791, the son of a banker."
    model = ScriptedModel([long_line, "London"])
    pred = RAG(model, shared(FakeRetriever()), config=RAGConfig(k=2)).answer(Q)
    assert pred.answer == "London" and pred.usage.llm_calls == 2
    assert pred.trace[-1].data["forced"] is True
    kept = ScriptedModel(["So the answer is: London, England."])
    again = RAG(kept, shared(FakeRetriever()), config=RAGConfig(k=2)).answer(Q)
    assert again.answer == "London, England" and again.usage.llm_calls == 1


def test_gold_setting_is_reported_and_needs_contexts() -> None:
    q = Q.model_copy(update={"contexts": DOCS})
    pred = RAG(ScriptedModel(["So the answer is: London."]),
               GoldContextRetriever.for_question).answer(q)
    assert pred.setting == "gold" and pred.answer == "London"
    assert pred.trace[0].data["ids"][0] == "d1"  # the title matches the question
    failed = RAG(ScriptedModel([]), GoldContextRetriever.for_question).answer(Q)
    assert failed.error is not None and "no gold contexts" in failed.error


# ---------------------------------------------------------------------- IRCoT
def test_ircot_keeps_one_sentence_per_step_and_stops_on_the_answer() -> None:
    retriever = FakeRetriever()
    model = ScriptedModel([
        "Thought: The Analytical Engine was designed by Charles Babbage. He was born in London.",
        "So the answer is: London.",
    ])
    pred = IRCoT(model, shared(retriever), config=IRCoTConfig(max_steps=5)).answer(Q)
    assert pred.answer == "London"
    assert model.remaining == 0 and pred.usage.llm_calls == 2  # no forced call
    assert retriever.queries == [(Q.text, 5),
                                 ("The Analytical Engine was designed by Charles Babbage.", 5)]
    assert pred.usage.retrievals == 2
    second = model.prompts[1][-1].content
    assert "Thought so far: The Analytical Engine was designed by Charles Babbage." in second
    assert "He was born in London" not in second  # only the first sentence is kept
    assert "Wikipedia Title: Charles Babbage\nCharles Babbage was born in London." in second


def test_ircot_stops_at_max_steps_then_forces_the_answer() -> None:
    retriever = FakeRetriever()
    model = ScriptedModel(["Babbage designed it.", "Babbage was born in London.", "London"])
    pred = IRCoT(model, shared(retriever)).answer(Q)  # official: max_steps=2
    assert pred.answer == "London"
    assert pred.usage.llm_calls == 3
    assert [q for q, _ in retriever.queries] == [Q.text, "Babbage designed it.",
                                                 "Babbage was born in London."]
    forced = model.prompts[2][-1].content
    assert "Babbage designed it. Babbage was born in London." in forced
    assert [s.stage for s in pred.trace].count("generate") == 2


def test_ircot_caps_the_paragraphs_in_the_prompt() -> None:
    many = [Passage(id=f"x{i}", title=f"T{i}", text=f"text {i}") for i in range(30)]

    class Fresh(FakeRetriever):  # new passages at every call
        def search(self, query: str, k: int) -> list[Retrieved]:
            start = len(self.queries) * k
            self.queries.append((query, k))
            return [Retrieved(p, 1.0, r) for r, p in enumerate(many[start:start + k], 1)]

    model = ScriptedModel(["One.", "Two.", "Three.", "So the answer is: x."])
    IRCoT(model, shared(Fresh()), config=IRCoTConfig(max_steps=4, max_paragraphs=7)).answer(Q)
    last = model.prompts[3][-1].content
    assert last.count("Wikipedia Title: T") == 7  # the exemplar's titles do not start with T
    assert "Wikipedia Title: T6\n" in last and "Wikipedia Title: T7\n" not in last


# ---------------------------------------------------------------------- FLARE
def test_flare_needs_logprobs() -> None:
    with pytest.raises(ModelError, match="logprobs"):
        FLARE(ScriptedModel([]), shared(FakeRetriever()))


def test_first_sentence_tokens_cut_at_the_boundary() -> None:
    look = first_sentence_tokens(tuple(TokenLogprob(t, math.log(p)) for t, p in [
        (" Babbage", 0.9), (" was", 0.9), (" born", 0.9), (".", 0.9), (" He", 0.1),
        (" died", 0.1)]))
    assert look.text == "Babbage was born."
    assert [t.token for t in look.tokens] == [" Babbage", " was", " born", "."]
    assert look.uncertain(0.8) == []


def test_flare_confident_sentences_never_retrieve() -> None:
    retriever = FakeRetriever()
    model = ProbModel([sure("The Analytical Engine was designed by Charles Babbage."),
                       sure("Charles Babbage was born in London."),
                       sure("So the answer is: London.")])
    pred = FLARE(model, shared(retriever)).answer(Q)
    assert pred.error is None, pred.error
    assert pred.answer == "London"
    assert retriever.queries == [] and pred.usage.retrievals == 0
    assert pred.usage.llm_calls == 3
    assert all(p.logprobs and p.max_tokens == 64 for p in model.params)
    assert "Answer so far: The Analytical Engine was designed by Charles Babbage. Charles " \
        "Babbage was born in London." in model.prompts[2][-1].content


def test_flare_retrieves_on_a_low_prob_token_with_a_masked_query() -> None:
    retriever = FakeRetriever()
    unsure = [(" The", 0.95), (" engine", 0.9), (" was", 0.97), (" designed", 0.9),
              (" by", 0.99), (" Ada", 0.3), (" Lovelace", 0.35), (" in", 0.6), (" 1837", 0.85),
              (".", 0.99), (" Extra", 0.01)]
    model = ProbModel([unsure,
                       "The engine was designed by Charles Babbage in 1837. More text.",
                       sure("So the answer is: London.")])
    pred = FLARE(model, shared(retriever)).answer(Q)
    assert pred.answer == "London"
    # question + the look-ahead sentence without tokens of prob <= 0.4 (" in" at 0.6 stays)
    assert retriever.queries == [(f"{Q.text} The engine was designed by in 1837.", 2)]
    look = next(s for s in pred.trace if s.stage == "lookahead")
    assert look.data["uncertain_tokens"] == [" Ada", " Lovelace", " in"]
    assert "Context:" not in model.prompts[0][-1].content
    regen = model.prompts[1][-1].content
    assert "Context:\n[1] Analytical Engine: Designed by Charles Babbage in 1837." in regen
    assert "[2] Charles Babbage:" in regen and "[3]" not in regen
    assert "Answer so far: The engine was designed by Charles Babbage in 1837." in \
        model.prompts[2][-1].content
    assert "Context:" not in model.prompts[2][-1].content  # docs only for the regenerated one
    assert pred.usage.retrievals == 1 and pred.usage.llm_calls == 3


def test_flare_threshold_is_inclusive_and_configurable() -> None:
    retriever = FakeRetriever()
    model = ProbModel([sure("Babbage was born in London.", p=0.8), "Babbage was born in London.",
                       sure("So the answer is: London.")])
    FLARE(model, shared(retriever)).answer(Q)
    assert len(retriever.queries) == 1  # prob 0.8 <= theta 0.8 triggers
    assert retriever.queries[0][0].endswith("Babbage was born in London.")  # 0.8 > beta
    quiet = FakeRetriever()
    model = ProbModel([sure("Babbage was born in London.", p=0.8), sure("So the answer is: X.")])
    FLARE(model, shared(quiet), config=FLAREConfig(theta=0.5)).answer(Q)
    assert quiet.queries == []


def test_flare_stops_at_the_token_budget_and_forces_the_answer() -> None:
    model = ProbModel([sure("Babbage designed it."), sure("He lived in London."), "London"])
    pred = FLARE(model, shared(FakeRetriever()),
                 config=FLAREConfig(max_generation_tokens=6)).answer(Q)
    assert pred.answer == "London"
    assert pred.usage.llm_calls == 3  # two look-aheads (3 + 4 tokens >= 6), one forced
    assert pred.trace[-1].data["forced"] is True


def test_flare_stops_when_the_model_has_nothing_more() -> None:
    model = ProbModel([sure("Babbage was born in London."), [], "London"])
    pred = FLARE(model, shared(FakeRetriever())).answer(Q)
    assert pred.answer == "London" and pred.usage.llm_calls == 3


def test_factories_are_registered_with_the_platform() -> None:
    from kgrag.platform import available_methods

    names = set(available_methods())
    assert {"rag", "rag-gold", "ircot", "ircot-gold", "flare", "flare-gold"} <= names


@pytest.mark.parametrize(("reply", "sentence"), [
    ("1. The film was made in 1990. Then more.", "The film was made in 1990."),
    ("- Babbage was born in 1791. More.", "Babbage was born in 1791."),
    ("Step 2: He died in 1871. More.", "He died in 1871."),
    ("1871. That year he died.", "1871."),
])
def test_first_sentence_drops_list_markers_not_years(reply: str, sentence: str) -> None:
    assert first_sentence(reply) == sentence


def test_gold_variants_answer_under_their_own_names(tmp_path, monkeypatch) -> None:
    """`rag-gold` once answered as `rag`: the runner then scored its predictions as the
    open-domain method's. Every registry name must be the method's own."""
    from kgrag.config import Settings
    from kgrag.errors import KgragError
    from kgrag.platform import Platform
    from textrag.methods import FACTORIES

    p = Platform(Settings(home=tmp_path / "home", data_dir=tmp_path))
    p.__dict__["chat_model"] = ScriptedModel([], capabilities=Capabilities(logprobs=True))
    for name in ("rag-gold", "ircot-gold", "flare-gold"):
        assert p.method(name).name == name
    assert {FACTORIES[n](p, None).name for n in ("rag-gold", "ircot-gold")} == {
        "rag-gold", "ircot-gold"}
    monkeypatch.setattr("kgrag.platform.available_methods",
                        lambda: {"rag-mine": FACTORIES["rag-gold"]})
    with pytest.raises(KgragError, match="built a method named 'rag-gold'"):
        p.method("rag-mine")
