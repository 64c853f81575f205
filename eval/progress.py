"""How far a run directory has got, without scoring it: each method's answers and failures,
and (open-ended runs) the answers G-Eval has judged and those it may judge now.

`kgrag progress RUN` prints it; `scripts/dev300.sh medquad-judge` reads `--brief` to decide
whether a scoring pass has work. It reads only `config.json`, `predictions.jsonl` and
`geval.jsonl` (no model, no Neo4j), so it is cheap to call every minute beside the lanes
that write those files.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from eval.geval import DIMENSIONS, geval_item
from eval.runner import read_run


@dataclass(frozen=True)
class MethodProgress:
    method: str
    answered: int
    errors: int
    judgeable: int  # answers G-Eval applies to (open-ended, or a long enough explanation)
    judged: int  # of those, answers with a G-Eval record for every dimension
    # median seconds spent per question over its latest RECENT answers (None: no answer);
    # replayed calls' credited seconds left out, so the rows of a run add up to its pace
    seconds: float | None = None


@dataclass(frozen=True)
class RunProgress:
    run: str
    methods: list[MethodProgress]
    complete: int  # questions every method of the run has answered
    ready: int  # answers not judged yet whose question every method has answered
    # median judge seconds per answer (its dimensions summed) over the latest RECENT
    # answers the judge was called for; None when none was
    judge_seconds: float | None = None

    @property
    def least(self) -> int:
        """The fewest answers of any method: the questions every row has reached."""
        return min((m.answered for m in self.methods), default=0)

    @property
    def unjudged(self) -> int:
        return sum(m.judgeable - m.judged for m in self.methods)

    def brief(self) -> str:
        """`least unjudged ready` on one line, for shell scripts."""
        return f"{self.least} {self.unjudged} {self.ready}"

    def left(self, n: int) -> Left:
        """What is left before every row has answered, and the judge judged, `n` questions,
        at the latest pace (a method without answers yet adds no seconds: `unpaced`)."""
        answers = {m.method: max(0, n - m.answered) for m in self.methods}
        seconds = sum(k * (m.seconds or 0.0) for m, k in zip(self.methods, answers.values(),
                                                            strict=True))
        judgeable = [m for m in self.methods if m.judgeable]
        to_judge = sum(max(0, n - m.judged) for m in judgeable)
        return Left(
            n=n, answers=sum(answers.values()), answer_seconds=seconds,
            unpaced=[m.method for m in self.methods if answers[m.method] and m.seconds is None],
            to_judge=to_judge,
            judge_seconds=(to_judge * self.judge_seconds if self.judge_seconds is not None
                           else None))


@dataclass(frozen=True)
class Left:
    """`RunProgress.left(n)`: answers and judged answers still missing, in lane-seconds
    (one process answering one question after another)."""
    n: int
    answers: int
    answer_seconds: float
    unpaced: list[str]  # methods with answers left but none to time yet
    to_judge: int
    judge_seconds: float | None  # None: nothing judged yet to time it by

    def summary(self) -> str:
        text = (f"to {self.n} questions in every row: {self.answers} answers left, "
                f"~{self.answer_seconds / 3600:.1f} lane-hours at each method's median s/q of "
                f"its latest {RECENT} answers")
        if self.unpaced:
            text += f" (not counting {', '.join(self.unpaced)}: no answer to time yet)"
        if self.to_judge:
            text += f"; {self.to_judge} answers to judge"
            if self.judge_seconds is not None:
                text += f", ~{self.judge_seconds / 3600:.1f} lane-hours"
        return text


RECENT = 20  # answers a pace is taken over


def run_progress(run: Path, methods: Sequence[str] | None = None) -> RunProgress:
    """A run's progress, over `methods` (default: the run's; a method without answers
    counts 0). An answer counts as judged when `geval.jsonl` holds a record of it (the same
    answer text: the item digest) for each G-Eval dimension, by any judge and template;
    `kgrag score --geval` is what checks the judge. A torn last line of either file (being
    written) is skipped."""
    config, lines = read_run(run)
    judged: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    # judge seconds per answer, in the order its last dimension was judged
    judge_s: dict[tuple[str, str, str], float] = {}
    path = run / "geval.jsonl"
    if path.is_file():
        for raw in path.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(raw)
                key = (rec["method"], rec["question_id"], rec["item"])
                judged[key].add(rec["dimension"])
                if rec.get("llm_calls", 1):
                    judge_s[key] = judge_s.pop(key, 0.0) + float(rec.get("seconds", 0.0))
            except (ValueError, KeyError, TypeError):
                continue
    whole = [s for k, s in judge_s.items() if judged[k] >= set(DIMENSIONS)]
    methods = list(methods or config.methods) or sorted({ln.prediction.method for ln in lines})
    answered: dict[str, set[str]] = {m: set() for m in methods}
    counts = {m: [0, 0, 0] for m in methods}  # errors, judgeable, judged
    seconds: dict[str, list[float]] = {m: [] for m in methods}  # in the order written
    pending: list[str] = []  # question ids of the answers not judged yet
    for ln in lines:
        m = ln.prediction.method
        if m not in answered:
            continue  # a method the configuration no longer lists
        answered[m].add(ln.question.id)
        u = ln.prediction.usage
        seconds[m].append(u.seconds - u.replayed_seconds)  # what this run spent
        counts[m][0] += ln.prediction.error is not None
        item = geval_item(ln.question, ln.prediction.answer, ln.prediction.error)
        if item is None:
            continue
        counts[m][1] += 1
        if judged.get((m, ln.question.id, item.digest), set()) >= set(DIMENSIONS):
            counts[m][2] += 1
        else:
            pending.append(ln.question.id)
    complete = set.intersection(*answered.values()) if answered else set()
    return RunProgress(
        run=str(run),
        methods=[MethodProgress(m, len(answered[m]), errors=counts[m][0],
                                judgeable=counts[m][1], judged=counts[m][2],
                                seconds=_pace(seconds[m])) for m in methods],
        complete=len(complete), ready=sum(q in complete for q in pending),
        judge_seconds=_pace(whole))


def _pace(seconds: list[float]) -> float | None:
    """The median of the latest RECENT values (None without any)."""
    return statistics.median(seconds[-RECENT:]) if seconds else None
