"""Entity resolution within a domain: which extracted names denote the same entity.

Rules, in order (all thresholds in `ResolveConfig`):

1. Names with the same (domain, `entity_key`) are one entity ("Heart Attacks",
   "heart attack", '"heart attack."').
2. Two other names of the same domain merge when their keys are similar as strings
   (difflib ratio ≥ `min_string_similarity`, hyphens and apostrophes ignored) *and*
   their embeddings are close (cosine ≥ `min_cosine`), unless a guard says the small
   difference changes the meaning: different numbers ("type 1/2 diabetes"), a differing
   short token ("vitamin a/d", "jon/john smith"), a negation, or a prefix that flips the
   sense ("hypertension/hypotension", "typical/atypical", "male/female").
3. Merges are transitive (union-find); each cluster's canonical name is its most
   frequent display name, then the shortest, then the alphabetically first; the other
   names are kept as aliases.
4. Names the graph itself relates (`apart`: a fact between them, such as "joint military
   exercises - is a - military exercise") are never put in one cluster, directly or
   through a third name: the extractor said they are two things. Facts that say two
   names are one (`IDENTITY`: "also called", "known as", "abbreviation of", …) do not
   count.
5. Names of a lexicon (`distinct`: WordNet's lemmas in a graph that holds WordNet) are
   distinct words by the lexicon's own account: two of them never share a cluster
   ("averse"/"adverse"), though either may absorb an extracted variant of itself.

Names of different domains are never compared: the domain is part of every key.

Cost. Rule 1 is a hash grouping, O(n). Rule 2 only looks at candidate pairs:
- token blocking: names sharing a content word ("heart" in "heart attack" and "heart
  failure"); words shared by more than `max_block_size` names are too common to block
  on and are skipped, so the work is at most O(Σ min(|block|, max_block_size)²);
- optional spelling blocking (`spelling`): each key without spaces and its one-character
  deletions (a symmetric-deletion neighbourhood, as in SymSpell) are block keys, so
  keys one edit apart ("colour"/"color") share a block: O(n · key length), no vectors;
- optional nearest-neighbour blocking (`neighbours` = k > 0): the k most similar names
  by cosine, catching spelling variants that share no word ("colour"/"color"). This is
  a blocked dense matrix product, O(n² d) flops with O(`knn_rows` · n) memory: for 50k
  names of 384 dimensions about 10¹² flops, tens of seconds on a CPU.
Each candidate costs one dot product and (when the cosine passes) one difflib ratio.

    r = resolve_entities(["Heart Attack", "heart attacks", "heart"], vectors, "medical")
    [(c.canonical, c.aliases) for c in r.clusters]
    # -> [('Heart Attack', ('heart attacks',)), ('heart', ())]
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from kg_builder.normalize import content_words, entity_key

_JOINERS = re.compile(r"[-‐‑–—_/]+")
_APOSTROPHES = re.compile(r"['’]")
# Predicates that say their two names are one entity (rule 4 ignores such facts).
IDENTITY = re.compile(r"\b(also called|also known as|known as|same as|synonym|abbreviat\w*|"
                      r"aka|stands for|short for|spelled|equivalent to|another name)\b")
_NEGATIONS = frozenset({"no", "not", "non", "without", "anti", "never"})
_OPPOSED_PREFIXES = (
    ("hyper", "hypo"), ("pre", "post"), ("ante", "post"), ("over", "under"),
    ("intra", "extra"), ("inter", "intra"), ("sub", "super"), ("infra", "supra"),
    ("endo", "exo"), ("micro", "macro"), ("hetero", "homo"), ("mono", "poly"),
    ("in", "out"), ("up", "down"), ("pro", "anti"), ("im", "ex"),
)


class ResolveConfig(BaseModel):
    """Thresholds of entity resolution (part of a build job's resolved config)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_string_similarity: float = Field(default=0.85, ge=0.0, le=1.0)  # difflib ratio of keys
    min_cosine: float = Field(default=0.80, ge=-1.0, le=1.0)
    max_block_size: int = Field(default=200, ge=2)  # skip blocking words shared by more names
    neighbours: int = Field(default=0, ge=0)  # k-NN blocking by cosine; 0 = off
    knn_rows: int = Field(default=1024, ge=1)  # rows per block of the k-NN matrix product
    # Spelling blocks: names whose keys (spaces dropped, >= spelling_min_length letters)
    # are one deletion apart share a block, so colour/color, haemoglobin/hemoglobin and
    # analyse/analyze become candidates without any all-pairs comparison.
    spelling: bool = False
    spelling_min_length: int = Field(default=5, ge=2)
    guards: bool = True  # numbers, short tokens, negations, sense-flipping prefixes


@dataclass(frozen=True)
class EntityCluster:
    """One resolved entity: its key, canonical display name and aliases."""

    domain: str
    key: str  # entity_key(canonical): the Entity node's key
    canonical: str
    aliases: tuple[str, ...]  # the other display names, sorted
    members: tuple[int, ...]  # indices into the input arrays


@dataclass(frozen=True)
class Resolution:
    """Clusters over the input names, and how each input name maps to one."""

    clusters: tuple[EntityCluster, ...]
    cluster_of: np.ndarray  # input index → index into `clusters`
    candidate_pairs: int  # pairs compared under rule 2
    similarity_merges: int  # rule-2 unions that joined two clusters

    def key_map(self) -> dict[tuple[str, str], str]:
        """(domain, entity_key of an input name) → the key of its cluster."""
        out: dict[tuple[str, str], str] = {}
        for cluster in self.clusters:
            for name in (cluster.canonical, *cluster.aliases):
                out[(cluster.domain, entity_key(name))] = cluster.key
        return out


class UnionFind:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]  # path halving
            i = self.parent[i]
        return i

    def union(self, i: int, j: int) -> bool:
        ri, rj = self.find(i), self.find(j)
        if ri == rj:
            return False
        self.parent[max(ri, rj)] = min(ri, rj)  # the smaller index stays root: deterministic
        return True


def resolve_entities(names: Sequence[str], embeddings: np.ndarray,
                     domains: Sequence[str] | str, *, counts: Sequence[int] | None = None,
                     config: ResolveConfig | None = None,
                     apart: Iterable[tuple[int, int]] = (),
                     distinct: Iterable[int] = ()) -> Resolution:
    """Cluster `names` (display names; `embeddings` row i is name i's L2-normalised
    vector; `domains` one per name or one for all; `counts` how often each name was
    extracted, default 1; `apart` index pairs never to cluster together, rule 4;
    `distinct` names of a lexicon, no two of which share a cluster, rule 5) — see
    the module docstring for the rules and their cost."""
    cfg = config or ResolveConfig()
    n = len(names)
    doms = [domains] * n if isinstance(domains, str) else list(domains)
    weights = [1] * n if counts is None else list(counts)
    if embeddings.shape[0] != n or len(doms) != n or len(weights) != n:
        raise ValueError("names, embeddings, domains and counts must have the same length")
    keys = [entity_key(name) for name in names]
    uf = UnionFind(n)
    reps: dict[tuple[str, str], int] = {}
    for i, dk in enumerate(zip(doms, keys, strict=True)):
        uf.union(reps.setdefault(dk, i), i)  # rule 1: same domain and key
    rep_ids = sorted(reps.values())
    forms = {i: _compare_form(keys[i]) for i in rep_ids}
    pairs = _blocked_pairs(rep_ids, forms, doms, cfg)
    if cfg.neighbours:
        pairs |= _knn_pairs(rep_ids, embeddings, doms, cfg)
    away: dict[int, set[int]] = defaultdict(set)  # cluster root → names it must not join
    for a, b in apart:
        away[uf.find(a)].add(b)
        away[uf.find(b)].add(a)
    lexical = {uf.find(i) for i in distinct}  # roots of clusters holding a lexicon word
    merges = 0
    for i, j in _similar(sorted(pairs), embeddings, forms, cfg):
        ri, rj = uf.find(i), uf.find(j)
        if ri == rj or any(uf.find(k) == rj for k in away.get(ri, ())):
            continue
        if ri in lexical and rj in lexical:
            continue
        uf.union(ri, rj)
        root = uf.find(ri)
        away[root] = away.pop(ri, set()) | away.pop(rj, set())
        if ri in lexical or rj in lexical:
            lexical.discard(ri)
            lexical.discard(rj)
            lexical.add(root)
        merges += 1
    return _clusters(names, keys, doms, weights, uf, len(pairs), merges)


def _compare_form(key: str) -> str:
    """The key as compared in rule 2: hyphens etc. as spaces, apostrophes dropped."""
    return " ".join(_JOINERS.sub(" ", _APOSTROPHES.sub("", key)).split())


def candidate_pairs(names: Sequence[str], domains: Sequence[str] | str,
                    config: ResolveConfig | None = None) -> set[tuple[int, int]]:
    """The index pairs rule 2 would compare by token and spelling blocks (no vectors
    needed): names in no pair can only merge by rule 1 or k-NN blocking."""
    cfg = config or ResolveConfig()
    doms = [domains] * len(names) if isinstance(domains, str) else list(domains)
    forms = {i: _compare_form(entity_key(n)) for i, n in enumerate(names)}
    return _blocked_pairs(list(range(len(names))), forms, doms, cfg)


def _blocked_pairs(ids: list[int], forms: dict[int, str], doms: list[str],
                   cfg: ResolveConfig) -> set[tuple[int, int]]:
    """Pairs sharing a block: a content word, or (with `spelling`) a deletion variant of
    the key without spaces. Blocks of more than `max_block_size` names are skipped."""
    blocks: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i in ids:
        for word in content_words(forms[i]):
            blocks[(doms[i], word)].append(i)
        if cfg.spelling:
            for variant in _deletions(forms[i].replace(" ", ""), cfg.spelling_min_length):
                blocks[(doms[i], "\0" + variant)].append(i)  # \0: apart from word blocks
    pairs: set[tuple[int, int]] = set()
    for members in blocks.values():
        if 2 <= len(members) <= cfg.max_block_size:
            pairs.update((a, b) if a < b else (b, a)
                         for x, a in enumerate(members) for b in members[x + 1:] if a != b)
    return pairs


def _deletions(word: str, min_length: int) -> set[str]:
    """The word and every form of it with one character deleted (a symmetric-deletion
    neighbourhood: two words one substitution, insertion or deletion apart share one)."""
    if len(word) < min_length:
        return set()
    return {word} | {word[:i] + word[i + 1:] for i in range(len(word))}


def _knn_pairs(ids: list[int], embeddings: np.ndarray, doms: list[str],
               cfg: ResolveConfig) -> set[tuple[int, int]]:
    by_domain: dict[str, list[int]] = defaultdict(list)
    for i in ids:
        by_domain[doms[i]].append(i)
    pairs: set[tuple[int, int]] = set()
    for members in by_domain.values():
        idx = np.asarray(members)
        k = min(cfg.neighbours, len(idx) - 1)
        if k <= 0:
            continue
        sub = embeddings[idx].astype(np.float32, copy=False)
        for start in range(0, len(idx), cfg.knn_rows):
            sims = sub[start : start + cfg.knn_rows] @ sub.T
            rows = np.arange(sims.shape[0])
            sims[rows, start + rows] = -np.inf  # not one's own neighbour
            top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
            for r, c in zip(np.repeat(rows, k), top.ravel(), strict=True):
                if sims[r, c] >= cfg.min_cosine:
                    a, b = int(idx[start + r]), int(idx[c])
                    pairs.add((min(a, b), max(a, b)))
    return pairs


def _similar(pairs: list[tuple[int, int]], embeddings: np.ndarray, forms: dict[int, str],
             cfg: ResolveConfig, chunk: int = 65536) -> Iterator[tuple[int, int]]:
    """The candidate pairs that pass rule 2 (cosine first: it is the cheap test)."""
    for start in range(0, len(pairs), chunk):
        part = np.asarray(pairs[start : start + chunk], dtype=np.int64).reshape(-1, 2)
        cos = np.einsum("ij,ij->i", embeddings[part[:, 0]], embeddings[part[:, 1]])
        for (i, j), c in zip(part.tolist(), cos.tolist(), strict=True):
            if c < cfg.min_cosine:
                continue
            a, b = forms[i], forms[j]
            if a != b and _string_similarity(a, b, cfg.min_string_similarity) is None:
                continue
            if cfg.guards and _conflict(a, b):
                continue
            yield i, j


def _string_similarity(a: str, b: str, threshold: float) -> float | None:
    """difflib ratio when it reaches `threshold`, else None (cheap upper bounds first)."""
    m = SequenceMatcher(None, a, b, autojunk=False)
    if m.real_quick_ratio() < threshold or m.quick_ratio() < threshold:
        return None
    ratio = m.ratio()
    return ratio if ratio >= threshold else None


def _conflict(a: str, b: str) -> bool:
    """True when a small textual difference likely changes the meaning."""
    ta, tb = a.split(), b.split()
    if sorted(t for t in ta if any(ch.isdigit() for ch in t)) != sorted(
            t for t in tb if any(ch.isdigit() for ch in t)):
        return True
    if _NEGATIONS.intersection(ta) != _NEGATIONS.intersection(tb):
        return True
    only_a = [t for t in ta if t not in tb]
    only_b = [t for t in tb if t not in ta]
    if any(len(t) <= 3 for t in only_a + only_b):
        return True
    return any(_prefix_flip(x, y) or _prefix_flip(y, x) for x in only_a for y in only_b)


def _prefix_flip(x: str, y: str) -> bool:
    """y is x with a short prefix (un-, a-, fe-, non-), or an opposed prefix swapped."""
    if y.endswith(x) and 0 < len(y) - len(x) <= 4:
        return True
    return any(x.startswith(p) and y.startswith(q) and x[len(p):] == y[len(q):]
               for p, q in _OPPOSED_PREFIXES)


def _clusters(names: Sequence[str], keys: list[str], doms: list[str], weights: list[int],
              uf: UnionFind, candidates: int, merges: int) -> Resolution:
    members: dict[int, list[int]] = defaultdict(list)
    for i in range(len(names)):
        members[uf.find(i)].append(i)
    clusters = []
    cluster_of = np.empty(len(names), dtype=np.int64)
    for index, root in enumerate(sorted(members)):
        ids = members[root]
        freq: Counter[str] = Counter()
        for i in ids:
            freq[names[i]] += weights[i]
        canonical = min(freq, key=lambda s: (-freq[s], len(s), s))
        aliases = tuple(sorted(s for s in freq if s != canonical))
        clusters.append(EntityCluster(doms[root], entity_key(canonical), canonical, aliases,
                                      tuple(ids)))
        cluster_of[ids] = index
    return Resolution(tuple(clusters), cluster_of, candidates, merges)
