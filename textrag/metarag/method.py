"""MetaRAG: metacognitive retrieval-augmented generation (Zhou et al., WWW 2024).

Cognition answers from references; metacognition then runs monitor → evaluate → plan
(after the paper, its official code `ignorejjj/MetaRAG` and the LangGraph write-up in
`shared/papers/004`):

- **Monitor.** An expert reader gives its own answer; the same chat model acts as a strict
  extractive reader (`prompts/metarag_expert.txt`: copy the shortest answering span from
  the references, or "unknown"), standing in for the paper's fine-tuned T5/SpanBERT
  reader. If cos(embed(expert), embed(answer)) > threshold (0.3, the official default),
  the answer is accepted.
- **Evaluate.** One constrained-JSON critique (`prompts/metarag_evaluate.txt`) judges
  internal sufficiency (could the model answer from its own knowledge?), external
  sufficiency (do the references hold what is needed?) and the error types
  incomplete_reasoning, answer_redundancy, misread_question, and proposes a sub-query.
- **Plan.** insufficient_knowledge (neither) → retrieve with the sub-query and add the new
  passages; internal_knowledge_only, external_knowledge_only, reasoning_error → a writing
  directive (`prompts/metarag_directives.txt`) for the next answer; the critic's feedback
  goes with it.

It stops when the monitor accepts, after 3 rounds, or when two consecutive answers'
token sets have Jaccard similarity ≥ 0.85. As in the official code, a new answer replaces
the current one only if it is usable (not "unknown", at most 10 words).

Bad replies (the policy): JSON is constrained by `json_schema`; an answer or expert reply
that still fails validation is used as raw text (traced `parsed: false`); a diagnosis that
fails falls back to `reasoning_error` with no error types (the write-up's heuristic
fallback), traced too.

    MetaRAG(model, retriever_for, embedder).answer(question).answer
    # -> 'Greenwich Village, New York City'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import BaseModel, Field, ValidationError

from kgrag.embed import Embedder
from kgrag.llm.base import Capabilities, ChatModel, GenerationParams
from kgrag.method import Answer, QAMethod, Trace
from kgrag.prompt import package_prompt
from kgrag.types import Passage, Question
from textrag.retrieval import Retriever
from textrag.retrievers import RetrieverFor

if TYPE_CHECKING:
    from kgrag.platform import MethodFactory, Platform
    from kgrag.store import GraphStore

ErrorType = Literal["incomplete_reasoning", "answer_redundancy", "misread_question"]
Category = Literal["insufficient_knowledge", "internal_knowledge_only",
                   "external_knowledge_only", "reasoning_error"]


# No `maxLength` on strings: llama.cpp unrolls it into a grammar rule per character and
# refuses (then crashes on) a few hundred; `max_tokens` bounds the replies instead.
class AnswerReply(BaseModel):
    reason: str
    answer: str


class ExpertReply(BaseModel):
    answer: str


class Diagnosis(BaseModel):
    """The evaluator-critic's judgement of one answer."""

    internal_sufficient: bool
    external_sufficient: bool
    errors: list[ErrorType] = Field(default_factory=list, max_length=3)
    feedback: str = ""
    sub_query: str = ""

    @property
    def category(self) -> Category:
        if not self.internal_sufficient and not self.external_sufficient:
            return "insufficient_knowledge"
        if not self.external_sufficient:
            return "internal_knowledge_only"
        if not self.internal_sufficient:
            return "external_knowledge_only"
        return "reasoning_error"


@dataclass(frozen=True)
class MetaRAGConfig:
    """MetaRAG's constants (official `main.py`, the write-up's defaults)."""

    ref_num: int = 5  # passages per search (paper and `main.py`; the README run uses 3)
    monitor_threshold: float = 0.3  # accept when similarity > this (official; paper 0.4)
    max_rounds: int = 3  # monitor → evaluate → plan rounds (`max_iter`, write-up)
    convergence: float = 0.85  # Jaccard of consecutive answers' token sets (write-up)
    max_answer_words: int = 10  # official `check_answer`
    answer_tokens: int = 384
    judge_tokens: int = 256


@dataclass(frozen=True)
class Plan:
    category: Category
    directive: str
    sub_query: str | None


def jaccard(a: str, b: str) -> float:
    """|A ∩ B| / |A ∪ B| of the lower-cased word sets (two empty answers: 1.0).

    >>> jaccard("New York City", "new york")
    0.6666666666666666
    """
    sa, sb = set(re.findall(r"\w+", a.lower())), set(re.findall(r"\w+", b.lower()))
    return 1.0 if not sa and not sb else len(sa & sb) / len(sa | sb)


def usable(answer: str, max_words: int = 10) -> bool:
    """Official `check_answer`: not "unknown"/"can't determine", and short."""
    low = answer.lower()
    return bool(answer.strip()) and "unknown" not in low and "can't determin" not in low \
        and len(answer.split()) <= max_words


@lru_cache(maxsize=1)
def directives() -> dict[str, str]:
    """The writing directives, by category or error type (`prompts/metarag_directives.txt`)."""
    text = (Path(__file__).resolve().parent / "prompts" / "metarag_directives.txt").read_text(
        encoding="utf-8")
    parts = re.split(r"^## (\w+)\s*$", text, flags=re.MULTILINE)
    return {parts[i]: parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}


def plan(diagnosis: Diagnosis, question: str) -> Plan:
    """The remediation for a diagnosis: re-retrieval for missing knowledge, a directive
    otherwise (error-specific for reasoning errors, step-by-step when none is named)."""
    d = directives()
    category = diagnosis.category
    if category == "insufficient_knowledge":
        return Plan(category, d[category], diagnosis.sub_query.strip() or question)
    if category == "reasoning_error" and diagnosis.errors:
        return Plan(category, " ".join(d[e] for e in dict.fromkeys(diagnosis.errors)), None)
    return Plan(category, d[category], None)


@dataclass
class _State:
    """One question's loop: the references so far, the latest and the adopted answer."""

    retriever: Retriever
    refs: list[Passage]
    reply: AnswerReply
    final: str
    retrievals: int = 1
    expert_refs: list[str] | None = None  # the refs the expert answer was read from
    expert: str = ""


class MetaRAG(QAMethod):
    """Answer with references, then monitor → evaluate → plan for up to 3 rounds.

        pred = MetaRAG(model, GoldContextRetriever.for_question, embedder).answer(question)
        [s.data["action"]["category"] for s in pred.trace if s.stage == "round"]
        # -> ['insufficient_knowledge']
    """

    name: ClassVar[str] = "metarag"
    needs: ClassVar[Capabilities] = Capabilities(json_schema=True)

    def __init__(self, model: ChatModel, retriever_for: RetrieverFor | Retriever,
                 embedder: Embedder, config: MetaRAGConfig | None = None, *,
                 store: GraphStore | None = None) -> None:
        super().__init__(model, store)
        self.retriever_for = retriever_for
        self.embedder = embedder
        self.config = config or MetaRAGConfig()

    def _answer(self, question: Question, trace: Trace) -> Answer:
        cfg, q = self.config, question.text
        r = self.retriever_for if isinstance(self.retriever_for, Retriever) \
            else self.retriever_for(question)
        refs = [h.passage for h in r.search(q, cfg.ref_num)]
        trace.add("retrieve", q, query=q, passages=[p.id for p in refs])
        reply = self._respond(q, refs, guidance="")
        trace.add("answer", reply.answer, round=0, reason=reply.reason)
        st = _State(r, refs, reply, final=reply.answer)
        for round_no in range(1, cfg.max_rounds + 1):
            monitor = self._monitor(q, st)
            if monitor["accept"]:
                trace.add("monitor", f"accepted ({monitor['similarity']:.2f} > "
                          f"{cfg.monitor_threshold})", round=round_no, **monitor)
                break
            if self._remediate(q, st, monitor, round_no, trace):
                break
        else:
            trace.add("stop", f"round limit ({cfg.max_rounds})", round=cfg.max_rounds)
        return Answer(text=st.final, evidence=[f"{p.title}: {p.text}" if p.title else p.text
                                               for p in st.refs],
                      retrievals=st.retrievals, setting=r.setting)

    def _monitor(self, q: str, st: _State) -> dict[str, object]:
        """Compare the answer with the expert reader's (re-read only when refs changed)."""
        ids = [p.id for p in st.refs]
        if st.expert_refs != ids:
            st.expert_refs, st.expert = ids, self._expert(q, st.refs)
        sim = self._similarity(st.expert, st.reply.answer)
        return {"expert": st.expert, "similarity": sim,
                "threshold": self.config.monitor_threshold,
                "accept": sim > self.config.monitor_threshold}

    def _remediate(self, q: str, st: _State, monitor: dict[str, object], round_no: int,
                   trace: Trace) -> bool:
        """Evaluate → plan → act → answer again; True when the answers have converged."""
        cfg = self.config
        diagnosis, parsed = self._evaluate(q, st.refs, st.reply)
        action = plan(diagnosis, q)
        new_ids: list[str] = []
        if action.sub_query is not None:
            seen = {p.id for p in st.refs}
            new = [h.passage for h in st.retriever.search(action.sub_query, cfg.ref_num)
                   if h.passage.id not in seen]
            st.retrievals += 1
            st.refs, new_ids = st.refs + new, [p.id for p in new]
        previous = st.reply
        # The official code shows the critic's feedback as "mistakes" unless the critic
        # judged the answer correct; here: unless it found neither a gap nor an error.
        found_nothing = action.category == "reasoning_error" and not diagnosis.errors
        feedback = "" if found_nothing else diagnosis.feedback
        st.reply = self._respond(q, st.refs, _guidance(action.directive, feedback))
        if usable(st.reply.answer, cfg.max_answer_words):
            st.final = st.reply.answer
        overlap = jaccard(previous.answer, st.reply.answer)
        trace.add("round", f"{action.category}: {st.reply.answer}", round=round_no,
                  monitor=monitor, diagnosis=diagnosis.model_dump(), parsed=parsed,
                  action={"category": action.category, "directive": action.directive,
                          "sub_query": action.sub_query, "new_passages": new_ids},
                  answer=st.reply.answer, reason=st.reply.reason,
                  adopted=st.final == st.reply.answer, jaccard=overlap)
        if overlap >= cfg.convergence:
            trace.add("stop", f"converged (Jaccard {overlap:.2f} >= {cfg.convergence})",
                      round=round_no, jaccard=overlap)
            return True
        return False

    # ------------------------------------------------------------------ LLM roles
    def _respond(self, question: str, refs: list[Passage], guidance: str) -> AnswerReply:
        text = self._json("metarag_answer", AnswerReply, self.config.answer_tokens,
                          question=question, references=_references(refs), guidance=guidance)
        try:
            return AnswerReply.model_validate_json(text)
        except ValidationError:
            return AnswerReply(reason="(unparsed reply)", answer=text.strip()[:200])

    def _expert(self, question: str, refs: list[Passage]) -> str:
        text = self._json("metarag_expert", ExpertReply, self.config.judge_tokens,
                          question=question, references=_references(refs))
        try:
            return ExpertReply.model_validate_json(text).answer
        except ValidationError:
            return text.strip()[:200]

    def _evaluate(self, question: str, refs: list[Passage], reply: AnswerReply
                  ) -> tuple[Diagnosis, bool]:
        text = self._json("metarag_evaluate", Diagnosis, self.config.judge_tokens,
                          question=question, references=_references(refs),
                          reason=reply.reason, answer=reply.answer)
        try:
            return Diagnosis.model_validate_json(text), True
        except ValidationError:
            return Diagnosis(internal_sufficient=True, external_sufficient=True), False

    def _json(self, prompt: str, schema: type[BaseModel], max_tokens: int,
              **fields: object) -> str:
        messages = package_prompt(__file__, prompt).render(**fields)
        return self.model.chat(messages, GenerationParams(
            max_tokens=max_tokens, json_schema=_reply_schema(schema))).text

    def _similarity(self, expert: str, answer: str) -> float:
        if not expert.strip() or not answer.strip():
            return 0.0
        v = self.embedder.embed([expert, answer])
        return float(v[0] @ v[1])


@lru_cache(maxsize=8)
def _reply_schema(model: type[BaseModel]) -> dict[str, object]:
    """The model's JSON schema with every property required, so that the constrained
    reply always carries all fields (defaults only serve the fallback diagnosis)."""
    schema = model.model_json_schema()
    schema["required"] = list(schema["properties"])
    return schema


def _references(refs: list[Passage]) -> str:
    """Numbered references, "title -- text" as the official `WikiSearcher`."""
    return "\n".join(f"[{i}] {p.title} -- {p.text}" if p.title else f"[{i}] {p.text}"
                     for i, p in enumerate(refs, 1)) or "(none)"


def _guidance(directive: str, feedback: str) -> str:
    """The official re-answer injection: suggestions to follow, mistakes to avoid."""
    lines = [f"Here are some suggestions you need to follow: {directive}"]
    if feedback.strip():
        lines.append(f"Here are some mistakes you may have made: {feedback.strip()}")
    return "\n" + "\n".join(lines) + "\n"


def _factory(name: str, setting: Literal["open", "gold"]) -> MethodFactory:
    def build(p: Platform, domain: str | None) -> QAMethod:
        from kgrag.method import named
        from textrag.setting import retriever_for

        cls = named(MetaRAG, name)
        return cls(p.chat_model, retriever_for(p, setting, domain=domain), p.embedder,
                   store=p.store if setting == "open" else None)

    return build


METARAG_FACTORIES: dict[str, MethodFactory] = {
    "metarag": _factory("metarag", "open"),
    "metarag-gold": _factory("metarag-gold", "gold"),
}
