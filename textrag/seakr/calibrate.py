"""Calibrating SeaKR's retrieval threshold δ for one model (paper §5.3, Appendix E).

The paper searched δ on 3,000 NaturalQuestions *training* questions with LLaMA-2-7B and
kept δ = -6: the cut above which the model's answers are mostly wrong. kgrag has no
Wikipedia-QA training split. Two calibration sources (`CALIBRATION_SOURCES`):

- `nq` (default): the first N questions of `wikipedia/nq_open_dev300.jsonl`,
  NaturalQuestions-open as in the paper, short-answer Wikipedia questions. It is a
  development file that no reported kgrag run evaluates on; the runner refuses a SeaKR
  run on the dataset its δ was calibrated on (`calibration_leak`), so δ is never tuned
  on the questions it is scored on.
- `csqa-train`: the first N questions of `commonsense/csqa_train.jsonl` (a knowledge-
  source file), asked with their five options inline. A domain shift: on the 1.5B
  model its δ (-0.14) sat above almost every first-step U of HotpotQA questions
  (-4…-1), so SeaKR retrieved for 1 of 13 steps on 4 HotpotQA questions.

Every calibration checks that none of its questions (by id or text) is in another
`*_dev300` file (`check_disjoint_from_evaluation`). Any other Question list with gold
answers can be passed to `calibrate_seakr` instead.

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

    cal = calibrate_seakr(platform.chat_model, calibration_questions(data_dir, n=300))
    save_calibration(cal, calibration_path(settings.home, settings.model.chat))
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from kgrag.answers import clean_answer
from kgrag.errors import KgragError
from kgrag.llm.base import ChatModel, require
from kgrag.normalize import normalize_answer
from kgrag.parsing import parse_question_choice
from kgrag.types import Question
from textrag.seakr.method import (
    BASE_STOPS,
    SeaKR,
    SeakrConfig,
    default_engine,
    exemplar_prefix,
    render_prompt,
)
from textrag.seakr.text import seakr_answer
from textrag.seakr.uncertainty import SeakrEngine

if TYPE_CHECKING:
    from kgrag.platform import Platform

log = logging.getLogger(__name__)

CALIBRATION_SOURCES = {"nq": "wikipedia/nq_open_dev300.jsonl",
                       "csqa-train": "commonsense/csqa_train.jsonl"}
DEFAULT_SOURCE = "nq"


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
    source_file: str | None = None  # relative to the data folder, for the leak check


def calibration_questions(data_dir: Path, n: int = 300, source: str = DEFAULT_SOURCE
                          ) -> list[Question]:
    """The first `n` questions of a calibration source (`CALIBRATION_SOURCES`); multiple-
    choice ones get their options written into the text as "(A) …" (no full stops: SeaKR
    turns a question's full stops into spaces). Raises `CalibrationLeak` if any of them is
    also in another evaluation file (`*_dev300`)."""
    from kgrag.datasets import read_questions

    if source not in CALIBRATION_SOURCES:
        raise KgragError(f"unknown SeaKR calibration source {source!r}",
                         hint=f"one of: {', '.join(CALIBRATION_SOURCES)}")
    rel = CALIBRATION_SOURCES[source]
    loaded = read_questions(Path(data_dir) / rel, dataset=source.replace("-", "_"), limit=n)
    if len(loaded.questions) < n:
        raise ValueError(f"{rel} has only {len(loaded.questions)} usable questions; "
                         f"asked for {n}")
    check_disjoint_from_evaluation(loaded.questions, data_dir, own=Path(data_dir) / rel)
    return [q.model_copy(update={"text": f"{q.text} Answer choices: " + " ".join(
        f"({c.label}) {c.text}" for c in q.choices)}) if q.choices else q
        for q in loaded.questions]


class CalibrationLeak(KgragError):
    """A calibration question is also an evaluation question (δ would be tuned on it)."""


def _question_key(text: str) -> str:
    return " ".join(text.lower().split())


def check_disjoint_from_evaluation(questions: Sequence[Question], data_dir: Path,
                                  own: Path | None = None) -> int:
    """Raise `CalibrationLeak` when a question shares its id or its text (case and spacing
    ignored) with a question of any `*_dev300` file under `data_dir` other than `own`
    (the calibration file itself); else return how many evaluation questions were
    compared. Run on every calibration, not only in tests: the data folder is shared and
    may change."""
    from kgrag.datasets import read_questions

    mine = own.resolve() if own is not None else None
    files = sorted(f for f in Path(data_dir).rglob("*_dev300.jsonl*") if f.resolve() != mine)
    if not files:
        raise KgragError(f"no *_dev300 evaluation file under {data_dir}: cannot check that "
                         "the calibration split is disjoint from them",
                         hint="point KGRAG_DATA_DIR at the shared data folder")
    ids, texts, compared = set(), set(), 0
    quiet = logging.getLogger("kgrag.datasets")  # its data-quality notes are not ours to show
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
        answer = seakr_answer(line.text)
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
    record = calibration_record(home, model_name, config)
    return None if record is None else float(record["threshold"])  # type: ignore[arg-type]


def calibration_record(home: Path, model_name: str, config: SeakrConfig | None = None,
                       quiet: bool = False) -> dict[str, object] | None:
    """The saved calibration SeaKR will use (threshold, source, source_file), or None when
    it falls back to the paper's δ; what an evaluation run records."""
    path = calibration_path(home, model_name)
    if not path.is_file():
        if not quiet:
            log.warning("SeaKR has no calibrated threshold for %s (%s); using the paper's "
                        "-6.0", model_name, path)
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    cfg = config or SeakrConfig()
    now = {"k": cfg.uncertainty.k, "alpha": cfg.uncertainty.alpha,
           "tensor": cfg.uncertainty.tensor, "n_shot": cfg.n_shot, "level": "step"}
    saved = {key: data.get("settings", {}).get(key) for key in now}
    if saved != now:
        if not quiet:
            log.warning("SeaKR calibration %s was made with %s, not %s; using the paper's "
                        "-6.0", path, saved, now)
        return None
    return {"threshold": float(data["threshold"]), "source": data.get("source"),
            "source_file": data.get("source_file")}


def calibration_leak(record: dict[str, object] | None, dataset_path: Path,
                     data_dir: Path) -> str | None:
    """Why a SeaKR run on `dataset_path` would be scored on its own calibration
    questions, or None."""
    if not record or not record.get("source_file"):
        return None
    own = (Path(data_dir) / str(record["source_file"])).resolve()
    if Path(dataset_path).resolve() == own:
        return (f"SeaKR's δ for this model was calibrated on {record['source_file']} "
                f"({record['source']}); evaluating SeaKR on that file would score it on "
                "its own calibration questions")
    return None


def calibrate_platform(platform: Platform, n: int = 300, out: Path | None = None,
                       progress: Callable[[int, int], None] | None = None,
                       source: str = DEFAULT_SOURCE) -> tuple[SeakrCalibration, Path]:
    """What `kgrag calibrate seakr` runs: the first `n` questions of `source` on the
    configured chat model, saved to `out` or, by default, where the SeaKR
    factories read it (`calibration_path`). A backend without hidden states, parallel
    samples or logprobs is refused before any question is read."""
    model = platform.chat_model
    require(model, SeaKR.needs, "SeaKR calibration")
    questions = calibration_questions(platform.settings.data_dir, n, source)
    cal = replace(calibrate_seakr(model, questions, progress=progress),
                  source_file=CALIBRATION_SOURCES[source])
    path = out or calibration_path(platform.settings.home, platform.settings.model.chat)
    save_calibration(cal, path)
    return cal, path
