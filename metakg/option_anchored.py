"""`metakgrag-oa`: MetaKGRAG with option-anchored paths and an evidence gate (ours).

The default KG method for multiple choice; the paper-faithful `metakgrag` stays runnable
under its own name (Table 6's ablations are variants of that one). What differs, for a
multiple-choice question (other questions are answered as `metakgrag` answers them):

- Perceive: the question's concepts (the shared ExtractConcepts call) and each option's
  text as that option's concept, matched to its `targets_per_option` nearest entities.
- Search: paths from the question's entities to each option's entities, 1–3 hops, one
  Cypher round trip per hop (`metakg.anchored`). Evaluate's completeness is the share of
  options reached; the next hop searches only for the options still missing.
- Answer: the evidence grouped by option, read by the shared multiple-choice reader.
- Gate (`ReaderConfig.gate`): the closed-book pass (the `llm` row's) and the rules of
  `metakg.gate` decide whether the evidence is used; where no path reaches any option,
  the question is answered closed-book without an evidence pass.

Trace steps beyond `metakgrag`'s: `anchored` (per hop: frontier, rows, options reached;
completeness), `choose-evidence`, `choose-closed`, `gate`, and the final `choose`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from kgrag.baselines import closed_book_render
from kgrag.method import Answer, Trace
from kgrag.reader import Choice
from kgrag.types import Question
from metakg.anchored import AnchoredSearch, HopSource, render_by_option, search_anchored
from metakg.backend import concept_name
from metakg.gate import GateDecision, decide
from metakg.graph import Triple
from metakg.kg_method import NO_EVIDENCE, Context, KGMethod


class OptionAnchored(KGMethod):
    """Ours: option-anchored paths, evidence grouped by option, an evidence gate. Mixed
    in before `MetaKGRAG` (`metakg.methods.MetaKGRAGOptionAnchored`), whose retrieval
    answers questions without options."""

    max_hops: ClassVar[int] = 3
    targets_per_option: ClassVar[int] = 2
    cap: ClassVar[int] = 25  # neighbours per frontier entity and hop (targets always kept)
    frontier_size: ClassVar[int] = 12
    paths_per_option: ClassVar[int] = 3

    def _answer(self, question: Question, trace: Trace) -> Answer:
        if not question.is_multiple_choice:
            return super()._answer(question, trace)
        found = self.gather(question, trace)
        ctx, search = found.ctx, found.ctx.anchored
        options = {c.label: c.text for c in question.choices}
        lines = (render_by_option(search, options, ctx.graph.name)
                 if search is not None and search.triples else [])
        evidence = "\n".join(lines) if lines else NO_EVIDENCE
        closed: Choice | None = None
        if self.reader.gate:
            closed = self.read(question, closed_book_render(question), trace,
                               prompt="llm_choose", stage="choose-closed")
        with_ev = None
        if lines or not self.reader.gate:
            with_ev = self.read(question, self.evidence_render(ctx, evidence), trace,
                                prompt="answer_choose", stage="choose-evidence")
        final, decision = self._decide(question, closed, with_ev, search, bool(lines), trace)
        trace.add("choose", f"{final.label} ({'evidence' if final is with_ev else 'closed-book'})",
                  prompt="answer_choose" if final is with_ev else "llm_choose",
                  prompt_tokens=0, **final.trace_data(),
                  gate=decision.rule if decision else None)
        use = final is with_ev and bool(lines)
        return Answer(text=self.reply_text(question, final, evidence if use else "", trace),
                      evidence=lines if use else [], retrievals=ctx.retrievals,
                      setting="kg" if use else "kg-none")

    def _decide(self, question: Question, closed: Choice | None, with_ev: Choice | None,
                search: AnchoredSearch | None, has_evidence: bool, trace: Trace
                ) -> tuple[Choice, GateDecision | None]:
        if closed is None:  # gate off
            assert with_ev is not None
            return with_ev, None
        if with_ev is None:
            decision = decide(closed.probs, closed.probs, None, False)
        else:
            supported = search.supported if search is not None else None
            decision = decide(closed.probs, with_ev.probs, supported, has_evidence)
        trace.add("gate", f"{'evidence' if decision.use_evidence else 'closed-book'}: "
                  f"{decision.why}", use_evidence=decision.use_evidence, rule=decision.rule,
                  supported=sorted(search.supported) if search is not None else None)
        return (with_ev if decision.use_evidence and with_ev is not None else closed), decision

    def perceived(self, question: Question, concepts: Sequence[str]) -> tuple[str, ...]:
        """The question's concepts plus each option's text as that option's concept."""
        extra = [c.text for c in question.choices] if question.is_multiple_choice else []
        return tuple(dict.fromkeys([*concepts, *extra]))

    def _retrieve(self, ctx: Context, starts: Sequence[str]) -> list[Triple]:
        q = ctx.question
        if not q.is_multiple_choice:
            return super()._retrieve(ctx, starts)  # type: ignore[safe-super]  # MetaKGRAG's, by the MRO
        g, cfg = ctx.graph, self.config
        names = [concept_name(c.text) for c in q.choices]
        g.prefetch(names, self.targets_per_option)  # one round trip for every option
        targets = {c.label: [k for k, s in g.nearest(n, self.targets_per_option)
                             if s > cfg.tau_entity]
                   for c, n in zip(q.choices, names, strict=True)}
        option_keys = {k for keys in targets.values() for k in keys}
        question_starts = [s for s in starts if s not in option_keys]
        source: HopSource = g  # type: ignore[assignment]  # CypherGraph offers anchored_hop
        search = search_anchored(source, question_starts, targets, max_hops=self.max_hops,
                                 cap=self.cap, frontier_size=self.frontier_size,
                                 paths_per_option=self.paths_per_option)
        ctx.anchored = search
        ctx.retrievals += search.round_trips
        ctx.trace.add("anchored", f"{len(search.supported)}/{len(targets)} options reached "
                      f"in {search.round_trips} hop round trips from "
                      f"{len(question_starts)} question entities",
                      starts=question_starts, targets=targets,
                      completeness=round(search.completeness, 3),
                      supported=sorted(search.supported),
                      hops=[{"hop": h.hop, "frontier": h.frontier, "rows": h.rows,
                             "reached": list(h.reached)} for h in search.hops],
                      paths={lb: [[[t.head, t.relation, t.tail] for t in p.triples] for p in ps]
                             for lb, ps in search.paths.items()}, **ctx.meter.take())
        return search.triples
