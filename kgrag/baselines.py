"""Methods without retrieval, shared by the graph and text sides: `llm` and `cot`.

`llm` reads a multiple-choice answer from the option letters' probabilities (`QAMethod.
choose`, prompt `llm_choose`); open questions get a generated reply. `cot` reasons freely
and its final letter is read the same way, after "So the answer is:".

    LLMOnly(model).answer(question).answer
    # -> 'B. forest'
"""

from __future__ import annotations

from typing import ClassVar

from kgrag.answers import ANSWER
from kgrag.llm.base import GenerationParams
from kgrag.llm.letters import argmax
from kgrag.method import Answer, QAMethod, Trace
from kgrag.prompt import PromptTemplate, package_prompt
from kgrag.reader import Render, letter_pass, option_text
from kgrag.types import Question


class LLMOnly(QAMethod):
    """The model answers directly from its own knowledge (the papers' "LLM only" row)."""

    name: ClassVar[str] = "llm"
    prompts: ClassVar[tuple[str, str]] = ("llm_mcq", "llm_open")
    max_tokens: ClassVar[tuple[int, int]] = (96, 96)  # multiple choice, other questions
    # Open-ended (MedQuAD) answers are paragraphs: 96 tokens cut most of them mid-sentence.
    open_ended_tokens: ClassVar[int] = 256
    reads_letters: ClassVar[bool] = True  # multiple choice: the letter read, no reply

    def _answer(self, question: Question, trace: Trace) -> Answer:
        if question.is_multiple_choice and self.reads_letters:
            text, _ = self.choose(question, closed_book_render(question), trace,
                                  prompt="llm_choose")
            return Answer(text=text)
        template = self._template(question)
        messages = template.render(question=question.text, choices=question.choices_block())
        mcq = question.is_multiple_choice
        budget = (self.open_ended_tokens if question.kind == "open_ended"
                  else self.max_tokens[0 if mcq else 1])
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
    reads_letters: ClassVar[bool] = False  # it reasons first; see `_answer`
    # Multiple choice asks to reason about each option: on MMLU law's long options 384
    # tokens cut 6 of the first 16 replies off before "So the answer is" (Fails), so 768.
    # CommonsenseQA's replies never reached 384, so its answers are the same either way.
    max_tokens: ClassVar[tuple[int, int]] = (768, 384)
    open_ended_tokens: ClassVar[int] = 384  # reasoning, then the answer

    def _answer(self, question: Question, trace: Trace) -> Answer:
        answer = super()._answer(question, trace)
        if not question.is_multiple_choice or not self.model.capabilities.option_logprobs:
            return answer
        # The free reasoning stays; its final letter is read from the letter probabilities
        # after "So the answer is:" (the reasoning's own line, or one appended to it).
        marks = list(ANSWER.finditer(answer.text))
        prefix = (answer.text[:marks[-1].end()] if marks
                  else answer.text.rstrip() + "\nSo the answer is:")
        labels = [c.label for c in question.choices]
        messages = self._template(question).render(question=question.text,
                                                   choices=question.choices_block())
        by_letter, tokens = letter_pass(self.model, messages, labels, prefill=prefix)
        label = argmax(by_letter)
        trace.add("choose", f"{label} after the reasoning (p={by_letter[label]:.2f})",
                  prompt="cot_mcq", label=label, letters={k: round(v, 4) for k, v in
                                                          by_letter.items()},
                  prompt_tokens=tokens, correction="none", passes_n=1)
        return Answer(text=f"{prefix} {option_text(question, label)}")


def closed_book_render(question: Question) -> Render:
    """The `llm` row's multiple-choice prompt for an options block (also the closed-book
    pass of an evidence gate, so that pass is the `llm` row's own)."""
    template = package_prompt(__file__, "llm_choose")
    return lambda block: template.render(question=question.text, choices=block)
