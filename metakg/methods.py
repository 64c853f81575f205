"""The KG QA methods and their CLI names (`FACTORIES`, read by `kgrag.platform`).

| name | what |
|---|---|
| `metakgrag` | MetaKGRAG (Alg. 1): greedy paths from each start, refined by the cycle |
| `metakgrag-oa` | ours: option-anchored paths (1–3 hops) grouped by option, evidence gate |
| `metakgrag-oa-trust` | ours: `metakgrag-oa` whose gate first applies a calibrated trust |
| `metakgrag-no-cycle` … `-no-restart` | the §4.2.2 ablations (Table 6) |
| `kg-vanilla` | vanilla KG-RAG: the matched entities' top-k facts, no cycle |
| `tog` | Think-on-Graph-style LLM-pruned beam search (`metakg.tog`) |
| `kg-no-evidence` | diagnostic: the KG answer prompt with no evidence, nothing retrieved |
| `kg-paths` | ours: options scored by typed graph paths, a fitted linear model, no LLM |
| `kg-fused` | ours: `llm`'s letter distribution fused log-linearly with kg-paths scores |

    m = MetaKGRAG(platform.chat_model, CypherBackend(platform.store, platform.embedder),
                  domain="commonsense")
    m.answer(Question(id="1", text="Where would you find a fox?")).evidence
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar

from kgrag.llm.base import ChatModel
from kgrag.method import Answer, Trace
from kgrag.types import Question
from metakg.backend import QUESTION, GraphBackend
from metakg.config import Ablation, MetaKGConfig
from metakg.cycle import refine
from metakg.graph import Triple, integrate_evidence_paths
from metakg.kg_method import NO_EVIDENCE, Context, KGMethod
from metakg.kg_paths import FACTORIES as KG_PATHS_FACTORIES
from metakg.neo4j_source import CypherBackend
from metakg.option_anchored import OptionAnchored
from metakg.tog import ThinkOnGraph
from metakg.trace import RefinementView, render_triple

if TYPE_CHECKING:
    from kgrag.method import QAMethod
    from kgrag.platform import Platform


class MetaKGRAG(KGMethod):
    """Alg. 1: per start entity an initial greedy path (§3.2), then up to N_max
    Perceive-Evaluate-Adjust cycles (§3.3); the refined paths are merged (§3.4).

    `ablation` (set by the variants below) replaces `config.ablation`; None keeps it.
    """

    name: ClassVar[str] = "metakgrag"
    ablation: ClassVar[Ablation | None] = None

    def __init__(self, model: ChatModel, backend: GraphBackend, domain: str | None = None,
                 config: MetaKGConfig | None = None) -> None:
        config = config or MetaKGConfig()
        if self.ablation is not None:
            config = config.model_copy(update={"ablation": self.ablation})
        super().__init__(model, backend, domain, config)

    def _retrieve(self, ctx: Context, starts: Sequence[str]) -> list[Triple]:
        g, cfg = ctx.graph, self.config
        refinements = []
        for start in starts:
            ref = refine(start, QUESTION, ctx.concepts, g, g, g.sim, cfg)
            refinements.append(ref)
            ctx.retrievals += 1 + sum(rec.new_path is not None for rec in ref.cycles)
            view = RefinementView.of(ref, g.name)
            final = " → ".join(g.name(e) for e in ref.final.entities)
            n = len(ref.cycles)
            ctx.trace.add("refine", f"{g.name(start)}: {n} cycle{'' if n == 1 else 's'}, "
                          f"stop {ref.stop}; final path {final}",
                          **view.model_dump(mode="json"), **ctx.meter.take())
        return list(integrate_evidence_paths(r.final for r in refinements).triples)


class MetaKGRAGOptionAnchored(OptionAnchored, MetaKGRAG):
    """Ours, the default for multiple choice: option-anchored paths, evidence grouped by
    option, and an evidence gate (`metakg.option_anchored`). Not in the paper."""

    name: ClassVar[str] = "metakgrag-oa"


class MetaKGRAGOptionAnchoredTrust(MetaKGRAGOptionAnchored):
    """Ours: `metakgrag-oa` whose gate first applies the policy calibrated for this model,
    graph and dataset (`metakg.trust`, `kgrag reader trust`). Not in the paper."""

    name: ClassVar[str] = "metakgrag-oa-trust"
    trusts_calibration: ClassVar[bool] = True


class MetaKGRAGNoCycle(MetaKGRAG):
    """Table 6 "w/o Metacognitive Cycle": the initial greedy paths are the evidence."""

    name: ClassVar[str] = "metakgrag-no-cycle"
    ablation: ClassVar[Ablation | None] = Ablation(cycle=False)


class MetaKGRAGNoCompleteness(MetaKGRAG):
    """Table 6 "w/o Completeness Check"."""

    name: ClassVar[str] = "metakgrag-no-completeness"
    ablation: ClassVar[Ablation | None] = Ablation(completeness_check=False)


class MetaKGRAGNoRelevance(MetaKGRAG):
    """Table 6 "w/o Relevance Check"."""

    name: ClassVar[str] = "metakgrag-no-relevance"
    ablation: ClassVar[Ablation | None] = Ablation(relevance_check=False)


class MetaKGRAGNoRestart(MetaKGRAG):
    """Table 6 "w/o Strategic Restart": re-search from the original start entity."""

    name: ClassVar[str] = "metakgrag-no-restart"
    ablation: ClassVar[Ablation | None] = Ablation(strategic_restart=False)


class KGVanilla(KGMethod):
    """Vanilla KG-RAG (the paper's "KGRAG" row, [23]): the matched start entities and,
    for each, its `facts_per_entity` facts whose other entity is most similar to Q.

    Ours: 3 facts per entity, so its evidence budget equals MetaKGRAG's initial paths
    (n_starts × max_path_length triples).
    """

    name: ClassVar[str] = "kg-vanilla"
    facts_per_entity: ClassVar[int] = 3

    def _retrieve(self, ctx: Context, starts: Sequence[str]) -> list[Triple]:
        g = ctx.graph
        facts = g.facts(starts, self.facts_per_entity)
        ctx.retrievals += 1
        triples = list(dict.fromkeys(f.triple for f in facts))
        ctx.trace.add("facts", f"{len(triples)} facts around {len(starts)} start entities",
                      facts=[{"source": f.source, "triple": [f.triple.head, f.triple.relation,
                                                             f.triple.tail],
                              "text": render_triple(f.triple, g.name), "score": round(f.score, 4)}
                             for f in facts], **ctx.meter.take())
        return triples


class KGNoEvidence(KGMethod):
    """Diagnostic, not a method of the paper: the KG methods' answer prompt (Table 7,
    `prompts/answer_mcq.txt`) with the no-evidence line for every question, and no
    concepts or retrieval.

    It tells apart what the answer prompt does from what the evidence does: against
    `llm` (a shorter prompt of its own) it measures the prompt, against `kg-vanilla` and
    `metakgrag` the evidence they put into the same prompt.
    """

    name: ClassVar[str] = "kg-no-evidence"

    def _answer(self, question: Question, trace: Trace) -> Answer:
        found = self.gather(question, trace, concepts=())  # no starts, so no retrieval
        return Answer(text=self._generate(found.ctx, NO_EVIDENCE), setting="kg-none")

    def _retrieve(self, ctx: Context, starts: Sequence[str]) -> list[Triple]:
        return []


Factory = Callable[["Platform", "str | None"], "QAMethod"]


def _factory(cls: type[KGMethod]) -> Factory:
    def make(p: Platform, domain: str | None) -> QAMethod:
        cfg = p.settings.metakg
        return cls(p.chat_model, CypherBackend(p.store, p.embedder, cfg), domain, cfg)

    make.__doc__ = f"{cls.name}: {(cls.__doc__ or '').splitlines()[0]}"
    return make


METHOD_CLASSES: tuple[type[KGMethod], ...] = (
    MetaKGRAG, MetaKGRAGOptionAnchored, MetaKGRAGOptionAnchoredTrust, MetaKGRAGNoCycle,
    MetaKGRAGNoCompleteness, MetaKGRAGNoRelevance, MetaKGRAGNoRestart, KGVanilla, ThinkOnGraph,
    KGNoEvidence)

FACTORIES: dict[str, Factory] = {cls.name: _factory(cls) for cls in METHOD_CLASSES}
FACTORIES.update(KG_PATHS_FACTORIES)  # ours: kg-paths, kg-fused (metakg.kg_paths)
# Every method here reads the domain graph (`kgrag.platform.graph_methods()`).
GRAPH_METHODS: frozenset[str] = frozenset(FACTORIES)
