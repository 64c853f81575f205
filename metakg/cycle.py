"""The Perceive-Evaluate-Adjust cycle of MetaKGRAG (Algorithm 1, §3.2–3.3), as pure code.

No LLM and no database here: concepts come in as names, similarities from `Similarity`,
the graph through the `NeighbourSource` / `EntityIndex` seams of `metakg.graph`.

>>> import numpy as np
>>> sim = Similarity({"Q": np.array([1.0, 0.0]), "aspirin": np.array([0.0, 1.0]),
...                   "pain": np.array([0.6, 0.8])})
>>> d = evaluate(Path("pain"), "Q", ["aspirin"], sim, MetaKGConfig())
>>> dict(d.coverage), d.missing, round(d.support["pain"], 2), d.issues
({'aspirin': 0.8}, (), 0.8, ())
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from metakg.config import IssueKind, MetaKGConfig
from metakg.graph import (
    Adjustments,
    EntityIndex,
    NeighbourSource,
    Path,
    greedy_path_search,
    path_similarity,
)
from metakg.similarity import Similarity

StopReason = Literal["no_cycle", "empty", "no_issue", "converged", "n_max"]


def _frozen(d: Mapping[str, float]) -> Mapping[str, float]:
    return MappingProxyType(dict(d))


@dataclass(frozen=True)
class Diagnosis:
    """Perceive + Evaluate output for one path (the coverage map M and the issues I).

    `support` holds GlobalSupport of every path entity (empty if the relevance check is
    off); `misleading` those below `tau_support`; `missing` is C_missing.
    """

    coverage: Mapping[str, float]
    missing: tuple[str, ...]
    support: Mapping[str, float]
    misleading: tuple[str, ...]

    @property
    def issues(self) -> tuple[IssueKind, ...]:
        kinds: list[IssueKind] = []
        if self.missing:
            kinds.append("completeness")
        if self.misleading:
            kinds.append("relevance")
        return tuple(kinds)


@dataclass(frozen=True)
class Restart:
    """Adjust's plan: the issue that chose the pivot, e_restart with f(e_restart), and the
    full adjustment map the re-search uses."""

    issue: IssueKind
    pivot: str
    score: float
    adjustments: Mapping[str, float]


@dataclass(frozen=True)
class CycleRecord:
    """One pass of the loop. Without an issue, only `diagnosis` is set. `accepted` is
    False when the new path was too similar and the old one was kept (Alg. 1 line 13)."""

    iteration: int
    diagnosis: Diagnosis
    restart: Restart | None = None
    new_path: Path | None = None
    similarity: float | None = None
    accepted: bool = False


@dataclass(frozen=True)
class Refinement:
    """Everything one start entity went through: initial path, cycles, final path."""

    start: str
    initial: Path
    cycles: tuple[CycleRecord, ...]
    final: Path
    stop: StopReason

    @property
    def changed(self) -> bool:
        """The final evidence differs from the initial (as sets of triples)."""
        return set(self.final.triples) != set(self.initial.triples)


# --- Perceive ------------------------------------------------------------------------
def coverage(path: Path, concepts: Sequence[str], sim: Similarity) -> Mapping[str, float]:
    """Coverage(c) = max over the path's entities of sim(c, e), for every concept (§3.3)."""
    return _frozen({c: sim.max_sim(c, path.entities) for c in concepts})


# --- Evaluate ------------------------------------------------------------------------
def completeness_deficiency(cov: Mapping[str, float], tau_coverage: float) -> tuple[str, ...]:
    """C_missing: the concepts whose coverage is below τ_coverage, in concept order."""
    return tuple(c for c, v in cov.items() if v < tau_coverage)


def entity_scope(entity: str, concepts: Sequence[str], sim: Similarity, tau_c: float
                 ) -> float:
    """EntityScope(e, C) = |{c ∈ C : sim(e, c) > τ_c}| / |C| (§3.3); 0 when C is empty."""
    if not concepts:
        return 0.0
    return sum(sim.sim(entity, c) > tau_c for c in concepts) / len(concepts)


def global_support(entity: str, question: str, concepts: Sequence[str], sim: Similarity,
                   cfg: MetaKGConfig) -> float:
    """GlobalSupport(e, Q, C) = α·EntityScope(e, C) + (1−α)·sim(e, Q) (§3.3)."""
    scope = entity_scope(entity, concepts, sim, cfg.tau_c)
    return cfg.alpha * scope + (1.0 - cfg.alpha) * sim.sim(entity, question)


def relevance_deficiency(path: Path, question: str, concepts: Sequence[str],
                         sim: Similarity, cfg: MetaKGConfig
                         ) -> tuple[Mapping[str, float], tuple[str, ...]]:
    """GlobalSupport of each path entity, and the misleading ones (< tau_support)."""
    support = {e: global_support(e, question, concepts, sim, cfg) for e in path.entities}
    return _frozen(support), tuple(e for e, s in support.items() if s < cfg.tau_support)


def evaluate(path: Path, question: str, concepts: Sequence[str], sim: Similarity,
             cfg: MetaKGConfig) -> Diagnosis:
    """Perceive then Evaluate (Alg. 1 lines 7–8), honouring the ablation switches."""
    cov = coverage(path, concepts, sim)
    missing = (completeness_deficiency(cov, cfg.tau_coverage)
               if cfg.ablation.completeness_check else ())
    support: Mapping[str, float] = _frozen({})
    misleading: tuple[str, ...] = ()
    if cfg.ablation.relevance_check:
        support, misleading = relevance_deficiency(path, question, concepts, sim, cfg)
    return Diagnosis(cov, missing, support, misleading)


# --- Adjust --------------------------------------------------------------------------
def adjustments(diagnosis: Diagnosis, path: Path, index: EntityIndex, cfg: MetaKGConfig,
                previous: Adjustments | None = None) -> Mapping[str, float]:
    """The adjustment map of Adjust (§3.3, "Formulating an Adjustment Strategy").

    +δ for external entities (not on `path`) with sim > τ_c to a missing concept, found
    through `index`; −δ for the misleading entities (always on the path, so the two sets
    never overlap). With `cfg.carry_adjustments`, `previous` is kept and overridden
    entity by entity.
    """
    new: dict[str, float] = {}
    on_path = path.entity_set
    for concept in diagnosis.missing:
        for entity, s in index.nearest(concept, cfg.boost_top_k):
            if s > cfg.tau_c and entity not in on_path:
                new[entity] = cfg.delta
    for entity in diagnosis.misleading:
        new[entity] = -cfg.delta
    merged = dict(previous or {}) if cfg.carry_adjustments else {}
    merged.update(new)
    return _frozen(merged)


def completeness_pivot(path: Path, missing: Sequence[str], sim: Similarity
                       ) -> tuple[str, float]:
    """e_restart = argmax_{e ∈ E_P} max_{c ∈ C_missing} sim(e, c); ties go to the earliest
    entity on the path."""
    scores = [(e, max(sim.sim(e, c) for c in missing)) for e in path.entities]
    return max(scores, key=lambda es: es[1])


def relevance_pivot(path: Path, support: Mapping[str, float]) -> tuple[str, float]:
    """e_restart = argmax_{e ∈ E_P} GlobalSupport(e); ties go to the earliest entity."""
    return max(((e, support[e]) for e in path.entities), key=lambda es: es[1])


def plan_restart(path: Path, diagnosis: Diagnosis, index: EntityIndex, sim: Similarity,
                 cfg: MetaKGConfig, previous: Adjustments | None = None) -> Restart:
    """Pick the issue (cfg.pivot_priority when both), its pivot, and the adjustments.

    Without strategic restart the pivot is the path's start entity, scored by the same f.
    """
    issues = diagnosis.issues
    if not issues:
        raise ValueError("plan_restart needs a diagnosis with at least one issue")
    issue = cfg.pivot_priority if cfg.pivot_priority in issues else issues[0]
    scored = path if cfg.ablation.strategic_restart else Path(path.start)
    if issue == "completeness":
        pivot, score = completeness_pivot(scored, diagnosis.missing, sim)
    else:
        pivot, score = relevance_pivot(scored, diagnosis.support)
    adjust = adjustments(diagnosis, path, index, cfg, previous)
    return Restart(issue, pivot, score, adjust)


# --- The loop ------------------------------------------------------------------------
def refine(start: str, question: str, concepts: Sequence[str], source: NeighbourSource,
           index: EntityIndex, sim: Similarity, cfg: MetaKGConfig) -> Refinement:
    """Alg. 1 lines 5–17 for one start entity: initial greedy path, then at most N_max
    Perceive-Evaluate-Adjust cycles. Stops on no issue, on PathSimilarity > τ_similarity
    (keeping the old path, as line 13 does) or after N_max cycles.
    """
    initial = greedy_path_search(start, source, cfg)
    if not cfg.ablation.cycle:
        return Refinement(start, initial, (), initial, "no_cycle")
    if not initial.hops:
        # A dead-end start: no re-search can leave it, adjustments add no edges.
        return Refinement(start, initial, (), initial, "empty")
    candidate, adjust = initial, _frozen({})
    records: list[CycleRecord] = []
    stop: StopReason = "n_max"
    for i in range(1, cfg.n_max + 1):
        diagnosis = evaluate(candidate, question, concepts, sim, cfg)
        if not diagnosis.issues:
            records.append(CycleRecord(i, diagnosis))
            stop = "no_issue"
            break
        restart = plan_restart(candidate, diagnosis, index, sim, cfg, adjust)
        adjust = restart.adjustments
        prefix = candidate.prefix(restart.pivot)
        new = greedy_path_search(restart.pivot, source, cfg, adjust, prefix)
        similarity = path_similarity(new, candidate)
        accepted = similarity <= cfg.tau_similarity
        records.append(CycleRecord(i, diagnosis, restart, new, similarity, accepted))
        if not accepted:
            stop = "converged"
            break
        candidate = new
    return Refinement(start, initial, tuple(records), candidate, stop)


# --- Around the loop -----------------------------------------------------------------
def normalise_concepts(raw: Iterable[str], max_concepts: int) -> tuple[str, ...]:
    """ExtractConcepts' reply as concepts: stripped, blanks and case-insensitive repeats
    dropped, at most `max_concepts`, in the LLM's order.

    >>> normalise_concepts([" NSAIDs", "nsaids", "", "donepezil"], 5)
    ('NSAIDs', 'donepezil')
    """
    seen: dict[str, str] = {}
    for item in raw:
        text = item.strip()
        if text and text.casefold() not in seen:
            seen[text.casefold()] = text
    return tuple(seen.values())[:max_concepts]


def match_entities(concepts: Sequence[str], index: EntityIndex, cfg: MetaKGConfig
                   ) -> tuple[str, ...]:
    """MatchEntities (§3.2): per concept the most similar entity, kept if sim > τ_entity;
    repeats merged; the `cfg.n_starts` best matches, best first (ties: concept order)."""
    best: dict[str, float] = {}
    for concept in concepts:
        for entity, s in index.nearest(concept, 1)[:1]:
            if s > cfg.tau_entity and s > best.get(entity, float("-inf")):
                best[entity] = s
    ranked = sorted(best.items(), key=lambda es: -es[1])
    return tuple(e for e, _ in ranked[: cfg.n_starts])


@dataclass(frozen=True)
class RefinementRate:
    """Path Refinement Rate (§4.2.3, Fig. 4). The paper only says PRR "quantifies the
    degree of change in final evidence paths relative to initial paths", so we report:

    - `by_start`: share of refined starts whose final triples differ from the initial;
    - `by_question`: share of questions with at least one such start (a question with no
      start counts as unchanged);
    - `mean_change`: mean over starts of 1 − PathSimilarity(initial, final).
    """

    by_start: float
    by_question: float
    mean_change: float
    starts: int = field(default=0)
    questions: int = field(default=0)


def path_refinement_rate(per_question: Sequence[Sequence[Refinement]]) -> RefinementRate:
    """PRR over a run: one inner sequence of refinements (one per start) per question.

    >>> path_refinement_rate([[], []])
    RefinementRate(by_start=0.0, by_question=0.0, mean_change=0.0, starts=0, questions=2)
    """
    flat = [r for refinements in per_question for r in refinements]
    n_starts, n_questions = len(flat), len(per_question)
    by_start = sum(r.changed for r in flat) / n_starts if n_starts else 0.0
    by_question = (sum(any(r.changed for r in rs) for rs in per_question) / n_questions
                   if n_questions else 0.0)
    change = (sum(1.0 - path_similarity(r.initial, r.final) for r in flat) / n_starts
              if n_starts else 0.0)
    return RefinementRate(by_start, by_question, change, n_starts, n_questions)
