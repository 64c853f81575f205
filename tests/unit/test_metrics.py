"""Answer metrics, reply parsing and statistics against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from eval.metrics import (
    bootstrap_ci,
    exact_match,
    f1_score,
    geval_score,
    mcnemar,
    mcnemar_counts,
    normalize_answer,
    paired_bootstrap,
    parse_choice,
    rouge_l,
    score_answer,
)
from eval.stats import length_controlled
from kgrag.parsing import SettledChoice, answer_settled, parse_question_choice
from kgrag.types import Choice, Question

# --- normalisation, EM, F1 (official SQuAD v1.1 / HotpotQA scorer behaviour) ---------


@pytest.mark.parametrize(("raw", "normalised"), [
    ("The Cat", "cat"),
    ("  A  cat,  an apple; THE end!", "cat apple end"),
    ("Greenwich Village, New York City", "greenwich village new york city"),
    ("theatre", "theatre"),  # articles only as whole words
    ("U.S.", "us"),
    ("Saint-Étienne", "saintétienne"),  # ASCII punctuation only, like the official scorer
])
def test_normalize_answer(raw: str, normalised: str) -> None:
    assert normalize_answer(raw) == normalised


def test_exact_match_best_over_golds() -> None:
    assert exact_match("The Cat", ["cat"]) == 1.0
    assert exact_match("the cat.", ["dog", "A cat"]) == 1.0
    assert exact_match("cats", ["cat"]) == 0.0
    assert exact_match("Paris", "paris") == 1.0


def test_f1_partial_overlap() -> None:
    # "big cat" vs "big dog": 1 common token, P = 1/2, R = 1/2, F1 = 0.5
    assert f1_score("the big cat", "big dog") == (0.5, 0.5, 0.5)
    # 2 of 5 gold tokens, P = 2/2: F1 = 2 * 1 * 0.4 / 1.4
    f1, p, r = f1_score("Greenwich Village", "Greenwich Village, New York City")
    assert (p, r) == (1.0, 0.4)
    assert f1 == pytest.approx(0.8 / 1.4)


def test_f1_counts_repeated_tokens_once_per_gold_occurrence() -> None:
    # pred "new new york" vs gold "new york": common = min counts = {new: 1, york: 1}
    f1, p, r = f1_score("new new york", "new york")
    assert (p, r) == (pytest.approx(2 / 3), 1.0)
    assert f1 == pytest.approx(0.8)


def test_f1_best_gold_wins_with_its_precision_and_recall() -> None:
    s = score_answer("big red dog", ["cat", "big red dog house barn", "red dog"])
    assert s.em == 0.0
    # "big red dog house barn": P = 3/3, R = 3/5 -> F1 = 0.75
    # "red dog": P = 2/3, R = 2/2 -> F1 = 0.8, the best F1 (though not the best precision)
    assert s.f1 == pytest.approx(0.8)
    assert (s.precision, s.recall) == (pytest.approx(2 / 3), 1.0)


@pytest.mark.parametrize(("pred", "gold"), [
    ("yes", "no"), ("no", "yes"), ("yes", "yes it is"), ("no way", "no"), ("noanswer", "none"),
])
def test_hotpot_yes_no_rule(pred: str, gold: str) -> None:
    assert f1_score(pred, gold) == (0.0, 0.0, 0.0)


def test_yes_no_equal_scores_full() -> None:
    assert score_answer("Yes.", ["yes"]).f1 == 1.0


def test_empty_prediction_and_missing_gold() -> None:
    assert score_answer("", ["Paris"]).f1 == 0.0
    with pytest.raises(ValueError, match="no gold"):
        score_answer("Paris", [])


# --- ROUGE-L ---------------------------------------------------------------------------


def test_rouge_l_hand_computed() -> None:
    # pred: the cat lay on a mat / ref: the cat sat on the mat
    # LCS = "the cat on mat" = 4 tokens; P = 4/6, R = 4/6, F = 2/3
    assert rouge_l("the cat lay on a mat", "the cat sat on the mat") == pytest.approx(2 / 3)
    # pred: police kill the gunman / ref: police killed the gunman
    # stems: polic kill the gunman (both); LCS = 4 of 4 -> F = 1
    assert rouge_l("police kill the gunman", "police killed the gunman") == pytest.approx(1.0)
    # pred: the gunman kill police / ref: police killed the gunman
    # LCS = "the gunman" = 2; P = 2/4, R = 2/4, F = 0.5
    assert rouge_l("the gunman kill police", "police killed the gunman") == pytest.approx(0.5)


def test_rouge_l_uses_stemmer_and_best_reference() -> None:
    # With the Porter stemmer cats/cat and running/runs meet (cat run vs cat run).
    assert rouge_l("cats running", "cat runs") == pytest.approx(1.0)
    # pred: a b c (3 tokens); refs "a x" (LCS 1: P 1/3 R 1/2 F 0.4), "a b" (LCS 2: F 0.8)
    assert rouge_l("a b c", ["a x", "a b"]) == pytest.approx(0.8)
    assert rouge_l("", "anything") == 0.0


# --- G-Eval ----------------------------------------------------------------------------


def test_geval_weighting_scripted_distribution() -> None:
    logprobs = {"5": math.log(0.5), "4": math.log(0.3), " 3": math.log(0.1),
                "The": math.log(0.1)}
    # valid mass 0.9: (0.5*5 + 0.3*4 + 0.1*3) / 0.9 = 4.0 / 0.9
    assert geval_score(logprobs) == pytest.approx(4.0 / 0.9)


def test_geval_merges_token_variants_and_handles_tiny_logprobs() -> None:
    # "2" and " 2" both count for 2: p(2) = 0.25 + 0.25, p(4) = 0.5 -> 3.0
    assert geval_score({"2": math.log(0.25), " 2": math.log(0.25), "4": math.log(0.5)}) == \
        pytest.approx(3.0)
    # exp(-1000) underflows to 0; relative weights e^0 : e^-1 must survive
    expected = (1 * 1 + 2 * math.exp(-1)) / (1 + math.exp(-1))
    assert geval_score({"1": -1000.0, "2": -1001.0}) == pytest.approx(expected)


def test_geval_custom_scale_and_no_valid_token() -> None:
    assert geval_score({"10": 0.0, "5": -math.inf}, scores=range(1, 11)) == 10.0
    with pytest.raises(ValueError, match="none of the tokens"):
        geval_score({"six": 0.0, "6": -0.1})


# --- statistics ------------------------------------------------------------------------


def test_mcnemar_textbook_table() -> None:
    r = mcnemar_counts(10, 2)
    # exact: 2 * P(X <= 2), X ~ Bin(12, 1/2) = 2 * (1 + 12 + 66) / 4096 = 158 / 4096
    assert r.p_exact == pytest.approx(158 / 4096)
    # chi2 = (|10 - 2| - 1)^2 / 12 = 49 / 12; p = P(chi2_1 >= 4.0833) = 0.0433
    assert r.chi2 == pytest.approx(49 / 12)
    assert r.p_chi2 == pytest.approx(0.04331, abs=1e-5)


def test_mcnemar_from_paired_outcomes() -> None:
    a = [True] * 10 + [False] * 2 + [True] * 5 + [False] * 3
    b = [False] * 10 + [True] * 2 + [True] * 5 + [False] * 3
    r = mcnemar(a, b)
    assert (r.b, r.c) == (10, 2)
    assert r.p_exact == pytest.approx(158 / 4096)


def test_mcnemar_edge_cases() -> None:
    assert mcnemar_counts(0, 0).p_exact == 1.0
    assert mcnemar_counts(0, 5).p_exact == pytest.approx(2 / 32)
    assert mcnemar_counts(4, 3).p_exact == 1.0  # capped at 1
    with pytest.raises(ValueError):
        mcnemar([True, False], [True])


def test_bootstrap_ci_contains_mean_and_narrows_with_n() -> None:
    rng = np.random.default_rng(7)
    small = rng.integers(0, 2, size=30).astype(float)
    large = rng.integers(0, 2, size=3000).astype(float)
    ci_small, ci_large = bootstrap_ci(small, seed=1), bootstrap_ci(large, seed=1)
    for ci, values in ((ci_small, small), (ci_large, large)):
        assert ci.mean == pytest.approx(values.mean())
        assert ci.low < ci.mean < ci.high
    assert (ci_large.high - ci_large.low) < (ci_small.high - ci_small.low) / 5


def test_bootstrap_ci_is_seeded_and_rejects_empty() -> None:
    values = [0.2, 0.9, 0.4, 0.7, 1.0, 0.0]
    assert bootstrap_ci(values, seed=3) == bootstrap_ci(values, seed=3)
    assert bootstrap_ci([0.5] * 10).low == bootstrap_ci([0.5] * 10).high == 0.5
    with pytest.raises(ValueError):
        bootstrap_ci([])


def test_paired_bootstrap_detects_a_real_difference() -> None:
    a = np.array([1, 1, 1, 1, 0, 1, 1, 1] * 25, dtype=float)  # 87.5 %
    b = np.array([0, 1, 0, 1, 0, 1, 0, 1] * 25, dtype=float)  # 50 %
    r = paired_bootstrap(a, b, n_resamples=2000, seed=0)
    assert r.diff == pytest.approx(0.375)
    assert r.p_value < 0.01
    assert r.low < 0.375 < r.high
    assert r.low > 0


def test_paired_bootstrap_no_difference() -> None:
    a = [1.0, 0.0, 1.0, 0.0] * 25
    assert paired_bootstrap(a, a).p_value == 1.0
    # Two systems disagreeing symmetrically: differences cancel, no evidence.
    r = paired_bootstrap([1, 0] * 50, [0, 1] * 50, n_resamples=2000)
    assert r.diff == 0.0
    assert r.p_value > 0.5
    with pytest.raises(ValueError, match="paired"):
        paired_bootstrap([1, 0], [1, 0, 1])


# --- option letters and short answers ------------------------------------------------

LABELS = "ABCDE"
TEXTS = ["midwest", "countryside", "estate", "farming areas", "illinois"]


@pytest.mark.parametrize(("reply", "expected"), [
    ("B", "B"),
    ("B.", "B"),
    ("b)", "B"),
    ("(B) countryside", "B"),
    ("Answer: B", "B"),
    ("**Answer: D**", "D"),
    ("answer: 'C'", "C"),
    ("The answer is B because farmland is rural.", "B"),
    ("Farms need space.\nSo the answer is: C", "C"),
    ("The correct option is (D).", "D"),
    ("The answer to this question is B. countryside.\nExplanation: rural.", "B"),
    ("The answer for the question is: (E)", "E"),
    ("I would choose E", "E"),
    ("E is the correct answer.", "E"),
    ("Reasoning about the options...\n\nD", "D"),
    ("The answer is A. Wait, no: the answer is C.", "C"),  # the last statement wins
    ("A because farms are in the midwest", "A"),
    # failures: nothing, several, or an invalid label
    ("", None),
    ("Not sure.", None),
    ("A or B", None),
    ("Answer: C or D", None),
    ("B, C", None),
    ("A. midwest\nB. countryside", None),
    # answer first, then an explanation that discusses the other options (Table 7 layout)
    ("A. midwest\n\nExplanation:\nFarms are there.\nB. countryside - too vague.\n"
     "C. estate - a property.", "A"),
    ("E. illinois\nExplanation: a state.\nA. midwest - a region", "E"),
    ("A. midwest\nExplanation: farms.\nA. again\nB. countryside", None),  # A comes back
    ("A. midwest\nB. countryside\nExplanation: both fit.", None),  # a list, not an answer
    ("The answer is F", None),
    ("The answer is not A.", None),
    ("the answer is c since farms are rural", None),  # lower case counts only when marked
    ("the answer is (c) since farms are rural", "C"),
])
def test_parse_choice_reply_styles(reply: str, expected: str | None) -> None:
    assert parse_choice(reply, LABELS) == expected


@pytest.mark.parametrize(("reply", "expected"), [
    ("countryside", "B"),
    ("The answer is countryside.", "B"),
    ("I think farming areas.", "D"),
    ("A midwest farm", "A"),  # "A" followed by its own option text
    ("A farm house", None),  # the article, and no option text
    ("the answer is a farm", None),
    ("Farming areas or the midwest.", None),  # two options named
])
def test_parse_choice_option_text(reply: str, expected: str | None) -> None:
    assert parse_choice(reply, LABELS, TEXTS) == expected


def test_parse_choice_prefers_the_longest_option_text() -> None:
    assert parse_choice("make peace", "AB", ["peace", "make peace"]) == "B"
    assert parse_choice("countryside", LABELS) is None  # no texts: no text matching
    with pytest.raises(ValueError):
        parse_choice("B", "AB", ["one"])


@pytest.mark.parametrize(("reply", "expected"), [
    # the opening label decides, whatever the explanation lists or concludes
    ("D. farming areas\n\nExplanation:\nThe options provided are:\nA. midwest\n"
     "B. countryside\nD. farming areas", "D"),
    ("B. countryside\nExplanation: the answer is A, the midwest.", "B"),
    ("(C) estate, because estates are rural", "C"),
    ("A midwest farm", "A"),  # "A" followed by its own option text
    # not an opening choice: read as without the flag
    ("A. midwest\nB. countryside", None),  # a list of the options
    ("A or B. Both fit.", None),
    ("The correct answer is:\nD. farming areas", "D"),
    ("A farm house is in the countryside", "B"),  # the article, then the option text
    ("Farms need space.\nSo the answer is: C", "C"),
])
def test_parse_choice_answer_first(reply: str, expected: str | None) -> None:
    assert parse_choice(reply, LABELS, TEXTS, answer_first=True) == expected


@pytest.mark.parametrize(("prefix", "settled"), [
    ("D. farming areas\n\nExplanation: The", True),
    ("D. farming areas\n\n**Explanation:** The", True),
    ("D. farming areas\nExplanation:", False),  # "Explanation" might still grow
    ("D. farming areas", False),  # the first line may go on ("D. farming areas or C")
    ("D. farming areas\nB. ", False),  # a second label: perhaps a list of the options
    ("D. farming areas\nB. countryside\n", False),  # it was a list: a Fail
    ("D. farming areas\nBecause farms are ", True),
    ("A farm house is\nin the ", False),  # "A" is the article here: not answer-first
    ("The correct answer is:\nD. farming areas\nThe ", False),  # statements: the last wins
])
def test_answer_settled(prefix: str, settled: bool) -> None:
    assert answer_settled(prefix, LABELS, TEXTS) is settled


@pytest.mark.results
def test_a_settled_reply_reads_like_the_whole_reply_in_every_committed_run() -> None:
    """Stopping an answer-first reply where `answer_settled` first holds gives the option
    the whole reply gives: checked on every answer-first reply of the committed runs, at
    that first prefix and at every later one (every 7th character)."""
    import json
    from pathlib import Path

    from eval.scoring import ANSWER_FIRST_PROMPTS

    checked = cut_short = 0
    root = Path(__file__).resolve().parents[2]
    for path in sorted((root / "docs/results").glob("*/predictions.jsonl")):
        for line in path.open(encoding="utf-8"):
            row = json.loads(line)
            q, pred = row["question"], row["prediction"]
            steps = [s for s in pred["trace"] if s["stage"] == "generate"]
            if not q.get("choices") or not steps or \
                    steps[-1]["data"].get("prompt") not in ANSWER_FIRST_PROMPTS:
                continue
            labels = [c["label"] for c in q["choices"]]
            texts = [c["text"] for c in q["choices"]]
            reply = pred["answer"]
            whole = parse_choice(reply, labels, texts, answer_first=True)
            cut = next((i for i in range(1, len(reply) + 1)
                        if answer_settled(reply[:i], labels, texts)), None)
            checked += 1
            if cut is None:
                continue
            cut_short += cut < len(reply)
            for i in [*range(cut, len(reply), 7), len(reply)]:
                assert parse_choice(reply[:i], labels, texts, answer_first=True) == whole, \
                    (str(path), reply[:i])
    # A floor, not a share: runs answered with the settled stop end where the option
    # settles (or just before it, once trailing blanks are trimmed), so the share of
    # replies that go on past that point falls as such runs grow.
    assert checked > 3000 and cut_short > 1500


def test_settled_choice_keys_replays_alike_in_every_process() -> None:
    from kgrag.llm.base import GenerationParams, Message
    from kgrag.llm.replay import request_key

    q = Question(id="q", text="?", kind="multiple_choice",
                 choices=[Choice(label="A", text="oven"), Choice(label="B", text="fridge")])
    ask = [Message("user", "Where is milk kept cold?")]
    key = request_key(ask, GenerationParams(until=SettledChoice.of(q)))
    assert key == request_key(ask, GenerationParams(until=SettledChoice.of(q)))
    assert key != request_key(ask, GenerationParams())
    assert SettledChoice.of(q)("B. fridge\nExplanation: cold ")


def test_the_scorer_reads_answer_first_prompts_by_their_opening_label() -> None:
    from eval.runner import RunLine
    from eval.scoring import chosen_option, per_question_scores
    from kgrag.types import Prediction, TraceStep

    q = Question(id="q", text="Where is milk kept cold?", kind="multiple_choice",
                 choices=[Choice(label="A", text="oven"), Choice(label="B", text="fridge")],
                 answers=["B"])
    reply = "B. fridge\n\nExplanation: the options are:\nA. oven\nB. fridge"

    def line(prompt: str) -> RunLine:
        step = TraceStep(stage="generate", summary=reply, data={"prompt": prompt})
        return RunLine(question=q, prediction=Prediction(question_id="q", method="m",
                                                         answer=reply, trace=[step]))

    assert chosen_option(line("answer_mcq")) == "B" == chosen_option(line("llm_mcq"))
    assert per_question_scores(line("answer_mcq")) == {"correct": 1.0, "fail": 0.0}
    assert chosen_option(line("cot_mcq")) is None  # reasoning-first: a list is a Fail


def test_parse_question_choice_uses_the_question_options() -> None:
    q = Question(id="q", text="Where is milk kept cold?", kind="multiple_choice",
                 choices=[Choice(label="A", text="oven"), Choice(label="B", text="fridge")],
                 answers=["B"])
    assert parse_question_choice("In the fridge.", q) == "B"
    assert parse_question_choice("C", q) is None




def test_length_controlled_removes_a_pure_length_preference() -> None:
    """A judge that scores only length (score = log of words): a, longer on most
    questions, wins the plain paired difference and nothing at equal length."""
    rng = np.random.default_rng(3)
    wa, wb = rng.integers(80, 300, 120), rng.integers(20, 200, 120)
    a, b = np.log(wa + 1), np.log(wb + 1)
    assert paired_bootstrap(a, b).p_value < 0.001
    r = length_controlled(a, b, wa, wb, n_resamples=2000)
    assert r.diff == pytest.approx(0.0, abs=1e-9)
    assert r.low <= 0 <= r.high and r.p_value > 0.5


def test_length_controlled_keeps_a_gap_that_length_does_not_explain() -> None:
    rng = np.random.default_rng(4)
    wa, wb = rng.integers(50, 200, 200), rng.integers(50, 200, 200)
    b = rng.normal(3.0, 0.3, 200)
    a = b + 0.5 + 0.2 * np.log((wa + 1) / (wb + 1))  # better by 0.5, plus a length bias
    r = length_controlled(a, b, wa, wb, n_resamples=2000)
    assert r.diff == pytest.approx(0.5)
    assert r.p_value < 0.001 and r.low < 0.5 < r.high


def test_length_controlled_without_length_differences_is_the_plain_difference() -> None:
    a, b = [4.0, 3.0, 5.0, 4.0], [3.0, 3.0, 4.0, 2.0]
    r = length_controlled(a, b, [10] * 4, [10] * 4, n_resamples=500)
    assert r.diff == pytest.approx(paired_bootstrap(a, b).diff)
    with pytest.raises(ValueError, match="paired"):
        length_controlled([1, 2], [1, 2], [3, 4], [3])
    with pytest.raises(ValueError, match=">= 0 words"):
        length_controlled([1, 2], [1, 2], [3, -4], [3, 4])
