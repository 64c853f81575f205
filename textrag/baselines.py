"""Text RAG baselines on the shared runner interface: `rag`, `ircot`, `flare`.

Each takes a `RetrieverFor` (open: `shared(BM25Retriever(store))`; gold:
`GoldContextRetriever.for_question`), records every step, query and retrieved passage in
the trace, counts retrievals, and returns the short answer found after "So the answer
is:" (not normalised; eval/ does that), with the full reasoning in the trace. When the
reasoning ends without that line, one forced completion asks for it (DRAGIN's rule).

    rag = RAG(model, shared(BM25Retriever(store)), store=store)
    rag.answer(Question(id="1", text="Who wrote Don Quixote?")).answer
    # -> 'Miguel de Cervantes'

Settings follow the official code (notes/methods.md): IRCoT as in FlashRAG (§6.5:
`max_iter=2`, top-5 per retrieval, the last CoT sentence as the query); FLARE as in
`jzbjyb/FLARE` (§6.1: look-ahead 64 tokens cut at a sentence, retrieve if any token
prob <= 0.8, mask tokens with prob <= 0.4, top-2, 256 generated tokens at most).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from kgrag.answers import find_answer, has_answer, runs_on
from kgrag.llm.base import Capabilities, ChatModel, GenerationParams, Message, TokenLogprob
from kgrag.method import Answer, QAMethod, Trace
from kgrag.prompt import package_prompt
from kgrag.types import Passage, Question
from textrag.reasoning import (
    RetrievalLog,
    first_sentence,
    forced_answer,
    format_passages,
    format_wikipedia,
)
from textrag.retrievers import RetrieverFor

if TYPE_CHECKING:
    from kgrag.store import GraphStore


class TextMethod(QAMethod):
    """A method that reads passages from a per-question retriever."""

    def __init__(self, model: ChatModel, retriever_for: RetrieverFor, *,
                 store: GraphStore | None = None) -> None:
        super().__init__(model, store)
        self.retriever_for = retriever_for

    def _finish(self, question: Question, reasoning: str, log: RetrievalLog, setting: str,
                trace: Trace, passages: list[Passage]) -> Answer:
        answer = find_answer(reasoning)
        if answer is None or (question.kind == "short_answer" and runs_on(answer)):
            # no answer line, or one that runs on into a description (ours, as the KG
            # methods do): the forced completion of "So the answer is:"
            answer = forced_answer(self.model, question.text, reasoning, passages, trace)
        else:
            trace.add("answer", answer, forced=False, reasoning=reasoning)
        return Answer(text=answer, evidence=log.evidence, retrievals=log.calls, setting=setting)


# ---------------------------------------------------------------------- RAG
@dataclass(frozen=True)
class RAGConfig:
    k: int = 3  # passages, as SeaKR/DRAGIN/FLARE's BM25 top-3 (methods.md §9)
    max_tokens: int = 384  # as the `cot` baseline, so rag - cot isolates retrieval
    # Open-ended questions (MedQuAD): the reply is the answer (`rag_open`), as long as
    # the `llm` row's; a MedQuAD answer passage is cut to its first words so three fit in
    # the prompt (they run to 1,000+ words; half are under 150).
    open_max_tokens: int = 256
    open_passage_words: int = 250


class RAG(TextMethod):
    """One retrieval with the question, then chain-of-thought over the top-k passages."""

    name: ClassVar[str] = "rag"

    def __init__(self, model: ChatModel, retriever_for: RetrieverFor, *,
                 store: GraphStore | None = None, config: RAGConfig | None = None) -> None:
        super().__init__(model, retriever_for, store=store)
        self.config = config or RAGConfig()

    def _answer(self, question: Question, trace: Trace) -> Answer:
        retriever = self.retriever_for(question)
        log = RetrievalLog()
        passages = [h.passage for h in log.search(retriever, question.text, self.config.k, trace)]
        if question.kind == "open_ended":
            return self._answer_open(question, passages, log, retriever.setting, trace)
        messages = package_prompt(__file__, "rag").render(
            passages=format_passages(passages) or "(no passage found)", question=question.text)
        reply = self.model.chat(messages, GenerationParams(max_tokens=self.config.max_tokens))
        trace.add("generate", reply.text.strip(), completion_tokens=reply.completion_tokens)
        return self._finish(question, reply.text, log, retriever.setting, trace, passages)

    def _answer_open(self, question: Question, passages: list[Passage], log: RetrievalLog,
                     setting: str, trace: Trace) -> Answer:
        """An open-ended answer: the whole reply, read against the passages (no "So the
        answer is" line to extract)."""
        words = self.config.open_passage_words
        cut = [p.model_copy(update={"text": " ".join(p.text.split()[:words])})
               for p in passages]
        messages = package_prompt(__file__, "rag_open").render(
            passages=format_passages(cut) or "(no passage found)", question=question.text)
        reply = self.model.chat(messages, GenerationParams(max_tokens=self.config.open_max_tokens))
        text = reply.text.strip()
        trace.add("generate", text, prompt="rag_open", completion_tokens=reply.completion_tokens,
                  finish_reason=reply.finish_reason)
        return Answer(text=text, evidence=log.evidence, retrievals=log.calls, setting=setting)


# ---------------------------------------------------------------------- IRCoT
@dataclass(frozen=True)
class IRCoTConfig:
    max_steps: int = 2  # FlashRAG IRCOTPipeline max_iter (methods.md §6.5)
    docs_per_step: int = 5  # FlashRAG retrieval_topk, for the question and every thought
    max_paragraphs: int = 15  # IRCoT paper's cap on collected paragraphs
    step_max_tokens: int = 64  # one sentence is kept per step


class IRCoT(TextMethod):
    """Interleave one CoT sentence and one retrieval (query = that sentence) until
    "So the answer is" or `max_steps`; the first retrieval uses the question."""

    name: ClassVar[str] = "ircot"

    def __init__(self, model: ChatModel, retriever_for: RetrieverFor, *,
                 store: GraphStore | None = None, config: IRCoTConfig | None = None) -> None:
        super().__init__(model, retriever_for, store=store)
        self.config = config or IRCoTConfig()

    def _answer(self, question: Question, trace: Trace) -> Answer:
        c = self.config
        retriever = self.retriever_for(question)
        log = RetrievalLog()
        log.search(retriever, question.text, c.docs_per_step, trace, step=0)
        template = package_prompt(__file__, "ircot_step")
        thoughts: list[str] = []
        for step in range(1, c.max_steps + 1):
            paragraphs = list(log.passages.values())[: c.max_paragraphs]
            messages = template.render(paragraphs=format_wikipedia(paragraphs),
                                       question=question.text,
                                       thoughts=" ".join(thoughts) or "(none yet)")
            reply = self.model.chat(messages, GenerationParams(max_tokens=c.step_max_tokens))
            thought = first_sentence(reply.text)
            trace.add("generate", thought or "(empty)", step=step, reply=reply.text)
            if not thought:
                break
            thoughts.append(thought)
            if has_answer(thought):
                break
            log.search(retriever, thought, c.docs_per_step, trace, step=step)
        paragraphs = list(log.passages.values())[: c.max_paragraphs]
        return self._finish(question, " ".join(thoughts), log, retriever.setting, trace,
                            paragraphs)


# ---------------------------------------------------------------------- FLARE
@dataclass(frozen=True)
class FLAREConfig:
    theta: float = 0.8  # retrieve if any look-ahead token has prob <= theta
    beta: float = 0.4  # drop tokens with prob <= beta from the query
    k: int = 2  # passages per retrieval
    look_ahead_tokens: int = 64
    max_generation_tokens: int = 256
    max_query_words: int = 64  # the last words are kept


@dataclass(frozen=True)
class LookAhead:
    """The first sentence of a look-ahead generation and its tokens' probabilities."""

    text: str
    tokens: tuple[TokenLogprob, ...]

    @property
    def probs(self) -> list[float]:
        return [math.exp(t.logprob) for t in self.tokens]

    def uncertain(self, threshold: float) -> list[str]:
        return [t.token for t, p in zip(self.tokens, self.probs, strict=True) if p <= threshold]

    def masked(self, threshold: float) -> str:
        """The sentence without the tokens whose probability is <= `threshold`."""
        kept = [t.token for t, p in zip(self.tokens, self.probs, strict=True) if p > threshold]
        return " ".join("".join(kept).split())


def first_sentence_tokens(tokens: tuple[TokenLogprob, ...]) -> LookAhead:
    """Cut a look-ahead at its first sentence, keeping the tokens that overlap it."""
    text = "".join(t.token for t in tokens)
    sentence = first_sentence(text)
    if not sentence:
        return LookAhead(text="", tokens=())
    start = text.find(sentence)  # first_sentence only strips, so it is a substring
    end = start + len(sentence)
    kept, pos = [], 0
    for t in tokens:
        if pos >= end:
            break
        if pos + len(t.token) > start:
            kept.append(t)
        pos += len(t.token)
    return LookAhead(text=sentence, tokens=tuple(kept))


class FLARE(TextMethod):
    """Forward-looking active retrieval (FLARE-direct): generate the next sentence; if
    a token is unsure, retrieve with the sentence minus its unsure tokens and regenerate."""

    name: ClassVar[str] = "flare"
    needs: ClassVar[Capabilities] = Capabilities(logprobs=True)

    def __init__(self, model: ChatModel, retriever_for: RetrieverFor, *,
                 store: GraphStore | None = None, config: FLAREConfig | None = None) -> None:
        super().__init__(model, retriever_for, store=store)
        self.config = config or FLAREConfig()

    def _answer(self, question: Question, trace: Trace) -> Answer:
        c = self.config
        retriever = self.retriever_for(question)
        log = RetrievalLog()
        sentences: list[str] = []
        generated = 0
        last_docs: list[Passage] = []
        while generated < c.max_generation_tokens:
            step = len(sentences) + 1
            look = self._look_ahead(question, sentences)
            if not look.text:
                trace.add("lookahead", "(empty: generation finished)", step=step)
                break
            low = look.uncertain(c.theta)
            trace.add("lookahead", look.text, step=step, min_prob=round(min(look.probs), 4),
                      uncertain_tokens=low, retrieve=bool(low))
            sentence, n_tokens = look.text, len(look.tokens)
            if low:
                query = self._query(question, look)
                last_docs = [h.passage for h in log.search(retriever, query, c.k, trace,
                                                           step=step)]
                sentence, n_tokens = self._regenerate(question, sentences, last_docs)
                trace.add("regenerate", sentence or "(empty)", step=step)
                if not sentence:
                    break
            if sentences and sentence == sentences[-1]:
                trace.add("stop", "the model repeated its last sentence", step=step)
                break
            sentences.append(sentence)
            generated += n_tokens
            if has_answer(sentence):
                break
        return self._finish(question, " ".join(sentences), log, retriever.setting, trace,
                            last_docs)

    def _prompt(self, question: Question, sentences: list[str], docs: list[Passage]
                ) -> list[Message]:
        context = (f"Context:\n{format_passages(docs)}\nAnswer in the same format as before.\n\n"
                   if docs else "")
        return package_prompt(__file__, "flare").render(
            context=context, question=question.text,
            answer_so_far=" ".join(sentences) or "(nothing yet)")

    def _look_ahead(self, question: Question, sentences: list[str]) -> LookAhead:
        params = GenerationParams(max_tokens=self.config.look_ahead_tokens, logprobs=True)
        reply = self.model.chat(self._prompt(question, sentences, []), params)
        if reply.logprobs is None:
            raise RuntimeError(f"{self.model.name} returned no logprobs for FLARE's look-ahead")
        return first_sentence_tokens(reply.logprobs)

    def _query(self, question: Question, look: LookAhead) -> str:
        """FLARE's masked query: the question (full input) + the sentence minus unsure
        tokens, cut to the last `max_query_words` words."""
        words = f"{question.text} {look.masked(self.config.beta)}".split()
        return " ".join(words[-self.config.max_query_words:])

    def _regenerate(self, question: Question, sentences: list[str], docs: list[Passage]
                    ) -> tuple[str, int]:
        params = GenerationParams(max_tokens=self.config.look_ahead_tokens)
        reply = self.model.chat(self._prompt(question, sentences, docs), params)
        sentence = first_sentence(reply.text)
        # the budget counts the kept sentence's share of the reply's tokens
        share = len(sentence) / max(1, len(reply.text.strip()))
        return sentence, math.ceil(reply.completion_tokens * share)
