"""Typed payloads of the KG methods' trace steps.

A method builds one of these models per step and stores `model_dump(mode="json")` as the
`TraceStep.data`, so the CLI and the app can validate the data back into the same model
(`RefinementView.model_validate(step.data)`). Entities appear by key, with their display
names in `names`; concepts appear by their text.

>>> from metakg.graph import Hop, Path, Triple
>>> p = Path("a", (Hop(Triple("a", "r", "b"), "b", 0.5, 0.7),))
>>> PathView.of(p, str.upper).hops[0].text
'A r B'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from pydantic import BaseModel, Field

from metakg.backend import label
from metakg.cycle import CycleRecord, Refinement
from metakg.graph import Path, Triple
from metakg.provenance import SourceSentence

Names = Callable[[str], str]


def _r(x: float) -> float:
    return round(float(x), 4)


def _scores(m: Mapping[str, float]) -> dict[str, float]:
    return {label(k): _r(v) for k, v in m.items()}


def render_triple(t: Triple, names: Names) -> str:
    """"h r t" with display names (the §3.4 template's triple)."""
    return f"{names(t.head)} {t.relation} {names(t.tail)}"


def render_evidence(triples: Iterable[Triple], names: Names) -> list[str]:
    """"Evidence i: h r t", one line per triple (§3.4)."""
    return [f"Evidence {i}: {render_triple(t, names)}" for i, t in enumerate(triples, 1)]


class HopView(BaseModel):
    triple: list[str]  # [head key, predicate, tail key], stored orientation
    text: str
    target: str
    weight: float  # w_original = sim(target, Q)
    adjusted: float  # w_original + adjustment(target)


class PathView(BaseModel):
    start: str
    entities: list[str]
    hops: list[HopView]

    @classmethod
    def of(cls, path: Path, names: Names) -> PathView:
        hops = [HopView(triple=[h.triple.head, h.triple.relation, h.triple.tail],
                        text=render_triple(h.triple, names), target=h.target,
                        weight=_r(h.weight), adjusted=_r(h.adjusted)) for h in path.hops]
        return cls(start=path.start, entities=list(path.entities), hops=hops)


class CycleView(BaseModel):
    """One Perceive-Evaluate-Adjust pass (a `CycleRecord`)."""

    iteration: int
    coverage: dict[str, float]  # concept → Coverage(c)
    missing: list[str]  # C_missing
    support: dict[str, float]  # path entity → GlobalSupport
    misleading: dict[str, float]  # misleading entity → its GlobalSupport
    issue: str | None = None
    pivot: str | None = None
    pivot_score: float | None = None  # f(e_restart)
    adjustments: dict[str, float] = {}  # entity → ±δ used by the re-search
    new_path: PathView | None = None
    similarity: float | None = None  # PathSimilarity(new, old)
    accepted: bool = False

    @classmethod
    def of(cls, rec: CycleRecord, names: Names) -> CycleView:
        d, r = rec.diagnosis, rec.restart
        return cls(
            iteration=rec.iteration, coverage=_scores(d.coverage),
            missing=[label(c) for c in d.missing], support=_scores(d.support),
            misleading={e: _r(d.support[e]) for e in d.misleading},
            issue=r.issue if r else None, pivot=r.pivot if r else None,
            pivot_score=_r(r.score) if r else None,
            adjustments=_scores(r.adjustments) if r else {},
            new_path=PathView.of(rec.new_path, names) if rec.new_path else None,
            similarity=_r(rec.similarity) if rec.similarity is not None else None,
            accepted=rec.accepted)


class RefinementView(BaseModel):
    """Everything one start entity went through (a `Refinement`)."""

    start: str
    initial: PathView
    cycles: list[CycleView]
    final: PathView
    stop: str
    changed: bool
    names: dict[str, str]

    @classmethod
    def of(cls, ref: Refinement, names: Names) -> RefinementView:
        keys = set(ref.initial.entities) | set(ref.final.entities)
        for rec in ref.cycles:
            keys |= set(rec.new_path.entities) if rec.new_path else set()
        return cls(start=ref.start, initial=PathView.of(ref.initial, names),
                   cycles=[CycleView.of(c, names) for c in ref.cycles],
                   final=PathView.of(ref.final, names), stop=ref.stop, changed=ref.changed,
                   names={k: names(k) for k in sorted(keys)})


class MatchView(BaseModel):
    """MatchEntities for one concept: its nearest entity and whether it was kept."""

    concept: str
    key: str | None
    name: str | None
    similarity: float | None
    kept: bool


class EvidenceView(BaseModel):
    """The evidence subgraph S as triples of keys, as rendered lines, and as the
    Neo4j Browser command that shows it."""

    triples: list[list[str]]
    lines: list[str]
    names: dict[str, str]
    browser_params: str | None
    browser_query: str | None
    retrieval_ms: float  # wall time of retrieval minus LLM time
    retrieval_cypher_ms: float  # the part of retrieval_ms spent in Cypher round trips
    # the sentence of its chunk that backs each fact (`metakg.provenance`), if shown
    sources: list[SourceSentence] = Field(default_factory=list)
