"""PriDe's position prior (Zheng et al., ICLR 2024), estimated from calibration files only.

For a calibration question, the model reads the letter distribution under every cyclic
rotation of the options. Averaging log P(letter i) over the rotations cancels what the
options say (each option visits every letter once) and leaves the model's preference for
the letter position itself; its softmax is the question's prior, and the prior is the
mean over the calibration questions. `read_choice` divides it out at one pass per
question (`ReaderConfig(bias="prior")`).

The questions come from a knowledge-source or validation file of the dataset's kind,
never from an evaluation file (`CALIBRATION`, `check_calibration_file`): the prior must
not learn the evaluated questions' answer positions.

    kgrag reader prior --dataset csqa --n 120
    kgrag reader prior --dataset medqa --n 60 --prompt answer_choose   # `--bias prompt-prior`

The prior is estimated under one answer prompt: `llm_choose` (the `llm` row's, which
`--bias prior` divides out of every prompt) or `answer_choose` (the KG rows', with its
no-evidence line and the dataset's domain, for `--bias prompt-prior`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

from tqdm import tqdm

from kgrag.baselines import closed_book_render
from kgrag.datasets import DATASETS, read_questions
from kgrag.errors import DataError
from kgrag.llm.base import ChatModel
from kgrag.reader import CLOSED_BOOK_PROMPT, PositionPrior, Render, letter_pass, rotated_block
from kgrag.types import Choice, Question

PROMPTS: tuple[str, ...] = (CLOSED_BOOK_PROMPT, "answer_choose")  # a prior can be estimated under

# dataset -> its calibration file under the data folder (a training, knowledge-source or
# validation split with the same number of options)
CALIBRATION: dict[str, str] = {
    "csqa": "commonsense/csqa_train.jsonl",
    "medqa": "medical/medmcqa_dev.jsonl",  # MedMCQA, 4 options like MedQA-US
    "mmlu-law": "legal/mmlu_professional_law_val.jsonl",
}


def evaluation_files() -> set[str]:
    """The data-folder paths of the built-in evaluation sets (never calibration)."""
    return {s.path for name, s in DATASETS.items() if not name.endswith("-val")}


def check_calibration_file(relative: str) -> None:
    """Refuse an evaluation file (any dev300 or test split, or a built-in evaluation
    set's file) as a calibration source."""
    name = Path(relative).name
    if (relative in evaluation_files() or "dev300" in name or "test" in name
            or relative not in CALIBRATION.values()):
        raise DataError(f"{relative} may not be used to estimate a position prior",
                        hint="use a knowledge-source or validation file: "
                        + ", ".join(sorted(CALIBRATION.values())))


def calibration_questions(dataset: str, data_dir: Path, n: int) -> tuple[str, list[Question]]:
    """The first `n` questions of `dataset`'s calibration file, and that file's path."""
    if dataset not in CALIBRATION:
        raise DataError(f"no calibration file is known for {dataset!r}",
                        hint=f"one of: {', '.join(sorted(CALIBRATION))}")
    relative = CALIBRATION[dataset]
    check_calibration_file(relative)
    path = data_dir / relative
    if not path.is_file():
        raise DataError(f"calibration file {path} is missing", hint="check data_dir")
    if path.name.startswith("medmcqa"):
        return relative, _medmcqa(path, n)
    return relative, list(read_questions(path, limit=n).questions)


def _medmcqa(path: Path, n: int) -> list[Question]:
    """MedMCQA lines (opa…opd, cop: the 1-based correct option) as questions; the prior
    needs no answer, the evidence trust (`eval.trust`) does."""
    out: list[Question] = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            texts = [r.get(k) or "" for k in ("opa", "opb", "opc", "opd")]
            if not r.get("question") or not all(texts):
                continue
            cop = r.get("cop")
            answers = ["ABCD"[cop - 1]] if isinstance(cop, int) and 1 <= cop <= 4 else []
            out.append(Question(id=str(r.get("id", len(out))), text=r["question"],
                                dataset="medmcqa", kind="multiple_choice", answers=answers,
                                choices=[Choice(label=lb, text=t) for lb, t in
                                         zip("ABCD", texts, strict=True)]))
            if len(out) >= n:
                break
    return out


def question_prior(passes: Sequence[dict[str, float]], labels: Sequence[str]
                   ) -> list[float]:
    """softmax over letters of the mean over rotations of log P(letter)."""
    logs = [sum(math.log(max(p[lb], 1e-12)) for p in passes) / len(passes) for lb in labels]
    top = max(logs)
    exp = [math.exp(v - top) for v in logs]
    return [e / sum(exp) for e in exp]


def prompt_render(prompt: str, dataset: str, question: Question) -> Render:
    """The answer prompt `prompt` of a calibration question, as the methods render it."""
    if prompt == CLOSED_BOOK_PROMPT:
        return closed_book_render(question)
    if prompt == "answer_choose":
        from metakg.kg_method import answer_render

        return answer_render(DATASETS[dataset].domain, question)
    raise DataError(f"no position prior can be estimated under prompt {prompt!r}",
                    hint=f"one of: {', '.join(PROMPTS)}")


def estimate_prior(model: ChatModel, dataset: str, data_dir: Path, n: int,
                   progress: bool = True, prompt: str = CLOSED_BOOK_PROMPT) -> PositionPrior:
    """The position prior of `model` on `dataset`, from `n` calibration questions × every
    rotation of their options, under the answer prompt `prompt`."""
    if prompt not in PROMPTS:
        raise DataError(f"no position prior can be estimated under prompt {prompt!r}",
                        hint=f"one of: {', '.join(PROMPTS)}")
    source, questions = calibration_questions(dataset, data_dir, n)
    labels = [c.label for c in questions[0].choices]
    priors = []
    for q in tqdm(questions, desc=f"prior {dataset} ({prompt})", disable=not progress):
        if [c.label for c in q.choices] != labels:
            continue
        render = prompt_render(prompt, dataset, q)
        passes = [letter_pass(model, render(rotated_block(q, r)), labels)[0]
                  for r in range(len(labels))]
        priors.append(question_prior(passes, labels))
    if not priors:
        raise DataError(f"no calibration question of {source} has options {labels}")
    mean = [sum(p[i] for p in priors) / len(priors) for i in range(len(labels))]
    return PositionPrior(model.name, dataset, source, tuple(labels), tuple(mean), len(priors),
                         prompt)
