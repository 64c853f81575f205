"""The judge-agreement statistic (Spearman's ρ of G-Eval against ROUGE-L and BERTScore)
at its three levels, and its place in `score_run` and the report. Scripted judge: control
flow only."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from eval.agreement import LENGTH, Agreement, agreement_lines, judge_agreement, spearman
from eval.geval import GEvalJudge
from eval.report import markdown
from eval.scoring import GEVAL_AT_EQUAL_LENGTH, pair_tests, score_run
from tests.doubles.scripted import ScriptedModel
from tests.unit.test_geval import LOGPROBS, _write_run, reply


def test_spearman_is_rank_based_and_undefined_for_ties_only() -> None:
    r = spearman([1, 2, 3, 4], [10, 20, 30, 1000])
    assert r is not None and r[0] == pytest.approx(1.0)
    r = spearman([1, 2, 3, 4], [4, 3, 2, 1])
    assert r is not None and r[0] == pytest.approx(-1.0)
    assert spearman([1, 2], [1, 2]) is None  # too few points
    assert spearman([1, 2, 3], [5, 5, 5]) is None  # a constant side has no ranks
    with pytest.raises(ValueError, match="differ in length"):
        spearman([1, 2, 3], [1, 2])


def _judged(scores: dict[tuple[str, str], float]) -> dict[tuple[str, str], dict[str, float |
                                                                               None]]:
    return {k: {"coherence": v, "fluency": v} for k, v in scores.items()}


def test_three_levels_pooled_per_question_and_per_method() -> None:
    methods, questions = ("llm", "cot", "rag"), ("q1", "q2", "q3", "q4")
    # the judge orders the rows of q1..q3 as ROUGE-L does, and q4 the other way round
    rouge = {(m, q): 0.1 * i + 0.01 * j for i, m in enumerate(methods)
             for j, q in enumerate(questions)}
    geval = {(m, q): (1 + i if q != "q4" else 3 - i) + 0.001 * j
             for i, m in enumerate(methods) for j, q in enumerate(questions)}
    rows = judge_agreement(_judged(geval), {"ROUGE-L": rouge})
    by = {(a.level, a.dimension): a for a in rows}
    q = by[("questions", "mean of 2")]
    assert q.n == 4 and q.rho == pytest.approx((1 + 1 + 1 - 1) / 4)
    assert by[("methods", "mean of 2")].n == 3
    assert by[("methods", "mean of 2")].rho == pytest.approx(1.0)
    pooled = by[("answers", "mean of 2")]
    assert pooled.n == 12 and 0 < pooled.rho < 1 and pooled.p_value is not None
    assert by[("answers", "coherence")].rho == pytest.approx(pooled.rho)


def test_unparsed_dimensions_are_left_out_and_unjudged_answers_dropped() -> None:
    judged = {("a", "q1"): {"coherence": 2.0, "fluency": None},
              ("b", "q1"): {"coherence": None, "fluency": None},  # no score at all
              ("c", "q1"): {"coherence": 4.0}, ("d", "q1"): {"coherence": 5.0}}
    rouge = {("a", "q1"): 0.1, ("b", "q1"): 0.9, ("c", "q1"): 0.2, ("d", "q1"): 0.3}
    pooled = next(a for a in judge_agreement(judged, {"ROUGE-L": rouge})
                  if a.level == "answers" and a.dimension.startswith("mean"))
    assert pooled.n == 3 and pooled.rho == pytest.approx(1.0)


def test_score_run_reports_agreement_and_paired_tests_on_open_answers(tmp_path: Path) -> None:
    run = tmp_path / "run"
    ref = [f"Condition {i} is a disease." for i in range(3)]
    _write_run(run, {"llm": ref, "cot": ["It is a disease of the skin."] * 3,
                     "rag": ["No idea at all."] * 3})
    # llm (copies the reference) judged best, rag worst: the judge agrees with ROUGE-L
    # (per dimension and question, the three methods' answers in turn)
    script = [reply({str(k): 1.0}) for k in (5, 3, 1)] * 12
    metrics = score_run(run, judge=GEvalJudge(ScriptedModel(script, capabilities=LOGPROBS,
                                                            name="tiny-judge")))
    methods_level = [a for a in metrics.agreement if a.level == "methods"]
    # and, as a probe, with the rows' answer lengths (5, 7 and 4 words): ranks 3-2-1 vs 2-3-1
    assert [(a.metric, a.rho) for a in methods_level] == [
        ("ROUGE-L", pytest.approx(1.0)), (LENGTH, pytest.approx(0.5))]
    tests = {(t.a, t.b, t.metric) for t in metrics.pairs}
    assert ("llm", "rag", "rouge_l (paired bootstrap)") in tests
    assert ("llm", "rag", "geval (paired bootstrap)") in tests
    assert ("llm", "rag", GEVAL_AT_EQUAL_LENGTH) in tests
    md = markdown(metrics)
    assert "equally long" in md
    assert "Judge agreement (Spearman ρ, judge `tiny-judge`)" in md and "weak" in md


def test_a_judge_that_scores_length_agrees_with_the_length_probe(tmp_path: Path) -> None:
    """A verbose judge: its score follows the answer's length, not the reference, so it
    agrees with `answer words` at every level and not with ROUGE-L."""
    run = tmp_path / "run"
    ref = [f"Condition {i} is a disease." for i in range(3)]
    padding = " It may also be something else entirely, or nothing much at all."
    _write_run(run, {"llm": ref, "cot": [r + padding for r in ref],
                     "rag": [r + padding * 2 for r in ref]})
    script = [reply({str(k): 1.0}) for k in (2, 3, 4)] * 12  # llm, cot, rag in turn
    metrics = score_run(run, judge=GEvalJudge(ScriptedModel(script, capabilities=LOGPROBS)))
    by = {(a.metric, a.level, a.dimension): a.rho for a in metrics.agreement}
    assert by[(LENGTH, "answers", "mean of 4")] == pytest.approx(1.0)
    assert by[(LENGTH, "methods", "mean of 4")] == pytest.approx(1.0)
    assert by[(LENGTH, "questions", "mean of 4")] == pytest.approx(1.0)
    assert by[("ROUGE-L", "methods", "mean of 4")] == pytest.approx(-1.0)
    assert LENGTH in markdown(metrics) and "verbosity" in markdown(metrics)
    # each row's median length is in the table beside the judge's scores
    assert [metrics.methods[m].answer_words for m in ("llm", "cot", "rag")] == [5, 17, 29]
    assert "words/answer (median)" in markdown(metrics)
    from eval.tables import open_rows

    rows = open_rows(json.loads((run / "metrics.json").read_text())["methods"])
    assert "| words/answer |" in rows and "| 29 |" in rows


def test_agreement_lines_format_p_values() -> None:
    rows = [Agreement(metric="ROUGE-L", level="answers", dimension="mean of 4", rho=0.31,
                      p_value=0.0001, n=150),
            Agreement(metric="ROUGE-L", level="questions", dimension="mean of 4", rho=-0.05,
                      p_value=None, n=30)]
    lines = agreement_lines(rows, "qwen2.5-coder-1.5b")
    assert "| mean of 4 | ROUGE-L | answers | +0.31 | <0.001 | 150 |" in lines
    assert "| mean of 4 | ROUGE-L | questions | -0.05 | – | 30 |" in lines
    assert agreement_lines([], "x") == [] and not math.isnan(rows[0].rho)


def test_pairs_test_geval_at_equal_length_on_shared_judged_questions() -> None:
    """The length-controlled G-Eval pair lines each answer's score up with its own length
    (the rows list their questions in different orders) and skips unjudged answers: a
    judge that scores only length leaves no difference at equal length."""
    words = {"q1": (40, 10), "q2": (90, 20), "q3": (15, 15), "q4": (60, 30), "q5": (5, 50)}
    judge = {q: (math.log(wa + 1), math.log(wb + 1)) for q, (wa, wb) in words.items()}
    qa, qb = ["q1", "q2", "q3", "q4", "q5"], ["q5", "q4", "q3", "q2", "q1"]
    scores = {"a": {"geval": [judge[q][0] for q in qa], "words": [words[q][0] for q in qa]},
              "b": {"geval": [judge[q][1] for q in qb], "words": [words[q][1] for q in qb]}}
    scores["b"]["geval"][0] = math.nan  # q5 unjudged for b
    tests = {t.metric: t for t in pair_tests(["a", "b"], scores, {"a": qa, "b": qb})}
    plain, controlled = tests["geval (paired bootstrap)"], tests[GEVAL_AT_EQUAL_LENGTH]
    assert plain.n == controlled.n == 4
    assert plain.statistic > 0.5
    assert controlled.statistic == pytest.approx(0.0, abs=1e-9)
    # rows without answer lengths (short answers, multiple choice) get no such test
    del scores["a"]["words"]
    assert GEVAL_AT_EQUAL_LENGTH not in {t.metric for t in
                                         pair_tests(["a", "b"], scores, {"a": qa, "b": qb})}
