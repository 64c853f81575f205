"""Calibrating SeaKR's retrieval threshold δ for one model (paper §5.3, Appendix E).

The paper searched δ on 3,000 NaturalQuestions *training* questions with LLaMA-2-7B and
kept δ = -6: the cut above which the model's answers are mostly wrong. kgrag has no
Wikipedia-QA training split (the HotpotQA/2Wiki/NQ files are evaluation data and must
not be tuned on), so the default calibration split is the **first N questions of
`commonsense/csqa_train.jsonl`** (CommonsenseQA train, a knowledge-source file that
shares no question with any evaluation file), asked as short-answer questions with their
five options inline. Every calibration checks that none of them (by id or text) is in a
`*_dev300` evaluation file (`check_disjoint_from_evaluation`). It is a domain shift from
multi-hop Wikipedia questions; any other Question list with gold answers can be passed
to `calibrate_seakr` instead.

Per question: the closed-book SeaKR prompt (exemplars, no context); U of the first
pseudo-generated step (one sentence, stop ". ": the generation that δ is compared with in
the multi-hop loop); the greedy answer line (stops "\n", "\n\n", ...; forced completion
if it states no answer); and whether that answer is right (the option for multiple-choice
questions; else normalised exact match or the gold inside the prediction). `level=
"answer"` takes U of the whole answer line instead, as the official simple-QA code
(`main_simpleqa.py`) does; on the 0.5B model the two scales differ by ~2 nats, so a δ
fitted on one does not transfer to the other. δ is the cut on U that best separates
wrong from right answers (Youden's J = P(U > δ | wrong) - P(U > δ | right), at a
midpoint between two observed scores); the whole table is kept for inspection.

>>> cal = calibrate_seakr(platform.chat_model, calibration_questions(data_dir, n=300))
>>> save_calibration(cal, calibration_path(settings.home, settings.model.chat))
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from eval.normalize import normalize_answer
from eval.parsing import parse_question_choice
from kgrag.errors import KgragError
from kgrag.llm.base import ChatModel, require
from kgrag.types import Question
from textrag.seakr import (
    BASE_STOPS,
    SeaKR,
    SeakrConfig,
    default_engine,
    exemplar_prefix,
    render_prompt,
)
from textrag.seakr_text import clean_answer, find_answer
from textrag.seakr_uncertainty import SeakrEngine

if TYPE_CHECKING:
    from kgrag.platform import Platform

log = logging.getLogger(__name__)

CALIBRATION_FILE = "commonsense/csqa_train.jsonl"


@dataclass(frozen=True)
class CalibrationPoint:
    question_id: str
    uncertainty: float
    correct: bool
    answer: str | None


@dataclass(frozen=True)
class Cut:
    """What a candidate δ would do on the calibration questions."""

    threshold: float
    retrieve_rate: float  # share with U > δ
    wrong_retrieved: float  # P(U > δ | wrong)
    right_retrieved: float  # P(U > δ | right)
    accuracy_kept: float | None  # accuracy of the answers kept without retrieval

    @property
    def youden(self) -> float:
        return self.wrong_retrieved - self.right_retrieved


@dataclass(frozen=True)
class SeakrCalibration:
    model: str
    source: str
    threshold: float
    accuracy: float
    points: tuple[CalibrationPoint, ...]
    cuts: tuple[Cut, ...] = field(repr=False)
    settings: dict[str, object] = field(default_factory=dict)


def calibration_questions(data_dir: Path, n: int = 300) -> list[Question]:
    """The first `n` CommonsenseQA training questions, options written into the text as
    "(A) …" (no full stops: SeaKR turns a question's full stops into spaces). Raises
    `CalibrationLeak` if any of them is also in an evaluation file (`*_dev300`)."""
    from eval.datasets import read_questions

    loaded = read_questions(Path(data_dir) / CALIBRATION_FILE, dataset="csqa_train", limit=n)
    if len(loaded.questions) < n:
        raise ValueError(f"{CALIBRATION_FILE} has only {len(loaded.questions)} usable "
                         f"questions; asked for {n}")
    check_disjoint_from_evaluation(loaded.questions, data_dir)
    return [q.model_copy(update={"text": f"{q.text} Answer choices: " + " ".join(
        f"({c.label}) {c.text}" for c in q.choices)}) for q in loaded.questions]


class CalibrationLeak(KgragError):
    """A calibration question is also an evaluation question (δ would be tuned on it)."""


def _question_key(text: str) -> str:
    return " ".join(text.lower().split())


def check_disjoint_from_evaluation(questions: Sequence[Question], data_dir: Path) -> int:
    """Raise `CalibrationLeak` when a question shares its id or its text (case and spacing
    ignored) with a question of any `*_dev300` file under `data_dir`; else return how
    many evaluation questions were compared. Run on every calibration, not only in tests:
    the data folder is shared and may change."""
    from eval.datasets import read_questions

    files = sorted(Path(data_dir).rglob("*_dev300.jsonl*"))
    if not files:
        raise KgragError(f"no *_dev300 evaluation file under {data_dir}: cannot check that "
                         "the calibration split is disjoint from them",
                         hint="point KGRAG_DATA_DIR at the shared data folder")
    ids, texts, compared = set(), set(), 0
    quiet = logging.getLogger("eval.datasets")  # its data-quality notes are not ours to show
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        loaded = [read_questions(f) for f in files]
    finally:
        quiet.setLevel(level)
    for dataset in loaded:
        for q in dataset.questions:
            ids.add(q.id)
            texts.add(_question_key(q.text))
            compared += 1
    clash = [q.id for q in questions if q.id in ids or _question_key(q.text) in texts]
    if clash:
        raise CalibrationLeak(f"{len(clash)} calibration questions are also evaluation "
                              f"questions (*_dev300): {', '.join(clash[:5])}",
                              hint="calibrate on questions that no evaluation file holds")
    return compared


def is_correct(answer: str | None, question: Question) -> bool:
    """The option for multiple-choice questions; else EM or the gold inside the answer."""
    if not answer:
        return False
    if question.choices:
        label = parse_question_choice(answer, question)
        return label is not None and label in question.answers
    pred = normalize_answer(answer)
    golds = [normalize_answer(g) for g in question.answers]
    return any(g and (pred == g or re.search(rf"\b{re.escape(g)}\b", pred)) for g in golds)


def calibrate_seakr(model: ChatModel, questions: Sequence[Question], *,
                    config: SeakrConfig | None = None, engine: SeakrEngine | None = None,
                    level: Literal["step", "answer"] = "step",
                    progress: Callable[[int, int], None] | None = None) -> SeakrCalibration:
    """Score the closed-book answers of `questions` and pick δ (see the module doc)."""
    require(model, SeaKR.needs, "SeaKR calibration")
    config = config or SeakrConfig()
    engine = engine or default_engine(model, config.uncertainty,
                                      prefix=exemplar_prefix(config.n_shot))
    line_stops = (*BASE_STOPS, "\n")
    points = []
    for i, q in enumerate(questions, 1):
        prompt = render_prompt(q.text.replace(".", " "), [], [], config.n_shot)
        if level == "step":
            u = engine.generate(prompt, (*BASE_STOPS, ". "), uncertainty=True).uncertainty
            line = engine.generate(prompt, line_stops, uncertainty=False)
        else:
            line = engine.generate(prompt, line_stops, uncertainty=True)
            u = line.uncertainty
        answer = find_answer(line.text)
        if answer is None:
            forced = engine.generate(prompt + line.text.rstrip() + " So the answer is",
                                     line_stops, uncertainty=False,
                                     max_tokens=config.forced_max_tokens)
            answer = clean_answer(forced.text)
        assert u is not None
        points.append(CalibrationPoint(q.id, u, is_correct(answer, q), answer))
        if progress:
            progress(i, len(questions))
    cuts = threshold_table(points)
    best = best_cut(cuts)
    uc = engine.config
    return SeakrCalibration(
        model=model.name, source=f"the first {len(points)} questions of {questions[0].dataset}",
        threshold=best.threshold, accuracy=sum(p.correct for p in points) / len(points),
        points=tuple(points), cuts=tuple(cuts),
        settings={"k": uc.k, "alpha": uc.alpha, "layer": getattr(engine, "layer", uc.layer),
                  "tensor": uc.tensor, "temperature": uc.temperature, "top_k": uc.top_k,
                  "top_p": uc.top_p, "seed": uc.seed, "n_shot": config.n_shot,
                  "level": level})


def threshold_table(points: Sequence[CalibrationPoint]) -> list[Cut]:
    """Every midpoint between consecutive distinct U values, with its effect."""
    wrong = [p for p in points if not p.correct]
    right = [p for p in points if p.correct]
    if not wrong or not right:
        raise KgragError(f"calibration needs right and wrong answers; got {len(right)} right "
                         f"and {len(wrong)} wrong of {len(points)}",
                         hint="calibrate on more questions (--n)")
    us = sorted({p.uncertainty for p in points})
    cands = [(a + b) / 2 for a, b in zip(us, us[1:], strict=False)] or [us[0]]
    cuts = []
    for d in cands:
        kept = [p for p in points if p.uncertainty <= d]
        cuts.append(Cut(
            threshold=d,
            retrieve_rate=sum(p.uncertainty > d for p in points) / len(points),
            wrong_retrieved=sum(p.uncertainty > d for p in wrong) / len(wrong),
            right_retrieved=sum(p.uncertainty > d for p in right) / len(right),
            accuracy_kept=sum(p.correct for p in kept) / len(kept) if kept else None))
    return cuts


def best_cut(cuts: Sequence[Cut]) -> Cut:
    """Highest Youden's J; among equals, the one retrieving closest to half the questions."""
    return max(cuts, key=lambda c: (c.youden, -abs(c.retrieve_rate - 0.5)))


def calibration_path(home: Path, model_name: str) -> Path:
    """Where the calibration of `model_name` lives: `$KGRAG_HOME/calibration/`."""
    safe = re.sub(r"[^\w.-]+", "_", Path(model_name).name)
    return Path(home) / "calibration" / f"seakr-{safe}.json"


def save_calibration(cal: SeakrCalibration, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = asdict(cal)
    data["cuts"] = [{**asdict(c), "youden": c.youden} for c in cal.cuts]
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    tmp.replace(path)


def calibrated_threshold(home: Path, model_name: str, config: SeakrConfig | None = None
                         ) -> float | None:
    """δ saved for this model, or None (the caller then uses the paper's -6.0). A file
    written with other estimator settings (k, alpha, tensor, exemplars, or U of whole
    answers rather than of steps) is ignored."""
    path = calibration_path(home, model_name)
    if not path.is_file():
        log.warning("SeaKR has no calibrated threshold for %s (%s); using the paper's -6.0",
                    model_name, path)
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    cfg = config or SeakrConfig()
    now = {"k": cfg.uncertainty.k, "alpha": cfg.uncertainty.alpha,
           "tensor": cfg.uncertainty.tensor, "n_shot": cfg.n_shot, "level": "step"}
    saved = {key: data.get("settings", {}).get(key) for key in now}
    if saved != now:
        log.warning("SeaKR calibration %s was made with %s, not %s; using the paper's -6.0",
                    path, saved, now)
        return None
    return float(data["threshold"])


def calibrate_platform(platform: Platform, n: int = 300, out: Path | None = None,
                       progress: Callable[[int, int], None] | None = None
                       ) -> tuple[SeakrCalibration, Path]:
    """What `kgrag calibrate seakr` runs: the first `n` CommonsenseQA training questions
    on the configured chat model, saved to `out` or, by default, where the SeaKR
    factories read it (`calibration_path`). A backend without hidden states, parallel
    samples or logprobs is refused before any question is read."""
    model = platform.chat_model
    require(model, SeaKR.needs, "SeaKR calibration")
    questions = calibration_questions(platform.settings.data_dir, n)
    cal = calibrate_seakr(model, questions, progress=progress)
    path = out or calibration_path(platform.settings.home, platform.settings.model.chat)
    save_calibration(cal, path)
    return cal, path
