"""kg-paths' second design (ours): what the graph says about each option, read against
the other options of the same question.

CommonsenseQA was written from ConceptNet: the question's own concept is linked by one
relation to the correct option *and* to the distractors drawn from ConceptNet, so a plain
count of typed paths (the first design, `kgrag graph fit-paths` before this module) learns
mostly which options the question concept reaches. What singles out the answer is the
*other* words of the question. This design therefore weighs each question entity (seed)
by how few of the question's options it reaches:

- the within-question IDF of a seed `s`: `log(n_options / |options s reaches at 1 hop|)`,
  0 for a seed that reaches every option (it tells none apart);
- per option, at 1 hop: the number of distinct seeds linked (the crude count of the
  issue), their summed IDF, specificity `1 / log2(2 + degree)` and IDF × specificity, and
  the IDF-weighted count of linking seeds per relation group × direction (ConceptNet's
  relations, WordNet's, the text extractors' kinds);
- at 2 hops (through one middle entity): seeds that reach the option only at 2 hops, with
  their 2-hop IDF, and the middle-specificity-weighted path mass per relation group;
- the option itself: its degree (popularity), whether it names an entity, whether it is
  only a question entity;
- relative features (a linear softmax cannot make them from the above): whether the
  option has the largest value of a summary feature among the options, and its gap to it.

A `PathRecord` (`metakg.paths.path_record`) holds everything these are read from, so the
training cache (`kgrag graph fit-paths`) is records and a new design refits without Neo4j.

    x = option_features(record)   # options × len(FEATURES)
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from kg_builder.conceptnet import RELATIONS as CONCEPTNET_RELATIONS
from kg_builder.domains import BASE_KINDS
from metakg.paths import OptionRecord, PathRecord, specificity

# ConceptNet relations frequent enough to get a weight of their own; the rest share one.
CONCEPTNET_GROUPS = (
    "AtLocation", "UsedFor", "CapableOf", "IsA", "HasProperty", "Causes", "HasSubevent",
    "HasPrerequisite", "MotivatedByGoal", "Desires", "PartOf", "HasA", "ReceivesAction",
    "CausesDesire", "ConceptuallyRelatedTo", "LocatedNear", "MadeOf", "DefinedAs")
WORDNET_KINDS = ("hypernymy", "meronymy", "antonymy", "synonymy", "entailment", "cause")
TEXT_KINDS = tuple(k.name for k in BASE_KINDS)  # the extractors' kinds (spatial, …)
GROUPS: tuple[str, ...] = (*CONCEPTNET_GROUPS, *WORDNET_KINDS, "conceptnet_other",
                           *TEXT_KINDS, "other")
_GROUP = {g: i for i, g in enumerate(GROUPS)}
SUMMARY = ("seeds_1", "idf_1", "spec_1", "idf_spec_1", "conceptnet_score", "seeds_2_only",
           "idf_2_only", "mass_2", "option_degree", "has_entity", "only_question_entity",
           "record_answer", "record_answer_seeds", "record_answer_max", "record_other",
           "record_other_seeds", "chunk_other", "record_answer_alone")
RELATIVE_OF = ("seeds_1", "idf_1", "idf_spec_1", "mass_2", "record_answer_seeds")
FEATURES: tuple[str, ...] = (
    *SUMMARY,
    *(f"{r}_is_max" for r in RELATIVE_OF), *(f"{r}_gap" for r in RELATIVE_OF),
    *(f"h1_fwd:{g}" for g in GROUPS), *(f"h1_back:{g}" for g in GROUPS),
    *(f"h2:{g}" for g in GROUPS))
_INDEX = {f: i for i, f in enumerate(FEATURES)}


def group_of(kind: str) -> str:
    """A fact kind's group: its own for the frequent ConceptNet relations, WordNet's and
    the extractors' kinds; `conceptnet_other` for the rare relations; else `other`."""
    if kind in _GROUP:
        return kind
    return "conceptnet_other" if kind in CONCEPTNET_RELATIONS else "other"


def _reach(record: PathRecord, hop: int) -> dict[str, int]:
    """Seed → the number of options it reaches at `hop` (1 or 2)."""
    out: dict[str, set[int]] = {}
    for i, o in enumerate(record.options):
        for s in (h.seed for h in o.hop1) if hop == 1 else (h.seed for h in o.hop2):
            out.setdefault(s, set()).add(i)
    return {s: len(v) for s, v in out.items()}


def option_features(record: PathRecord) -> np.ndarray:
    """The options × `FEATURES` matrix of one question (module docstring)."""
    n = len(record.options)
    x = np.zeros((n, len(FEATURES)))
    if n == 0:
        return x
    reach1, reach2 = _reach(record, 1), _reach(record, 2)
    spec = {s: specificity(record.seed_degree.get(s, 0)) for s in record.seeds}
    h1f, h1b, h2 = _INDEX["h1_fwd:" + GROUPS[0]], _INDEX["h1_back:" + GROUPS[0]], \
        _INDEX["h2:" + GROUPS[0]]
    for i, o in enumerate(record.options):
        row = x[i]
        linked = {h.seed for h in o.hop1}
        idf = {s: math.log(n / reach1[s]) for s in linked}
        row[_INDEX["seeds_1"]] = math.log1p(len(linked))
        row[_INDEX["idf_1"]] = sum(idf.values())
        row[_INDEX["spec_1"]] = sum(spec.get(s, 1.0) for s in linked)
        row[_INDEX["idf_spec_1"]] = sum(idf[s] * spec.get(s, 1.0) for s in linked)
        seen: set[tuple[str, int]] = set()
        cn = 0.0
        for h in o.hop1:
            col = (h1f if h.forward else h1b) + _GROUP[group_of(h.kind)]
            if (h.seed, col) not in seen:  # one count per seed and group × direction
                seen.add((h.seed, col))
                row[col] += 1.0 + idf[h.seed]
            cn += math.log1p(max(h.score, 0.0))
        row[_INDEX["conceptnet_score"]] = math.log1p(cn)
        only2 = {h.seed for h in o.hop2} - linked
        row[_INDEX["seeds_2_only"]] = math.log1p(len(only2))
        row[_INDEX["idf_2_only"]] = sum(math.log(n / reach2[s]) for s in only2)
        mass = 0.0
        for p in o.hop2:
            row[h2 + _GROUP[group_of(p.kind)]] += p.weight
            mass += p.weight * spec.get(p.seed, 1.0)
        row[_INDEX["mass_2"]] = math.log1p(mass)
        row[_INDEX["option_degree"]] = math.log1p(max(o.degree.values(), default=0))
        row[_INDEX["has_entity"]] = float(bool(o.keys))
        row[_INDEX["only_question_entity"]] = float(
            bool(o.keys) and all(k in spec for k in o.keys))
        _mention_features(o, row)
    blocks = slice(h1f, len(FEATURES))
    x[:, blocks] = np.log1p(x[:, blocks])
    answered = x[:, _INDEX["record_answer"]] > 0
    x[:, _INDEX["record_answer_alone"]] = answered & (answered.sum() == 1)
    for r in RELATIVE_OF:
        values = x[:, _INDEX[r]]
        top = values.max()
        x[:, _INDEX[f"{r}_is_max"]] = (values == top) & (top > 0)
        x[:, _INDEX[f"{r}_gap"]] = values - top
    return x


def _mention_features(o: OptionRecord, row: np.ndarray) -> None:
    """The option's co-mentions: question/answer records whose answer it is (how many,
    their seeds, the most seeds one shares), other records naming it, other chunks."""
    answer = [len(m.seeds) for m in o.mentions if m.answer]
    records = [len(m.seeds) for m in o.mentions if m.record and not m.answer]
    row[_INDEX["record_answer"]] = math.log1p(len(answer))
    row[_INDEX["record_answer_seeds"]] = math.log1p(sum(answer))
    row[_INDEX["record_answer_max"]] = max(answer, default=0)
    row[_INDEX["record_other"]] = math.log1p(len(records))
    row[_INDEX["record_other_seeds"]] = math.log1p(sum(records))
    row[_INDEX["chunk_other"]] = math.log1p(
        sum(not m.record for m in o.mentions))


def shown_paths(record: PathRecord, max_paths: int = 5) -> list[tuple[str, ...]]:
    """Per option, up to `max_paths` of its paths as text (1 hop first), for the trace."""
    out = []
    for o in record.options:
        lines: list[str] = []
        for h in o.hop1:
            lines.append(f"{h.option} -[{h.kind}]-> {h.seed}" if h.forward
                         else f"{h.seed} -[{h.kind}]-> {h.option}")
        lines.extend(f"{h.seed} – {h.middle} -[{h.kind}]- {h.option}" for h in o.hop2)
        out.append(tuple(_first(lines, max_paths)))
    return out


def _first(items: Iterable[str], n: int) -> list[str]:
    return list(dict.fromkeys(items))[:n]
