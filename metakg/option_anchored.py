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

`metakgrag-oa-trust` (ours) puts a calibrated policy before those rules (`metakg.trust`):
on a graph where, on calibration questions, closed-book scored best it answers closed-book
before retrieving anything (the cost of `llm`); where the evidence reading scored best it
uses it wherever paths reached an option; otherwise the rules decide.

Trace steps beyond `metakgrag`'s: `anchored` (per hop: frontier, rows, options reached;
completeness), `choose-evidence`, `choose-closed`, `gate`, and the final `choose`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from kgrag.baselines import closed_book_render
from kgrag.errors import KgragError
from kgrag.method import Answer, Trace
from kgrag.reader import Choice
from kgrag.types import Question
from metakg.anchored import AnchoredSearch, HopSource, render_by_option, search_anchored
from metakg.backend import concept_name
from metakg.gate import GateDecision, decide
from metakg.graph import Triple
from metakg.kg_method import NO_EVIDENCE, Context, KGMethod
from metakg.provenance import with_sources
from metakg.trace import render_triple
from metakg.trust import EvidenceTrust, trust_path


class OptionAnchored(KGMethod):
    """Ours: option-anchored paths, evidence grouped by option, an evidence gate. Mixed
    in before `MetaKGRAG` (`metakg.methods.MetaKGRAGOptionAnchored`), whose retrieval
    answers questions without options."""

    max_hops: ClassVar[int] = 3
    targets_per_option: ClassVar[int] = 2
    cap: ClassVar[int] = 25  # neighbours per frontier entity and hop (targets always kept)
    frontier_size: ClassVar[int] = 12
    paths_per_option: ClassVar[int] = 3
    # `metakgrag-oa-trust`: the gate first applies the calibrated policy of `metakg.trust`
    trusts_calibration: ClassVar[bool] = False

    def _answer(self, question: Question, trace: Trace) -> Answer:
        if not question.is_multiple_choice:
            return super()._answer(question, trace)
        if self.trusts_calibration and self.reader.gate:
            domain = self.domain or question.domain or ""
            trust = self.trust(question, domain)
            if trust.policy == "closed-book":  # decided before any retrieval: none is made
                return self._closed_by_trust(question, trust, trace)
        found = self.gather(question, trace)
        ctx, search = found.ctx, found.ctx.anchored
        options = {c.label: c.text for c in question.choices}
        lines = (render_by_option(search, options, ctx.graph.name)
                 if search is not None and search.triples else [])
        if lines and found.backed and found.backed[0].facts:  # the passage unit
            lines = with_sources(lines, found.backed)
        elif lines:  # grouped by option, so the source sentences come after the groups
            lines += [f'Source of {render_triple(found.triples[b.fact - 1], ctx.graph.name)}'
                      f': "{b.sentence}"' for b in found.backed]
        evidence = "\n".join(lines) if lines else NO_EVIDENCE
        closed: Choice | None = None
        if self.reader.gate:
            closed = self.read(question, closed_book_render(question), trace,
                               prompt="llm_choose", stage="choose-closed")
        with_ev = None
        if lines or not self.reader.gate:
            with_ev = self.read(question, self.evidence_render(ctx, evidence), trace,
                                prompt="answer_choose", stage="choose-evidence")
        final, decision = self._decide(question, closed, with_ev, search, bool(lines), trace,
                                       ctx.domain)
        trace.add("choose", f"{final.label} ({'evidence' if final is with_ev else 'closed-book'})",
                  prompt="answer_choose" if final is with_ev else "llm_choose",
                  prompt_tokens=0, **final.trace_data(),
                  gate=decision.rule if decision else None)
        use = final is with_ev and bool(lines)
        return Answer(text=self.reply_text(question, final, evidence if use else "", trace),
                      evidence=lines if use else [], retrievals=ctx.retrievals,
                      setting="kg" if use else "kg-none")

    def _closed_by_trust(self, question: Question, trust: EvidenceTrust, trace: Trace
                         ) -> Answer:
        closed = self.read(question, closed_book_render(question), trace,
                           prompt="llm_choose", stage="choose-closed")
        c = trust.correct
        trace.add("gate", f"closed-book: calibrated on {trust.questions} questions of "
                  f"{trust.source}, the evidence reading scored {c.get('evidence', 0)} and "
                  f"the gate {c.get('gate', 0)} against closed-book {c.get('closed-book', 0)};"
                  " nothing is retrieved", use_evidence=False, rule="trust-closed-book",
                  supported=None, trust=trust.policy)
        trace.add("choose", f"{closed.label} (closed-book)", prompt="llm_choose",
                  prompt_tokens=0, **closed.trace_data(), gate="trust-closed-book")
        return Answer(text=self.reply_text(question, closed, "", trace), evidence=[],
                      retrievals=0, setting="kg-none")

    def _decide(self, question: Question, closed: Choice | None, with_ev: Choice | None,
                search: AnchoredSearch | None, has_evidence: bool, trace: Trace,
                domain: str) -> tuple[Choice, GateDecision | None]:
        if closed is None:  # gate off
            assert with_ev is not None
            return with_ev, None
        trust = self.trust(question, domain) if self.trusts_calibration else None
        if with_ev is None:
            decision = decide(closed.probs, closed.probs, None, False)
        elif trust is not None and trust.policy == "closed-book":
            decision = GateDecision(False, "trust-closed-book", "calibration: on this graph "
                                    "the evidence reading scored below closed-book")
        elif trust is not None and trust.policy == "evidence":
            decision = GateDecision(True, "trust-evidence", "calibration: on this graph the "
                                    "evidence reading scored above closed-book")
        else:
            supported = search.supported if search is not None else None
            decision = decide(closed.probs, with_ev.probs, supported, has_evidence)
        trace.add("gate", f"{'evidence' if decision.use_evidence else 'closed-book'}: "
                  f"{decision.why}", use_evidence=decision.use_evidence, rule=decision.rule,
                  supported=sorted(search.supported) if search is not None else None,
                  **({"trust": trust.policy} if trust is not None else {}))
        return (with_ev if decision.use_evidence and with_ev is not None else closed), decision

    def trust(self, question: Question, domain: str) -> EvidenceTrust:
        """The calibrated trust of this model in `domain`'s evidence on the question's
        dataset (`kgrag reader trust`); refused with the command when there is none."""
        cache: dict[tuple[str, str], EvidenceTrust] = self.__dict__.setdefault("_trusts", {})
        key = (question.dataset, domain)
        if key not in cache:
            root = self.reader.prior_dir
            path = (trust_path(root, self.model.name, *key, self.reader.bias)
                    if root is not None else None)
            if path is None or not path.is_file():
                raise KgragError(f"no calibrated evidence trust for {self.model.name} on "
                                 f"{question.dataset} over {domain} ({path})",
                                 hint=f"run `kgrag reader trust --dataset {question.dataset} "
                                 f"--domain {domain} --bias {self.reader.bias}`")
            trust = EvidenceTrust.load(path)
            if trust.bias != self.reader.bias:
                raise KgragError(f"the evidence trust in {path} was calibrated with bias "
                                 f"{trust.bias!r}, this reader corrects with "
                                 f"{self.reader.bias!r}",
                                 hint=f"run `kgrag reader trust --dataset {question.dataset} "
                                 f"--domain {domain} --bias {self.reader.bias}`")
            cache[key] = trust
        return cache[key]

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
