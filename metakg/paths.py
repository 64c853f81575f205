"""Typed paths from a question's entities to each option's (ours; `kg-paths`).

For a multiple-choice question, the seeds are the entities the question's text names
(`metakg.seeds.EntityMatcher.match_all` with the wide rules: every matched phrase,
overlapping ones too) and each option's entities are `match_option`'s. One round trip
(`metakg/paths_neighbours`) reads, for every seed and option entity, its degree and its
neighbours over `:REL` with the relation kind, direction, ConceptNet score and (for facts
with at most three source chunks) the chunk ids. `path_record` keeps, per option:

- hop 1 — the facts between a seed and an option entity, with kind, direction and score;
- hop 2 — paths seed – middle – option, per (seed, option entity, kind of the last fact),
  with the summed specificity `1 / log2(2 + degree)` of the middles;
- the degrees of the seeds and of the option entities.

`metakg.path_features` turns a record into the features the model scores. A training
question's own record is left out: a fact whose every source chunk belongs to that record
(`exclude` = the record's chunk-id prefix) is not read, so the fit never reads the answer
it is fitted on.

    record = path_record(seeds, options, hood, exclude="commonsense:csqa_train:075e…")
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import astuple, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from kg_builder.normalize import entity_key

if TYPE_CHECKING:
    from kgrag.store import GraphStore

NEIGHBOUR_CAP = 20_000
MENTION_CAP = 3000  # chunks read per option entity


@dataclass(frozen=True)
class Edge:
    """One `:REL` edge seen from an entity: the other end, kind, whether the entity is
    its head, ConceptNet score (0 when none) and its source chunks (empty: more than 3)."""

    other: str
    kind: str
    forward: bool
    score: float = 0.0
    chunks: tuple[str, ...] = ()


@dataclass(frozen=True)
class Mention:
    """A source chunk that names an option entity and some of the question's entities
    (`seeds`); `answer`: the answer its question/answer record gives, if it is one."""

    chunk: str
    seeds: tuple[str, ...]
    answer: str | None = None


@dataclass
class Hood:
    """Entity key → its degree, edges and (option entities) co-mentions
    (`Neighbourhoods.read`)."""

    degree: dict[str, int] = field(default_factory=dict)
    edges: dict[str, list[Edge]] = field(default_factory=dict)
    mentions: dict[str, list[Mention]] = field(default_factory=dict)


class Neighbourhoods(Protocol):
    """The reads of kg-paths (Neo4j: `CypherNeighbourhoods`): the neighbourhoods of
    `keys`, and for those that are not `seeds`, the chunks that also name a seed."""

    def read(self, keys: Sequence[str], seeds: Sequence[str] = ()) -> Hood: ...


def record_answer(text: str | None) -> str | None:
    """The answer of a question/answer record chunk ("Question: …\nAnswer: …"), else None
    (`kg_builder.corpora` writes them)."""
    for line in (text or "").splitlines():
        if line.startswith("Answer:"):
            return line[len("Answer:"):].strip() or None
    return None


class CypherNeighbourhoods:
    """`Neighbourhoods` over a domain in Neo4j: two round trips per question (the
    neighbourhoods, the co-mentions; ConceptNet's chunks are skipped there, its
    assertions are the facts already read)."""

    def __init__(self, store: GraphStore, domain: str, cap: int = NEIGHBOUR_CAP,
                 mention_cap: int = MENTION_CAP) -> None:
        self.store, self.domain, self.cap = store, domain, cap
        self.mention_cap = mention_cap

    def read(self, keys: Sequence[str], seeds: Sequence[str] = ()) -> Hood:
        hood = Hood()
        if not keys:
            return hood
        options = sorted(set(keys) - set(seeds))
        if seeds and options:
            rows = self.store.read("metakg/paths_mentions", {
                "domain": self.domain, "options": options, "seeds": list(seeds),
                "cap": self.mention_cap, "skip": [f"{self.domain}:conceptnet:"]})
            for r in rows:
                hood.mentions.setdefault(r["key"], []).append(
                    Mention(r["chunk"], tuple(r["seeds"]), record_answer(r["text"])))
        rows = self.store.read("metakg/paths_neighbours", {
            "domain": self.domain, "keys": list(keys), "cap": self.cap})
        for r in rows:
            hood.degree[r["key"]] = int(r["degree"])
            hood.edges[r["key"]] = [
                Edge(e[0], e[1] or "other", bool(e[2]), float(e[3] or 0.0), tuple(e[4] or ()))
                for e in r["edges"]]
        return hood


def specificity(degree: int) -> float:
    """How specific an entity is: 1 for a leaf, falling slowly with its degree."""
    return 1.0 / math.log2(2 + degree)


def _own(edge: Edge, exclude: str | None) -> bool:
    """True when every source chunk of the edge belongs to the excluded record."""
    if not exclude or not edge.chunks:
        return False
    return all(c == exclude or c.startswith(exclude + ":") for c in edge.chunks)


@dataclass(frozen=True)
class Hop1:
    """A fact between a seed and an option entity: `forward` when the option is its head."""

    seed: str
    option: str
    kind: str
    forward: bool
    score: float = 0.0


@dataclass(frozen=True)
class Hop2:
    """Paths seed – middle – option whose last fact is of `kind`: `weight` sums the
    middles' specificity, `middle` is the first of them (for the trace)."""

    seed: str
    option: str
    kind: str
    middle: str
    weight: float


@dataclass(frozen=True)
class CoMention:
    """A chunk that names the option and `seeds`; `record`: it is a question/answer
    record, `answer`: one whose answer is this option."""

    chunk: str
    seeds: tuple[str, ...]
    answer: bool
    record: bool


@dataclass(frozen=True)
class OptionRecord:
    """One option's entities with their degrees, its 1- and 2-hop paths to seeds and the
    chunks that name it with seeds."""

    keys: tuple[str, ...]
    degree: Mapping[str, int]
    hop1: tuple[Hop1, ...] = ()
    hop2: tuple[Hop2, ...] = ()
    mentions: tuple[CoMention, ...] = ()


@dataclass(frozen=True)
class PathRecord:
    """What kg-paths reads of one question (`metakg.path_features` makes the features);
    also the line of the fit's cache (`to_json` / `from_json`)."""

    seeds: tuple[str, ...]
    seed_degree: Mapping[str, int]
    options: tuple[OptionRecord, ...]

    def to_json(self) -> dict[str, object]:
        return {"seeds": list(self.seeds), "seed_degree": dict(self.seed_degree),
                "options": [{"keys": list(o.keys), "degree": dict(o.degree),
                             "hop1": [list(astuple(h)) for h in o.hop1],
                             "hop2": [list(astuple(h)) for h in o.hop2],
                             "mentions": [[m.chunk, list(m.seeds), m.answer, m.record]
                                          for m in o.mentions]}
                            for o in self.options]}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> PathRecord:
        return cls(tuple(d["seeds"]), dict(d["seed_degree"]), tuple(
            OptionRecord(tuple(o["keys"]), dict(o["degree"]),
                         tuple(Hop1(*h) for h in o["hop1"]),
                         tuple(Hop2(*h) for h in o["hop2"]),
                         tuple(CoMention(c, tuple(s), bool(a), bool(r))
                               for c, s, a, r in o["mentions"]))
            for o in d["options"]))


def path_record(seeds: Sequence[str], options: Sequence[Sequence[str]], hood: Hood,
                exclude: str | None = None, texts: Sequence[str] | None = None
                ) -> PathRecord:
    """The 1- and 2-hop paths from the seeds to each option's entities in `hood`, and the
    chunks that name an option entity with a seed. `exclude`: the chunk-id prefix of a
    training question's own record (its facts and its chunk are not read). `texts`: the
    options' texts (a record whose answer is the option's text names it as its answer).
    An option entity that is itself a seed has no paths of its own."""
    seed_set = set(seeds)
    edges = {k: [e for e in hood.edges.get(k, []) if not _own(e, exclude)]
             for k in hood.edges}
    via: dict[str, list[str]] = {}  # middle entity → the seeds next to it
    for s in seed_set:
        for e in edges.get(s, []):
            via.setdefault(e.other, []).append(s)
    out = []
    for i, keys in enumerate(options):
        hop1: list[Hop1] = []
        hop2: dict[tuple[str, str, str], tuple[str, float]] = {}
        for o in keys:
            if o in seed_set:
                continue
            for e in edges.get(o, []):
                if e.other in seed_set:
                    hop1.append(Hop1(e.other, o, e.kind, e.forward, e.score))
                elif e.other in via and e.other not in keys:
                    wm = specificity(hood.degree.get(e.other, 0))
                    for s in via[e.other]:  # one path per seed–middle fact
                        m, w = hop2.get((s, o, e.kind), (e.other, 0.0))
                        hop2[(s, o, e.kind)] = (m, w + wm)
        out.append(OptionRecord(
            tuple(keys), {k: hood.degree.get(k, 0) for k in keys}, tuple(hop1),
            tuple(Hop2(s, o, k, m, w) for (s, o, k), (m, w) in hop2.items()),
            _co_mentions(keys, texts[i] if texts else "", hood, seed_set, exclude)))
    return PathRecord(tuple(seeds), {s: hood.degree.get(s, 0) for s in seeds}, tuple(out))


def _co_mentions(keys: Sequence[str], text: str, hood: Hood, seeds: set[str],
                 exclude: str | None) -> tuple[CoMention, ...]:
    """The chunks naming one option with seeds, each once, without the own record."""
    found: dict[str, CoMention] = {}
    names = {k for k in keys} | ({entity_key(text)} if text.strip() else set())
    for o in keys:
        if o in seeds:
            continue
        for m in hood.mentions.get(o, []):
            if m.chunk in found or (exclude and (m.chunk == exclude
                                                 or m.chunk.startswith(exclude + ":"))):
                continue
            answer = m.answer is not None and (
                entity_key(m.answer) in names or m.answer.casefold() == text.casefold())
            found[m.chunk] = CoMention(m.chunk, m.seeds, answer, m.answer is not None)
    return tuple(found.values())


# ---------------------------------------------------------------------------- model
@dataclass(frozen=True)
class PathModel:
    """A conditional-logit scorer: an option's score is `weights · features`."""

    weights: np.ndarray
    names: tuple[str, ...] = ()
    meta: Mapping[str, object] = field(default_factory=dict)

    def scores(self, feats: Sequence[np.ndarray]) -> list[float]:
        return [float(self.weights @ f) for f in feats]


def softmax(xs: Sequence[float]) -> list[float]:
    m = max(xs)
    ex = [math.exp(x - m) for x in xs]
    z = sum(ex)
    return [e / z for e in ex]


def fit_logit(xs: Sequence[np.ndarray], ys: Sequence[int], l2: float = 1.0) -> np.ndarray:
    """Weights of a conditional logit (softmax over each question's options) by L-BFGS,
    with an L2 penalty `l2`. `xs[i]`: options × features; `ys[i]`: the correct row.
    Questions are padded to the most options (padding rows masked out), so one step is
    a few array operations however many questions there are."""
    from scipy.optimize import minimize

    n, m, d = len(xs), max(x.shape[0] for x in xs), xs[0].shape[1]
    x3 = np.zeros((n, m, d))
    mask = np.full((n, m), -np.inf)
    for i, x in enumerate(xs):
        x3[i, :x.shape[0]] = x
        mask[i, :x.shape[0]] = 0.0
    y = np.asarray(ys)
    gold = x3[np.arange(n), y]  # n × d

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        s = x3 @ w + mask
        s -= s.max(axis=1, keepdims=True)
        p = np.exp(s)
        z = p.sum(axis=1)
        p /= z[:, None]
        total = 0.5 * l2 * float(w @ w) - float((s[np.arange(n), y] - np.log(z)).sum())
        grad = l2 * w - (gold - np.einsum("nm,nmd->nd", p, x3)).sum(axis=0)
        return total, grad

    res = minimize(loss, np.zeros(d), jac=True, method="L-BFGS-B")
    return np.asarray(res.x)
