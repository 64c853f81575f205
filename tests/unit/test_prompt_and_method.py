from pathlib import Path

import pytest

from kgrag.baselines import ChainOfThought, LLMOnly
from kgrag.errors import ModelError
from kgrag.llm.base import Capabilities, GenerationParams, Message
from kgrag.method import Answer, QAMethod, Trace
from kgrag.prompt import PromptTemplate
from kgrag.types import Choice, Question
from tests.doubles.scripted import ScriptedModel, ScriptExhausted

MCQ = Question(id="q1", text="Where is milk kept cold?", kind="multiple_choice",
               choices=[Choice(label="A", text="oven"), Choice(label="B", text="fridge")],
               answers=["B"])


def test_template_sections_and_fields(tmp_path: Path) -> None:
    f = tmp_path / "p.txt"
    f.write_text("## system\nBe $tone.\n## user\nQ: $question {\"json\": 1}\n")
    msgs = PromptTemplate.load(f).render(tone="brief", question="why?")
    assert [m.role for m in msgs] == ["system", "user"]
    assert msgs[1].content == 'Q: why? {"json": 1}'
    with pytest.raises(KeyError):
        PromptTemplate.load(f).render(tone="brief")


def test_llm_only_counts_usage_and_traces() -> None:
    model = ScriptedModel([{"A": -2.5, "B": -0.3}])
    pred = LLMOnly(model).answer(MCQ)
    assert pred.answer == "B. fridge"
    assert pred.usage.llm_calls == 1 and pred.usage.completion_tokens == 0
    assert pred.trace[0].stage == "choose" and pred.trace[0].data["prompt"] == "llm_choose"
    assert model.prompts[0][-1].content.endswith("A. oven\nB. fridge\nAnswer:")
    assert pred.error is None


def test_llm_only_refuses_multiple_choice_on_a_backend_without_letter_scores() -> None:
    pred_model = ScriptedModel([], capabilities=Capabilities(json_schema=True))
    with pytest.raises(ModelError, match="needs option_logprobs"):
        LLMOnly(pred_model).answer(MCQ)


def test_cot_uses_its_own_prompt_and_a_longer_budget_for_options() -> None:
    model = ScriptedModel(["Fridges are cold. So the answer is: B", {"A": -4.0, "B": -0.1},
                           "It is Paris. So the answer is: Paris"])
    mcq = ChainOfThought(model).answer(MCQ)
    assert "step by step" in model.prompts[0][-1].content
    assert mcq.answer == "Fridges are cold. So the answer is: B. fridge"
    open_q = Question(id="q2", text="Capital of France?", answers=["Paris"])
    short = ChainOfThought(model).answer(open_q)
    # reasoning about every option of a long (law) question needs more than 384 tokens
    assert [p.trace[0].data["max_tokens"] for p in (mcq, short)] == [768, 384]
    assert LLMOnly(ScriptedModel(["Paris."])).answer(open_q).trace[0].data["max_tokens"] == 96


def test_a_failing_question_is_recorded_not_fatal() -> None:
    class Boom(QAMethod):
        name = "boom"

        def _answer(self, question: Question, trace: Trace) -> Answer:
            raise ValueError("bad reply")

    pred = Boom(ScriptedModel([])).answer(MCQ)
    assert pred.answer == "" and pred.error == "ValueError: bad reply"


def test_an_extra_llm_call_fails_the_test_double() -> None:
    model = ScriptedModel([])
    with pytest.raises(ScriptExhausted):
        model.chat([Message("user", "one more?")], GenerationParams())


def test_missing_capability_fails_at_construction() -> None:
    class NeedsHidden(QAMethod):
        name = "needs-hidden"
        needs = Capabilities(hidden_states=True)

        def _answer(self, question: Question, trace: Trace) -> Answer:
            return Answer(text="")

    with pytest.raises(ModelError, match="hidden_states"):
        NeedsHidden(ScriptedModel([]))


class WordModel(ScriptedModel):
    """A scripted model that tokenizes by words, with a small context window."""

    context_tokens = 400  # question budget: 100 tokens

    def tokenize(self, text: str) -> list[str]:
        return text.split()

    def detokenize(self, tokens: list[str]) -> str:
        return " ".join(tokens)


def test_a_question_longer_than_the_context_is_cut_and_says_so() -> None:
    words = [f"w{i}" for i in range(300)]
    model = WordModel(["Paris"])
    pred = LLMOnly(model).answer(Question(id="long", text=" ".join(words) + " capital?"))
    sent = model.prompts[0][-1].content
    assert "w0 " in sent and "w49 " in sent and "w50 " not in sent  # head kept
    assert "w251 w252" in sent and "w250 " not in sent  # tail kept
    step = pred.trace[0]
    assert step.stage == "truncate" and "301 tokens" in step.summary
    assert step.data["budget_tokens"] == 100
    assert pred.answer == "Paris" and pred.error is None


def test_a_short_question_is_untouched_and_untraced() -> None:
    model = WordModel(["Paris"])
    pred = LLMOnly(model).answer(Question(id="q", text="Capital of France?"))
    assert "Capital of France?" in model.prompts[0][-1].content
    assert all(step.stage != "truncate" for step in pred.trace)


def test_without_a_tokenizer_the_cut_counts_characters() -> None:
    model = ScriptedModel(["x"])  # no tokenize(): 4096-token default, 4 chars per token
    text = "a" * 5000 + "b" * 5000
    pred = LLMOnly(model).answer(Question(id="q", text=text))
    sent = model.prompts[0][-1].content
    assert "a" * 2048 in sent and "a" * 2049 not in sent and "b" * 2048 in sent
    assert "10000 characters" in pred.trace[0].summary
