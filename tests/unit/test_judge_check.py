"""The G-Eval judge against hand labels (`eval.judge_check`): weighted κ, the bootstrap,
the verdict, the stored-score lookup, the warning `kgrag score --geval` prints, and the
committed labels and verdict."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from sklearn.metrics import cohen_kappa_score

from eval.geval import DIMENSIONS, GevalCache, GEvalJudge, GevalRecord, stored_key
from eval.judge_check import (
    OVERALL,
    HandLabel,
    bootstrap_stat,
    check_judge,
    judge_scores,
    judge_warning,
    load_labels,
    record,
    to_score,
    weighted_kappa,
)
from kgrag.errors import KgragError

ROOT = Path(__file__).resolve().parents[2]
LABELS = ROOT / "docs" / "judge" / "medquad-geval-hand.jsonl"
RUN = ROOT / "docs" / "results" / "medquad-dev300"


def _label(i: int, score: int, words: int = 5, method: str = "llm") -> HandLabel:
    return HandLabel(n=i, question_id=f"q{i}", method=method, question=f"What is {i}?",
                     reference="ref", answer=" ".join(["word"] * words), coherence=score,
                     consistency=score, fluency=score, relevance=score, note="why")


def test_weighted_kappa_matches_sklearn_and_its_limits() -> None:
    a = [1, 2, 3, 4, 5, 3, 2, 4]
    b = [1, 3, 3, 5, 4, 2, 2, 4]
    assert weighted_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b, weights="quadratic"))
    assert weighted_kappa(a, a) == pytest.approx(1.0)
    assert weighted_kappa([1, 2, 4, 5], [5, 4, 2, 1]) < -0.9  # reversed order
    assert math.isnan(weighted_kappa([3, 3, 3], [3, 3, 3]))  # no expected disagreement
    with pytest.raises(ValueError, match="1..5"):
        weighted_kappa([0, 2], [1, 2])
    with pytest.raises(ValueError, match="differ in length"):
        weighted_kappa([1, 2], [1])


def test_scores_round_to_the_nearest_whole_score() -> None:
    assert [to_score(x) for x in (0.2, 1.49, 1.5, 2.51, 4.6, 6.0)] == [1, 1, 2, 3, 5, 5]


def test_bootstrap_gives_a_ci_around_the_value_and_rho_a_p_value() -> None:
    x = [1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 2, 4]
    y = [1.2, 2.1, 2.9, 4.2, 4.8, 1.5, 1.9, 3.3, 3.8, 5.0, 2.2, 4.4]
    r = bootstrap_stat(x, y, "rho", n_resamples=300)
    assert r.low <= r.value <= r.high and r.value > 0.9 and r.p_value is not None
    k = bootstrap_stat(x, y, "kappa", n_resamples=300)
    assert k.low <= k.value <= k.high and k.p_value is None
    assert bootstrap_stat(x, y, "rho", n_resamples=300) == r  # seeded


def test_a_judge_that_agrees_is_above_chance_and_one_that_tracks_length_is_not() -> None:
    labels = [_label(i, 1 + i % 5, words=10 * (1 + (i * 7) % 13)) for i in range(40)]
    agree = [{d: float(lb.coherence) for d in DIMENSIONS} for lb in labels]
    good = check_judge(labels, agree, judge="j", n_resamples=300)
    assert good.above_chance
    overall = good.rows[-1]
    assert overall.dimension == OVERALL and overall.n == 40
    assert overall.rho.value == pytest.approx(1.0) and overall.kappa.value == pytest.approx(1.0)
    # a judge scoring by length alone: ρ 1 with length, about 0 with the hand labels
    words = [len(lb.answer.split()) for lb in labels]
    lo, hi = min(words), max(words)
    verbose = [{d: 1 + 4 * (w - lo) / (hi - lo) for d in DIMENSIONS} for w in words]
    bad = check_judge(labels, verbose, judge="j", n_resamples=300)
    assert not bad.above_chance
    assert bad.rows[-1].judge_length_rho == pytest.approx(1.0)
    assert abs(bad.rows[-1].human_length_rho) < 0.5


def test_labels_are_validated_line_by_line(tmp_path: Path) -> None:
    good = _label(1, 3).model_dump_json()
    path = tmp_path / "labels.jsonl"
    path.write_text(good + "\n" + good.replace('"fluency":3', '"fluency":7') + "\n")
    with pytest.raises(KgragError, match=":2: not a hand label"):
        load_labels(path)
    path.write_text(good + "\n" + good + "\n")
    with pytest.raises(KgragError, match="labelled twice"):
        load_labels(path)
    with pytest.raises(KgragError, match="no hand-label file"):
        load_labels(tmp_path / "missing.jsonl")


def test_stored_scores_are_found_by_the_judged_answer_and_missing_ones_named(
        tmp_path: Path) -> None:
    labels = [_label(1, 4), _label(2, 2)]
    reader = GEvalJudge(None, name="judge-x")
    cache = GevalCache(tmp_path / "geval.jsonl")
    for lb in labels:
        for d in DIMENSIONS:
            key = stored_key(reader, lb.method, lb.question_id, lb.item(), d)
            cache.add(GevalRecord(method=key[0], question_id=key[1], dimension=key[2],
                                  judge=key[3], template=key[4], item=key[5],
                                  score=float(lb.coherence) + 0.25))
    got = judge_scores(labels, tmp_path, "judge-x")
    assert [g["fluency"] for g in got] == [4.25, 2.25]
    changed = [labels[0], labels[1].model_copy(update={"answer": "another answer"})]
    with pytest.raises(KgragError, match="4 labelled"):
        judge_scores(changed, tmp_path, "judge-x")  # a changed answer is not the judged one
    with pytest.raises(KgragError, match="8 labelled"):
        judge_scores(labels, tmp_path, "judge-y")


def test_a_recorded_failed_judge_is_warned_about(tmp_path: Path) -> None:
    path = tmp_path / "checks.json"
    labels = [_label(i, 1 + i % 5) for i in range(20)]
    flat = [{d: 3.0 + 0.01 * (i % 2) for d in DIMENSIONS} for i in range(20)]
    record(check_judge(labels, flat, judge="weak", labels_path="L", run="R",
                       n_resamples=200), path)
    agree = [{d: float(lb.coherence) for d in DIMENSIONS} for lb in labels]
    record(check_judge(labels, agree, judge="strong", n_resamples=200), path)
    warning = judge_warning("weak", path)
    assert warning is not None and "not above chance" in warning
    assert "kgrag judge-agreement L R" in warning
    assert judge_warning("strong", path) is None
    assert judge_warning("unchecked", path) is None


def test_the_committed_labels_are_60_answers_of_two_methods_and_the_verdict_is_current(
        ) -> None:
    labels = load_labels(LABELS)
    assert len(labels) == 60
    assert {lb.method for lb in labels} == {"llm", "kg-ppr"}
    assert len({lb.question_id for lb in labels}) == 30
    recorded = json.loads((ROOT / "eval" / "judge_checks.json").read_text())
    judge = "qwen2.5-coder-1.5b"
    check = check_judge(labels, judge_scores(labels, RUN, judge), judge=judge)
    assert recorded[judge]["above_chance"] == check.above_chance
    assert recorded[judge]["rho"] == pytest.approx(check.rows[-1].rho.value, abs=1e-3)
    assert recorded[judge]["kappa"] == pytest.approx(check.rows[-1].kappa.value, abs=1e-3)


def test_score_with_the_failed_judge_prints_the_warning(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from kgrag.cli import app
    from tests.unit.test_geval import _write_run

    run = tmp_path / "run"
    _write_run(run, {"llm": ["Condition 0 is a disease."]})
    env = {"KGRAG_HOME": str(tmp_path / "home"), "KGRAG_MODEL__CHAT": "qwen2.5-coder-1.5b"}
    out = CliRunner().invoke(app, ["score", str(run), "--geval-stored"], env=env)
    assert "warning:" in out.output and "rank nothing" in " ".join(out.output.split())
    other = {**env, "KGRAG_MODEL__CHAT": "qwen2.5-coder-0.5b"}  # never checked: no warning
    assert "warning:" not in CliRunner().invoke(app, ["score", str(run), "--geval-stored"],
                                                env=other).output
