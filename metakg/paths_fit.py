"""Fitting kg-paths and kg-fused on training questions only (`kgrag graph fit-paths`,
`kgrag graph fit-fused`).

The training files are the knowledge-source questions of each domain (the data folder's
README): `csqa_train` for commonsense, MedMCQA (`medmcqa_dev`) for medical, the MMLU
professional-law validation file for legal. Never a dev300 file. Each training question
is read without the facts whose every source chunk is its own record
(`metakg.kg_paths.fit_features`). The weights, with the command that made them and the
held-out accuracy on the training file, go to `metakg/weights/kg_paths_<domain>.json`.

    kgrag graph fit-paths --domain commonsense --n 3000
    kgrag graph fit-fused --domain commonsense --n 150
"""

from __future__ import annotations

import json
import random
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from kgrag.errors import KgragError
from kgrag.types import Question
from metakg.kg_paths import PathScorer, fit_features, fuse, weights_path
from metakg.paths import FEATURES, fit_logit

TRAIN_FILES = {
    "commonsense": "commonsense/csqa_train.jsonl",
    "medical": "medical/medmcqa_dev.jsonl",
    "legal": "legal/mmlu_professional_law_val.jsonl",
}


def training_questions(data_dir: Path, domain: str, n: int | None, seed: int = 0
                       ) -> list[Question]:
    """`n` questions (seeded sample) of the domain's training file; dev files refused."""
    from kgrag.datasets import load_dataset

    rel = TRAIN_FILES.get(domain)
    if rel is None:
        raise KgragError(f"no training file is known for domain {domain!r}",
                         hint="kg-paths fits on " + ", ".join(f"{d}: {f}" for d, f in
                                                              TRAIN_FILES.items()))
    if "dev300" in rel:  # never: the dev files are for evaluation only
        raise KgragError(f"{rel} is an evaluation file")
    loaded = load_dataset(data_dir / rel)
    qs = [q.model_copy(update={"domain": domain}) for q in loaded.questions
          if q.is_multiple_choice and len(q.answers) == 1]
    if n is not None and n < len(qs):
        qs = random.Random(seed).sample(qs, n)
    return qs


def accuracy(w: np.ndarray, xs: Sequence[np.ndarray], ys: Sequence[int]) -> float:
    """Share of questions whose correct row scores highest (ties: the first row)."""
    hits = [int(np.argmax(x @ w)) == y for x, y in zip(xs, ys, strict=True)]
    return sum(hits) / len(hits) if hits else 0.0


def fit_paths(scorer: PathScorer, questions: Sequence[Question], domain: str, *,
              l2: float = 1.0, holdout: float = 0.2,
              progress: Callable[[int], None] | None = None) -> dict[str, object]:
    """Fit on the first (1 − holdout) of the questions, report accuracy on the rest, then
    refit on all; returns the weights file's content."""
    xs, ys = fit_features(scorer, questions, domain, progress)
    if len(xs) < 10:
        raise KgragError(f"only {len(xs)} training questions could be read",
                         hint="check the domain graph and the training file")
    cut = int(len(xs) * (1 - holdout))
    w = fit_logit(xs[:cut], ys[:cut], l2)
    held = accuracy(w, xs[cut:], ys[cut:])
    w_all = fit_logit(xs, ys, l2)
    return {"features": list(FEATURES), "weights": [round(float(v), 6) for v in w_all],
            "domain": domain, "train_file": TRAIN_FILES[domain], "questions": len(xs),
            "l2": l2, "heldout_questions": len(xs) - cut, "heldout_accuracy": round(held, 4),
            "train_accuracy": round(accuracy(w_all, xs, ys), 4),
            "command": "kgrag " + shlex.join(sys.argv[1:]), "fused_weight": 0.0}


def write_weights(content: dict[str, object], domain: str, path: Path | None = None
                  ) -> Path:
    """Write the weights file (keeping a fitted fusion weight's fields when refitting)."""
    path = path or weights_path(domain)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content, indent=1) + "\n")
    return path


GRID = tuple(round(0.25 * i, 2) for i in range(0, 17))  # λ from 0 to 4


def fit_fused_weight(readers: Sequence[dict[str, float]], scores: Sequence[dict[str, float]],
                     answers: Sequence[str]) -> tuple[float, dict[str, float]]:
    """λ of `fuse` with the best mean log-likelihood of the answers on the grid `GRID`
    (0 included: the graph may not help); returns λ and its accuracy per grid value."""
    best, best_ll, acc = 0.0, -np.inf, {}
    for lam in GRID:
        ll, hits = 0.0, 0
        for r, s, a in zip(readers, scores, answers, strict=True):
            p = fuse(r, s, lam)
            ll += float(np.log(max(p.get(a, 0.0), 1e-12)))
            hits += max(p, key=lambda k: (p[k], r.get(k, 0.0))) == a
        acc[str(lam)] = round(hits / len(answers), 4)
        if ll > best_ll + 1e-9:
            best, best_ll = lam, ll
    return best, acc


DATASET_OF = {"commonsense": "csqa", "medical": "medqa", "legal": "mmlu-law"}


def reader_and_graph(method: object, questions: Sequence[Question], domain: str,
                     progress: Callable[[int], None] | None = None,
                     cache: Path | None = None
                     ) -> tuple[list[dict[str, float]], list[dict[str, float]], list[str]]:
    """For training questions: the reader's debiased letter distribution (under the
    evaluation dataset's prior) and the kg-paths scores without the question's own
    record. `method` is a `KGFused`. `cache`: a JSON Lines file of the reader's
    distributions by question id (and model), read first and appended to, so a refit
    after new kg-paths weights costs no model call."""
    from kgrag.baselines import closed_book_render
    from kgrag.method import Trace
    from metakg.kg_paths import KGFused, exclusion_prefix

    assert isinstance(method, KGFused)
    seen: dict[str, dict[str, float]] = {}
    tag = f"{method.model.name}|{method.reader.bias}"
    if cache is not None and cache.is_file():
        for line in cache.read_text().splitlines():
            row = json.loads(line)
            if row.get("model") == tag:
                seen[row["id"]] = row["probs"]
    readers, scores, answers = [], [], []
    for i, q in enumerate(questions, 1):
        own = exclusion_prefix(domain, q)
        if q.id not in seen:
            as_eval = q.model_copy(update={"dataset": DATASET_OF.get(domain, q.dataset)})
            choice = method.read(as_eval, closed_book_render(as_eval), Trace(),
                                 prompt="llm_choose", stage="reader")
            seen[q.id] = dict(choice.probs)
            if cache is not None:
                cache.parent.mkdir(parents=True, exist_ok=True)
                with open(cache, "a") as f:
                    f.write(json.dumps({"id": q.id, "model": tag, "probs": seen[q.id]}) + "\n")
        s = method.scorer(q).score(q, exclude=own)
        readers.append(seen[q.id])
        scores.append(dict(zip(s.labels, s.scores, strict=True)))
        answers.append(q.answers[0])
        if progress:
            progress(i)
    return readers, scores, answers
