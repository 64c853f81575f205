"""What every KG method shares: the domain, concepts, entity matching, the evidence step
and answer generation. Subclasses implement only `_retrieve` (how evidence is found).

    question ─ ExtractConcepts (LLM, JSON) ─ embed Q and concepts ─ MatchEntities
             ─ _retrieve(...) → triples ─ "Evidence i: h r t" ─ GenerateAnswer (LLM)

Trace steps: `domain` (first question only), `concepts`, `match`, the subclass's steps,
`evidence`, `generate`. Each step's data carries the LLM calls and Cypher round trips
spent since the previous step (`llm_calls`, `cypher_queries`, `cypher_ms`).

    m = MetaKGRAG(model, CypherBackend(store, embedder), domain="commonsense")
    m.answer(question).trace[-2].data["lines"]
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from kgrag import clock
from kgrag.answers import completion_answer, has_answer, reply_answer, runs_on
from kgrag.errors import KgragError
from kgrag.llm.base import (
    Capabilities,
    ChatModel,
    Generation,
    GenerationParams,
    Message,
    chat_stream,
)
from kgrag.method import Answer, QAMethod, Trace
from kgrag.prompt import package_prompt
from kgrag.reader import Choice, Render
from kgrag.store import GraphStore
from kgrag.types import Question
from metakg.anchored import AnchoredSearch
from metakg.backend import DomainInfo, GraphBackend, QuestionGraph, concept_name, label
from metakg.config import MetaKGConfig
from metakg.cycle import match_entities, normalise_concepts
from metakg.graph import Triple
from metakg.neo4j_source import browser_query
from metakg.provenance import (
    PASSAGE_WORDS,
    Budget,
    SourceSentence,
    source_passages,
    source_sentences,
    with_sources,
)
from metakg.replies import (
    Asked,
    Attempt,
    ConceptsReply,
    ReplyError,
    ask_json,
    concepts_schema,
    json_params,
    parse_json,
)
from metakg.trace import EvidenceView, MatchView, render_evidence

log = logging.getLogger(__name__)
NO_EVIDENCE = "No facts from the knowledge graph matched this question."
# Question.meta key: the knowledge-source document a calibration question comes from
# (`eval.trust`); option-anchored paths then skip the facts built only from it.
SOURCE_DOCUMENT = "source_document"


class Meter:
    """LLM and Cypher usage since the last `take()`, for per-stage trace data."""

    def __init__(self, model: ChatModel, store: GraphStore | None) -> None:
        self.model, self.store = model, store
        self._mark = self._now()

    def _now(self) -> tuple[int, float, int, float]:
        u = self.model.usage
        s = self.store.stats if self.store else None
        return (u.calls, u.seconds, s.queries if s else 0, s.seconds if s else 0.0)

    def llm_seconds(self) -> float:
        return self.model.usage.seconds

    def cypher_seconds(self) -> float:
        return self.store.stats.seconds if self.store else 0.0

    def take(self) -> dict[str, Any]:
        now, mark = self._now(), self._mark
        self._mark = now
        return {"llm_calls": now[0] - mark[0], "llm_seconds": round(now[1] - mark[1], 3),
                "cypher_queries": now[2] - mark[2],
                "cypher_ms": round(1000 * (now[3] - mark[3]), 1)}


@dataclass
class Context:
    """One question on its way through a KG method."""

    question: Question
    domain: str
    concepts: tuple[str, ...]  # concept names in `graph.sim` (see `concept_name`)
    graph: QuestionGraph
    trace: Trace
    meter: Meter
    retrievals: int = 0
    choice: Choice | None = None  # the multiple-choice reading, once answered
    anchored: AnchoredSearch | None = None  # metakgrag-oa's per-option paths


@dataclass(frozen=True)
class Gathered:
    """What a KG method found for one question before it answers (`KGMethod.gather`)."""

    ctx: Context
    triples: list[Triple]  # stored orientation, entity keys
    lines: list[str]  # "Evidence i: h r t", as the answer prompt shows them
    starts: tuple[str, ...]
    retrieval_ms: float  # without the LLM
    backed: tuple[SourceSentence, ...] = ()  # the facts' source sentences, if shown


class KGMethod(QAMethod):
    """Base of the graph methods; see the module docstring.

    `domain` may be fixed here or come with each question (`Question.domain`); one of
    the two is required, and they must agree. The domain is checked once per instance.
    """

    needs: ClassVar[Capabilities] = Capabilities(json_schema=True)
    llm_in_retrieval: ClassVar[bool] = False  # True: `_retrieve` asks the model (ToG)
    answer_tokens: ClassVar[dict[bool, int]] = {True: 128, False: 320}  # by is-MCQ

    def __init__(self, model: ChatModel, backend: GraphBackend, domain: str | None = None,
                 config: MetaKGConfig | None = None) -> None:
        super().__init__(model, backend.store)
        self.backend, self.domain = backend, domain
        self.config = config or MetaKGConfig()
        self._checked: dict[str, DomainInfo] = {}

    def prepare(self, domain: str | None) -> None:
        """The domain graph is queryable (`GraphBackend.check`; not cached, so the first
        question's trace still records the domain step)."""
        name = self.domain or domain
        if name:
            self.backend.check(name)

    # ------------------------------------------------------------------ the template
    def _answer(self, question: Question, trace: Trace) -> Answer:
        found = self.gather(question, trace)
        text = self._generate(found.ctx, "\n".join(found.lines) if found.lines else NO_EVIDENCE)
        return Answer(text=text, evidence=found.lines, retrievals=found.ctx.retrievals,
                      setting="kg" if found.triples else "kg-none")

    def gather(self, question: Question, trace: Trace,
               concepts: Sequence[str] | None = None) -> Gathered:
        """Everything before GenerateAnswer: domain check, ExtractConcepts (skipped when
        `concepts` are given, e.g. from `extract_concepts_many`), MatchEntities, the
        subclass's retrieval and the evidence step. `kgrag evidence` calls this alone."""
        meter = Meter(self.model, self.store)
        domain = self._domain(question, trace, meter)
        if concepts is None:
            concepts = self._concepts(question, domain, trace, meter)
        else:
            concepts = normalise_concepts(list(concepts), self.config.max_concepts)
            trace.add("concepts", f"{len(concepts)} concepts (given): "
                      f"{', '.join(concepts) or '(none)'}", concepts=list(concepts),
                      given=True, **meter.take())
        start, llm0, cy0 = clock.now(), meter.llm_seconds(), meter.cypher_seconds()
        own = question.meta.get(SOURCE_DOCUMENT)  # a calibration question's own record
        graph = self.backend.open(domain, embedding_text(question),
                                  self.perceived(question, concepts),
                                  exclude_documents=(own,) if own else ())
        ctx = Context(question, domain, tuple(concept_name(c) for c in concepts), graph, trace,
                      meter)
        starts = self._match(ctx)
        triples = self._retrieve(ctx, starts) if starts else []
        retrieval_ms = 1000 * (clock.now() - start - (meter.llm_seconds() - llm0))
        backed = self.backing(ctx, triples)
        self._evidence(ctx, triples, retrieval_ms, 1000 * (meter.cypher_seconds() - cy0),
                       backed)
        lines = render_evidence(triples, graph.name)
        return Gathered(ctx, triples, with_sources(lines, backed) if backed else lines,
                        starts, retrieval_ms, tuple(backed))

    def uses_sources(self, question: Question) -> bool:
        """Whether the evidence carries its source sentences (`MetaKGConfig.
        source_sentences`: auto = for questions without options)."""
        mode = self.config.source_sentences
        return mode == "on" or (mode == "auto" and not question.is_multiple_choice)

    def backing(self, ctx: Context, triples: Sequence[Triple]) -> list[SourceSentence]:
        """The source sentences of `triples` (`metakg.provenance`; one round trip), or none
        when the setting is off for this question or there is no store."""
        if not triples or self.store is None or not self.uses_sources(ctx.question):
            return []
        if self.config.source_unit == "passage":
            return source_passages(self.store, ctx.domain, triples, ctx.question.text,
                                   Budget(max_tokens=self.config.passage_tokens,
                                          max_words=PASSAGE_WORDS))
        return source_sentences(self.store, ctx.domain, triples,
                                Budget(max_tokens=self.config.source_tokens))

    def perceived(self, question: Question, concepts: Sequence[str]) -> tuple[str, ...]:
        """Every concept the question graph embeds: the question's, by default."""
        return tuple(concepts)

    @abstractmethod
    def _retrieve(self, ctx: Context, starts: Sequence[str]) -> list[Triple]:
        """The evidence triples (stored orientation, entity keys) found from `starts`."""

    # ------------------------------------------------------------------ steps
    def _domain(self, question: Question, trace: Trace, meter: Meter) -> str:
        if self.domain and question.domain and question.domain != self.domain:
            raise KgragError(f"question {question.id} is for domain {question.domain!r}, but "
                             f"this {self.name} method was made for {self.domain!r}",
                             hint="make one method per domain, or leave its domain unset")
        domain = self.domain or question.domain
        if not domain:
            raise KgragError(f"{self.name} answers from a domain graph, and none was given",
                             hint="pass --domain (commonsense, medical, legal, …) or set "
                             "Question.domain")
        if domain not in self._checked:
            info = self.backend.check(domain)
            self._checked[domain] = info
            trace.add("domain", f"{domain}: {info.entities:,} entities "
                      f"({info.embedded:,} embedded), {info.facts:,} facts",
                      domain=domain, entities=info.entities, embedded=info.embedded,
                      facts=info.facts, **meter.take())
        return domain

    def _concepts(self, question: Question, domain: str, trace: Trace, meter: Meter
                  ) -> tuple[str, ...]:
        """ExtractConcepts (Alg. 1 line 1). Policy: retry once, then no concepts."""
        cfg = self.config
        asked = ask_concepts(self.model, concept_messages(question, domain, cfg.max_concepts),
                             cfg.max_concepts)
        concepts = normalise_concepts(asked.value.concepts if asked.value else [],
                                      cfg.max_concepts)
        if asked.value is None:
            summary = "no usable concepts after a retry; continuing without concepts"
        else:
            summary = f"{len(concepts)} concepts: {', '.join(concepts) or '(none)'}"
        trace.add("concepts", summary, concepts=list(concepts), **asked.trace(), **meter.take())
        return concepts

    def _match(self, ctx: Context) -> tuple[str, ...]:
        """MatchEntities (Alg. 1 line 2), traced with every concept's nearest entity."""
        g, cfg = ctx.graph, self.config
        if ctx.concepts:
            g.prefetch(ctx.concepts, 1)  # one round trip for all concepts
        starts = match_entities(ctx.concepts, g, cfg)
        views = []
        for c in ctx.concepts:
            hit = list(g.nearest(c, 1))[:1]
            key, s = hit[0] if hit else (None, None)
            views.append(MatchView(concept=label(c), key=key,
                                   name=g.name(key) if key else None,
                                   similarity=round(s, 4) if s is not None else None,
                                   kept=s is not None and s > cfg.tau_entity))
        if starts:
            summary = "start entities: " + ", ".join(g.name(s) for s in starts)
        elif ctx.concepts:
            summary = (f"no entity matched any concept above τ_entity={cfg.tau_entity}; "
                       "answering without KG evidence")
        else:
            summary = "no concepts, so no start entities; answering without KG evidence"
        ctx.trace.add("match", summary, starts=list(starts), tau_entity=cfg.tau_entity,
                      matches=[v.model_dump(mode="json") for v in views], **ctx.meter.take())
        return starts

    def _evidence(self, ctx: Context, triples: list[Triple], retrieval_ms: float,
                  cypher_ms: float, backed: Sequence[SourceSentence] = ()) -> None:
        g = ctx.graph
        keys = sorted({k for t in triples for k in (t.head, t.tail)})
        browser = browser_query(ctx.domain, triples) if self.store and triples else None
        view = EvidenceView(
            triples=[[t.head, t.relation, t.tail] for t in triples],
            lines=render_evidence(triples, g.name), names={k: g.name(k) for k in keys},
            browser_params=browser.params if browser else None,
            browser_query=browser.query if browser else None,
            retrieval_ms=round(retrieval_ms, 1), retrieval_cypher_ms=round(cypher_ms, 1),
            sources=list(backed))
        summary = (f"{len(triples)} evidence triples" if triples else "no KG evidence")
        if backed and backed[0].facts:
            summary += f", {len(backed)} source passages"
        elif backed:
            summary += f", {len(backed)} with their source sentence"
        ctx.trace.add("evidence", f"{summary}; retrieval {retrieval_ms:.0f} ms without the LLM",
                      **view.model_dump(mode="json"), **ctx.meter.take())

    def _generate(self, ctx: Context, evidence: str) -> str:
        """GenerateAnswer (Alg. 1 line 23). Multiple choice: the option read from the
        letter probabilities (`QAMethod.choose`) under `prompts/answer_choose.txt` (ours:
        the paper's Table 7 prompt, `answer_mcq.txt`, asks for the letter and an
        explanation; the letter is read instead, the explanation is optional). Otherwise
        `answer_open.txt` (open-ended answers) or `answer_short.txt` (EM/F1 questions
        such as HotpotQA: the paper has none; the line "So the answer is: …" is the one
        the text methods end with, so every method's short answer is read the same way).
        Both open prompts end with that line, reasoning before it (ours: the paper's
        Table 7 asks for the answer, then an explanation); a reply cut by the token limit
        is marked `cut` in the trace, and one without its answer line gets it completed
        (`_force_answer`)."""
        q = ctx.question
        mcq = q.is_multiple_choice
        if mcq:
            text, ctx.choice = self.choose(q, self.evidence_render(ctx, evidence), ctx.trace,
                                           prompt="answer_choose", context=evidence)
            return text
        name = "answer_short" if q.kind == "short_answer" else "answer_open"
        template = package_prompt(__file__, name)
        messages = template.render(domain=ctx.domain, evidence=evidence, question=q.text,
                                   choices=q.choices_block())
        until = self._until(q, template.name)
        reply = self.model.chat(messages, GenerationParams(max_tokens=self.answer_tokens[mcq],
                                                           until=until))
        text = reply.text.strip()
        cut: dict[str, object] = ({"stopped": "option read"}
                                  if reply.finish_reason == "until" else {})
        if reply.finish_reason == "length":  # marked, in the trace and by `kgrag ask`
            cut = {"cut": True, "max_tokens": self.answer_tokens[mcq]}
        ctx.trace.add("generate", (f"[cut at {self.answer_tokens[mcq]} tokens] " if
                                   cut.get("cut") else "") + text, prompt=template.name,
                      completion_tokens=reply.completion_tokens, **cut, **ctx.meter.take())
        if not has_answer(text) and (reply.finish_reason == "length" or "\n" in text
                                     or len(text.split()) > SHORT_REPLY_WORDS):
            # reasoning without its answer line (a short one-line reply is the answer)
            text = self._force_answer(ctx, evidence, text)
        elif q.kind == "short_answer" and runs_on(reply_answer(text)):
            # ours (kgrag.answers.SHORT_ANSWER_WORDS): an EM/F1 answer line that goes on
            # into a description ("X, a British artist who ...") is completed again
            text = self._force_answer(ctx, evidence, text)
        return text

    def evidence_render(self, ctx: Context, evidence: str) -> Render:
        """The multiple-choice prompt with this evidence, for an options block."""
        return answer_render(ctx.domain, ctx.question, evidence)

    def _force_answer(self, ctx: Context, evidence: str, reasoning: str) -> str:
        """DRAGIN's fallback, as the text methods apply it (`textrag.reasoning.
        forced_answer`): when the reasoning ran out of tokens before "So the answer is",
        ask for the completion of that line (greedy, 20 tokens) and append it."""
        messages = package_prompt(__file__, "answer_forced").render(
            evidence=evidence, question=ctx.question.text, reasoning=reasoning or "(none)")
        reply = self.model.chat(messages, GenerationParams(max_tokens=20))
        text = reply.text.strip()
        answer = completion_answer(text)  # after a marker, or the bare rest of the line
        ctx.trace.add("answer", answer, forced=True, reply=reply.text,
                      completion_tokens=reply.completion_tokens, **ctx.meter.take())
        return f"{reasoning}\nSo the answer is: {answer}"


# a reply without an answer line of more words than this is reasoning, not the answer
SHORT_REPLY_WORDS = 12
CONCEPT_TOKENS = 160
CONCEPT_EXAMPLE = '{"concepts": ["first concept", "second concept"]}'


def concept_messages(question: Question, domain: str, max_concepts: int) -> list[Message]:
    """The ExtractConcepts prompt (`prompts/concepts.txt`) for one question."""
    return package_prompt(__file__, "concepts").render(
        domain=domain, question=prompt_question(question), max_concepts=max_concepts)


def ask_concepts(model: ChatModel, messages: Sequence[Message], max_concepts: int,
                 first: Generation | None = None) -> Asked[ConceptsReply]:
    """One ExtractConcepts call with `ask_json`'s policy (retry once, then give up)."""
    return ask_json(model, messages, ConceptsReply, concepts_schema(max_concepts),
                    example=CONCEPT_EXAMPLE, max_tokens=CONCEPT_TOKENS, first=first)


def extract_concepts_many(model: ChatModel, questions: Sequence[Question], domain: str,
                          max_concepts: int, *, parallel: int = 6,
                          on_done: Callable[[int, tuple[str, ...] | None], None] | None = None,
                          ) -> list[tuple[str, ...] | None]:
    """ExtractConcepts for many questions at once: the first attempts decoded together
    (`chat_stream`: parallel llama.cpp sequences sharing the prompt's common prefix), a
    retry one by one for a bad reply. None where both attempts failed. Replies can
    differ in the last bits from one-at-a-time ones (other batch shapes)."""
    convs = [concept_messages(q, domain, max_concepts) for q in questions]
    params = json_params(concepts_schema(max_concepts), CONCEPT_TOKENS)
    out: list[tuple[str, ...] | None] = [None] * len(questions)
    bad: list[tuple[int, Generation]] = []  # retried after the batch: the model is busy

    def done(i: int, asked: Asked[ConceptsReply]) -> None:
        out[i] = (normalise_concepts(asked.value.concepts, max_concepts)
                  if asked.value is not None else None)
        if on_done is not None:
            on_done(i, out[i])

    for i, reply in chat_stream(model, [(c, params) for c in convs], parallel=parallel):
        try:
            value = parse_json(reply.text, ConceptsReply)
        except ReplyError:
            bad.append((i, reply))
            continue
        done(i, Asked(value, (Attempt(reply.text, None),)))
    for i, reply in bad:
        done(i, ask_concepts(model, convs[i], max_concepts, first=reply))
    return out


def prompt_question(q: Question) -> str:
    """The question as the concept prompt sees it: with its options, if any."""
    return f"{q.text}\nOptions:\n{q.choices_block()}" if q.is_multiple_choice else q.text


def embedding_text(q: Question) -> str:
    """The text embedded as Q: the question, then the option texts (ours: the options
    carry the concepts a multiple-choice answer turns on)."""
    if not q.is_multiple_choice:
        return q.text
    return q.text + " " + " ".join(c.text for c in q.choices)


def answer_render(domain: str, question: Question, evidence: str = NO_EVIDENCE) -> Render:
    """The KG methods' multiple-choice prompt (`answer_choose`) for an options block; with
    the no-evidence line by default (`kg-no-evidence`, and its position prior)."""
    template = package_prompt(__file__, "answer_choose")
    return lambda block: template.render(domain=domain, evidence=evidence,
                                         question=question.text, choices=block)
