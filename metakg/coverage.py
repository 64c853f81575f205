"""`kgrag graph coverage`: does a domain graph hold the answers to a dataset's questions?

For each question (no LLM, deterministic):

1. **Question entities** (seeds): `metakg.seeds.EntityMatcher.match` on the question text
   with the matcher's `wide` rules (noun-phrase n-grams by spaCy's tags, and single verbs
   and adjectives and verb phrases by their lemmas → `entity_key` → exact lookup,
   maximal non-overlapping spans, each under every form that is an entity). Options
   are read by the same rules.
2. **Targets**: multiple choice — each option's entities (`match_option`: the whole
   option if it is an entity, else the entities inside it that the question does not
   name). HotpotQA / 2Wiki (open questions) — the title entity of each context paragraph
   (`title_keys`): the supporting paragraphs' titles are the correct targets, the other
   (distractor) paragraphs' titles the wrong ones.
3. **Distance** from the seeds to each target entity, up to 3 hops over `:REL` in
   either direction (co-occurrence edges are not used), in two round trips:
   `coverage_balls` gives the 1-hop neighbourhoods of seeds and targets, so distance
   ≤ 1 (target next to a seed) and ≤ 2 (a common neighbour) are read off directly;
   `coverage_meet` expands the seeds' 1-hop frontier once and returns only the
   neighbours that lie in a target's 1-hop neighbourhood, which settles distance ≤ 3.
   A seed that is itself a target is at distance 0 (within every hop count).

   Caps (so a 500k-fact graph with hub entities stays fast): at most `neighbour_cap`
   neighbours per entity (20,000) and a seed frontier of at most `frontier_cap`
   entities (20,000, the first by key). A cut can only hide paths, never invent one;
   `truncated` counts the questions where a cap was hit.

Shares (all in [0, 1]; "within h" includes shorter distances):

- `concepts_matched`: questions with at least one seed.
- `correct_within_hops[h]` / `wrong_within_hops[h]`: one statistic for both sides, the
  mean over questions of the *fraction* of correct (wrong) targets — options, or
  supporting (distractor) titles — with an entity within h hops (0 for a question
  without any). A target the question itself names (a seed: distance 0, e.g. a title
  the question spells out) is left out of both fractions and counted apart in
  `correct_named` / `wrong_named`.
- `correct_by_kind[k]` / `wrong_by_kind[k]`: the same fractions at 1 hop over edges of
  relation kind k only: the discrimination a reader needs, per kind.
- `any_wrong_within_hops[h]`: questions where at least one wrong option / distractor is.
- `only_correct_within_hops[h]`: the correct target is within h hops and no wrong one is:
  the questions where reachability alone would single out the answer.

It reads the answers only to score coverage; nothing here writes to a graph.

>>> report = measure_coverage(questions, store_matcher(store, "commonsense"),  # doctest: +SKIP
...                           CypherReach(store, "commonsense"))
>>> report.correct_within_hops["2"]  # doctest: +SKIP
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from pydantic import BaseModel, Field

from kgrag.errors import KgragError
from kgrag.types import Question
from metakg.seeds import EntityMatcher, spacy_tagger, store_matcher, title_keys

if TYPE_CHECKING:
    from kgrag.store import GraphStore

HOPS = (1, 2, 3)
UNREACHED = 99  # an entity farther than 3 hops (or not connected)
NO_ENTITY = 100  # a target that names no entity of the domain


@dataclass
class Ball:
    """Neighbourhoods read by `Reach.balls`: entity key → its neighbour keys."""

    neighbours: dict[str, set[str]] = field(default_factory=dict)
    cut: bool = False  # a neighbour list reached the cap
    # entity key → neighbour key → relation kinds of the edges between them
    kinds: dict[str, dict[str, set[str]]] = field(default_factory=dict)


class Reach(Protocol):
    """The two reads of the distance computation (Neo4j: `CypherReach`)."""

    def balls(self, keys: Sequence[str]) -> Ball: ...

    def meet(self, frontier: Sequence[str], wanted: Sequence[str]) -> set[str]: ...


class CypherReach:
    """`Reach` over a domain in Neo4j, one round trip per call."""

    def __init__(self, store: GraphStore, domain: str, neighbour_cap: int = 20_000,
                 frontier_cap: int = 20_000) -> None:
        self.store, self.domain = store, domain
        self.neighbour_cap, self.frontier_cap = neighbour_cap, frontier_cap

    def balls(self, keys: Sequence[str]) -> Ball:
        rows = self.store.read("metakg/coverage_balls", {
            "domain": self.domain, "keys": list(keys), "cap": self.neighbour_cap})
        ball = Ball()
        for r in rows:
            ball.neighbours[r["key"]] = set(r["neighbours"])
            ball.kinds[r["key"]] = {n: set(k) for n, k in zip(
                r["neighbours"], r.get("kinds") or [[]] * len(r["neighbours"]), strict=True)}
            ball.cut |= len(r["neighbours"]) >= self.neighbour_cap
        return ball

    def meet(self, frontier: Sequence[str], wanted: Sequence[str]) -> set[str]:
        rows = self.store.read("metakg/coverage_meet", {
            "domain": self.domain, "frontier": list(frontier), "wanted": list(wanted)})
        return {r["key"] for r in rows}


@dataclass(frozen=True)
class Distances:
    """Hops from a question's seeds to each target entity (`UNREACHED` beyond 3)."""

    hops: dict[str, int]
    truncated: bool
    kinds: dict[str, frozenset[str]] = field(default_factory=dict)  # 1 hop: joining kinds


def distances(seeds: Sequence[str], targets: Iterable[str], reach: Reach,
              frontier_cap: int = 20_000) -> Distances:
    """Distances ≤ 3 from `seeds` to `targets` in at most two reads (module docstring)."""
    targets = sorted(set(targets))
    out = dict.fromkeys(targets, UNREACHED)
    if not seeds or not targets:
        return Distances(out, False)
    seed_set = set(seeds)
    ball = reach.balls(sorted(seed_set | set(targets)))
    near = set().union(*(ball.neighbours.get(s, set()) for s in seed_set))  # N(S)
    b1s = seed_set | near
    pending = []
    for t in targets:
        b1t = {t} | ball.neighbours.get(t, set())
        if t in seed_set:
            out[t] = 0
        elif t in near or b1t & seed_set:  # either side's list (one may be cut)
            out[t] = 1
        elif b1t & b1s:
            out[t] = 2
        elif t in ball.neighbours:  # an entity that has neighbours at all
            pending.append((t, b1t))
    truncated = ball.cut
    kinds = {t: frozenset().union(*(ball.kinds.get(t, {}).get(s, set())
                                     | ball.kinds.get(s, {}).get(t, set()) for s in seed_set))
             for t in targets if out[t] == 1}
    if pending:
        frontier = sorted(near - seed_set)
        if len(frontier) > frontier_cap:
            frontier, truncated = frontier[:frontier_cap], True
        wanted = sorted(set().union(*(b for _, b in pending)))
        hit = reach.meet(frontier, wanted) if frontier else set()
        for t, b1t in pending:
            if b1t & hit:
                out[t] = 3
    return Distances(out, truncated, kinds)


class CoverageReport(BaseModel):
    """What `kgrag graph coverage --json` prints (see the module docstring)."""

    dataset: str
    domain: str
    kind: str  # "multiple_choice" or "open"
    questions: int
    skipped: int = 0  # questions without options or supporting titles
    concepts_matched: float
    mean_seeds: float
    correct_matched: float  # the correct target names an entity (any distance)
    wrong_matched: float  # mean fraction of wrong targets naming an entity
    correct_within_hops: dict[str, float]
    wrong_within_hops: dict[str, float]
    any_wrong_within_hops: dict[str, float]
    only_correct_within_hops: dict[str, float]
    correct_named: float = 0.0  # mean fraction of correct targets the question names
    wrong_named: float = 0.0
    correct_by_kind: dict[str, float] = Field(default_factory=dict)  # 1 hop, per kind
    wrong_by_kind: dict[str, float] = Field(default_factory=dict)
    truncated: int = 0
    all_phrases: bool = False  # seeds: every matched phrase (else the maximal ones)
    round_trips: int = 0
    seconds: float = 0.0
    median_ms: float = 0.0
    definitions: str = ("wrong_within_hops = mean over questions of the fraction of wrong "
                        "options (open: distractor titles) within h hops; "
                        "any_wrong_within_hops = share of questions with any; targets "
                        "the question names (distance 0) are counted apart (*_named) "
                        "on both sides; *_by_kind: the same fractions at 1 hop over "
                        "edges of one relation kind")


@dataclass(frozen=True)
class QuestionCoverage:
    """One question's seeds and the hop distance of each of its targets."""

    seeds: tuple[str, ...]
    correct: tuple[int, ...]  # per correct target: its distance (min over its entities)
    wrong: tuple[int, ...]
    all_correct: bool  # open questions (only_correct: every correct target reached)
    truncated: bool = False
    correct_kinds: tuple[frozenset[str], ...] = ()  # per target: kinds joining it at 1 hop
    wrong_kinds: tuple[frozenset[str], ...] = ()


def _targets_mcq(q: Question, seeds: Sequence[str], matcher: EntityMatcher
                 ) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    right: list[tuple[str, ...]] = []
    wrong: list[tuple[str, ...]] = []
    for c in q.choices:
        keys = matcher.match_option(c.text, exclude=seeds).keys
        (right if c.label in q.answers else wrong).append(keys)
    return right, wrong


def _targets_open(q: Question, matcher: EntityMatcher
                  ) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    titles = list(dict.fromkeys([*q.supporting, *(p.title for p in q.contexts)]))
    cands = {t: title_keys(t) for t in titles}
    known = matcher.known(k for ks in cands.values() for k in ks)
    keys = {t: tuple(k for k in cands[t] if matcher.redirect.get(k, k) in known)[:1]
            for t in titles}
    support = set(q.supporting)
    return ([keys[t] for t in titles if t in support],
            [keys[t] for t in titles if t not in support])


def cover_question(q: Question, matcher: EntityMatcher, reach: Reach,
                   frontier_cap: int = 20_000, all_phrases: bool = False
                   ) -> QuestionCoverage | None:
    """Seeds, targets and distances of one question; None if it has no targets.
    `all_phrases`: every matched phrase is a seed, not only the maximal ones."""
    titles = [*q.supporting, *(p.title for p in q.contexts)]
    matcher.prefetch([q.text, *(c.text for c in q.choices)],
                     extra=(k for t in titles for k in title_keys(t)))
    seeds = matcher.match_all(q.text) if all_phrases else matcher.match(q.text).keys
    if q.is_multiple_choice:
        right, wrong = _targets_mcq(q, seeds, matcher)
    elif q.supporting:
        right, wrong = _targets_open(q, matcher)
    else:
        return None
    resolve = matcher.redirect.get
    right = [tuple(resolve(k, k) for k in ks) for ks in right]
    wrong = [tuple(resolve(k, k) for k in ks) for ks in wrong]
    d = distances(seeds, {k for ks in right + wrong for k in ks}, reach, frontier_cap)

    def hop(keys: tuple[str, ...]) -> int:
        return min((d.hops[k] for k in keys), default=NO_ENTITY)

    def kinds(keys: tuple[str, ...]) -> frozenset[str]:
        return frozenset().union(*(d.kinds.get(k, frozenset()) for k in keys))

    return QuestionCoverage(seeds, tuple(hop(k) for k in right), tuple(hop(k) for k in wrong),
                            all_correct=not q.is_multiple_choice, truncated=d.truncated,
                            correct_kinds=tuple(kinds(k) for k in right),
                            wrong_kinds=tuple(kinds(k) for k in wrong))


def _reached(xs: tuple[int, ...], h: int) -> list[bool]:
    """Per target the question does not name (distance 0 is counted apart): within h?"""
    return [x <= h for x in xs if x != 0]


def _frac(xs: Sequence[bool]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def _by_kind(covs: Sequence[QuestionCoverage], correct: bool) -> dict[str, float]:
    """Per relation kind: mean over questions of the fraction of (correct or wrong)
    targets, not named by the question, joined to a seed by an edge of that kind."""
    def sides(c: QuestionCoverage) -> list[frozenset[str]]:
        xs, ks = (c.correct, c.correct_kinds) if correct else (c.wrong, c.wrong_kinds)
        ks = ks or (frozenset(),) * len(xs)
        return [k for x, k in zip(xs, ks, strict=True) if x != 0]

    kinds = sorted({k for c in covs for ks in (c.correct_kinds, c.wrong_kinds)
                    for kk in ks for k in kk})
    return {k: _mean([_frac([k in t for t in sides(c)]) for c in covs]) for k in kinds}


def summarise(covs: Sequence[QuestionCoverage], *, dataset: str, domain: str,
              skipped: int = 0) -> CoverageReport:
    """The shares of `CoverageReport` from per-question coverage. One statistic on both
    sides: the mean over questions of the fraction of targets within h hops; targets the
    question itself names (distance 0) are left out of it and counted in `*_named`."""
    n = len(covs)
    by_hop: dict[str, dict[str, float]] = {"c": {}, "w": {}, "a": {}, "o": {}}
    for h in HOPS:
        key = str(h)
        right = [_reached(c.correct, h) for c in covs]
        wrong = [any(_reached(c.wrong, h)) for c in covs]
        by_hop["c"][key] = _mean([_frac(r) for r in right])
        by_hop["w"][key] = _mean([_frac(_reached(c.wrong, h)) for c in covs])
        by_hop["a"][key] = _mean(wrong)
        by_hop["o"][key] = _mean([bool(r) and all(r) and not w
                                  for r, w in zip(right, wrong, strict=True)])
    kind = "open" if covs and covs[0].all_correct else "multiple_choice"
    correct_by_kind, wrong_by_kind = _by_kind(covs, True), _by_kind(covs, False)
    order = sorted(correct_by_kind, key=lambda k: -correct_by_kind[k])
    return CoverageReport(
        dataset=dataset, domain=domain, kind=kind, questions=n, skipped=skipped,
        concepts_matched=_mean([bool(c.seeds) for c in covs]),
        mean_seeds=_mean([len(c.seeds) for c in covs]),
        correct_matched=_mean([_frac([x < NO_ENTITY for x in c.correct]) for c in covs]),
        wrong_matched=_mean([_frac([x < NO_ENTITY for x in c.wrong]) for c in covs]),
        correct_within_hops=by_hop["c"], wrong_within_hops=by_hop["w"],
        any_wrong_within_hops=by_hop["a"], only_correct_within_hops=by_hop["o"],
        correct_named=_mean([_frac([x == 0 for x in c.correct]) for c in covs]),
        wrong_named=_mean([_frac([x == 0 for x in c.wrong]) for c in covs]),
        correct_by_kind={k: correct_by_kind[k] for k in order},
        wrong_by_kind={k: wrong_by_kind[k] for k in order},
        truncated=sum(c.truncated for c in covs))


def measure_coverage(questions: Sequence[Question], matcher: EntityMatcher, reach: Reach, *,
                     dataset: str, domain: str, frontier_cap: int = 20_000,
                     progress: Callable[[int], None] | None = None,
                     all_phrases: bool = False) -> CoverageReport:
    """Coverage of `questions` (see the module docstring)."""
    if not questions:
        raise KgragError("no questions to measure coverage on",
                         hint="check --dataset and --n")
    covs: list[QuestionCoverage] = []
    times: list[float] = []
    skipped = 0
    for i, q in enumerate(questions, 1):
        t0 = time.perf_counter()
        c = cover_question(q, matcher, reach, frontier_cap, all_phrases)
        times.append(time.perf_counter() - t0)
        if c is None:
            skipped += 1
        else:
            covs.append(c)
        if progress:
            progress(i)
    if not covs:
        raise KgragError(f"none of the {len(questions)} questions has options or supporting "
                         "paragraphs, so there is nothing to cover",
                         hint="coverage needs multiple-choice or HotpotQA/2Wiki questions")
    report = summarise(covs, dataset=dataset, domain=domain, skipped=skipped)
    report.seconds = round(sum(times), 3)
    report.median_ms = round(1000 * statistics.median(times), 1)
    return report


def coverage_table(reports: Mapping[str, CoverageReport]) -> list[str]:
    """Markdown rows: one per report, shares in percent."""
    out = ["| dataset | domain | questions | concepts matched | correct ≤1 / ≤2 / ≤3 hops "
           "| wrong (mean fraction) ≤1 / ≤2 / ≤3 | any wrong ≤2 | only correct ≤2 |",
           "|---|---|---|---|---|---|---|---|"]
    for name, r in reports.items():
        def pct(m: Mapping[str, float]) -> str:
            return " / ".join(f"{100 * m[str(h)]:.1f}" for h in HOPS)
        out.append(f"| {name} | {r.domain} | {r.questions} | {100 * r.concepts_matched:.1f} | "
                   f"{pct(r.correct_within_hops)} | {pct(r.wrong_within_hops)} | "
                   f"{100 * r.any_wrong_within_hops['2']:.1f} | "
                   f"{100 * r.only_correct_within_hops['2']:.1f} |")
    return out


def kind_table(report: CoverageReport, top: int = 30) -> list[str]:
    """Markdown rows: per relation kind, the 1-hop shares of correct and wrong targets."""
    out = ["| relation kind (1 hop) | correct linked % | wrong linked % (mean) | gap |",
           "|---|---|---|---|"]
    for k in list(report.correct_by_kind)[:top]:
        c, w = report.correct_by_kind[k], report.wrong_by_kind.get(k, 0.0)
        out.append(f"| {k} | {100 * c:.1f} | {100 * w:.1f} | {100 * (c - w):+.1f} |")
    return out


def run_coverage(store: GraphStore, data_dir: object, dataset: str, domain: str | None,
                 n: int | None, progress: Callable[[int, int], None] | None = None,
                 all_phrases: bool | None = None) -> CoverageReport:
    """`kgrag graph coverage`: load the questions, check the domain, measure. Seeds
    (`all_phrases`): by default every matched phrase for multiple choice, the seeds
    `kg-paths` scores options from, and the maximal phrases for open questions."""
    from pathlib import Path

    from kgrag.datasets import load_dataset

    loaded = load_dataset(dataset, Path(str(data_dir)), limit=n)
    domain = domain or loaded.domain
    status = store.read("metakg/domain_status", {"domain": domain})[0]
    if not status["facts"]:
        raise KgragError(f"domain {domain!r} has no facts ({status['entities']:,} entities)",
                         hint="build it with `kgrag build --domain ...`, or check "
                         "`kgrag graph stats --domain ...`")
    if all_phrases is None:
        all_phrases = any(q.is_multiple_choice for q in loaded.questions[:1])
    before = store.stats.queries
    total = len(loaded.questions)
    report = measure_coverage(
        loaded.questions, store_matcher(store, domain, spacy_tagger(), wide=True),
        CypherReach(store, domain),
        dataset=loaded.name, domain=domain,
        progress=(lambda i: progress(i, total)) if progress else None,
        all_phrases=all_phrases)
    report.all_phrases = all_phrases
    report.round_trips = store.stats.queries - before
    return report
