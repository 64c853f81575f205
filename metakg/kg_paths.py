"""`kg-paths` and `kg-fused` (ours): multiple choice from typed graph paths, alone and
fused with the reader.

- `kg-paths` answers from the graph alone, no LLM: each option's path features
  (`metakg.paths`) scored by one conditional-logit model fitted on training questions
  only (`kgrag paths fit`; the weights are committed in `metakg/weights/`). The option
  with the highest score wins; a tie (e.g. no option reaches the graph) goes to the first
  of the tied options, so a question the graph says nothing about is a guess.
- `kg-fused` reads the option letters as `llm` does (the same prompt, the same debiased
  letter distribution p_llm) and combines it log-linearly with the kg-paths scores s:
  log p(i) ∝ log p_llm(i) + λ·s(i), where λ is fitted on training questions only and may
  be 0. An option with no entity in the graph scores 0, so only the reader speaks for it.
  The trace shows both distributions and the paths behind each option.

    KGPaths(CypherNeighbourhoods(store, "commonsense"), store_matcher(...)).answer(q)
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

import numpy as np

from kgrag.baselines import LLMOnly, closed_book_render
from kgrag.errors import KgragError
from kgrag.llm.base import Capabilities, ChatModel, Generation, GenerationParams, UsageMeter
from kgrag.method import Answer, QAMethod, Trace
from kgrag.reader import option_text
from kgrag.types import Question
from metakg.path_features import FEATURES, option_features, shown_paths
from metakg.paths import Neighbourhoods, PathModel, PathRecord, path_record, softmax
from metakg.seeds import EntityMatcher

if TYPE_CHECKING:
    from kgrag.platform import Platform

WEIGHTS = Path(__file__).resolve().parent / "weights"


def weights_path(domain: str) -> Path:
    return WEIGHTS / f"kg_paths_{domain}.json"


def load_model(domain: str, path: Path | None = None) -> PathModel:
    """The committed kg-paths weights of a domain (made by `kgrag paths fit`)."""
    path = path or weights_path(domain)
    if not path.is_file():
        raise KgragError(f"no kg-paths weights for domain {domain!r} at {path}",
                         hint=f"fit them with `kgrag paths fit --domain {domain}`")
    d = json.loads(path.read_text())
    names = tuple(d["features"])
    if names != FEATURES:
        raise KgragError(f"{path} was fitted on other features than kg-paths reads",
                         hint=f"re-fit with `kgrag paths fit --domain {domain}`")
    return PathModel(np.asarray(d["weights"], dtype=float), names,
                     {k: v for k, v in d.items() if k not in ("weights", "features")})


class NoModel:
    """The model slot of a method that never calls a model (`kg-paths`)."""

    name = "none"
    capabilities = Capabilities()

    def __init__(self) -> None:
        self.usage = UsageMeter()

    def chat(self, messages: object, params: GenerationParams) -> Generation:
        raise KgragError("kg-paths calls no model")

    sample = hidden_state = next_token_logprobs = chat  # type: ignore[assignment]


@dataclass(frozen=True)
class Scored:
    """One question's options: their entities, features, paths and scores."""

    labels: tuple[str, ...]
    entities: tuple[tuple[str, ...], ...]
    paths: tuple[tuple[str, ...], ...]
    scores: tuple[float, ...]
    seeds: tuple[str, ...]


class PathScorer:
    """Seeds and options matched, neighbourhoods read (one round trip), options scored."""

    def __init__(self, hoods: Neighbourhoods, matcher: EntityMatcher, model: PathModel
                 ) -> None:
        self.hoods, self.matcher, self.model = hoods, matcher, model

    def entities(self, question: Question) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
        """The question's entities and each option's. Seeds are *every* candidate phrase
        of the question that is an entity, not only the maximal ones: a longer phrase
        ("bake cookie") must not hide the concept inside it ("cookie"); the features
        weigh each seed by its specificity instead."""
        m = self.matcher
        m.prefetch([question.text, *(c.text for c in question.choices)])
        seeds = m.match_all(question.text)
        options = [m.match_option(c.text, exclude=seeds).keys for c in question.choices]
        return seeds, options

    def record(self, question: Question, exclude: str | None = None) -> PathRecord:
        """The question's paths (two round trips); `exclude`: its own record's prefix."""
        seeds, options = self.entities(question)
        keys = sorted(set(seeds) | {k for ks in options for k in ks})
        return path_record(seeds, options, self.hoods.read(keys, seeds), exclude,
                           [c.text for c in question.choices])

    def score(self, question: Question, exclude: str | None = None) -> Scored:
        record = self.record(question, exclude)
        raw = self.model.scores(list(option_features(record)))
        # an option with no entity in the graph scores 0 (it says nothing either way)
        scores = [s if o.keys else 0.0 for s, o in zip(raw, record.options, strict=True)]
        return Scored(tuple(c.label for c in question.choices),
                      tuple(o.keys for o in record.options), tuple(shown_paths(record)),
                      tuple(scores), record.seeds)


def _trace_paths(trace: Trace, s: Scored) -> None:
    trace.add("paths", f"{len(s.seeds)} question entities; options linked: "
              + ", ".join(f"{lab} {len(ps)}" for lab, ps in zip(s.labels, s.paths, strict=True)),
              seeds=list(s.seeds),
              options={lab: {"entities": list(e), "score": round(sc, 4), "paths": list(ps)}
                       for lab, e, ps, sc in zip(s.labels, s.entities, s.paths, s.scores,
                                                 strict=True)})


Scorers = Callable[[str], PathScorer]  # domain → its scorer


class _Domains:
    """The scorer of the method's domain, or of each question's (made once per domain)."""

    name: ClassVar[str]

    def _setup(self, scorers: Scorers | PathScorer, domain: str | None) -> None:
        self._make = scorers if callable(scorers) else (lambda _d: scorers)
        self._scorers: dict[str, PathScorer] = {}
        self.domain = domain

    def scorer(self, question: Question) -> PathScorer:
        domain = self.domain or question.domain
        if not domain:
            raise KgragError(f"{self.name} answers from a domain graph, and none was given",
                             hint="pass --domain (commonsense, medical, legal, …)")
        if domain not in self._scorers:
            self._scorers[domain] = self._make(domain)
        return self._scorers[domain]


class KGPaths(_Domains, QAMethod):
    """Ours: the option whose typed graph paths score highest (no LLM)."""

    name: ClassVar[str] = "kg-paths"

    def __init__(self, scorers: Scorers | PathScorer, domain: str | None = None,
                 model: ChatModel | None = None) -> None:
        super().__init__(model or NoModel())  # type: ignore[arg-type]
        self._setup(scorers, domain)

    def _answer(self, question: Question, trace: Trace) -> Answer:
        if not question.is_multiple_choice:
            raise KgragError(f"{self.name} answers multiple-choice questions only")
        s = self.scorer(question).score(question)
        _trace_paths(trace, s)
        probs = softmax(list(s.scores))
        best = max(range(len(probs)), key=lambda i: (probs[i], -i))
        label = s.labels[best]
        trace.add("choose", f"{option_text(question, label)} (p={probs[best]:.2f})",
                  label=label, letters={lab: round(p, 4) for lab, p in zip(s.labels, probs,
                                                                           strict=True)})
        return Answer(text=option_text(question, label), retrievals=1, setting="kg")


def fuse(reader: dict[str, float], scores: dict[str, float], weight: float
         ) -> dict[str, float]:
    """log p ∝ log p_reader + weight · score, renormalised (weight 0: the reader's)."""
    logits = {k: math.log(max(p, 1e-12)) + weight * scores.get(k, 0.0)
              for k, p in reader.items()}
    probs = softmax(list(logits.values()))
    return dict(zip(logits, probs, strict=True))


class KGFused(_Domains, LLMOnly):
    """Ours: `llm`'s debiased letter distribution fused with the kg-paths scores."""

    name: ClassVar[str] = "kg-fused"

    def __init__(self, model: ChatModel, scorers: Scorers | PathScorer,
                 domain: str | None = None, weight: float | None = None) -> None:
        super().__init__(model)
        self._setup(scorers, domain)
        self.fixed_weight = weight

    def weight_for(self, scorer: PathScorer) -> float:
        """The fusion weight: given, else the one fitted with the domain's weights."""
        if self.fixed_weight is not None:
            return self.fixed_weight
        return float(scorer.model.meta.get("fused_weight", 0.0))  # type: ignore[arg-type]

    def _answer(self, question: Question, trace: Trace) -> Answer:
        if not question.is_multiple_choice:
            return super()._answer(question, trace)
        choice = self.read(question, closed_book_render(question), trace,
                           prompt="llm_choose", stage="reader")
        scorer = self.scorer(question)
        weight = self.weight_for(scorer)
        s = scorer.score(question)
        _trace_paths(trace, s)
        scores = dict(zip(s.labels, s.scores, strict=True))
        fused = fuse(choice.probs, scores, weight)
        label = max(fused, key=lambda k: (fused[k], choice.probs.get(k, 0.0)))
        trace.add("choose", f"{option_text(question, label)} (p={fused[label]:.2f}, "
                  f"weight {weight:g})", label=label,
                  letters={k: round(v, 4) for k, v in fused.items()},
                  reader={k: round(v, 4) for k, v in choice.probs.items()},
                  graph={k: round(v, 4) for k, v in scores.items()}, weight=weight)
        text = option_text(question, label)
        if self.reader.explain:
            text = f"{text}\n{self._explain(question, label, '', trace)}"
        return Answer(text=text, retrievals=1, setting="kg")


# ---------------------------------------------------------------------------- factories
def scorer_for(p: Platform, domain: str, model: PathModel | None = None) -> PathScorer:
    """The scorer over `domain` in Neo4j with the committed weights (or `model`)."""
    from metakg.paths import CypherNeighbourhoods
    from metakg.seeds import spacy_tagger, store_matcher

    return PathScorer(CypherNeighbourhoods(p.store, domain),
                      store_matcher(p.store, domain, spacy_tagger(), wide=True),
                      model or load_model(domain))


def make_kg_paths(p: Platform, domain: str | None) -> QAMethod:
    """kg-paths: ours, the option whose typed graph paths score highest (no LLM)."""
    return KGPaths(lambda d: scorer_for(p, d), domain)


def make_kg_fused(p: Platform, domain: str | None) -> QAMethod:
    """kg-fused: ours, the reader's letter distribution fused with kg-paths scores."""
    return KGFused(p.chat_model, lambda d: scorer_for(p, d), domain)


FACTORIES: dict[str, Callable[[Platform, str | None], QAMethod]] = {
    "kg-paths": make_kg_paths, "kg-fused": make_kg_fused}


LeaveOut = Literal["record", "source"]


def exclusion_prefix(domain: str, question: Question, leave_out: LeaveOut = "record") -> str:
    """The chunk-id prefix a training question is read without: its own record in the
    domain graph (`<domain>:<file stem>:<record id>`,
    `kg_builder.sources.RowContext.document_id`), or with `leave_out="source"` every
    record of its training file (`<domain>:<file stem>`).

    Which one matches evaluation: CommonsenseQA's dev questions come from the dataset whose
    training records are in the graph, so a training question keeps its siblings
    ("record", the default). MedQA's come from another dataset than the graph's MedMCQA
    records; "source" reads a MedMCQA question as if its dataset were absent. Measured on
    the medical graph it changes little (5-fold CV 59.6% against 61.0%,
    `kgrag graph fit-paths --domain medical --n 2000 --leave-out source`): what makes
    MedMCQA easier for the graph than MedQA (24.3% on dev300) is not its sibling records.

    >>> from kgrag.types import Question
    >>> q = Question(id="7", text="?", dataset="medmcqa_dev")
    >>> exclusion_prefix("medical", q), exclusion_prefix("medical", q, "source")
    ('medical:medmcqa_dev:7', 'medical:medmcqa_dev')
    """
    if leave_out == "source":
        return f"{domain}:{question.dataset}"
    return f"{domain}:{question.dataset}:{question.id}"


def fit_records(scorer: PathScorer, questions: Sequence[Question], domain: str,
                cache: Path | None = None, progress: Callable[[int], None] | None = None,
                leave_out: LeaveOut = "record") -> list[tuple[Question, PathRecord, int]]:
    """Training questions with their path records and correct rows, each read without
    the facts whose only provenance is its own record (or its training file,
    `leave_out="source"`). `cache`: a JSON Lines file of records by question id and what
    they were read without, read first and appended to, so a refit (or a new feature
    design) reads Neo4j only for questions it has not seen. Delete it after the graph
    changes."""
    seen: dict[tuple[str, str], PathRecord] = {}  # (question id, what it was read without)
    if cache is not None and cache.is_file():
        for line in cache.read_text().splitlines():
            row = json.loads(line)
            seen[row["id"], row.get("exclude", "")] = PathRecord.from_json(row["record"])
    out = []
    for i, q in enumerate(questions, 1):
        labels = [c.label for c in q.choices]
        if len(q.answers) != 1 or q.answers[0] not in labels:
            continue
        own = exclusion_prefix(domain, q, leave_out)
        if (q.id, own) not in seen:
            seen[q.id, own] = scorer.record(q, exclude=own)
            if cache is not None:
                cache.parent.mkdir(parents=True, exist_ok=True)
                with open(cache, "a") as f:
                    f.write(json.dumps({"id": q.id, "exclude": own,
                                        "record": seen[q.id, own].to_json()}) + "\n")
        out.append((q, seen[q.id, own], labels.index(q.answers[0])))
        if progress:
            progress(i)
    return out


def fit_features(scorer: PathScorer, questions: Sequence[Question], domain: str,
                 progress: Callable[[int], None] | None = None, cache: Path | None = None,
                 leave_out: LeaveOut = "record") -> tuple[list[np.ndarray], list[int]]:
    """Feature matrices and correct rows of training questions (`fit_records`)."""
    rows = fit_records(scorer, questions, domain, cache, progress, leave_out)
    return [option_features(r) for _, r, _ in rows], [y for _, _, y in rows]
