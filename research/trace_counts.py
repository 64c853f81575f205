"""Counts the README quotes from SeaKR and MetaRAG traces of a run, on its first N questions.

    python research/trace_counts.py docs/results/hotpotqa-dev 28

SeaKR: reasoning steps, real retrievals (a `retrieve` step that chose a passage), questions
with and without retrieval and their exact matches, the first step's uncertainty.
MetaKGRAG: per start entity, the Perceive-Evaluate-Adjust cycles run, how they stopped, the
paths they changed; the questions with a changed path and without, with their exact matches.
MetaRAG: questions with at least one monitor → evaluate → plan round, the rounds' planned
categories, how the loops stopped, and re-retrievals.
Every method that reads passages and answered all N questions: the questions it read every
supporting paragraph of, by question type (`type` of HotpotQA and 2Wiki) with how many it
answered right; then EM of the answers whose method read every supporting paragraph, and of
the others.
Every method that answered all N questions: the length in words of the answer span EM and F1
score (`reply_answer` of the reply), median, and how many spans run over 5 words (the gold
answers' median is printed first): answer form moves EM as much as retrieval does; then
its exact matches by question type.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from pathlib import Path
from typing import Annotated

import typer

from eval.runner import RunLine, read_run
from eval.scoring import per_question_scores, question_order, supporting_read
from kgrag.answers import reply_answer
from kgrag.script import run_script


def main(run: Annotated[Path, typer.Argument(help="Run directory.")],
         n: Annotated[int, typer.Argument(help="The run's first N questions.")]) -> None:
    """Trace counts of SeaKR, MetaRAG and the passage readers on the first N questions."""
    _, lines = read_run(run)  # the newer line of a repeated (method, question) wins
    by_method: dict[str, list[RunLine]] = defaultdict(list)
    for ln in lines:
        by_method[ln.prediction.method].append(ln)
    order = question_order(by_method)[:n]
    last = {(ln.prediction.method, ln.question.id): ln for ln in lines}
    seakr = [last[("seakr", q)] for q in order if ("seakr", q) in last]
    if seakr:
        steps = [s for ln in seakr for s in ln.prediction.trace if s.stage == "step"]
        hits = {ln.question.id: sum(1 for s in ln.prediction.trace
                                    if s.stage == "retrieve" and "chosen" in s.data)
                for ln in seakr}
        em = {ln.question.id: per_question_scores(ln)["em"] for ln in seakr}
        with_r = [q for q in hits if hits[q]]
        first = [u for ln in seakr for s in ln.prediction.trace[:1]
                 if s.stage == "step" and (u := s.data.get("uncertainty")) is not None]
        print(f"seakr, {len(seakr)} questions: {len(steps)} steps, {sum(hits.values())} "
              f"retrievals; {len(with_r)} questions retrieved ({sum(em[q] for q in with_r):.0f} "
              f"right), {len(hits) - len(with_r)} did not "
              f"({sum(em[q] for q in hits if not hits[q]):.0f} right)")
        if first:
            print(f"  first-step U: median {statistics.median(first):.2f}, "
                  f"range {min(first):.2f} to {max(first):.2f}")
    meta = [last[("metarag", q)] for q in order if ("metarag", q) in last]
    if meta:
        rounds = [s for ln in meta for s in ln.prediction.trace if s.stage == "round"]
        flagged = sum(any(s.stage == "round" for s in ln.prediction.trace) for ln in meta)
        stops = Counter(s.summary.split(" (")[0] for ln in meta for s in ln.prediction.trace
                        if s.stage == "stop")
        print(f"metarag, {len(meta)} questions: {flagged} with a round; planned "
              f"{dict(Counter(s.summary.split(':')[0] for s in rounds))}; stops {dict(stops)}; "
              f"re-retrievals {sum(ln.prediction.usage.retrievals - 1 for ln in meta)}")
    mkg = [last[("metakgrag", q)] for q in order if ("metakgrag", q) in last]
    if mkg:
        refines = [s.data for ln in mkg for s in ln.prediction.trace if s.stage == "refine"]
        moved = {ln.question.id: any(s.data.get("changed") for s in ln.prediction.trace
                                     if s.stage == "refine") for ln in mkg}
        em = {ln.question.id: per_question_scores(ln)["em"] for ln in mkg}
        with_c = [q for q in moved if moved[q]]
        print(f"metakgrag, {len(mkg)} questions, {len(refines)} start entities: cycles "
              f"{dict(sorted(Counter(len(d.get('cycles', [])) for d in refines).items()))}; "
              f"stops {dict(Counter(d.get('stop') for d in refines).most_common())}; "
              f"{sum(bool(d.get('changed')) for d in refines)} paths changed; "
              f"{len(with_c)} questions with a changed path ({sum(em[q] for q in with_c):.0f} "
              f"right), {len(moved) - len(with_c)} without "
              f"({sum(em[q] for q in moved if not moved[q]):.0f} right)")
    split: dict[bool, list[float]] = {True: [], False: []}
    methods = sorted({m for m, _ in last})
    readers = [m for m in methods if all((m, q) in last for q in order)
               and all(supporting_read(last[(m, q)]) is not None for q in order)]
    for m in readers:
        for q in order:
            ln = last[(m, q)]
            split[supporting_read(ln) == 1.0].append(per_question_scores(ln)["em"])
    for m in readers:  # per method: the questions it read every supporting paragraph of
        full = [last[(m, q)] for q in order if supporting_read(last[(m, q)]) == 1.0]
        kinds = Counter(ln.question.meta.get("type", "?") for ln in full)
        right = Counter(ln.question.meta.get("type", "?") for ln in full
                        if per_question_scores(ln)["em"] == 1.0)
        print(f"  {m}: all supporting read for {len(full)} ("
              + "; ".join(f"{k} {kinds[k]}, {right[k]} right" for k in sorted(kinds)) + ")")
    if readers:
        def rate(xs: list[float]) -> str:
            return f"{len(xs)} answers, EM {100 * sum(xs) / len(xs):.1f}%" if xs else "0 answers"
        print(f"supporting paragraphs ({', '.join(readers)}): all read {rate(split[True])}; "
              f"not all {rate(split[False])}")
    answered = [m for m in methods if all((m, q) in last for q in order)]
    if answered and not last[(answered[0], order[0])].question.is_multiple_choice:
        gold = [min(len(a.split()) for a in last[(answered[0], q)].question.answers)
                for q in order if last[(answered[0], q)].question.answers]
        parts = []
        for m in answered:
            words = [len(reply_answer(last[(m, q)].prediction.answer).split()) for q in order]
            parts.append(f"{m} {statistics.median(words):g} ({sum(w > 5 for w in words)} over 5)")
        print(f"answer words, median (spans over 5 words): gold {statistics.median(gold):g}; "
              + ", ".join(parts))
    if answered and not last[(answered[0], order[0])].question.is_multiple_choice:
        kind = {q: last[(answered[0], q)].question.meta.get("type", "?") for q in order}
        sizes = Counter(kind.values())
        print("exact matches by question type (" + ", ".join(
            f"{k} {sizes[k]}" for k in sorted(sizes)) + "):")
        for m in answered:
            right = Counter(kind[q] for q in order if per_question_scores(last[(m, q)])["em"])
            print(f"  {m} by type: " + "; ".join(f"{k} {right[k]}" for k in sorted(sizes)))


if __name__ == "__main__":
    run_script(main, __doc__)
