"""`kgrag breakdown` (eval/breakdown.py): a run's leading score per value of a question
field, on the questions every method answered or the run's first K."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.breakdown import breakdown, markdown_table
from eval.runner import RunConfig, RunLine
from kgrag.errors import KgragError
from kgrag.types import Prediction, Question, Usage

GOLD = "acne is a skin disease"
WRONG = "gout hurts knees"  # no word in common with GOLD: ROUGE-L 0
QTYPE = {"q0": "treatment", "q1": "treatment", "q2": "causes", "q3": "causes"}


def _run(path: Path, answers: dict[str, dict[str, str]]) -> Path:
    """A MedQuAD-like run: `answers[method][qid]`, in question order."""
    path.mkdir()
    config = RunConfig(
        dataset="medquad", dataset_path="x.jsonl", domain="medical", methods=list(answers),
        n=None, model="m", model_backend="llama", model_sha256=None, embedding_model="e",
        seed=42, kgrag_version="0", git_revision="abc", prompts_digest="p",
        cypher_digest="c", code_versions=["0+abc"])
    (path / "config.json").write_text(config.model_dump_json())
    with (path / "predictions.jsonl").open("w") as f:
        for method, by_q in answers.items():
            for qid, text in by_q.items():
                q = Question(id=qid, text=f"What is {qid}?", dataset="medquad",
                             kind="open_ended", answers=[GOLD], meta={"qtype": QTYPE[qid]})
                pred = Prediction(question_id=qid, method=method, answer=text,
                                  usage=Usage(llm_calls=1, seconds=1.0))
                f.write(RunLine(question=q, prediction=pred).model_dump_json() + "\n")
    return path


@pytest.fixture
def run(tmp_path: Path) -> Path:
    # b has not answered q3 yet
    return _run(tmp_path / "run", {
        "a": {"q0": GOLD, "q1": WRONG, "q2": GOLD, "q3": GOLD},
        "b": {"q0": WRONG, "q1": WRONG, "q2": GOLD}})


def test_cells_are_means_over_the_questions_every_method_answered(run: Path) -> None:
    b = breakdown(run, "qtype")
    assert (b.metric, b.questions, b.values, b.counts) == (
        "ROUGE-L", 3, ["treatment", "causes"], {"treatment": 2, "causes": 1})
    assert {k: c.mean for k, c in b.cells.items()} == pytest.approx({
        ("a", "treatment"): 0.5, ("a", "causes"): 1.0,
        ("b", "treatment"): 0.0, ("b", "causes"): 1.0})
    assert b.overall["a"].mean == pytest.approx(2 / 3)  # q3 left out: b lacks it
    assert b.overall["b"].n == 3 and b.overall["b"].low <= b.overall["b"].mean
    table = markdown_table(b)
    assert "| treatment | 2 | **50.0** | 0.0 |" in table
    assert "| causes | 1 | **100.0** | **100.0** |" in table  # a tie: both bold
    assert "| all | 3 | 66.7 [" in table


def test_same_k_takes_the_first_k_questions_and_names_the_rows_short_of_them(
        run: Path) -> None:
    first = breakdown(run, "qtype", same=2)
    assert (first.questions, first.values) == (2, ["treatment"])
    assert breakdown(run, "qtype", methods=["a"]).overall["a"].mean == pytest.approx(0.75)
    with pytest.raises(KgragError, match=r"--same 4.*\(b have not\)"):
        breakdown(run, "qtype", same=4)


def test_unknown_field_or_method_is_a_clear_error(run: Path) -> None:
    with pytest.raises(KgragError, match="'type' field") as e:
        breakdown(run, "type")
    assert e.value.hint is not None and "qtype" in e.value.hint
    with pytest.raises(KgragError, match="no answers of zzz"):
        breakdown(run, "qtype", methods=["zzz"])


def test_command_prints_markdown_or_json(run: Path) -> None:
    from typer.testing import CliRunner

    from kgrag.cli import app

    md = CliRunner().invoke(app, ["breakdown", str(run), "--methods", "b,a"])
    assert md.exit_code == 0, md.output
    assert "| qtype | n | `b` | `a` |" in md.output
    out = CliRunner().invoke(app, ["breakdown", str(run), "--same", "2", "--json"])
    d = json.loads(out.output)
    assert d["cells"]["a|treatment"]["mean"] == pytest.approx(0.5) and d["same"] is True


def test_pair_is_a_paired_difference_per_value(run: Path) -> None:
    b = breakdown(run, "qtype", methods=["b"], pair=("a", "b"))
    assert b.methods == ["b", "a"]  # the pair's methods join the table
    # q0: 1 − 0, q1: 0 − 0; two questions are too few for a p
    assert b.pair_tests["treatment"] == (pytest.approx(0.5), None)
    assert b.pair_tests["causes"] == (pytest.approx(0.0), None)  # q2 level
    assert b.pair_tests["all"][0] == pytest.approx(1 / 3)
    assert "| treatment | 2 | 0.0 | **50.0** | +50.0 (n < 10) |" in markdown_table(b)
    with pytest.raises(KgragError, match="two different methods"):
        breakdown(run, "qtype", pair=("a", "a"))


def test_pair_option_wants_two_methods(run: Path) -> None:
    from typer.testing import CliRunner

    from kgrag.cli import app

    bad = CliRunner().invoke(app, ["breakdown", str(run), "--pair", "a,b,c"])
    assert isinstance(bad.exception, KgragError) and "two methods" in str(bad.exception)
    ok = CliRunner().invoke(app, ["breakdown", str(run), "--pair", "a,b", "--json"])
    assert json.loads(ok.output)["pair_tests"]["causes"] == {"diff": 0.0, "p": None}


def test_report_has_a_type_section_when_the_questions_have_types(run: Path,
                                                                  tmp_path: Path) -> None:
    from eval.report import write_report
    from eval.scoring import score_run

    score_run(run, same=3)  # the report follows the run's same-K scoring
    md = write_report([run], tmp_path / "report").read_text()
    section = md.split("### By question type")[1]
    assert "ROUGE-L % by `qtype` on the first 3 questions" in section
    assert "| treatment | 2 | **50.0** | 0.0 |" in section
    # a run without types has no such section
    plain = _run(tmp_path / "plain", {"a": {"q0": GOLD}})
    lines = (plain / "predictions.jsonl").read_text().replace('"qtype"', '"focus"')
    (plain / "predictions.jsonl").write_text(lines)
    assert "### By question type" not in write_report([plain], tmp_path / "r2").read_text()


def test_pair_has_a_p_from_ten_questions_and_disjoint_rows_are_a_clear_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    qids = [f"t{i}" for i in range(10)]
    for q in qids:  # a hostile value: it must not break the Markdown row
        monkeypatch.setitem(QTYPE, q, "info|x")
    run = _run(tmp_path / "ten", {"a": dict.fromkeys(qids, GOLD),
                                  "b": {q: GOLD if i < 5 else WRONG
                                        for i, q in enumerate(qids)}})
    b = breakdown(run, "qtype", pair=("a", "b"))
    diff, p = b.pair_tests["info/x"]
    assert diff == pytest.approx(0.5) and p is not None and p < 0.05
    assert "| info/x | 10 |" in markdown_table(b)
    apart = _run(tmp_path / "apart", {"a": {"q0": GOLD}, "b": {"q1": GOLD}})
    with pytest.raises(KgragError, match="answered by every one of a, b"):
        breakdown(apart, "qtype")
