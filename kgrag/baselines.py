"""Methods without retrieval, shared by the graph and text sides: `llm` and `cot`.

>>> LLMOnly(model).answer(question).answer
'B. Because foxes live in forests.'
"""

from __future__ import annotations

from typing import ClassVar

from kgrag.llm.base import GenerationParams
from kgrag.method import Answer, QAMethod, Trace
from kgrag.prompt import PromptTemplate, package_prompt
from kgrag.types import Question


class LLMOnly(QAMethod):
    """The model answers directly from its own knowledge (the papers' "LLM only" row)."""

    name: ClassVar[str] = "llm"
    prompts: ClassVar[tuple[str, str]] = ("llm_mcq", "llm_open")
    max_tokens: ClassVar[tuple[int, int]] = (96, 96)  # multiple choice, other questions

    def _answer(self, question: Question, trace: Trace) -> Answer:
        template = self._template(question)
        messages = template.render(question=question.text, choices=question.choices_block())
        mcq = question.is_multiple_choice
        budget = self.max_tokens[0 if mcq else 1]
        until = self._until(question, template.name)
        reply = self.model.chat(messages, GenerationParams(max_tokens=budget, until=until))
        trace.add("generate", reply.text.strip(), prompt=template.name,
                  completion_tokens=reply.completion_tokens, max_tokens=budget,
                  finish_reason=reply.finish_reason)
        return Answer(text=reply.text.strip())

    def _template(self, question: Question) -> PromptTemplate:
        mcq, open_ = self.prompts
        return package_prompt(__file__, mcq if question.is_multiple_choice else open_)


class ChainOfThought(LLMOnly):
    """Step-by-step reasoning before the answer, still without retrieval."""

    name: ClassVar[str] = "cot"
    prompts: ClassVar[tuple[str, str]] = ("cot_mcq", "cot_open")
    # Multiple choice asks to reason about each option: on MMLU law's long options 384
    # tokens cut 6 of the first 16 replies off before "So the answer is" (Fails), so 768.
    # CommonsenseQA's replies never reached 384, so its answers are the same either way.
    max_tokens: ClassVar[tuple[int, int]] = (768, 384)
