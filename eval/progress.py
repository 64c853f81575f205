"""How far a run directory has got, without scoring it: each method's answers and failures,
and (open-ended runs) the answers G-Eval has judged and those it may judge now.

`kgrag progress RUN` prints it; `scripts/dev300.sh medquad-judge` reads `--brief` to decide
whether a scoring pass has work. It reads only `config.json`, `predictions.jsonl` and
`geval.jsonl` (no model, no Neo4j), so it is cheap to call every minute beside the lanes
that write those files.
"""

from __future__ import annotations

import json
from collections import defaultdict
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


@dataclass(frozen=True)
class RunProgress:
    run: str
    methods: list[MethodProgress]
    complete: int  # questions every method of the run has answered
    ready: int  # answers not judged yet whose question every method has answered

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


def run_progress(run: Path) -> RunProgress:
    """A run's progress. An answer counts as judged when `geval.jsonl` holds a record of it
    (the same answer text: the item digest) for each G-Eval dimension, by any judge and
    template; `kgrag score --geval` is what checks the judge. A torn last line of either
    file (being written) is skipped."""
    config, lines = read_run(run)
    judged: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    path = run / "geval.jsonl"
    if path.is_file():
        for raw in path.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(raw)
                judged[(rec["method"], rec["question_id"], rec["item"])].add(rec["dimension"])
            except (ValueError, KeyError, TypeError):
                continue
    methods = list(config.methods) or sorted({ln.prediction.method for ln in lines})
    answered: dict[str, set[str]] = {m: set() for m in methods}
    counts = {m: [0, 0, 0] for m in methods}  # errors, judgeable, judged
    pending: list[str] = []  # question ids of the answers not judged yet
    for ln in lines:
        m = ln.prediction.method
        if m not in answered:
            continue  # a method the configuration no longer lists
        answered[m].add(ln.question.id)
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
        methods=[MethodProgress(m, len(answered[m]), *counts[m]) for m in methods],
        complete=len(complete), ready=sum(q in complete for q in pending))
