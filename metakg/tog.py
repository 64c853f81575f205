"""Think-on-Graph-style beam search (Sun et al., ICLR 2024; the paper's "ToG" baseline).

The beam starts at the best `width` matched entities (the same ExtractConcepts and
MatchEntities as MetaKGRAG, so the two differ only in exploration). At each depth:

1. relation search: the relations leaving the beam's end entities towards unvisited
   entities (`cypher/metakg/tog_relations`, the best `relations_per_entity` per entity by
   neighbour similarity to Q); the LLM keeps at most `width` (`prompts/tog_relations.txt`);
2. entity search: the entities those relations reach (`tog_expand`, the best
   `facts_per_relation` per relation by similarity to Q), shown as candidate facts; the
   LLM keeps at most `width`, which become the new beam (`prompts/tog_entities.txt`);
3. reasoning: the LLM says whether the beam's facts suffice (`prompts/tog_sufficient.txt`);
   if so, exploration stops. At the last depth this call is skipped: the answer follows.

Ours, to fit a small CPU model: each pruning step is one call for the whole beam (ToG
makes one per entity and per relation), replies are option numbers under a JSON schema
(an enum of the shown numbers), and the lists are pre-ranked by cosine to Q. A bad reply
is retried once, then the step falls back to that cosine ranking (said in the trace); a
bad sufficiency reply counts as "not yet".

    ThinkOnGraph(model, backend, domain="commonsense").answer(question).trace
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel

from kgrag.prompt import package_prompt
from metakg.backend import Fact, QuestionGraph, RelationOption
from metakg.graph import Triple
from metakg.kg_method import Context, KGMethod, prompt_question
from metakg.replies import (
    Asked,
    FactsReply,
    RelationsReply,
    SufficientReply,
    ask_json,
    in_range,
    numbers_schema,
    sufficient_schema,
)
from metakg.trace import render_evidence, render_triple

NONE_YET = "(none yet)"
_Item = TypeVar("_Item", RelationOption, Fact)


@dataclass(frozen=True)
class Beam:
    """One reasoning path of the beam: its triples so far and the entity it ends at."""

    end: str
    triples: tuple[Triple, ...] = ()


class ThinkOnGraph(KGMethod):
    """See the module docstring. Class attributes are ToG's width N and depth D."""

    name: ClassVar[str] = "tog"
    llm_in_retrieval: ClassVar[bool] = True
    width: ClassVar[int] = 3
    depth: ClassVar[int] = 3
    relations_per_entity: ClassVar[int] = 10
    facts_per_relation: ClassVar[int] = 5
    pick_tokens: ClassVar[int] = 48

    def _retrieve(self, ctx: Context, starts: Sequence[str]) -> list[Triple]:
        beams = [Beam(s) for s in starts[: self.width]]
        visited = {b.end for b in beams}
        stop = f"reached depth {self.depth}"
        for depth in range(1, self.depth + 1):
            new, reason = self._explore(ctx, beams, frozenset(visited), depth)
            if new is None:
                stop = reason
                break
            beams = new
            visited |= {b.end for b in beams}
            ctx.retrievals += 1
            if depth < self.depth and self._sufficient(ctx, beams, depth):
                stop = f"the LLM judged the evidence sufficient at depth {depth}"
                break
        triples = list(dict.fromkeys(t for b in beams for t in b.triples))
        ctx.trace.add("tog", f"stopped: {stop}; {len(beams)} paths, {len(triples)} triples",
                      stop=stop, paths=[[[t.head, t.relation, t.tail] for t in b.triples]
                                        for b in beams], **ctx.meter.take())
        return triples

    def _explore(self, ctx: Context, beams: list[Beam], visited: frozenset[str], depth: int
                 ) -> tuple[list[Beam] | None, str]:
        """One depth: relation search and pruning, entity search and pruning."""
        g = ctx.graph
        options = g.relations(list(dict.fromkeys(b.end for b in beams)), visited,
                              self.relations_per_entity)
        if not options:
            return None, f"no relation leads to an unvisited entity at depth {depth}"
        picks = self._prune_relations(ctx, beams, options, depth)
        if not picks:
            return None, f"the LLM chose no relation at depth {depth}"
        facts: list[Fact] = []
        for f in g.expand(picks, visited, self.facts_per_relation):
            if all(f.target != seen.target for seen in facts):  # one fact per new entity
                facts.append(f)
        if not facts:
            return None, f"the chosen relations reach no new entity at depth {depth}"
        chosen = self._prune_facts(ctx, beams, facts, depth)
        if not chosen:
            return None, f"the LLM kept no candidate fact at depth {depth}"
        by_end = {b.end: b for b in beams}
        return [Beam(f.target, (*by_end[f.source].triples, f.triple)) for f in chosen], ""

    def _prune_relations(self, ctx: Context, beams: list[Beam], options: list[RelationOption],
                         depth: int) -> list[RelationOption]:
        g = ctx.graph
        lines = [f"{i}. {_relation_text(o, g)}" for i, o in enumerate(options, 1)]
        picks, asked = self._pick(ctx, beams, "tog_relations", "relations", RelationsReply,
                                  options, lines, lambda o: o.best)
        ctx.trace.add("tog-relations", f"depth {depth}: kept {len(picks)} of {len(options)} "
                      "relations" + (" (fallback: cosine ranking)" if asked.value is None else ""),
                      depth=depth, options=lines, kept=[_relation_text(p, g) for p in picks],
                      fallback=asked.value is None, **asked.trace(), **ctx.meter.take())
        return picks

    def _prune_facts(self, ctx: Context, beams: list[Beam], facts: list[Fact], depth: int
                     ) -> list[Fact]:
        g = ctx.graph
        lines = [f"{i}. {render_triple(f.triple, g.name)}" for i, f in enumerate(facts, 1)]
        chosen, asked = self._pick(ctx, beams, "tog_entities", "facts", FactsReply, facts, lines,
                                   lambda f: f.score)
        ctx.trace.add("tog-entities", f"depth {depth}: kept {len(chosen)} of {len(facts)} "
                      "candidate facts" + (" (fallback: cosine ranking)"
                                           if asked.value is None else ""),
                      depth=depth, candidates=lines,
                      kept=[render_triple(f.triple, g.name) for f in chosen],
                      fallback=asked.value is None, **asked.trace(), **ctx.meter.take())
        return chosen

    def _pick(self, ctx: Context, beams: list[Beam], prompt: str, field: str,
              reply: type[BaseModel], items: Sequence[_Item], lines: list[str],
              cosine: Callable[[_Item], float]) -> tuple[list[_Item], Asked[BaseModel]]:
        """One pruning call: the LLM's picks among the numbered `lines` (first mention of a
        number kept, at most `width`), or, after two bad replies, the `width` items best by
        `cosine`. `field` names the prompt's list placeholder and the reply's number list."""
        messages = package_prompt(__file__, prompt).render(
            domain=ctx.domain, question=prompt_question(ctx.question),
            evidence=_evidence(beams, ctx.graph), width=self.width,
            **{field: "\n".join(lines)})
        asked = ask_json(self.model, messages, reply,
                         numbers_schema(field, len(items), self.width),
                         example=f'{{"{field}": [1, 2]}}', max_tokens=self.pick_tokens,
                         check=in_range(field, len(items)))
        if asked.value is None:
            return sorted(items, key=lambda x: -cosine(x))[: self.width], asked
        numbers: list[int] = getattr(asked.value, field)
        return [items[n - 1] for n in dict.fromkeys(numbers)][: self.width], asked

    def _sufficient(self, ctx: Context, beams: list[Beam], depth: int) -> bool:
        messages = package_prompt(__file__, "tog_sufficient").render(
            domain=ctx.domain, question=prompt_question(ctx.question),
            evidence=_evidence(beams, ctx.graph))
        asked = ask_json(self.model, messages, SufficientReply, sufficient_schema(),
                         example='{"sufficient": false}', max_tokens=16)
        enough = bool(asked.value and asked.value.sufficient)
        data: dict[str, Any] = {"depth": depth, "sufficient": enough, **asked.trace()}
        ctx.trace.add("tog-reason", f"depth {depth}: evidence "
                      f"{'sufficient' if enough else 'not sufficient yet'}", **data,
                      **ctx.meter.take())
        return enough


def _relation_text(o: RelationOption, g: QuestionGraph) -> str:
    name = g.name(o.entity)
    if o.direction == "out":
        return f"{name} --{o.predicate}--> ?"
    return f"? --{o.predicate}--> {name}"


def _evidence(beams: list[Beam], g: QuestionGraph) -> str:
    triples = list(dict.fromkeys(t for b in beams for t in b.triples))
    return "\n".join(render_evidence(triples, g.name)) if triples else NONE_YET
