"""IM-RAG: multi-round retrieval through an inner monologue (Yang et al., SIGIR 2024).

A Reasoner talks to the Retriever through a Refiner, round by round:

- **Questioner** (`prompts/imrag_questioner.txt`, constrained JSON): from the question
  and the monologue so far, either `{"action": "search", "text": <query>}` or
  `{"action": "answer", ...}`.
- **Retriever**: the corpus' text retriever (BM25 over `:Passage` in the open setting,
  the question's own paragraphs in the gold one).
- **Refiner** (`textrag.imrag.refine`): re-rank and condense; none in the ablation.
- **Progress Tracker** (`textrag.imrag.progress`): Eq. 1-2 distance of the refined top
  passage to the closest gold passage not matched yet, gamma-discounted sum (Eq. 5) and
  Passage EM, whenever gold supporting facts exist; reported, never steering.
- **Answerer** (`prompts/imrag_answer.txt`): answers from the whole monologue.

The loop hands over to the Answerer when the Questioner decides to answer or after
N_max = 3 rounds (Eq. 6's round limit). This is the paper's *prompted* inner monologue
(Table 3, first row): the PPO-trained Questioner and SFT-trained Answerer LoRAs are not
reproduced (no GPU, no trainable checkpoint); constrained decoding keeps the format.

Bad replies (the policy): a Questioner reply that fails validation, or a search without
a query, is *malformed*. The first time, the question itself is searched (the one query
that needs no model); once the question has been searched, a malformed reply ends the
monologue and the Answerer takes over. Traced as `parsed: false`. An Answerer reply that
fails validation is used as raw text (`parsed: false`), as in MetaRAG, unless it is JSON
cut off by the token limit: then its "answer" field if it got that far, else no answer.

    pred = IMRAG(model, GoldContextRetriever.for_question, embedder).answer(question)
    [s.data["query"] for s in pred.trace if s.stage == "round"]
    # -> ['Big Stone Gap director', 'Adriana Trigiani residence']
"""

from __future__ import annotations

import copy
import re
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ValidationError

from kgrag.embed import Embedder
from kgrag.llm.base import Capabilities, ChatModel, GenerationParams
from kgrag.method import Answer, QAMethod, Trace
from kgrag.prompt import package_prompt
from kgrag.types import Question
from textrag.imrag.progress import ProgressTracker, RoundProgress
from textrag.imrag.refine import EmbeddingRefiner, PassThroughRefiner, Refined, Refiner
from textrag.retrieval import Retrieved, Retriever
from textrag.retrievers import RetrieverFor

if TYPE_CHECKING:
    from kgrag.platform import MethodFactory, Platform
    from kgrag.store import GraphStore


@dataclass(frozen=True)
class IMRAGConfig:
    """IM-RAG's constants, with where each comes from ("ours" where the paper is silent)."""

    max_rounds: int = 3  # N_max (§4.2.4, Eq. 6)
    phi_r: float = 0.3  # threshold on D (§4.2.4, Eq. 6); reported only: it needs gold
    gamma: float = 0.9  # discount (§3.2.5, Eq. 4-5): the paper says only gamma < 1; ours
    refiner: bool = True  # False: Table 3's ablation without Refiner (§5.2)
    answerer: bool = True  # False: Table 3's ablation without Answerer (§5.1, Alg. 1 l. 13)
    retrieve_k: int = 10  # the Retriever's "long list" for the Refiner (§3.2.5); ours
    refine_k: int = 3  # the Refiner's top-k (§3.2.3, Fig. 2; k not given); ours
    no_refiner_k: int = 5  # top-5 straight from the Retriever without Refiner (§5.2)
    max_sentences: int = 3  # a condensed passage's sentences (ours)
    query_weight: float = 0.5  # refiner score: w·cos(p, query) + (1-w)·cos(p, question)
    questioner_tokens: int = 96  # one short query or answer
    answer_tokens: int = 256  # as MetaRAG's answers: a short reason, then the answer


# No `maxLength` on strings: llama.cpp unrolls it into one grammar rule per character.
class QuestionerReply(BaseModel):
    action: Literal["search", "answer"]
    text: str  # the search query, or the Questioner's own short answer


class AnswererReply(BaseModel):
    reason: str
    answer: str


@dataclass(frozen=True)
class Decision:
    """What the Questioner's turn amounts to once the bad-reply policy has been applied."""

    action: Literal["search", "answer"]
    text: str  # the query, or the Questioner's own answer ("" when it has none)
    parsed: bool  # False: the reply was malformed and the policy chose the action


def decide(reply: str, question: str, searched: set[str]) -> Decision:
    """Apply the bad-reply policy to one Questioner reply (see the module docstring).

    >>> decide('{"action": "search", "text": "Psycho director"}', "q?", set()).text
    'Psycho director'
    >>> decide("oops", "q?", set())
    Decision(action='search', text='q?', parsed=False)
    >>> decide("oops", "q?", {"q?"})
    Decision(action='answer', text='', parsed=False)
    """
    try:
        r = QuestionerReply.model_validate_json(reply)
    except ValidationError:
        r = None
    if r is not None and r.action == "answer":
        return Decision("answer", r.text.strip(), parsed=True)
    if r is not None and r.text.strip():
        return Decision("search", r.text.strip(), parsed=True)
    if question not in searched:
        return Decision("search", question, parsed=False)
    return Decision("answer", "", parsed=False)


@dataclass(frozen=True)
class IMRound:
    """One round of the monologue: the query, what came back, what the Reasoner read."""

    round: int
    query: str
    parsed: bool  # False: the query is the bad-reply policy's fallback (the question)
    retrieved: tuple[Retrieved, ...]
    refined: tuple[Refined, ...]
    progress: RoundProgress | None  # None: no gold supporting facts for this question

    def to_data(self) -> dict[str, Any]:
        """The trace payload: JSON-serialisable, in the shapes `app.render_text` draws
        (query + titles: retrieved passages; candidates + chosen: the re-ranking)."""
        kept = {r.passage.id: r.score for r in self.refined}
        return {
            "round": self.round, "action": "search", "query": self.query,
            "parsed": self.parsed,
            "ids": [h.passage.id for h in self.retrieved],
            "titles": [h.passage.title for h in self.retrieved],
            "scores": [round(h.score, 4) for h in self.retrieved],
            "candidates": [{"id": h.passage.id, "title": h.passage.title, "rank": h.rank,
                            "score": kept.get(h.passage.id)} for h in self.retrieved],
            "chosen": list(kept),
            "refined": [{"id": r.passage.id, "title": r.passage.title, "text": r.text,
                         "score": round(r.score, 4), "rank": r.rank} for r in self.refined],
            "progress": None if self.progress is None else asdict(self.progress),
        }

    def summary(self) -> str:
        tops = ", ".join(r.passage.title or r.passage.id for r in self.refined) or "nothing new"
        p = self.progress
        score = "" if p is None else f" | d={p.distance:.3f} D={p.accumulated:.3f}"
        return f"search {self.query!r} -> {tops}{score}"


def monologue_text(rounds: list[IMRound]) -> str:
    """The monologue as the Reasoner reads it: each query and its refined passages."""
    if not rounds:
        return "(nothing searched yet)"
    blocks = []
    for r in rounds:
        lines = [f"Search {r.round}: {r.query}"]
        lines += [f"[{r.round}.{j}] {x.passage.title}: {x.text}" if x.passage.title
                  else f"[{r.round}.{j}] {x.text}" for j, x in enumerate(r.refined, 1)]
        if not r.refined:
            lines.append("(no new passage)")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


class IMRAG(QAMethod):
    """The inner-monologue loop: Questioner -> Retriever -> Refiner -> Progress Tracker,
    up to N_max rounds, then the Answerer (or the Questioner itself, in the ablation).

        pred = IMRAG(model, retriever_for, embedder).answer(question)
        [s.stage for s in pred.trace]
        # -> ['round', 'round', 'decide', 'stop', 'answer', 'progress']
    """

    name: ClassVar[str] = "imrag"
    needs: ClassVar[Capabilities] = Capabilities(json_schema=True)

    def __init__(self, model: ChatModel, retriever_for: RetrieverFor | Retriever,
                 embedder: Embedder, config: IMRAGConfig | None = None, *,
                 refiner: Refiner | None = None, store: GraphStore | None = None) -> None:
        super().__init__(model, store)
        self.retriever_for = retriever_for
        self.embedder = embedder
        self.config = cfg = config or IMRAGConfig()
        self.refiner = refiner or (
            EmbeddingRefiner(embedder, depth=cfg.retrieve_k, keep=cfg.refine_k,
                             max_sentences=cfg.max_sentences, query_weight=cfg.query_weight)
            if cfg.refiner else PassThroughRefiner(cfg.no_refiner_k))

    def _answer(self, question: Question, trace: Trace) -> Answer:
        cfg, q = self.config, question.text
        retriever = self.retriever_for if isinstance(self.retriever_for, Retriever) \
            else self.retriever_for(question)
        tracker = ProgressTracker.for_question(question, self.embedder, gamma=cfg.gamma,
                                               phi_r=cfg.phi_r)
        rounds: list[IMRound] = []
        last: Decision | None = None
        for i in range(1, cfg.max_rounds + 1):
            last = decide(self._questioner(q, rounds, forced=False), q,
                          {r.query for r in rounds})
            if last.action == "answer":
                trace.add("decide", f"answer: {last.text!r}" if last.parsed else
                          "malformed reply after searching the question: answer now",
                          round=i, action="answer", draft=last.text, parsed=last.parsed)
                trace.add("stop", "the Questioner decided to answer", round=i)
                break
            rnd = self._round(i, q, last, retriever, rounds, tracker)
            rounds.append(rnd)
            trace.add("round", rnd.summary(), **rnd.to_data())
        else:
            trace.add("stop", f"round limit N_max = {cfg.max_rounds}", round=cfg.max_rounds)
        final = self._final(q, rounds, last, trace)
        if tracker is not None:
            s = tracker.summary()
            trace.add("progress", f"D={s.accumulated:.3f}, passage EM={int(s.passage_em)}, "
                      f"recall={s.passage_recall:.2f}", **asdict(s))
        evidence = list(dict.fromkeys(f"{x.passage.title}: {x.text}" if x.passage.title
                                      else x.text for r in rounds for x in r.refined))
        return Answer(text=final, evidence=evidence, retrievals=len(rounds),
                      setting=retriever.setting)

    def _round(self, i: int, question: str, d: Decision, retriever: Retriever,
               rounds: list[IMRound], tracker: ProgressTracker | None) -> IMRound:
        """Retrieve with the query, refine, and score the refined top passage."""
        hits = tuple(retriever.search(d.text, self.refiner.depth))
        seen = {x.passage.id for r in rounds for x in r.refined}
        refined = tuple(self.refiner.refine(question, d.text, hits, seen))
        progress = tracker.observe(refined[0].passage if refined else None) \
            if tracker is not None else None
        return IMRound(i, d.text, d.parsed, hits, refined, progress)

    def _final(self, question: str, rounds: list[IMRound], last: Decision | None,
               trace: Trace) -> str:
        """The Answerer; without it, the Questioner's own answer (asked for at N_max)."""
        if self.config.answerer:
            text = self._chat("imrag_answer", _ANSWERER_SCHEMA, self.config.answer_tokens,
                              question=question, monologue=monologue_text(rounds))
            try:
                reply = AnswererReply.model_validate_json(text)
            except ValidationError:
                answer = salvage_answer(text)
                trace.add("answer", answer, answerer=True, parsed=False,
                          reply=text.strip()[:400])
                return answer
            trace.add("answer", reply.answer, answerer=True, parsed=True,
                      reason=reply.reason)
            return reply.answer
        if last is not None and last.action == "answer" and last.parsed and last.text:
            trace.add("answer", last.text, answerer=False, forced=False)
            return last.text
        text = self._questioner(question, rounds, forced=True)
        try:
            answer = QuestionerReply.model_validate_json(text).text.strip()
            parsed = True
        except ValidationError:
            answer, parsed = text.strip()[:200], False
        trace.add("answer", answer, answerer=False, forced=True, parsed=parsed)
        return answer

    def _questioner(self, question: str, rounds: list[IMRound], *, forced: bool) -> str:
        left = self.config.max_rounds - len(rounds)
        instruction = ("The search budget is used up: answer now, with action \"answer\"."
                       if forced else f"Searches left: {left}.")
        return self._chat("imrag_questioner", _FORCED_SCHEMA if forced else _QUESTIONER_SCHEMA,
                          self.config.questioner_tokens, question=question,
                          monologue=monologue_text(rounds), instruction=instruction)

    def _chat(self, prompt: str, schema: dict[str, object], max_tokens: int,
              **fields: object) -> str:
        messages = package_prompt(__file__, prompt).render(**fields)
        return self.model.chat(messages, GenerationParams(max_tokens=max_tokens,
                                                          json_schema=schema)).text


def _schema(model: type[BaseModel], *, answer_only: bool = False) -> dict[str, object]:
    """The reply model's JSON schema, every property required; `answer_only` pins the
    Questioner's action to "answer" (its final turn in the ablation without Answerer)."""
    schema = copy.deepcopy(model.model_json_schema())
    schema["required"] = list(schema["properties"])
    if answer_only:
        schema["properties"]["action"]["enum"] = ["answer"]
    return schema


_QUESTIONER_SCHEMA = _schema(QuestionerReply)
_FORCED_SCHEMA = _schema(QuestionerReply, answer_only=True)
_ANSWERER_SCHEMA = _schema(AnswererReply)
_ANSWER_FIELD = re.compile(r'"answer"\s*:\s*"((?:[^"\\]|\\.)*)')


def salvage_answer(reply: str) -> str:
    """The answer in an Answerer reply that failed validation. Plain text is the answer
    (trimmed to 200 characters). JSON cut off by the token limit (a long "reason") gives
    its "answer" field as far as it got, or "" when it never reached one: raw JSON is
    never an answer.

    >>> salvage_answer('{"reason": "Brown County is in Kansas, which')
    ''
    >>> salvage_answer('{"reason": "r", "answer": "Kansas City')
    'Kansas City'
    >>> salvage_answer("London, probably")
    'London, probably'
    """
    text = reply.strip()
    if not text.startswith("{"):
        return text[:200]
    found = _ANSWER_FIELD.search(text)
    return found.group(1).strip()[:200] if found else ""


# ---------------------------------------------------------------------- registration
def _factory(name: str, setting: Literal["open", "gold"], config: IMRAGConfig
             ) -> MethodFactory:
    def build(p: Platform, domain: str | None) -> QAMethod:
        from kgrag.method import named
        from textrag.setting import retriever_for

        cls = named(IMRAG, name)
        return cls(p.chat_model, retriever_for(p, setting, domain=domain), p.embedder, config,
                   store=p.store if setting == "open" else None)

    return build


_VARIANTS: dict[str, tuple[Literal["open", "gold"], IMRAGConfig]] = {
    "imrag": ("open", IMRAGConfig()),
    "imrag-gold": ("gold", IMRAGConfig()),
    # Table 3 ablations (open setting, as the paper's HotpotQA runs)
    "imrag-no-refiner": ("open", IMRAGConfig(refiner=False)),
    "imrag-no-answerer": ("open", IMRAGConfig(answerer=False)),
}
IMRAG_FACTORIES: dict[str, MethodFactory] = {
    name: _factory(name, setting, config) for name, (setting, config) in _VARIANTS.items()}
