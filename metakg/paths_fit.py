"""Fitting kg-paths and kg-fused on training questions only (`kgrag graph fit-paths`,
`kgrag graph fit-fused`).

The training files are the knowledge-source questions of each domain (the data folder's
README): `csqa_train` for commonsense, MedMCQA (`medmcqa_dev`) for medical, the MMLU
professional-law validation file for legal. Never a dev300 file. Each training question
is read without the facts whose every source chunk is its own record
(`metakg.kg_paths.fit_records`); the records are cached by question id
(`~/.cache/kgrag/paths/records_<domain>.jsonl`), so a refit reads Neo4j only for new
questions. The L2 strength is chosen by 5-fold cross-validation on the training
questions, and the crude baseline (the count of question entities linked to each option)
is cross-validated beside it. The weights, with the command that made them and those
accuracies, go to `metakg/weights/kg_paths_<domain>.json`.

kg-fused's λ is fitted on the first questions of the same sample, with each question's
kg-paths scores from weights fitted without it (`held_out_scores`), so λ never sees a
graph score that was fitted on its own answer.

    kgrag graph fit-paths --domain commonsense --n 3000 --seed 7
    kgrag graph fit-fused --domain commonsense --n 200
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
from metakg.kg_paths import LeaveOut, PathScorer, fit_features, fuse, weights_path
from metakg.path_features import FEATURES, option_features
from metakg.paths import PathModel, PathRecord, fit_logit

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
    path = data_dir / rel
    loaded = (medmcqa_questions(path) if path.name.startswith("medmcqa")
              else load_dataset(path).questions)
    qs = [q.model_copy(update={"domain": domain}) for q in loaded
          if q.is_multiple_choice and len(q.answers) == 1]
    # a seeded order of the whole file, cut at n: a larger n extends a smaller one's
    # questions (the record cache of `fit_records` is reused)
    return random.Random(seed).sample(qs, len(qs))[:n]


def medmcqa_questions(path: Path) -> list[Question]:
    """MedMCQA's rows (`opa`…`opd`, `cop` the 1-based correct option) as questions of the
    file's stem, the ids the medical graph's records carry (`kg_builder.corpora`)."""
    from kgrag.types import Choice

    out = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        options = [r["opa"], r["opb"], r["opc"], r["opd"]]
        out.append(Question(
            id=str(r["id"]), text=r["question"], dataset=path.stem, kind="multiple_choice",
            choices=[Choice(label=lab, text=str(t)) for lab, t in zip("ABCD", options,
                                                                      strict=True)],
            answers=["ABCD"[int(r["cop"]) - 1]]))
    return out


def accuracy(w: np.ndarray, xs: Sequence[np.ndarray], ys: Sequence[int]) -> float:
    """Share of questions whose correct row scores highest (ties: the first row)."""
    hits = [int(np.argmax(x @ w)) == y for x, y in zip(xs, ys, strict=True)]
    return sum(hits) / len(hits) if hits else 0.0


L2_GRID = (1.0, 3.0, 10.0, 30.0, 100.0, 300.0)
FOLDS = 5


def out_of_fold(xs: Sequence[np.ndarray], ys: Sequence[int], l2: float, folds: int = FOLDS
                ) -> list[np.ndarray]:
    """Each question's option scores from the weights fitted on the other folds
    (question i is in fold i mod `folds`)."""
    out: list[np.ndarray] = [np.zeros(0)] * len(xs)
    for f in range(folds):
        train = [i for i in range(len(xs)) if i % folds != f]
        w = fit_logit([xs[i] for i in train], [ys[i] for i in train], l2)
        for i in range(f, len(xs), folds):
            out[i] = xs[i] @ w
    return out


# Features that say an option *exists* in the graph, and how connected it is: a training
# question's own record created its answer's entity and edges, so these read the answer
# even with the record's facts left out (node presence and degree are not filtered by
# provenance). On MedMCQA they carry 10 of kg-paths' 61 CV points; MedQA's answers get no
# such help.
PRESENCE = ("has_entity", "option_degree", "only_question_entity")


def drop_features(xs: Sequence[np.ndarray], drop: Sequence[str]) -> list[np.ndarray]:
    """The feature matrices with the `drop` columns set to 0 (unknown names refused)."""
    unknown = [f for f in drop if f not in FEATURES]
    if unknown:
        raise KgragError(f"unknown kg-paths feature(s): {', '.join(unknown)}",
                         hint="see metakg.path_features.FEATURES")
    if not drop:
        return list(xs)
    cols = [FEATURES.index(f) for f in drop]
    out = []
    for x in xs:
        x = x.copy()
        x[:, cols] = 0.0
        out.append(x)
    return out


def cv_accuracy(xs: Sequence[np.ndarray], ys: Sequence[int], l2: float) -> float:
    """Cross-validated accuracy (`out_of_fold`, ties to the first option)."""
    scores = out_of_fold(xs, ys, l2)
    return sum(int(np.argmax(s)) == y for s, y in zip(scores, ys, strict=True)) / len(ys)


def fit_paths(scorer: PathScorer, questions: Sequence[Question], domain: str, *,
              l2: float | None = None, cache: Path | None = None,
              progress: Callable[[int], None] | None = None,
              leave_out: LeaveOut = "record", drop: Sequence[str] = ()
              ) -> dict[str, object]:
    """Choose the L2 strength by 5-fold cross-validation on the training questions (or
    take `l2`), beside the crude baseline (the count of question entities linked to each
    option, as a one-feature logit), then fit on all; returns the weights file's content.
    `leave_out`: what each training question is read without (`exclusion_prefix`);
    `drop`: features held at 0, so their weights stay 0 (`PRESENCE`)."""
    xs, ys = fit_features(scorer, questions, domain, progress, cache, leave_out)
    xs = drop_features(xs, drop)
    if len(xs) < 10 * FOLDS:
        raise KgragError(f"only {len(xs)} training questions could be read",
                         hint="check the domain graph and the training file")
    by_l2 = {str(v): round(cv_accuracy(xs, ys, v), 4) for v in ([l2] if l2 else L2_GRID)}
    best = float(max(by_l2, key=lambda k: (by_l2[k], float(k))))
    crude = FEATURES.index("seeds_1")
    w_all = fit_logit(xs, ys, best)
    return {"features": list(FEATURES), "weights": [round(float(v), 6) for v in w_all],
            "domain": domain, "train_file": TRAIN_FILES[domain], "questions": len(xs),
            "l2": best, "cv_folds": FOLDS, "cv_accuracy_by_l2": by_l2,
            "cv_accuracy": by_l2[str(best)],
            "cv_accuracy_crude_count": round(cv_accuracy([x[:, [crude]] for x in xs], ys,
                                                         1.0), 4),
            "train_accuracy": round(accuracy(w_all, xs, ys), 4),
            "leave_out": leave_out, "dropped_features": list(drop),
            "command": "kgrag " + shlex.join(sys.argv[1:]),
            "fused_weight": 0.0}


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


def reader_letters(method: object, questions: Sequence[Question], domain: str,
                   progress: Callable[[int], None] | None = None,
                   cache: Path | None = None) -> list[dict[str, float]]:
    """For training questions: the reader's debiased letter distribution (under the
    evaluation dataset's prior). `method` is a `KGFused`. `cache`: a JSON Lines file of
    the distributions by question id (and model), read first and appended to, so a refit
    after new kg-paths weights costs no model call."""
    from kgrag.baselines import closed_book_render
    from kgrag.method import Trace
    from metakg.kg_paths import KGFused

    assert isinstance(method, KGFused)
    seen: dict[str, dict[str, float]] = {}
    tag = f"{method.model.name}|{method.reader.bias}"
    if cache is not None and cache.is_file():
        for line in cache.read_text().splitlines():
            row = json.loads(line)
            if row.get("model") == tag:
                seen[row["id"]] = row["probs"]
    readers = []
    for i, q in enumerate(questions, 1):
        if q.id not in seen:
            as_eval = q.model_copy(update={"dataset": DATASET_OF.get(domain, q.dataset)})
            choice = method.read(as_eval, closed_book_render(as_eval), Trace(),
                                 prompt="llm_choose", stage="reader")
            seen[q.id] = dict(choice.probs)
            if cache is not None:
                cache.parent.mkdir(parents=True, exist_ok=True)
                with open(cache, "a") as f:
                    f.write(json.dumps({"id": q.id, "model": tag, "probs": seen[q.id]}) + "\n")
        readers.append(seen[q.id])
        if progress:
            progress(i)
    return readers


def _by_label(q: Question, r: PathRecord, raw: Sequence[float] | np.ndarray
              ) -> dict[str, float]:
    """Option label → score; an option with no entity scores 0, as in `PathScorer.score`."""
    return {c.label: (float(v) if o.keys else 0.0)
            for c, o, v in zip(q.choices, r.options, raw, strict=True)}


def model_scores(rows: Sequence[tuple[Question, PathRecord, int]], model: PathModel
                 ) -> list[dict[str, float]]:
    """kg-paths scores of questions the fitted `model` never saw."""
    return [_by_label(q, r, model.scores(list(option_features(r)))) for q, r, _ in rows]


def held_out_scores(rows: Sequence[tuple[Question, PathRecord, int]], l2: float,
                    drop: Sequence[str] = ()) -> list[dict[str, float]]:
    """kg-paths scores of training questions, each from weights fitted without it
    (`out_of_fold`, `drop` held at 0 as in the fit); an option with no entity scores 0, as
    in `PathScorer.score`."""
    xs = drop_features([option_features(r) for _, r, _ in rows], drop)
    oof = out_of_fold(xs, [y for _, _, y in rows], l2)
    return [_by_label(q, r, s) for (q, r, _), s in zip(rows, oof, strict=True)]
