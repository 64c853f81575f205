from pathlib import Path

import pytest

from kgrag.baselines import ChainOfThought, LLMOnly
from kgrag.errors import ModelError
from kgrag.llm.base import Capabilities, GenerationParams, Message
from kgrag.llm.scripted import ScriptedModel, ScriptExhausted
from kgrag.method import Answer, QAMethod, Trace
from kgrag.prompt import PromptTemplate
from kgrag.types import Choice, Question

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
    model = ScriptedModel(["B. Fridges keep food cold."])
    pred = LLMOnly(model).answer(MCQ)
    assert pred.answer == "B. Fridges keep food cold."
    assert pred.usage.llm_calls == 1
    assert pred.trace[0].stage == "generate"
    assert "A. oven\nB. fridge" in model.prompts[0][-1].content
    assert pred.error is None


def test_cot_uses_its_own_prompt() -> None:
    model = ScriptedModel(["Fridges are cold. So the answer is: B"])
    ChainOfThought(model).answer(MCQ)
    assert "step by step" in model.prompts[0][-1].content


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
