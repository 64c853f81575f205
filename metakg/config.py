"""Every constant of MetaKGRAG, with the paper's value as the default where it gives one.

Paper: Yuan et al., "Towards Self-cognitive Exploration: Metacognitive Knowledge Graph
Retrieval Augmented Generation" (``/work/shared/papers/003_e11c5995986a8f1a.txt``).
Each field's docstring names its source: a paper section, figure or table, or "ours"
with the reason when the paper gives no number.

>>> cfg = MetaKGConfig()
>>> (cfg.n_max, cfg.tau_coverage, cfg.tau_similarity)
(3, 0.6, 0.8)
>>> MetaKGConfig(ablation=Ablation(strategic_restart=False)).ablation.cycle
True
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

EdgeWeight = Literal["tail_question", "triple_question"]
IssueKind = Literal["completeness", "relevance"]


class Ablation(BaseModel):
    """Switches for the paper's ablations (§4.2.2, Table 6). All on = the full method.

    >>> Ablation(completeness_check=False).relevance_check
    True
    """

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    cycle: bool = True
    """Off = "w/o Metacognitive Cycle": the initial greedy path is the final path."""

    completeness_check: bool = True
    """Off = "w/o Completeness Check": no missing concepts, no +δ, no completeness pivot."""

    relevance_check: bool = True
    """Off = "w/o Relevance Check": no misleading entities, no −δ, no relevance pivot."""

    strategic_restart: bool = True
    """Off = "w/o Strategic Restart": re-search from the original start entity with an
    empty prefix ("naively restarting from the original entity", §4.2.2); the adjusted
    weights are still used."""


class MetaKGConfig(BaseModel):
    """The constants of Algorithm 1 (Θ in the paper) and of the choices we had to make.

    Cosine thresholds are in [-1, 1]; comparisons follow the paper's wording: a match is
    kept if sim > τ_entity, a concept is missing if coverage < τ_coverage, an entity
    supports a concept if sim > τ_c, an entity is misleading if GlobalSupport <
    tau_support, and the cycle stops if PathSimilarity > τ_similarity.

    >>> MetaKGConfig(delta=0.3).delta
    0.3
    """

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    # --- §3.2 Initial knowledge exploration -------------------------------------------
    max_concepts: int = Field(default=5, ge=1)
    """Θ.max_concepts of ExtractConcepts (Alg. 1 line 1). Ours: the paper gives no number;
    5 so that one start per concept can reach the best n_starts = 5 of Fig. 3(c)."""

    tau_entity: float = Field(default=0.6, ge=-1.0, le=1.0)
    """τ_entity, MatchEntities keeps argmax_e sim(c, e) only if sim > τ_entity (§3.2).
    Ours: the paper gives no number; 0.6 is the entity-linking threshold of the authors'
    pilot KG-RAG code (Understanding-KG-RAG, Pilot.py), see notes/methods.md §4.2."""

    n_starts: int = Field(default=5, ge=1)
    """Most start entities per question, |E_0| (§4.2.3 "Multi-start Retrieval Analysis",
    Fig. 3(c): accuracy peaks at 5 and then plateaus)."""

    max_path_length: int = Field(default=3, ge=1)
    """Hops of one greedy search: the initial search and every re-search from a pivot
    (the kept prefix does not count). Ours: the paper gives no number; 3 is the pilot
    code's path depth, and with it the Table 10 case study is reproduced exactly (one
    prefix hop Donepezil→Cholinesterase Inhibitor, then three new hops)."""

    edge_weight: EdgeWeight = "tail_question"
    """w_original(e_i, e_j) of the greedy walk (§3.2 "edges with the highest relevance to
    query Q"; §3.3 Adjust). Ours: the paper does not define it.
    "tail_question" = sim(e_j, Q), the neighbour entity's cosine to the question: it needs
    only the stored entity embeddings, so Cypher computes it server-side in the one round
    trip per hop, and it is the same quantity the adjustment is keyed on (entity e_j).
    "triple_question" = sim(embed("h r t"), Q): closer to "edge relevance" but it needs a
    triple embedding per edge (not in the graph schema today)."""

    traverse_incoming: bool = True
    """Walk edges in both directions (triples keep their own orientation in the evidence).
    Ours: the paper is silent and the pilot code walks outgoing edges only; we follow both
    because LLM-extracted triples put a question's concept on either side of an edge."""

    min_edge_weight: float | None = None
    """Stop the walk when the best adjusted weight is below this. Ours: None (no floor),
    since the paper's walk is plain greedy and drift is what the cycle is there to fix."""

    # --- §3.3 Metacognitive cycle ------------------------------------------------------
    n_max: int = Field(default=3, ge=0)
    """N_max, most Perceive-Evaluate-Adjust cycles per start (§3.3 "we set the default
    N_max = 3"; Fig. 3(b): peaks at 3 then stable)."""

    tau_coverage: float = Field(default=0.6, ge=-1.0, le=1.0)
    """τ_coverage, a concept is missing if its coverage is below it (§3.3 Evaluate;
    §4.2.3, Fig. 3(a): best around 0.6 on both datasets)."""

    tau_c: float = Field(default=0.3, ge=-1.0, le=1.0)
    """τ_c, entity e supports concept c if sim(e, c) > τ_c; used by EntityScope (§3.3)
    and, ours, to decide which entities are "relevant to the missing concepts" and get +δ.
    Appendix C.2, Fig. 5(a): flat over 0.1–0.5 with a slight peak at 0.3."""

    alpha: float = Field(default=0.5, ge=0.0, le=1.0)
    """α of GlobalSupport = α·EntityScope + (1−α)·sim(e, Q) (§3.3). Ours: the paper gives
    no value; 0.5 weighs concept breadth and whole-question relevance equally."""

    tau_support: float = Field(default=0.3, ge=-1.0, le=1.0)
    """An entity with GlobalSupport < tau_support is misleading (§3.3 "low GlobalSupport").
    Ours: the paper gives no number. With α = 0.5, 0.3 means an entity that supports no
    concept must have sim(e, Q) ≥ 0.6 (= τ_coverage) to stay, while one supporting one
    of three concepts needs sim(e, Q) ≥ 0.27; it equals τ_c, the paper's own "meaningful
    support" level."""

    delta: float = Field(default=0.2, ge=0.0)
    """δ, the ±weight adjustment of Adjust (§3.3). Appendix C.3, Fig. 5(b): plateau with
    the best results for δ in 0.2–0.3; we take 0.2, a value the paper tested."""

    boost_top_k: int = Field(default=50, ge=1)
    """Per missing concept, how many nearest entities (by the entity index) are examined
    for the +δ boost. Ours: the paper boosts every external entity relevant to a missing
    concept; a vector-index query needs a k, and 50 bounds the Cypher parameter map."""

    carry_adjustments: bool = True
    """Keep earlier cycles' adjustments in later re-searches (a later cycle overrides an
    entity's value). Ours: the paper says the adjustments act "during subsequent
    exploration"; without carrying them a penalised branch can come straight back."""

    pivot_priority: IssueKind = "completeness"
    """Which issue picks e_restart when both are diagnosed; the paper defines f(e) per
    issue only. Ours: completeness, the check with the largest ablation effect (Table 6)."""

    tau_similarity: float = Field(default=0.8, ge=0.0, le=1.0)
    """τ_similarity, stop when Jaccard(P_new, P_candidate) > it (§3.3, "default ...
    τ_similarity = 0.8")."""

    ablation: Ablation = Field(default_factory=Ablation)
    """The §4.2.2 ablation switches."""

    # --- evidence text (ours) -----------------------------------------------------------
    source_sentences: Literal["auto", "on", "off"] = "auto"
    """Ours, not in the paper: each evidence fact followed by the sentence of its source
    chunk that backs it (`metakg.provenance`). auto: for questions without options (the
    answer is a phrase the sentence may hold); on/off for every question. off gives the
    paper's evidence lines alone (§3.4), for the paper-faithful rows
    (`KGRAG_METAKG__SOURCE_SENTENCES=off`)."""

    source_tokens: int = Field(default=400, ge=0)
    """Ours: the token budget of those sentences in one prompt (about 4/3 tokens a word;
    the 0.5B/1.5B models' 4k context holds the evidence, the question and the reply)."""

    source_unit: Literal["sentence", "passage"] = "sentence"
    """Ours: what backs the evidence when source text is shown. sentence: each fact's
    backing sentence after it; passage: the facts' source chunks whole, after the evidence
    lines, ranked by the question's words they hold (`metakg.provenance.source_passages`)."""

    passage_tokens: int = Field(default=1000, ge=0)
    """Ours: the token budget of the source passages in one prompt (passage unit; about
    five 150-word paragraphs)."""
