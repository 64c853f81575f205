"""Calibrating the evidence trust of `metakgrag-oa-trust` (`kgrag reader trust`).

The calibration questions are the ones the position prior reads (`eval.prior`): a
knowledge-source or validation file of the dataset's kind, never an evaluation file.
Where that file is also a source of the graph (CommonsenseQA train, MedMCQA), each
question's own record is left out of the paths (`metakg.kg_method.SOURCE_DOCUMENT`), so
the graph cannot hand a calibration question its own answer. Each question is answered
once by `metakgrag-oa` (the letter reader with the dataset's position prior), and the
counts of `metakg.trust`'s three policies are read from its trace: the closed-book pass,
the evidence pass, and the rules' decision. The replies are kept beside the trust file, so
a calibration under another bias correction replays them.

    trust = estimate_trust(platform, "mmlu-law", "legal", n=60)
    trust.policy, trust.correct
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tqdm import tqdm

from eval.prior import calibration_questions
from eval.runner import RunLine
from eval.scoring import per_question_scores
from kgrag.datasets import DATASETS
from kgrag.errors import DataError
from kgrag.llm.letters import argmax
from kgrag.llm.replay import ReplayModel
from kgrag.types import Prediction, Question
from metakg.kg_method import SOURCE_DOCUMENT
from metakg.trust import EvidenceTrust, replay_path

if TYPE_CHECKING:
    from kgrag.platform import Platform

METHOD = "metakgrag-oa"


def source_document(domain: str, relative: str, question_id: str) -> str:
    """The document id the graph builder gave the calibration record
    (`<domain>:<file stem>:<record id>`, `kg_builder.sources`)."""
    stem = Path(relative).name.split(".")[0]
    return f"{domain}:{stem}:{question_id}"


def as_calibration(q: Question, dataset: str, domain: str, relative: str) -> Question:
    """`q` under the evaluated dataset's name (its prior and trust files), with its own
    knowledge-source record named for leaving out."""
    if not q.answers:
        raise DataError(f"calibration question {q.id} of {relative} has no answer")
    return q.model_copy(update={
        "dataset": dataset, "domain": domain,
        "meta": {**q.meta, SOURCE_DOCUMENT: source_document(domain, relative, q.id)}})


def policy_right(line: RunLine) -> dict[str, bool] | None:
    """Per policy, whether it answered the question right; None without a closed pass."""
    steps = {s.stage: s for s in line.prediction.trace}
    if "choose-closed" not in steps:
        return None
    gold = set(line.question.answers)
    closed = argmax(steps["choose-closed"].data["letters"])
    read = steps.get("choose-evidence")
    evidence = argmax(read.data["letters"]) if read is not None else closed
    return {"closed-book": closed in gold, "evidence": evidence in gold,
            "gate": per_question_scores(line).get("correct", 0.0) > 0}


def tally(lines: list[RunLine], *, model: str, dataset: str, domain: str, source: str,
          bias: str = "none") -> EvidenceTrust:
    correct = {"closed-book": 0, "gate": 0, "evidence": 0}
    read = questions = 0
    for ln in lines:
        right = policy_right(ln)
        if right is None:
            continue
        questions += 1
        read += any(s.stage == "choose-evidence" for s in ln.prediction.trace)
        for k, v in right.items():
            correct[k] += v
    return EvidenceTrust(model, dataset, domain, source, questions, correct, read, bias)


def estimate_trust(p: Platform, dataset: str, domain: str | None, n: int,
                   progress: bool = True, replay: bool = True) -> EvidenceTrust:
    """Answer `n` calibration questions with `metakgrag-oa` over `domain` and count.
    `replay`: the replies decoded are kept beside the trust file (`metakg.trust.
    replay_path`), so a calibration under another bias correction, or of more questions,
    decodes only what is new."""
    if dataset not in DATASETS:
        raise DataError(f"unknown dataset {dataset!r}")
    domain = domain or DATASETS[dataset].domain
    relative, questions = calibration_questions(dataset, p.settings.data_dir, n)
    root = p.reader_config().prior_dir
    if replay and root is not None:  # before the method takes the model
        model = p.replay_repeats()
        if isinstance(model, ReplayModel):
            model.keep_in(replay_path(root, model.name, dataset, domain))
    method = p.method(METHOD, domain)
    method.prepare(domain)
    lines: list[RunLine] = []
    for q in tqdm(questions, desc=f"trust {dataset}/{domain}", unit="q", disable=not progress):
        cq = as_calibration(q, dataset, domain, relative)
        pred: Prediction = method.answer(cq)
        if pred.error:
            raise DataError(f"calibration question {q.id}: {pred.error}")
        lines.append(RunLine(question=cq, prediction=pred))
    return tally(lines, model=p.chat_model.name, dataset=dataset, domain=domain,
                 source=relative, bias=p.settings.reader.bias)
