# Over 400 lines: every metric of metrics.json comes from one pass over the predictions.
"""Scoring: a separate pass over predictions.jsonl that writes metrics.json.

Per method: multiple choice → Correct / Wrong / Fail (no parsable option); short answers →
EM, F1, precision, recall (SQuAD normalisation, best gold); open-ended → ROUGE-L, and on
request BERTScore and G-Eval; cost → LLM calls, tokens, retrievals, Cypher queries,
seconds per question; KG methods → Path Refinement Rate from their traces. Every mean has
a bootstrap 95% CI; pairs of methods get McNemar (accuracy/EM) and a paired bootstrap (F1).

    metrics = score_run(Path("runs/csqa-50"))
    metrics.methods["llm"].accuracy.mean
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Mapping, Sequence
from itertools import combinations
from pathlib import Path
from statistics import median
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel, Field

from eval.agreement import Agreement, geval_means, run_agreement
from eval.geval import GevalCache, GevalCost
from eval.metrics import rouge_l, score_answer
from eval.runner import RunConfig, RunLine, read_run
from eval.stats import bootstrap_ci, length_controlled, mcnemar, paired_bootstrap
from kg_builder.fingerprint import GraphFingerprint
from kgrag.answers import reply_answer
from kgrag.errors import KgragError
from kgrag.normalize import normalize_answer
from kgrag.parsing import ANSWER_FIRST_PROMPTS, parse_question_choice

if TYPE_CHECKING:
    from eval.geval import GEvalJudge, GevalRecord

log = logging.getLogger(__name__)


class Interval(BaseModel):
    mean: float
    low: float
    high: float


class GevalSummary(BaseModel):
    """One method's G-Eval: per-dimension means on the 1–5 scale with 95% CIs."""

    scores: dict[str, Interval]
    answers: int  # answers G-Eval applied to
    empty: int = 0  # empty/failed answers, scored 1 without a judge call
    unparsed: int = 0  # (answer, dimension) replies without a score token, not averaged


class OptionCount(BaseModel):
    """One option label of a multiple-choice run: how often a method chose it, how often
    that choice was right, and for how many of its questions it is the correct label
    (`gold`). Side by side they show a position bias: a label chosen far more often than
    it is correct."""

    chosen: int = 0
    correct: int = 0
    gold: int = 0
    # summed probability the reader gave the label (its "choose" step's letter
    # distribution over the options); None where the answers were parsed from replies
    mass: float | None = None


class MethodMetrics(BaseModel):
    method: str
    n: int
    setting: str
    correct: int | None = None
    wrong: int | None = None
    fail: int | None = None
    accuracy: Interval | None = None
    em: Interval | None = None
    f1: Interval | None = None
    precision: float | None = None
    recall: float | None = None
    rouge_l: Interval | None = None
    bertscore_f1: Interval | None = None
    geval: GevalSummary | None = None
    answer_words: float | None = None  # open-ended: median words per answer (how verbose)
    errors: int = 0
    llm_calls: float = 0.0
    replayed_calls: float = 0.0  # of llm_calls, answered by a replay (`kgrag.llm.replay`)
    prompt_tokens: float = 0.0
    completion_tokens: float = 0.0
    retrievals: float = 0.0
    cypher_queries: float = 0.0
    seconds: float = 0.0
    median_seconds: float = 0.0
    prr: dict[str, float] | None = None
    passage_em: Interval | None = None  # IM-RAG's Progress Tracker, where gold facts exist
    passage_recall: float | None = None
    # text methods on HotpotQA/2Wiki: every gold supporting paragraph is among the passages
    # the method put before its reader (its `evidence`), and the mean share of them
    supporting_all: Interval | None = None
    supporting_share: float | None = None
    retrieval_ms: float | None = None  # KG methods: median retrieval time without the LLM
    evidence_hit: Interval | None = None  # MCQ: the correct option's text is in the evidence
    matching: dict[str, float] | None = None  # KG methods: how concepts met the graph
    options: dict[str, OptionCount] | None = None  # MCQ: answers by option label
    # metakgrag-oa's evidence gate: how often it answered closed-book, and the accuracy
    # on each side ({"questions", "fired", "fired_correct", "kept_correct"})
    gate: dict[str, int] | None = None


class PairTest(BaseModel):
    a: str
    b: str
    metric: str
    statistic: float
    p_value: float
    n: int = 0  # shared questions (0: scored before kgrag recorded it)


class SameQuestions(BaseModel):
    """Every method restricted to the first `k` questions of the run (dataset order): the
    one-table comparison when methods were run on different numbers of questions. Methods
    that did not answer all `k` are listed in `left_out`."""

    k: int
    question_ids: list[str]
    methods: dict[str, MethodMetrics]
    pairs: list[PairTest] = Field(default_factory=list)
    left_out: list[str] = Field(default_factory=list)


class EvidenceSplit(BaseModel):
    """A KG method's multiple-choice answers split by the evidence it had, beside a
    closed-book method (`llm`, else `cot`) on exactly the same questions: where the graph's
    evidence helped, where it misled, where there was none. `p_value`: McNemar exact."""

    method: str
    reference: str
    subset: str
    n: int
    correct: int
    reference_correct: int
    p_value: float


class RunMetrics(BaseModel):
    run: str
    dataset: str
    model: str
    methods: dict[str, MethodMetrics]
    pairs: list[PairTest] = Field(default_factory=list)
    same: SameQuestions | None = None  # `kgrag score --same K`
    evidence_split: list[EvidenceSplit] = Field(default_factory=list)
    geval: GevalCost | None = None  # the judge and its cost per answer
    notes: list[str] = Field(default_factory=list)
    domain: str | None = None
    graph: GraphFingerprint | None = None  # the domain graph the KG methods read
    agreement: list[Agreement] = Field(default_factory=list)  # judge vs ROUGE-L/BERTScore


def _interval(values: list[float]) -> Interval:
    ci = bootstrap_ci(values)
    return Interval(mean=ci.mean, low=ci.low, high=ci.high)


def answered_first(line: RunLine) -> bool:
    """Whether the prediction's reply came from an answer-first prompt (the prompt its
    last "generate" step names)."""
    steps = [s for s in line.prediction.trace if s.stage == "generate"]
    return bool(steps) and steps[-1].data.get("prompt") in ANSWER_FIRST_PROMPTS


def chosen_option(line: RunLine) -> str | None:
    """The option a multiple-choice prediction chose (None: a Fail): the label its last
    "choose" step read from the letter probabilities, else read from the reply as its
    prompt asked (an answer-first reply by its opening label, `parse_choice`)."""
    if line.prediction.error:
        return None
    read = [s for s in line.prediction.trace if s.stage == "choose" and "label" in s.data]
    if read:  # read from the letter probabilities (`kgrag.reader`): no reply to parse
        return str(read[-1].data["label"])
    return parse_question_choice(line.prediction.answer, line.question,
                                 answer_first=answered_first(line))


def per_question_scores(line: RunLine) -> dict[str, float]:
    """The scores of one prediction (keys depend on the question kind)."""
    q, pred = line.question, line.prediction
    if q.is_multiple_choice:
        label = chosen_option(line)
        return {"correct": float(label is not None and label in q.answers),
                "fail": float(label is None)}
    if q.kind == "open_ended":
        return {"rouge_l": rouge_l(pred.answer, q.answers) if q.answers else 0.0}
    s = score_answer(reply_answer(pred.answer), q.answers)
    return {"em": s.em, "f1": s.f1, "precision": s.precision, "recall": s.recall}


def answer_words(lines: Sequence[RunLine]) -> list[int]:
    """Each answer's length in words (the table's verbosity column and the judge's length
    probe, `eval.agreement.LENGTH`)."""
    return [len(ln.prediction.answer.split()) for ln in lines]


def score_method(method: str, lines: list[RunLine]) -> tuple[MethodMetrics, dict[str, list]]:
    scores: dict[str, list[float]] = defaultdict(list)
    for line in lines:
        for k, v in per_question_scores(line).items():
            scores[k].append(v)
    usage = [ln.prediction.usage for ln in lines]
    m = MethodMetrics(
        method=method, n=len(lines),
        setting=",".join(sorted({ln.prediction.setting for ln in lines})),
        errors=sum(1 for ln in lines if ln.prediction.error),
        llm_calls=float(np.mean([u.llm_calls for u in usage])),
        replayed_calls=float(np.mean([u.replayed_calls for u in usage])),
        prompt_tokens=float(np.mean([u.prompt_tokens for u in usage])),
        completion_tokens=float(np.mean([u.completion_tokens for u in usage])),
        retrievals=float(np.mean([u.retrievals for u in usage])),
        cypher_queries=float(np.mean([u.cypher_queries for u in usage])),
        seconds=float(np.mean([u.seconds for u in usage])),
        median_seconds=float(median([u.seconds for u in usage])),
    )
    if "correct" in scores:
        m.correct = int(sum(scores["correct"]))
        m.fail = int(sum(scores["fail"]))
        m.wrong = m.n - m.correct - m.fail
        m.accuracy = _interval(scores["correct"])
    if "em" in scores:
        m.em, m.f1 = _interval(scores["em"]), _interval(scores["f1"])
        m.precision = float(np.mean(scores["precision"]))
        m.recall = float(np.mean(scores["recall"]))
    if "rouge_l" in scores:
        m.rouge_l = _interval(scores["rouge_l"])
        scores["words"] = [float(w) for w in answer_words(lines)]
        m.answer_words = float(median(scores["words"]))
    m.options = option_counts(lines)
    m.gate = gate_counts(lines)
    m.prr = path_refinement(lines)
    hits = [evidence_has_answer(ln) for ln in lines
            if ln.question.is_multiple_choice and ln.prediction.setting.startswith("kg")]
    if hits:
        m.evidence_hit = _interval([float(h) for h in hits])
    m.matching = concept_matching(lines)
    retrieval = [float(step.data["retrieval_ms"]) for ln in lines for step in
                 ln.prediction.trace if step.stage == "evidence" and "retrieval_ms" in step.data]
    if retrieval:
        m.retrieval_ms = float(median(retrieval))
    progress = [step.data for ln in lines for step in ln.prediction.trace
                if step.stage == "progress" and "passage_em" in step.data]
    if progress:
        m.passage_em = _interval([float(bool(d["passage_em"])) for d in progress])
        m.passage_recall = float(np.mean([float(d["passage_recall"]) for d in progress]))
    read = [r for r in map(supporting_read, lines) if r is not None]
    if read:
        m.supporting_all = _interval([float(share == 1.0) for share in read])
        m.supporting_share = float(np.mean(read))
    return m, scores


def option_counts(lines: list[RunLine]) -> dict[str, OptionCount] | None:
    """Chosen, right and correct counts per option label over the multiple-choice
    predictions (a Fail chooses no label); None without multiple-choice questions."""
    mcq = [ln for ln in lines if ln.question.is_multiple_choice]
    if not mcq:
        return None
    counts: dict[str, OptionCount] = {}
    for ln in mcq:
        for choice in ln.question.choices:  # every offered label gets a row, chosen or not
            counts.setdefault(choice.label, OptionCount())
        for gold in ln.question.answers:
            counts.setdefault(gold, OptionCount()).gold += 1
        chosen = chosen_option(ln)
        if chosen is not None:
            count = counts.setdefault(chosen, OptionCount())
            count.chosen += 1
            count.correct += chosen in ln.question.answers
        read = [s for s in ln.prediction.trace if s.stage == "choose" and "letters" in s.data]
        for label, p in (read[-1].data["letters"].items() if read else ()):
            count = counts.setdefault(label, OptionCount())
            count.mass = (count.mass or 0.0) + float(p)
    return dict(sorted(counts.items()))


def gate_counts(lines: list[RunLine]) -> dict[str, int] | None:
    """How an evidence gate ("gate" trace step) decided, from the traces; None when the
    method has no gate. Keys:
    - questions, fired (answered closed-book), fired_correct, kept_correct;
    - switched: the evidence moved the choice and the gate kept it; switched_correct, and
      switched_closed_correct (the closed-book choice it overrode was right);
    - read: questions whose evidence the reader read (a "choose-evidence" step);
      read_reached: of them, the evidence choice is an option a path reaches;
      options / options_reached: the options of those questions, and those paths reach
      (the base rate: a reader that ignores which options have paths picks a reached one
      at about options_reached / options)."""
    keys = ("questions", "fired", "fired_correct", "kept_correct", "switched",
            "switched_correct", "switched_closed_correct", "read", "read_reached",
            "options", "options_reached")
    out = dict.fromkeys(keys, 0)
    for ln in lines:
        steps = {s.stage: s for s in ln.prediction.trace}
        if "gate" not in steps:
            continue
        gate = steps["gate"].data
        fired = not gate.get("use_evidence", True)
        right = per_question_scores(ln).get("correct", 0.0) > 0
        out["questions"] += 1
        out["fired"] += fired
        out["fired_correct" if fired else "kept_correct"] += right
        closed, read = steps.get("choose-closed"), steps.get("choose-evidence")
        if read is None or closed is None:
            continue
        chosen, before = read.data.get("label"), closed.data.get("label")
        supported = set(gate.get("supported") or ())
        out["read"] += 1
        out["read_reached"] += chosen in supported
        out["options"] += len(ln.question.choices)
        out["options_reached"] += len(supported)
        if not fired and chosen != before:
            out["switched"] += 1
            out["switched_correct"] += right
            out["switched_closed_correct"] += before in ln.question.answers
    return out if out["questions"] else None


PASSAGE_SETTINGS = ("open", "gold")  # `Answer.setting` of methods that read passages


def supporting_read(line: RunLine) -> float | None:
    """The share of the question's gold supporting paragraphs (HotpotQA, 2Wiki titles)
    that the method read: an evidence item is the title ("rag", "ircot", "flare") or
    starts with "title: " (metarag, imrag, seakr). None where the question names no
    supporting paragraphs or the method reads no passages (closed-book, KG triples); a
    passage method that retrieved nothing reads 0 of them.

    The retrieval side of an EM/F1 row: a method that never read the bridge paragraph
    cannot be faulted for its reasoning, and one that read both and still missed can.
    """
    gold = set(line.question.supporting)
    if not gold or line.prediction.setting not in PASSAGE_SETTINGS:
        return None
    evidence = line.prediction.evidence
    read = {t for t in gold if any(e == t or e.startswith(f"{t}: ") for e in evidence)}
    return len(read) / len(gold)


SPLITS = (("KG evidence", lambda ln: ln.prediction.setting == "kg"),
          ("KG evidence with the answer",
           lambda ln: ln.prediction.setting == "kg" and evidence_has_answer(ln)),
          ("KG evidence without the answer",
           lambda ln: ln.prediction.setting == "kg" and not evidence_has_answer(ln)),
          ("no KG evidence", lambda ln: ln.prediction.setting == "kg-none"))


def evidence_split(order: list[str], by_method: Mapping[str, list[RunLine]]
                   ) -> list[EvidenceSplit]:
    """For every KG method of a multiple-choice run, its accuracy on the questions where
    it had KG evidence (with and without the correct option in it) and where it had none,
    against the closed-book reference on the same questions. Empty subsets are left out."""
    reference = next((m for m in ("llm", "cot") if m in order), None)
    if reference is None:
        return []
    ref = {ln.question.id: ln for ln in by_method[reference]}
    rows = []
    for name in order:
        lines = [ln for ln in by_method[name] if ln.question.is_multiple_choice
                 and ln.prediction.setting.startswith("kg") and ln.question.id in ref]
        for subset, keep in SPLITS:
            chosen = [ln for ln in lines if keep(ln)]
            if not chosen:
                continue
            a = [per_question_scores(ln)["correct"] > 0 for ln in chosen]
            b = [per_question_scores(ref[ln.question.id])["correct"] > 0 for ln in chosen]
            rows.append(EvidenceSplit(method=name, reference=reference, subset=subset,
                                      n=len(chosen), correct=sum(a), reference_correct=sum(b),
                                      p_value=mcnemar(a, b).p_exact))
    return rows


def evidence_has_answer(line: RunLine) -> bool:
    """Whether the retrieved evidence mentions the correct option's text (normalised, as
    whole words): a diagnostic of graph coverage, not of the method's reasoning. A KG
    method cannot be expected to beat the LLM alone when this is rare."""
    q = line.question
    gold = {c.text for c in q.choices if c.label in q.answers}
    evidence = f" {normalize_answer(' '.join(line.prediction.evidence))} "
    return any(f" {normalize_answer(t)} " in evidence for t in gold if normalize_answer(t))


def path_refinement(lines: list[RunLine]) -> dict[str, float] | None:
    """Path Refinement Rate (MetaKGRAG §4.2.3, Fig. 4) from the traces' "refine" steps, one
    per start entity, as `metakg.cycle.path_refinement_rate` defines it: `by_start`, the
    share of starts whose final triples differ from the initial ones; `by_question`, the
    share of questions with such a start (no start: unchanged); `mean_change`, the mean
    of 1 - PathSimilarity (Jaccard of entity sets) between initial and final paths.
    None for methods without refine steps."""
    per_question = [[step.data for step in ln.prediction.trace if step.stage == "refine"]
                    for ln in lines]
    starts = [r for rs in per_question for r in rs]
    if not starts:
        return None

    def change(r: dict) -> float:
        a = set(r.get("initial", {}).get("entities", []))
        b = set(r.get("final", {}).get("entities", []))
        return 1.0 - (len(a & b) / len(a | b) if a | b else 1.0)

    return {"by_start": float(np.mean([bool(r.get("changed")) for r in starts])),
            "by_question": float(np.mean([any(bool(r.get("changed")) for r in rs)
                                          for rs in per_question])),
            "mean_change": float(np.mean([change(r) for r in starts]))}


def pair_tests(order: list[str], scores: dict[str, dict[str, list]],
               qids: dict[str, list[str]]) -> list[PairTest]:
    """McNemar on correctness/EM and a paired bootstrap on F1, on shared questions only."""
    tests = []
    for a, b in combinations(order, 2):
        shared = [q for q in qids[a] if q in set(qids[b])]
        if len(shared) < 2:
            continue
        ia = [qids[a].index(q) for q in shared]
        ib = [qids[b].index(q) for q in shared]
        for metric in ("correct", "em"):
            if metric in scores[a] and metric in scores[b]:
                r = mcnemar([scores[a][metric][i] > 0 for i in ia],
                            [scores[b][metric][i] > 0 for i in ib])
                tests.append(PairTest(a=a, b=b, metric=f"{metric} (McNemar exact)",
                                      statistic=float(r.b - r.c), p_value=r.p_exact,
                                      n=len(shared)))
        for metric in PAIRED_MEANS:  # open-ended rows: ROUGE-L, BERTScore, G-Eval
            if metric in scores[a] and metric in scores[b]:
                both = [(x, y) for i, j in zip(ia, ib, strict=True)
                        if not (np.isnan(x := scores[a][metric][i])
                                or np.isnan(y := scores[b][metric][j]))]
                if len(both) < 2:
                    continue
                r2 = paired_bootstrap([x for x, _ in both], [y for _, y in both])
                tests.append(PairTest(a=a, b=b, metric=f"{metric} (paired bootstrap)",
                                      statistic=r2.diff, p_value=r2.p_value, n=len(both)))
        if all("geval" in scores[m] and "words" in scores[m] for m in (a, b)):
            tests += _length_controlled(a, b, scores, ia, ib)
    return tests


GEVAL_AT_EQUAL_LENGTH = "geval at equal length (paired bootstrap)"


def _length_controlled(a: str, b: str, scores: dict[str, dict[str, list]], ia: list[int],
                       ib: list[int]) -> list[PairTest]:
    """G-Eval's paired difference at equal answer length (`stats.length_controlled`):
    what is left of a judge's preference once the longer answer's advantage is fitted."""
    rows = [(x, y, scores[a]["words"][i], scores[b]["words"][j])
            for i, j in zip(ia, ib, strict=True)
            if not (np.isnan(x := scores[a]["geval"][i]) or np.isnan(y := scores[b]["geval"][j]))]
    if len(rows) < 2:
        return []
    r = length_controlled(*(list(col) for col in zip(*rows, strict=True)))
    return [PairTest(a=a, b=b, metric=GEVAL_AT_EQUAL_LENGTH, statistic=r.diff,
                     p_value=r.p_value, n=len(rows))]


# Per-question means compared by a paired bootstrap; "geval" is the mean of an answer's
# G-Eval dimensions (NaN where the judge gave none: that question is left out of the pair).
PAIRED_MEANS = ("f1", "rouge_l", "bertscore_f1", "geval")


def question_order(by_method: Mapping[str, Sequence[RunLine]]) -> list[str]:
    """A run's question ids in dataset order: the order the method with most answers wrote
    them in (the runner answers the first n questions of a dataset in file order), then
    any question only other methods answered."""
    order = list(by_method)
    ref = max(order, key=lambda m: len(by_method[m]), default=None)
    seen: dict[str, None] = {}
    for m in ([ref] if ref else []) + order:
        for ln in by_method[m]:
            seen.setdefault(ln.question.id, None)
    return list(seen)


def same_questions(order: list[str], by_method: Mapping[str, list[RunLine]], k: int
                   ) -> SameQuestions:
    """Score every method that answered all of the run's first `k` questions (in
    `question_order`) on exactly those."""
    if k < 1:
        raise KgragError(f"--same must be at least 1, not {k}")
    ids = question_order({m: by_method[m] for m in order})[:k]
    if len(ids) < k:
        raise KgragError(f"--same {k}: the run has only {len(ids)} questions")
    wanted = set(ids)
    methods, scores, qids, left_out = {}, {}, {}, []
    for name in order:
        group = sorted((ln for ln in by_method[name] if ln.question.id in wanted),
                       key=lambda ln: ln.question.id)
        if len(group) < k:
            left_out.append(name)
            continue
        methods[name], scores[name] = score_method(name, group)
        qids[name] = [ln.question.id for ln in group]
    kept = [m for m in order if m in methods]
    return SameQuestions(k=k, question_ids=ids, methods=methods,
                         pairs=pair_tests(kept, scores, qids), left_out=left_out)


def score_run(run: Path, *, bertscore: bool = False, judge: GEvalJudge | None = None,
              progress: bool = False, same: int | None = None,
              judge_complete: bool = False, judge_stored: bool = False) -> RunMetrics:
    """Score every method of a run directory and write metrics.json beside it.

    With a `judge`, open-ended answers and explanations also get G-Eval (judged pairs are
    kept in `<run>/geval.jsonl`, so an interrupted scoring resumes). `judge_complete`
    judges only the questions every method of the run has answered: a question's answers
    are then judged one after another, sharing its prompt in the judge's KV cache, even
    while rows grow at different speeds (the others wait for a later pass; G-Eval then
    covers the same questions for every row). `judge_stored` calls no judge: G-Eval covers
    the questions whose every answer `geval.jsonl` already holds, for each dimension, by
    this judge (a checkpoint while a judge lane is still behind; its partly judged
    questions wait). With `same`, also every method on the run's first `same` questions
    (`SameQuestions`; without BERTScore and G-Eval)."""
    config, lines = read_run(run)
    by_method: dict[str, list[RunLine]] = defaultdict(list)
    for line in lines:
        by_method[line.prediction.method].append(line)
    order = [m for m in config.methods if m in by_method]
    groups = {m: sorted(by_method[m], key=lambda ln: ln.question.id) for m in order}
    methods, scores, qids = {}, {}, {}
    judged: list[GevalRecord] = []
    judged_groups = groups
    # `<run>/geval.jsonl`, read once: the stored-only filter and the judging share it
    store = GevalCache(run / "geval.jsonl") if judge is not None else None
    if judge_complete or judge_stored:
        complete = set.intersection(*({ln.question.id for ln in g} for g in groups.values())) \
            if groups else set()
        if judge_stored and judge is not None and store is not None:
            complete -= _not_stored(judge, store, groups)
        judged_groups = {m: [ln for ln in g if ln.question.id in complete]
                         for m, g in groups.items()}
    geval = _geval(judge, store, judged_groups, progress) \
        if judge is not None and store is not None else {}
    for name, group in groups.items():
        methods[name], scores[name] = score_method(name, group)
        qids[name] = [ln.question.id for ln in group]
        if bertscore and methods[name].rouge_l is not None:
            from eval.bertscore import cached_bertscore_f1

            scores[name]["bertscore_f1"] = cached_bertscore_f1(
                [ln.prediction.answer for ln in group], [ln.question.answers for ln in group],
                run / "bertscore.jsonl")
            methods[name].bertscore_f1 = _interval(scores[name]["bertscore_f1"])
        if judge is not None:
            methods[name].geval, records = geval[name]
            judged += records
            scores[name]["geval"] = geval_means(records, qids[name])
    metrics = RunMetrics(run=str(run), dataset=config.dataset, model=config.model,
                         methods=methods, pairs=pair_tests(order, scores, qids),
                         domain=config.domain, graph=config.graph)
    if judge is not None:
        metrics.agreement = run_agreement(
            judged, scores, qids,
            {m: answer_words(g) for m, g in groups.items()})
    if same is not None:
        metrics.same = same_questions(order, by_method, same)
    metrics.evidence_split = evidence_split(order, by_method)
    if judge is not None:
        from eval.geval import geval_cost

        metrics.geval = geval_cost(judge, judged)
    metrics.notes += run_notes(config)
    (run / "metrics.json").write_text(metrics.model_dump_json(indent=2))
    return metrics


def _not_stored(judge: GEvalJudge, cache: GevalCache, groups: dict[str, list[RunLine]]
                ) -> set[str]:
    """The questions with an answer `cache` lacks a record of (this judge, template and
    answer text) for some dimension. Empty and failed answers need no record: their score
    is the policy's, without a judge call."""
    from eval.geval import geval_item, stored_key

    missing = set()
    for method, lines in groups.items():
        for ln in lines:
            item = geval_item(ln.question, ln.prediction.answer, ln.prediction.error)
            if item is None or not item.answer:
                continue
            if any(cache.get(stored_key(judge, method, ln.question.id, item, d)) is None
                   for d in judge.dimensions):
                missing.add(ln.question.id)
    return missing


def _geval(judge: GEvalJudge, cache: GevalCache, groups: dict[str, list[RunLine]],
           progress: bool) -> dict[str, tuple[GevalSummary | None, list[GevalRecord]]]:
    """Every method's G-Eval summary and records (`judge_run`'s order: all methods' answers
    to a question one after another, so they share its prompt in the KV cache)."""
    from eval.geval import judge_run

    out: dict[str, tuple[GevalSummary | None, list[GevalRecord]]] = {}
    results = judge_run(judge, cache, groups, progress=progress)
    for name, (result, records) in results.items():
        out[name] = (None if not result.answers else GevalSummary(
            scores={d: _interval(v) for d, v in result.values.items() if v},
            answers=result.answers, empty=result.empty, unparsed=result.unparsed), records)
    return out


def run_notes(config: RunConfig) -> list[str]:
    """What a reader must know about how a run was written (mixed configurations or code
    versions, dataset lines skipped)."""
    notes = []
    if config.forced_mix:
        notes.append(f"run mixes configurations: {config.forced_mix}")
    if len(config.code_versions) > 1:
        notes.append(f"predictions were written by {len(config.code_versions)} code versions "
                     f"({', '.join(config.code_versions)}); compare rows with care")
    if len(config.llama_builds) > 1:
        notes.append(f"answered by {len(config.llama_builds)} llama.cpp builds "
                     f"({'; '.join(config.llama_builds)}); greedy replies can differ "
                     "between builds")
    if config.dataset_problems:
        shown = "; ".join(config.dataset_problems[:5])
        more = len(config.dataset_problems) - 5
        notes.append(f"{len(config.dataset_problems)} dataset lines skipped: {shown}"
                     + (f" (and {more} more)" if more > 0 else ""))
    return notes


def concept_matching(lines: list[RunLine]) -> dict[str, float] | None:
    """How the questions' concepts met the graph, from the KG methods' "match" steps:
    concepts per question, the share of concepts whose nearest entity passed τ_entity,
    the mean similarity of that nearest entity, start entities per question, and the
    share of questions left without any start (answered without KG evidence)."""
    steps = [step.data for ln in lines for step in ln.prediction.trace
             if step.stage == "match" and "matches" in step.data]
    matches = [m for d in steps for m in d["matches"]]
    if not matches:  # no concept was asked about at all (`kg-no-evidence` asks for none)
        return None
    similarities = [float(m["similarity"]) for m in matches if m.get("similarity") is not None]
    return {
        "questions": float(len(steps)),
        "concepts_per_question": len(matches) / len(steps),
        "kept_share": sum(bool(m.get("kept")) for m in matches) / len(matches),
        # a concept with no nearest entity at all (similarity None) has no similarity
        "mean_similarity": float(np.mean(similarities)) if similarities else 0.0,
        "starts_per_question": float(np.mean([len(d.get("starts") or []) for d in steps])),
        "no_start_share": float(np.mean([not d.get("starts") for d in steps])),
    }
