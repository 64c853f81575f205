"""A run's main score split by a question field: MedQuAD's `qtype` (treatment, symptoms,
inheritance, …) or `source`, HotpotQA's `type` (bridge, comparison) and `level`, 2Wiki's
`type` (compositional, comparison, inference, bridge_comparison).

`kgrag breakdown RUN --by FIELD` prints each method's mean per value of the field, on the
questions every method of the run has answered (or on the run's first K, `--same K`), so
the cells of one row compare methods on the same questions. The score is the one the
run's table leads with: ROUGE-L for open-ended answers, token F1 for short answers,
accuracy for multiple choice. Reads only the run files (no model, no Neo4j).

Cells are small (MedQuAD's dev300 spreads over 13 question types, 2 to 86 questions
each), so each carries its n and its 95% bootstrap interval: read a difference between
cells as a lead to check, not as a finding.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from eval.runner import RunLine, read_run
from eval.scoring import SameQuestions, per_question_scores, question_order
from eval.stats import bootstrap_ci, paired_bootstrap
from kgrag.errors import KgragError

# the question fields that hold a type: MedQuAD's, then HotpotQA's and 2Wiki's
TYPE_FIELDS = ("qtype", "type")
# the score each question kind's table leads with, in `per_question_scores`' names
LEADING = (("rouge_l", "ROUGE-L"), ("f1", "F1"), ("correct", "accuracy"))
# fewer questions than this and a paired bootstrap's p means nothing (two questions whose
# differences share a sign give p < 0.001): the difference is printed without one
MIN_PAIRED = 10


@dataclass(frozen=True)
class Cell:
    n: int
    mean: float
    low: float
    high: float


@dataclass
class Breakdown:
    run: str
    by: str
    metric: str
    questions: int  # the questions every cell is drawn from
    same: bool  # the run's first `questions` (else those every method answered)
    methods: list[str]
    values: list[str]  # the field's values, most questions first
    counts: dict[str, int] = field(default_factory=dict)  # questions per value
    cells: dict[tuple[str, str], Cell] = field(default_factory=dict)  # (method, value)
    overall: dict[str, Cell] = field(default_factory=dict)  # per method, every value
    pair: tuple[str, str] | None = None  # two methods compared question by question
    # per value (and "all"): mean of pair[0] − pair[1] and its paired-bootstrap p (None
    # under MIN_PAIRED questions)
    pair_tests: dict[str, tuple[float, float | None]] = field(default_factory=dict)


def _cell(values: list[float]) -> Cell:
    ci = bootstrap_ci(values)
    return Cell(len(values), ci.mean, ci.low, ci.high)


def _field_value(line: RunLine, by: str) -> str | None:
    v = line.question.meta.get(by)
    if v is None or v == "":
        return None
    return str(v).replace("|", "/")  # a value is a cell of a Markdown table


def breakdown(run: Path, by: str, same: int | None = None,
              methods: Sequence[str] | None = None,
              pair: tuple[str, str] | None = None) -> Breakdown:
    """Each method's leading score per value of the question field `by` (in `meta`), for
    `methods` (default: every method of the run); with `pair` (a, b), also a − b per value
    with its paired-bootstrap p over that value's questions."""
    config, lines = read_run(run)
    by_method: dict[str, list[RunLine]] = defaultdict(list)
    for ln in lines:
        by_method[ln.prediction.method].append(ln)
    known = [m for m in config.methods if m in by_method] or sorted(by_method)
    if not known:
        raise KgragError(f"{run} holds no predictions yet")
    unknown = [m for m in [*(methods or ()), *(pair or ())] if m not in by_method]
    if unknown:
        raise KgragError(f"{run} has no answers of {', '.join(unknown)}",
                         hint=f"its methods: {', '.join(known)}")
    methods = list(methods) if methods else known
    if pair is not None:
        if pair[0] == pair[1]:
            raise KgragError(f"--pair takes two different methods, not {','.join(pair)}")
        methods += [m for m in pair if m not in methods]
    answered = {m: {ln.question.id: ln for ln in by_method[m]} for m in methods}
    if same is not None:
        ids = question_order({m: by_method[m] for m in methods})[:same]
        short = [m for m in methods if not set(ids) <= set(answered[m])]
        if same < 1 or len(ids) < same or short:
            raise KgragError(f"--same {same}: not every method has answered the run's first "
                             f"{same} questions" + (f" ({', '.join(short)} have not)"
                                                    if short else ""),
                             hint=f"`kgrag progress {run}` shows how far each method got")
    else:
        common = set.intersection(*(set(a) for a in answered.values()))
        ids = [q for q in question_order({m: by_method[m] for m in methods}) if q in common]
    if not ids:
        raise KgragError(f"no question of {run} is answered by every one of "
                         f"{', '.join(methods)}", hint="narrow --methods to rows that overlap")
    fields = sorted({k for ln in lines for k in ln.question.meta})
    first = answered[methods[0]]
    if not any(_field_value(first[q], by) is not None for q in ids):
        raise KgragError(f"no question of {run} has a {by!r} field",
                         hint=f"its questions have: {', '.join(fields) or 'no fields'}")
    kinds = per_question_scores(first[ids[0]])
    key, metric = next(((k, name) for k, name in LEADING if k in kinds), (None, None))
    if key is None or metric is None:
        raise KgragError(f"{run}: no score to break down (its questions score {list(kinds)})")
    groups: dict[str, list[str]] = defaultdict(list)
    for q in ids:
        groups[_field_value(first[q], by) or "(none)"].append(q)
    values = sorted(groups, key=lambda v: (-len(groups[v]), v))
    out = Breakdown(run=str(run), by=by, metric=metric, questions=len(ids),
                    same=same is not None, methods=methods, values=values,
                    counts={v: len(groups[v]) for v in values}, pair=pair)
    scores = {m: {q: float(per_question_scores(answered[m][q])[key]) for q in ids}
              for m in methods}
    for m in methods:
        out.overall[m] = _cell(list(scores[m].values()))
        for v in values:
            out.cells[(m, v)] = _cell([scores[m][q] for q in groups[v]])
    if pair is not None:
        for v, qs in [*((v, groups[v]) for v in values), ("all", ids)]:
            t = paired_bootstrap([scores[pair[0]][q] for q in qs],
                                 [scores[pair[1]][q] for q in qs])
            out.pair_tests[v] = (t.diff, t.p_value if len(qs) >= MIN_PAIRED else None)
    return out


def type_breakdown(run: Path, same: SameQuestions | None = None) -> Breakdown | None:
    """The breakdown by the questions' type (MedQuAD's `qtype`, HotpotQA's and 2Wiki's
    `type`), on a run's same-K questions and methods when it was scored with `--same`,
    else on those every method answered; None when its questions have no type with two
    values or more (what `kgrag report` and the app's Compare page show)."""
    for by in TYPE_FIELDS:
        try:
            b = breakdown(run, by, *((same.k, list(same.methods)) if same else (None, None)))
        except KgragError:
            continue  # no such field (or no question every method answered)
        if len(b.values) > 1:
            return b
    return None


def markdown_table(b: Breakdown) -> str:
    """The breakdown as a Markdown table: a row per value (most questions first), the best
    cell of a row in bold, every method's whole mean with its 95% CI last, and with a
    pair a last column of their difference (paired-bootstrap p)."""
    where = f"the first {b.questions} questions" if b.same else \
        f"the {b.questions} questions every method answered"
    extra = [f"`{b.pair[0]}` − `{b.pair[1]}` (p)"] if b.pair else []
    head = [f"{b.metric} % by `{b.by}` on {where} of `{b.run}`", "",
            "| " + " | ".join([b.by, "n", *(f"`{m}`" for m in b.methods), *extra]) + " |",
            "|" + "---|" * (len(b.methods) + 2 + len(extra))]

    def test(v: str) -> list[str]:
        if not b.pair:
            return []
        diff, p = b.pair_tests[v]
        if p is None:
            return [f"{100 * diff:+.1f} (n < {MIN_PAIRED})"]
        return [f"{100 * diff:+.1f} ({'< 0.001' if p < 0.001 else f'{p:.3f}'})"]

    rows = []
    for v in b.values:
        cells = [f"{100 * b.cells[(m, v)].mean:.1f}" for m in b.methods]
        best = max(cells, key=float)  # ties as printed are all bold
        rows.append("| " + " | ".join([v, str(b.counts[v]), *(
            f"**{c}**" if c == best else c for c in cells), *test(v)]) + " |")
    rows.append("| " + " | ".join(["all", str(b.questions), *(
        f"{100 * c.mean:.1f} [{100 * c.low:.1f}, {100 * c.high:.1f}]"
        for c in b.overall.values()), *test("all")]) + " |")
    foot = ["", "A value's cells hold few questions: read a difference there as a lead to "
                "check, not a finding (`--json` has every cell's 95% CI)."]
    return "\n".join(head + rows + foot)
