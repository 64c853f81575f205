"""SeaKR: self-aware knowledge retrieval (Yao et al., arXiv 2406.19215; `THU-KEG/SeaKR`).

Per question, an IRCoT-style loop generates one rationale sentence at a time:

1. **Self-aware retrieval** (§3.2): pseudo-generate the next step from the question, the
   rationale buffer R and the knowledge buffer K; if U(c) > δ (or the step is empty),
   build a query from the words the model was sure of and retrieve.
2. **Self-aware re-ranking** (§3.3): for each of the top N = 3 new passages, generate the
   step with K + that passage and keep the passage (and its step) with the lowest U.
3. Stop on "So the answer is", at 7 steps, at 5 passages, or when the query repeats or
   brings nothing new.
4. **Self-aware reasoning** (§3.4): answer once from the rationales and once from all of K
   with CoT; keep the answer whose generation had the lower U. No answer marker → forced
   completion (" So the answer is"); still nothing → the method fails (empty answer).

Prompts are raw text (official `SEAKR/dataset.py`): `prompts/seakr_exemplars.txt` (10
IRCoT-style exemplars written for kgrag, none from an evaluation set) and
`prompts/seakr_step.txt`. Every constant is in `SeakrConfig`.

Where this port departs from the paper / official code, and why:
- U reads `ffn_out-<n_layers // 2>` (the paper's l = L/2; the code's layer 15 of 32 is the
  FFN output before the residual add, kept) of the GGUF model, with kgrag's own seeded
  top-k/top-p sampler instead of vLLM's; the greedy step shares the samples' batch.
- Rationale strategy: the official code's (rationales as the numbered context, one line
  of CoT), not Appendix D.3's "steps. So the answer is" continuation, whose U would
  measure a short answer span and so not compare with the knowledge strategy's CoT U.
  Both strategies stop at "\n" (D.3) and are scored by their unforced CoT's U.
- Forced completion appends " So the answer is" after the generated CoT (DRAGIN's rule;
  the official code appends it to the bare prompt), at most 20 tokens.
- The answer is the first "the answer is …" up to the end of its sentence (the official
  regex stops at the first comma and lower-cases).
- Query words: a closed-class word list instead of spaCy's POS tags (`text.py`); the
  query keeps its last 64 words (the official retriever: its last 64 tokens).
- The prompt does not end with a space (BPE tokenizers handle a trailing space badly).
- δ = -6 is LLaMA-2-7B's; `calibrate.py` fits δ per model on CommonsenseQA train.

    seakr = SeaKR(model, retriever)             # model: LlamaCppModel (hidden states)
    seakr.answer(Question(id="q", text="Who directed the film Psycho?")).answer
    # -> 'Alfred Hitchcock'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

from kgrag.answers import clean_answer
from kgrag.errors import ModelError
from kgrag.llm.base import Capabilities, ChatModel
from kgrag.method import Answer, QAMethod, Trace, named
from kgrag.prompt import PromptTemplate, package_prompt
from kgrag.types import Passage, Question
from textrag.retrieval import Retriever
from textrag.seakr.text import build_query, content_words, drop_answer_sentences, seakr_answer
from textrag.seakr.uncertainty import (
    ChatModelSeakrEngine,
    LlamaSeakrEngine,
    SeakrEngine,
    StepOutput,
    UncertaintyConfig,
)

if TYPE_CHECKING:
    from kgrag.platform import MethodFactory, Platform
    from kgrag.store import GraphStore

Reasoning = Literal["self-aware", "rationales", "knowledge"]

RetrieverSource = Retriever | Callable[[Question], Retriever]

BASE_STOPS = ("\n\n", "\nQuestion:", "\nContext")


@dataclass(frozen=True)
class SeakrConfig:
    """SeaKR's constants (official README and `main_multihop.py` unless noted).

    >>> SeakrConfig(threshold=-2.5, rerank=False).top_n
    3
    """

    threshold: float = -6.0  # δ: retrieve when U > δ (LLaMA-2-7B); calibrate per model
    top_n: int = 3  # N passages re-ranked per retrieval
    max_steps: int = 7
    max_docs: int = 5
    n_shot: int = 10
    prob_threshold: float = 0.1  # a query word needs max(1 - p) <= this over its tokens
    max_query_words: int = 64
    forced_max_tokens: int = 20  # " So the answer is" completion (DRAGIN / simple-QA code)
    self_aware_retrieval: bool = True  # False: retrieve at every step (Table 3 "- S.A. Ret.")
    rerank: bool = True  # False: take the search engine's top new passage ("- S.A. Re-rank")
    reasoning: Reasoning = "self-aware"  # or "rationales" / "knowledge" only (Table 3)
    doc_titles: bool = False  # the official index returns the passage text without title
    uncertainty: UncertaintyConfig = field(default_factory=UncertaintyConfig)


@dataclass(frozen=True)
class FinalAnswer:
    """One self-aware reasoning strategy's outcome."""

    strategy: str
    answer: str | None
    uncertainty: float | None
    text: str
    forced: bool

    @property
    def usable(self) -> bool:
        return self.answer is not None and "unknown" not in self.answer.lower()

    def record(self) -> dict[str, object]:
        return {"answer": self.answer, "uncertainty": self.uncertainty, "cot": self.text,
                "forced": self.forced}


@dataclass
class _Buffers:
    """R (rationale steps with their U) and K (selected passages), plus search state."""

    steps: list[str] = field(default_factory=list)
    step_u: list[float | None] = field(default_factory=list)
    docs: list[Passage] = field(default_factory=list)
    queries: set[str] = field(default_factory=set)
    retrievals: int = 0


class SeaKR(QAMethod):
    """SeaKR on a model that exposes logprobs, parallel samples and hidden states.

    `retriever` is a `Retriever` or a question → retriever function (the gold setting);
    `engine` defaults to the batched EOS-trick engine for a `LlamaCppModel`.

        SeaKR(platform.chat_model, retriever_for(platform, "open"),
              SeakrConfig(threshold=-2.5)).answer(question).trace[0].data["uncertainty"]
        # -> -2.97
    """

    name: ClassVar[str] = "seakr"
    needs: ClassVar[Capabilities] = Capabilities(logprobs=True, parallel_samples=True,
                                                 hidden_states=True)

    def __init__(self, model: ChatModel, retriever: RetrieverSource,
                 config: SeakrConfig | None = None, engine: SeakrEngine | None = None,
                 layer: int | None = None, *, store: GraphStore | None = None) -> None:
        super().__init__(model, store)  # refuses a backend without the capabilities
        self.config = config or SeakrConfig()
        self.retriever = retriever
        self.engine = engine or default_engine(model, self.config.uncertainty, layer,
                                               prefix=exemplar_prefix(self.config.n_shot))

    def prompt(self, question: str, steps: list[str], context: list[str]) -> str:
        return render_prompt(question, steps, context, self.config.n_shot)

    def _doc(self, p: Passage) -> str:
        return f"{p.title} {p.text}" if self.config.doc_titles and p.title else p.text

    # ------------------------------------------------------------------ answer
    def _answer(self, question: Question, trace: Trace) -> Answer:
        retriever = _bind(self.retriever, question)
        q = question.text.replace(".", " ")  # official preprocessing (`reasoner.py:22`)
        buf = _Buffers()
        self._reason(q, retriever, buf, trace)
        final = self._conclude(q, buf, trace)
        return Answer(text=final, evidence=[f"{p.title}: {p.text}" if p.title else p.text
                                            for p in buf.docs],
                      retrievals=buf.retrievals, setting=retriever.setting)

    def _reason(self, q: str, retriever: Retriever, buf: _Buffers, trace: Trace) -> None:
        cfg = self.config
        while True:
            stops = _step_stops(bool(buf.steps))
            prompt = self.prompt(q, buf.steps, [self._doc(p) for p in buf.docs])
            direct = self.engine.generate(prompt, stops, uncertainty=cfg.self_aware_retrieval)
            answered = seakr_answer(direct.text) is not None  # official: before the U test
            retrieve = not answered and (
                not direct.text.strip() or not cfg.self_aware_retrieval
                or (direct.uncertainty is not None and direct.uncertainty > cfg.threshold))
            decision = "answer, stop" if answered else "retrieve" if retrieve else "keep"
            trace.add("step", f"U={_fmt(direct.uncertainty)} vs δ={cfg.threshold}: {decision}"
                      f" | {direct.text.strip()}",
                      step=len(buf.steps) + 1, text=direct.text, uncertainty=direct.uncertainty,
                      threshold=cfg.threshold, retrieve=retrieve, decision=decision,
                      samples_used=direct.vectors_used, seconds=round(direct.seconds, 3))
            if answered:
                self._push(buf, direct)
                break
            if retrieve:
                step = self._retrieve_step(q, retriever, buf, direct, trace)
                if step is None:
                    break
                self._push(buf, step)
                if seakr_answer(step.text) is not None:
                    break
            else:
                self._push(buf, direct)
            if len(buf.steps) >= cfg.max_steps or len(buf.docs) >= cfg.max_docs:
                trace.add("limit", f"{len(buf.steps)} steps, {len(buf.docs)} passages",
                          steps=len(buf.steps), docs=len(buf.docs))
                break

    @staticmethod
    def _push(buf: _Buffers, out: StepOutput) -> None:
        buf.steps.append(out.text.strip())
        buf.step_u.append(out.uncertainty)

    def _retrieve_step(self, q: str, retriever: Retriever, buf: _Buffers, direct: StepOutput,
                       trace: Trace) -> StepOutput | None:
        """Query → top-N search → self-aware re-ranking; None ends the loop."""
        cfg = self.config
        previous = buf.steps[-1] if buf.steps else ""
        query = (build_query(direct.tokens, q, previous, cfg.prob_threshold, cfg.max_query_words)
                 if direct.text.strip() else " ".join(content_words(q)))
        if query in buf.queries:
            trace.add("retrieve", f"query repeated, stop: {query}", query=query, stop=True)
            return None
        buf.queries.add(query)
        hits = retriever.search(query, cfg.top_n)
        buf.retrievals += 1
        used = {p.id for p in buf.docs}
        new = [h for h in hits if h.passage.id not in used]
        if not new:
            trace.add("retrieve", f"nothing new for: {query}", query=query, stop=True,
                      hits=[h.passage.id for h in hits])
            return None
        if not cfg.rerank:
            new = new[:1]
        steps_stop = _step_stops(bool(buf.steps))
        outs = []
        for h in new:
            context = [self._doc(p) for p in buf.docs] + [self._doc(h.passage)]
            outs.append(self.engine.generate(self.prompt(q, buf.steps, context), steps_stop,
                                             uncertainty=cfg.rerank))
        best = min(range(len(new)), key=lambda i: outs[i].u_or_inf)  # first wins ties
        buf.docs.append(new[best].passage)
        trace.add("retrieve", f"{query} → {new[best].passage.title or new[best].passage.id}",
                  query=query, chosen=new[best].passage.id, candidates=[
                      {"id": h.passage.id, "title": h.passage.title, "rank": h.rank,
                       "score": h.score, "uncertainty": o.uncertainty, "step": o.text}
                      for h, o in zip(new, outs, strict=True)])
        return outs[best]

    # ------------------------------------------------------------------ reasoning
    def _conclude(self, q: str, buf: _Buffers, trace: Trace) -> str:
        mode = self.config.reasoning
        need_u = mode == "self-aware"
        rationale = knowledge = None
        if mode in ("self-aware", "rationales"):
            steps = list(buf.steps)
            if steps:
                steps[-1] = drop_answer_sentences(steps[-1])
                if not steps[-1]:
                    steps.pop()
            rationale = self._final("rationales", q, steps, need_u)
        if mode in ("self-aware", "knowledge"):
            knowledge = self._final("knowledge", q, [self._doc(p) for p in buf.docs], need_u)
        chosen = _choose(rationale, knowledge)
        trace.add("reason", f"{chosen.strategy}: {chosen.answer}" if chosen else "fail",
                  rationales=rationale.record() if rationale else None,
                  knowledge=knowledge.record() if knowledge else None,
                  chosen=chosen.strategy if chosen else None,
                  step_uncertainties=buf.step_u)
        return chosen.answer or "" if chosen else ""

    def _final(self, strategy: str, q: str, context: list[str], need_u: bool) -> FinalAnswer:
        """CoT over `context` (stop at the line's end); forced completion if no answer."""
        stops = (*BASE_STOPS, "\n")
        prompt = self.prompt(q, [], context)
        out = self.engine.generate(prompt, stops, uncertainty=need_u)
        answer = seakr_answer(out.text)
        if answer is not None:
            return FinalAnswer(strategy, answer, out.uncertainty, out.text, forced=False)
        forced = self.engine.generate(prompt + out.text.rstrip() + " So the answer is", stops,
                                      uncertainty=False, max_tokens=self.config.forced_max_tokens)
        return FinalAnswer(strategy, clean_answer(forced.text), out.uncertainty,
                           f"{out.text.rstrip()} So the answer is{forced.text}", forced=True)


def _choose(rationale: FinalAnswer | None, knowledge: FinalAnswer | None) -> FinalAnswer | None:
    """Official `compare_answer`: an unusable side loses; else the lower U wins (ties and a
    missing U go to the knowledge answer, as `<` in the official code)."""
    if rationale is None or not rationale.usable:
        if knowledge is not None and knowledge.answer is not None:
            return knowledge
        return rationale if rationale is not None and rationale.answer is not None else None
    if knowledge is None or not knowledge.usable:
        return rationale
    if rationale.uncertainty is not None and knowledge.uncertainty is not None \
            and rationale.uncertainty < knowledge.uncertainty:
        return rationale
    return knowledge


def _step_stops(has_steps: bool) -> tuple[str, ...]:
    """Official `prepare_llm_input`: base stops, "\\n" once steps exist, and ". " so a
    step is one sentence."""
    return (*BASE_STOPS, *(("\n",) if has_steps else ()), ". ")


def _bind(source: RetrieverSource, question: Question) -> Retriever:
    return source if isinstance(source, Retriever) else source(question)


def _fmt(u: float | None) -> str:
    return "n/a" if u is None else f"{u:.3f}"


def render_prompt(question: str, steps: list[str], context: list[str], n_shot: int = 10
                  ) -> str:
    """SeaKR's raw prompt (official `Dataset.__call__`): exemplars, optional numbered
    context, the question, and the steps so far (their inner full stops removed, each
    ended by one). Unlike the official prompt it does not end in a space, which BPE
    tokenizers handle badly; the model writes the space itself."""
    block = ""
    if context:
        block = "Context: " + "\n".join(f"[{i}] {d}" for i, d in enumerate(context, 1)) + "\n"
    done = "".join(f" {s.replace('.', '').strip()}." for s in steps)
    messages = _step_template().render(exemplars=_exemplars(n_shot), context=block,
                                       question=question, steps=done)
    return messages[-1].content


@lru_cache(maxsize=1)
def _step_template() -> PromptTemplate:
    return package_prompt(__file__, "seakr_step")


@lru_cache(maxsize=4)
def _exemplars(n_shot: int) -> str:
    """The first `n_shot` demonstrations of `prompts/seakr_exemplars.txt` (blank-line
    separated, "Question: …\nAnswer: step. step. So the answer is …." as in the official
    `demo_template`)."""
    text = (Path(__file__).resolve().parent / "prompts" / "seakr_exemplars.txt").read_text(
        encoding="utf-8")
    demos = [d.strip() for d in text.strip().split("\n\n") if d.strip()]
    if len(demos) < n_shot:
        raise ValueError(f"seakr_exemplars.txt has {len(demos)} exemplars; n_shot={n_shot}")
    return "\n\n".join(demos[:n_shot])


def exemplar_prefix(n_shot: int) -> str:
    """The start every SeaKR prompt shares (its KV cells are computed once per engine)."""
    return _exemplars(n_shot) + "\n\n"


def default_engine(model: ChatModel, config: UncertaintyConfig, layer: int | None = None,
                   prefix: str | None = None) -> SeakrEngine:
    """The batched EOS-trick engine for the llama.cpp model; the protocol engine otherwise."""
    from kgrag.llm.llama import LlamaCppModel
    from kgrag.llm.replay import unwrapped

    model = unwrapped(model)  # the engine's own decode loops are never replayed
    if isinstance(model, LlamaCppModel):
        return LlamaSeakrEngine(model, replace(config, layer=layer) if layer is not None
                                else config, prefix=prefix)
    chosen = layer if layer is not None else config.layer
    if chosen is None:
        raise ModelError(f"SeaKR needs a layer index for the {model.name!r} backend",
                         hint="pass layer= (the middle layer, n_layers // 2)")
    return ChatModelSeakrEngine(model, chosen, config)


# ---------------------------------------------------------------------- registration


def _factory(name: str, setting: Literal["open", "gold"], base: SeakrConfig | None = None
             ) -> MethodFactory:
    """A factory for the method registry; δ comes from `kgrag calibrate seakr` when that
    has been run for the configured model, else the paper's -6.0 (logged)."""

    def build(p: Platform, domain: str | None) -> QAMethod:
        from textrag.seakr.calibrate import calibrated_threshold
        from textrag.setting import retriever_for

        config = base or SeakrConfig()
        threshold = calibrated_threshold(p.settings.home, p.settings.model.chat, config)
        if threshold is not None:
            config = replace(config, threshold=threshold)
        cls = named(SeaKR, name)
        return cls(p.chat_model, retriever_for(p, setting, domain=domain), config,
                   store=p.store if setting == "open" else None)

    return build


_VARIANTS: dict[str, tuple[Literal["open", "gold"], SeakrConfig]] = {
    "seakr": ("open", SeakrConfig()),
    "seakr-gold": ("gold", SeakrConfig()),
    # Table 3 ablations (open setting, as in the paper)
    "seakr-no-sa-retrieval": ("open", SeakrConfig(self_aware_retrieval=False)),
    "seakr-no-sa-rerank": ("open", SeakrConfig(rerank=False)),
    "seakr-rationales-only": ("open", SeakrConfig(reasoning="rationales")),
    "seakr-knowledge-only": ("open", SeakrConfig(reasoning="knowledge")),
}
SEAKR_FACTORIES: dict[str, MethodFactory] = {
    name: _factory(name, setting, config) for name, (setting, config) in _VARIANTS.items()}
