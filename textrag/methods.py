"""The text methods' factories: method name -> factory(platform, domain) -> QAMethod.

`kgrag.platform.available_methods()` imports `FACTORIES` from here. A name without a
suffix runs in the open setting (BM25 over the passage corpus of the question's domain in
Neo4j, `textrag.corpora`: MedQuAD answers for medical, Wikipedia for wikipedia,
commonsense and legal, a domain's own chunks otherwise; as SeaKR,
DRAGIN and FLARE use BM25); `-gold` runs over each question's own paragraphs.

Like `metakg.methods`, this registry imports the method modules and none of them imports
it: they build their retrievers with `textrag.setting`.

    Platform().method("ircot-gold").answer(question).setting
    # -> 'gold'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from kgrag.method import named
from textrag.baselines import FLARE, RAG, IRCoT
from textrag.imrag.method import IMRAG_FACTORIES
from textrag.metarag.method import METARAG_FACTORIES
from textrag.ppr import PPR_FACTORIES
from textrag.seakr.method import SEAKR_FACTORIES
from textrag.setting import retriever_for

if TYPE_CHECKING:
    from kgrag.method import QAMethod
    from kgrag.platform import MethodFactory, Platform


def _baseline(kind: Literal["rag", "ircot", "flare"], setting: Literal["open", "gold"]
              ) -> MethodFactory:
    """Standard RAG, IRCoT or FLARE in a setting, registered as `kind` or `kind-gold`."""

    def build(p: Platform, domain: str | None) -> QAMethod:
        classes: dict[str, type[RAG | IRCoT | FLARE]] = {"rag": RAG, "ircot": IRCoT,
                                                          "flare": FLARE}
        cls = classes[kind]
        return named(cls, kind if setting == "open" else f"{kind}-gold")(
            p.chat_model, retriever_for(p, setting, domain=domain),
            store=p.store if setting == "open" else None)

    return build


FACTORIES: dict[str, MethodFactory] = {
    "rag": _baseline("rag", "open"),
    "rag-gold": _baseline("rag", "gold"),
    "ircot": _baseline("ircot", "open"),
    "ircot-gold": _baseline("ircot", "gold"),
    "flare": _baseline("flare", "open"),
    "flare-gold": _baseline("flare", "gold"),
    # SeaKR (and its Table 3 ablations), MetaRAG, IM-RAG (and its Table 3 ablations) and
    # the graph-guided retrieval of `textrag.ppr` (`kg-ppr`, `ircot-ppr`, `metarag-ppr`)
    **SEAKR_FACTORIES,
    **METARAG_FACTORIES,
    **IMRAG_FACTORIES,
    **PPR_FACTORIES,
}

# The baselines read no domain's knowledge graph (only Passage nodes or gold context), so
# the runner records no graph fingerprint for them (`kgrag.platform.graph_methods()`); the
# graph-guided methods of textrag.ppr do.
GRAPH_METHODS: frozenset[str] = frozenset(PPR_FACTORIES)
