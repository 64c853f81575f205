"""The evaluation runner and scoring pass, with scripted methods (control flow only)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eval.report import write_report
from eval.runner import done_pairs, read_run, run_eval
from eval.scoring import score_run
from kgrag.baselines import LLMOnly
from kgrag.config import Settings
from kgrag.errors import KgragError
from kgrag.llm.base import Generation
from kgrag.llm.replay import ReplayModel
from metakg.methods import MetaKGRAG
from tests.conftest import FixedGraphStore, write_questions
from tests.doubles.memory import MemoryBackend
from tests.doubles.scripted import ScriptedModel, ScriptExhausted
from tests.unit.test_evidence import AnyTextEmbedder

QUESTIONS = [
    {"id": f"q{i}", "question": {"question_concept": "x", "stem": f"Question {i}?",
                                 "choices": [{"label": L, "text": f"opt {L}"} for L in "ABCDE"]},
     "answerKey": "B"} for i in range(4)
]


class GeneratingLLM(LLMOnly):
    """`llm` answering multiple choice with a generated reply (the path before letter
    reading): these tests are about the runner and the parsing scorer, so scripted
    replies stay text."""

    reads_letters = False


class FakePlatform:
    """Just what run_eval needs: settings, a method factory over a scripted model, and a
    store that fingerprints a fixed graph."""

    def __init__(self, replies: list[str], tmp: Path, replay: bool = False) -> None:
        self.settings = Settings(home=tmp / "home", data_dir=tmp)
        self.model = ScriptedModel(replies)
        self.replay = replay  # off: the fake's methods send one prompt under many names
        self.store = FixedGraphStore()  # fingerprinted when a KG method name is run

    def method(self, name: str, domain: str | None) -> LLMOnly:
        m = GeneratingLLM(self.model)
        m.name = name  # type: ignore[misc]
        return m

    def replay_repeats(self) -> ScriptedModel | ReplayModel:
        if self.replay and not isinstance(self.model, ReplayModel):
            self.model = ReplayModel(self.model)  # type: ignore[assignment]
        return self.model


@pytest.fixture()
def dataset(tmp_path: Path) -> Path:
    return write_questions(tmp_path, QUESTIONS)


def test_run_writes_predictions_and_resumes(tmp_path: Path, dataset: Path) -> None:
    out = tmp_path / "run"
    p = FakePlatform(["B", "A"], tmp_path)
    with pytest.raises(ScriptExhausted):  # the script runs out after 2 answers: "interrupted"
        run_eval(p, str(dataset), ["llm"], n=None, out=out, progress=False)  # type: ignore[arg-type]
    assert done_pairs(out / "predictions.jsonl") == {("llm", "q0"), ("llm", "q1")}
    p2 = FakePlatform(["(B)", "nonsense"], tmp_path)
    run_eval(p2, str(dataset), ["llm"], n=None, out=out, progress=False)  # type: ignore[arg-type]
    assert p2.model.remaining == 0  # only q2 and q3 were asked
    _, lines = read_run(out)
    assert sorted(ln.question.id for ln in lines) == ["q0", "q1", "q2", "q3"]


def test_config_records_the_largest_n_a_command_asked(tmp_path: Path, dataset: Path) -> None:
    """A method added on fewer questions keeps the run's recorded size: config.json's `n`
    is the size of the run's tables, not the last command's `--n`."""
    out = tmp_path / "run"
    run_eval(FakePlatform(["B", "A", "B"], tmp_path), str(dataset), ["llm"], n=3, out=out,
             progress=False)  # type: ignore[arg-type]
    run_eval(FakePlatform(["B"], tmp_path), str(dataset), ["cot"], n=1, out=out,
             progress=False)  # type: ignore[arg-type]
    config = json.loads((out / "config.json").read_text())
    assert (config["n"], config["methods"]) == (3, ["cot", "llm"])


def test_scoring_counts_correct_wrong_fail(tmp_path: Path, dataset: Path) -> None:
    out = tmp_path / "run"
    p = FakePlatform(["B", "A", "(B)", "I cannot tell."], tmp_path)
    run_eval(p, str(dataset), ["llm"], n=None, out=out, progress=False)  # type: ignore[arg-type]
    m = score_run(out).methods["llm"]
    assert (m.correct, m.wrong, m.fail) == (2, 1, 1)
    assert m.accuracy is not None and m.accuracy.mean == pytest.approx(0.5)
    assert m.llm_calls == 1.0
    assert json.loads((out / "metrics.json").read_text())["methods"]["llm"]["correct"] == 2
    report = write_report([out], tmp_path / "report")
    text = report.read_text()
    assert "| Without retrieval | llm |" in text and "50.0 [" in text
    opts = m.options or {}
    assert list(opts) == ["A", "B", "C", "D", "E"]  # every offered label, chosen or not
    assert [(opts[k].chosen, opts[k].correct, opts[k].gold) for k in "AB"] == [(1, 0, 0),
                                                                               (2, 2, 4)]
    assert opts["E"].chosen == 0 and opts["E"].gold == 0  # the Fail chose no label
    assert "| llm | 1 (0) | 2 (2) | 0 (0) | 0 (0) | 0 (0) | 1 | A 0 · B 4 · C 0 · D 0 · E 0 |" \
        in text


def test_pairs_are_tested_on_the_same_questions(tmp_path: Path, dataset: Path) -> None:
    out = tmp_path / "run"
    p = FakePlatform(["B", "B", "B", "B", "A", "A", "A", "B"], tmp_path)
    run_eval(p, str(dataset), ["llm", "cot"], n=None, out=out, progress=False)  # type: ignore[arg-type]
    metrics = score_run(out)
    test = next(t for t in metrics.pairs if t.metric.startswith("correct"))
    assert (test.a, test.b, test.statistic) == ("llm", "cot", 3.0)  # b=3, c=0


def test_answer_first_replies_stop_at_their_option_unless_explanations(
        tmp_path: Path, dataset: Path) -> None:
    reply = "B. opt B\nExplanation: because it is B, not A.\nA. opt A - no."
    out = tmp_path / "run"
    run_eval(FakePlatform([reply] * 4, tmp_path), str(dataset), ["llm"], n=None,  # type: ignore[arg-type]
             out=out, progress=False)
    config, lines = read_run(out)
    assert config.explanations is False
    assert {ln.prediction.answer for ln in lines} == {"B. opt B\nExplanation:"}
    assert score_run(out).methods["llm"].correct == 4  # the same options as whole replies
    out2 = tmp_path / "run2"
    run_eval(FakePlatform([reply] * 4, tmp_path), str(dataset), ["llm"], n=None,  # type: ignore[arg-type]
             out=out2, progress=False, explanations=True)
    config, lines = read_run(out2)
    assert config.explanations is True and {ln.prediction.answer for ln in lines} == {reply}


def test_another_configuration_is_refused(tmp_path: Path, dataset: Path) -> None:
    out = tmp_path / "run"
    run_eval(FakePlatform(["B"] * 4, tmp_path), str(dataset), ["llm"], n=None, out=out,  # type: ignore[arg-type]
             progress=False)
    other = FakePlatform(["B"] * 4, tmp_path)
    other.settings.model.chat = "smollm2-135m"
    with pytest.raises(KgragError, match="different configuration"):
        run_eval(other, str(dataset), ["cot"], n=None, out=out, progress=False)  # type: ignore[arg-type]


def test_an_unknown_method_or_an_unbuilt_domain_is_refused_before_config(
        tmp_path: Path, dataset: Path) -> None:
    # Otherwise config.json would record the bad name or domain, and the corrected
    # command would be refused as "another configuration".
    out = tmp_path / "run"
    p = FakePlatform([], tmp_path)  # any model call would exhaust the script

    def method(name: str, domain: str | None) -> LLMOnly:
        if name != "llm":
            raise KgragError(f"unknown method {name!r}")
        return LLMOnly(p.model)

    p.method = method  # type: ignore[method-assign]
    with pytest.raises(KgragError, match="unknown method 'nosuch'"):
        run_eval(p, str(dataset), ["llm", "nosuch"], n=None, out=out, progress=False)  # type: ignore[arg-type]
    assert not (out / "config.json").exists()
    p.method = lambda name, domain: MetaKGRAG(  # type: ignore[method-assign, assignment, return-value]
        p.model, MemoryBackend({}, [], AnyTextEmbedder()), domain)
    with pytest.raises(KgragError, match="kgrag build --domain woods"):
        run_eval(p, str(dataset), ["metakgrag"], n=None, out=out, domain="woods",  # type: ignore[arg-type]
                 progress=False)
    assert not (out / "config.json").exists() and p.model.prompts == []
    run_eval(FakePlatform(["B"] * 4, tmp_path), str(dataset), ["llm"], n=None, out=out,  # type: ignore[arg-type]
             progress=False)  # the corrected command runs in the same directory
    assert len(read_run(out)[1]) == 4


def test_passage_em_and_recall_come_from_imrag_progress_steps() -> None:
    from eval.runner import RunLine
    from eval.scoring import score_method
    from kgrag.types import Prediction, Question, TraceStep

    def line(qid: str, em: bool | None, recall: float) -> RunLine:
        trace = [] if em is None else [TraceStep(
            stage="progress", summary="", data={"passage_em": em, "passage_recall": recall})]
        return RunLine(question=Question(id=qid, text="q?", answers=["x"]),
                       prediction=Prediction(question_id=qid, method="imrag", answer="x",
                                             trace=trace))

    m, _ = score_method("imrag", [line("a", True, 1.0), line("b", False, 0.5),
                                  line("c", False, 0.0), line("d", None, 0.0)])
    assert m.passage_em is not None and m.passage_em.mean == pytest.approx(1 / 3)
    assert m.passage_recall == pytest.approx(0.5)  # (1.0 + 0.5 + 0.0) / 3: d has no gold
    plain, _ = score_method("rag", [line("a", None, 0.0)])
    assert plain.passage_em is None and plain.passage_recall is None
    assert m.retrieval_ms is None  # no "evidence" step with a retrieval time


def test_supporting_paragraphs_read_from_titles_and_title_prefixed_passages() -> None:
    from eval.runner import RunLine
    from eval.scoring import score_method, supporting_read
    from kgrag.types import Prediction, Question

    def line(evidence: list[str], setting: str = "open", supporting: tuple[str, ...] = (
            "Big Stone Gap (film)", "Adriana Trigiani")) -> RunLine:
        return RunLine(question=Question(id="q", text="q?", answers=["x"],
                                         supporting=list(supporting)),
                       prediction=Prediction(question_id="q", method="m", answer="x",
                                             evidence=evidence, setting=setting))

    assert supporting_read(line(["Big Stone Gap (film)", "Adriana Trigiani"])) == 1.0
    assert supporting_read(line(["Adriana Trigiani: an Italian American novelist."])) == 0.5
    # a title that merely starts like a gold one is not it
    assert supporting_read(line(["Big Stone Gap (film) soundtrack", "Adriana Trigianis"])) == 0
    assert supporting_read(line([])) == 0.0  # retrieved nothing: read none
    assert supporting_read(line([], setting="closed-book")) is None
    assert supporting_read(line(["Evidence 1: Big Stone Gap (film) is a film"], "kg")) is None
    assert supporting_read(line(["Adriana Trigiani"], supporting=())) is None
    m, _ = score_method("m", [line(["Big Stone Gap (film)", "Adriana Trigiani"]),
                              line(["Adriana Trigiani: text"]), line([], "closed-book")])
    assert m.supporting_all is not None and m.supporting_all.mean == pytest.approx(0.5)
    assert m.supporting_share == pytest.approx(0.75)


def test_kg_retrieval_time_is_the_median_of_the_evidence_steps() -> None:
    from eval.runner import RunLine
    from eval.scoring import score_method
    from kgrag.types import Prediction, Question, TraceStep

    lines = [RunLine(question=Question(id=str(i), text="q?", answers=["x"]),
                     prediction=Prediction(question_id=str(i), method="metakgrag", answer="x",
                                           trace=[TraceStep(stage="evidence", summary="",
                                                            data={"retrieval_ms": ms})]))
             for i, ms in enumerate([120.0, 40.0, 900.0])]
    m, _ = score_method("metakgrag", lines)
    assert m.retrieval_ms == 120.0


def test_concept_matching_summarises_the_match_steps() -> None:
    from eval.runner import RunLine
    from eval.scoring import score_method
    from kgrag.types import Prediction, Question, TraceStep

    def line(i: int, matches: list[tuple[float, bool]]) -> RunLine:
        data = {"matches": [{"concept": f"c{j}", "similarity": s, "kept": k}
                            for j, (s, k) in enumerate(matches)],
                "starts": [f"c{j}" for j, (_, k) in enumerate(matches) if k]}
        return RunLine(question=Question(id=str(i), text="q?", answers=["x"]),
                       prediction=Prediction(question_id=str(i), method="metakgrag",
                                             answer="x", trace=[TraceStep(
                                                 stage="match", summary="", data=data)]))

    m, _ = score_method("metakgrag", [line(0, [(0.9, True), (0.5, False)]),
                                      line(1, [(0.4, False)])])
    assert m.matching == pytest.approx({
        "questions": 2.0, "concepts_per_question": 1.5, "kept_share": 1 / 3,
        "mean_similarity": 0.6, "starts_per_question": 0.5, "no_start_share": 0.5})
    plain, _ = score_method("llm", [RunLine(
        question=Question(id="q", text="q?", answers=["x"]),
        prediction=Prediction(question_id="q", method="llm", answer="x"))])
    assert plain.matching is None
    no_concepts = TraceStep(stage="match", summary="", data={"matches": [], "starts": []})
    asked_none, _ = score_method("kg-no-evidence", [RunLine(
        question=Question(id="q", text="q?", answers=["x"]),
        prediction=Prediction(question_id="q", method="kg-no-evidence", answer="x",
                              trace=[no_concepts]))])
    assert asked_none.matching is None  # not "0% of concepts matched"
    unmatched, _ = score_method("metakgrag", [line(0, [(0.8, True)]), RunLine(
        question=Question(id="u", text="q?", answers=["x"]),
        prediction=Prediction(question_id="u", method="metakgrag", answer="x", trace=[
            TraceStep(stage="match", summary="", data={"matches": [
                {"concept": "c", "similarity": None, "kept": False}], "starts": []})]))])
    assert unmatched.matching is not None  # a concept without any nearest entity
    assert unmatched.matching["mean_similarity"] == pytest.approx(0.8)
    assert unmatched.matching["kept_share"] == pytest.approx(0.5)


def test_a_second_writer_of_a_method_is_refused_one_of_another_method_answers(
        tmp_path: Path, dataset: Path) -> None:
    from eval.runner import writer_lock

    out = tmp_path / "run"
    p = FakePlatform(["B"] * 8, tmp_path)
    with writer_lock(out, ["llm", "cot"]):  # another process answers llm and cot
        with pytest.raises(KgragError, match="another `kgrag eval` is answering with llm"):
            run_eval(p, str(dataset), ["rag", "llm"], n=None, out=out,  # type: ignore[arg-type]
                     progress=False)
        assert p.model.prompts == []
        run_eval(p, str(dataset), ["rag"], n=None, out=out, progress=False)  # type: ignore[arg-type]
    run_eval(p, str(dataset), ["llm"], n=None, out=out, progress=False)  # type: ignore[arg-type]
    assert len(done_pairs(out / "predictions.jsonl")) == 8
    config, _ = read_run(out)
    assert config.methods == ["llm", "rag"]
    with pytest.raises(KgragError, match="not a method name"):
        run_eval(p, str(dataset), ["../x"], n=None, out=out, progress=False)  # type: ignore[arg-type]
    assert not (tmp_path / "x.lock").exists()


def test_path_refinement_rate_from_refine_steps() -> None:
    from eval.runner import RunLine
    from eval.scoring import path_refinement
    from kgrag.types import Prediction, Question, TraceStep

    def refine(initial: list[str], final: list[str]) -> TraceStep:
        return TraceStep(stage="refine", summary="", data={
            "initial": {"entities": initial}, "final": {"entities": final},
            "changed": initial != final})

    def line(qid: str, *steps: TraceStep) -> RunLine:
        return RunLine(question=Question(id=qid, text="q?"),
                       prediction=Prediction(question_id=qid, method="metakgrag", answer="A",
                                             trace=list(steps)))

    lines = [line("1", refine(["a", "b", "c"], ["a", "b", "d"]), refine(["x"], ["x"])),
             line("2", refine(["p", "q"], ["p", "q"])),
             line("3")]  # no start entity: an unchanged question
    prr = path_refinement(lines)
    assert prr is not None
    assert prr["by_start"] == pytest.approx(1 / 3)
    assert prr["by_question"] == pytest.approx(1 / 3)
    # 1 - Jaccard: {a,b,c} vs {a,b,d} = 1 - 2/4 = 0.5; the others 0 -> mean 0.5 / 3
    assert prr["mean_change"] == pytest.approx(0.5 / 3)
    assert path_refinement([line("4")]) is None


def test_answer_in_evidence_is_whole_normalised_words_of_the_correct_option() -> None:
    from eval.runner import RunLine
    from eval.scoring import evidence_has_answer, score_method
    from kgrag.types import Choice, Prediction, Question

    q = Question(id="1", text="Where do foxes live?", answers=["B"],
                 choices=[Choice(label="A", text="the sea"), Choice(label="B", text="Forest")])

    def line(*evidence: str) -> RunLine:
        return RunLine(question=q, prediction=Prediction(
            question_id="1", method="kg-vanilla", answer="B", evidence=list(evidence),
            setting="kg"))

    assert evidence_has_answer(line("Evidence 1: fox lives in forest"))
    assert not evidence_has_answer(line("Evidence 1: fox lives in forestry"))  # not a word
    assert not evidence_has_answer(line("Evidence 1: fish live in the sea"))  # wrong option
    assert not evidence_has_answer(line())
    m, _ = score_method("kg-vanilla", [line("fox lives in forest"), line()])
    assert m.evidence_hit is not None and m.evidence_hit.mean == 0.5


def _save_delta(home: Path, threshold: float, source_file: str) -> None:
    from textrag.seakr.calibrate import SeakrCalibration, calibration_path, save_calibration
    from textrag.seakr.uncertainty import UncertaintyConfig

    u = UncertaintyConfig()
    settings = {"k": u.k, "alpha": u.alpha, "tensor": u.tensor, "n_shot": 10, "level": "step"}
    cal = SeakrCalibration("fake", f"test questions of {source_file}", threshold, 0.5, (), (),
                           settings, source_file)
    save_calibration(cal, calibration_path(home, "qwen2.5-coder-1.5b"))


def test_a_seakr_run_records_its_delta_and_refuses_another(tmp_path: Path, dataset: Path
                                                           ) -> None:
    out = tmp_path / "run"
    p = FakePlatform(["B", "B", "B", "B", "B", "B", "B", "B"], tmp_path)
    run_eval(p, str(dataset), ["llm"], n=1, out=out, progress=False)  # type: ignore[arg-type]
    assert json.loads((out / "config.json").read_text())["seakr_calibration"] is None
    _save_delta(p.settings.home, -2.5, "wikipedia/nq_open_dev300.jsonl")
    run_eval(p, str(dataset), ["seakr"], n=1, out=out, progress=False)  # type: ignore[arg-type]
    recorded = json.loads((out / "config.json").read_text())["seakr_calibration"]
    assert recorded["threshold"] == -2.5
    assert recorded["source_file"] == "wikipedia/nq_open_dev300.jsonl"
    run_eval(p, str(dataset), ["llm"], n=2, out=out, progress=False)  # type: ignore[arg-type]
    assert json.loads((out / "config.json").read_text())["seakr_calibration"] == recorded
    _save_delta(p.settings.home, -1.0, "wikipedia/nq_open_dev300.jsonl")
    with pytest.raises(KgragError, match="seakr_calibration") as refused:
        run_eval(p, str(dataset), ["seakr"], n=2, out=out, progress=False)  # type: ignore[arg-type]
    assert "restore that calibration" in refused.value.hint
    # A committed run keeps its δ beside it (docs/results/calibration/): the hint names it.
    kept = tmp_path / "calibration" / "seakr-qwen2.5-coder-1.5b-nq.json"
    kept.parent.mkdir()
    kept.write_text(json.dumps({"model": "qwen2.5-coder-1.5b", "threshold": -2.5}))
    with pytest.raises(KgragError, match="seakr_calibration") as refused:
        run_eval(p, str(dataset), ["seakr"], n=2, out=out, progress=False)  # type: ignore[arg-type]
    assert f"saved in {kept}: copy it to" in refused.value.hint
    assert str(p.settings.home) in refused.value.hint


def test_seakr_is_not_evaluated_on_its_calibration_questions(tmp_path: Path, dataset: Path
                                                             ) -> None:
    from textrag.seakr.calibrate import CalibrationLeak

    p = FakePlatform([], tmp_path)
    _save_delta(p.settings.home, -2.5, dataset.relative_to(tmp_path).as_posix())
    with pytest.raises(CalibrationLeak, match="its own calibration questions"):
        run_eval(p, str(dataset), ["seakr"], n=1, out=tmp_path / "run", progress=False)  # type: ignore[arg-type]
    assert not (tmp_path / "run" / "predictions.jsonl").exists()


def test_a_run_from_before_calibrations_adopts_the_current_one(tmp_path: Path, dataset: Path,
                                                               caplog) -> None:
    out = tmp_path / "run"
    p = FakePlatform(["B"] * 4, tmp_path)
    _save_delta(p.settings.home, -2.5, "wikipedia/nq_open_dev300.jsonl")
    run_eval(p, str(dataset), ["seakr"], n=1, out=out, progress=False)  # type: ignore[arg-type]
    config = json.loads((out / "config.json").read_text())
    del config["seakr_calibration"]  # as written before kgrag recorded it
    (out / "config.json").write_text(json.dumps(config))
    with caplog.at_level("WARNING", logger="eval.runner"):
        run_eval(p, str(dataset), ["seakr"], n=2, out=out, progress=False)  # type: ignore[arg-type]
    assert "records no SeaKR calibration" in caplog.text
    assert "predictions of seakr are not covered" in caplog.text
    assert json.loads((out / "config.json").read_text())["seakr_calibration"]["threshold"] == -2.5


PROMPTS = [("kgrag/prompts/llm_mcq.txt", b"answer"), ("metakg/prompts/answer_mcq.txt", b"kg")]


def _prompts(monkeypatch: pytest.MonkeyPatch, files: list[tuple[str, bytes]]) -> None:
    monkeypatch.setattr("eval.runner._working_prompts", lambda: list(files))


@pytest.fixture()
def fox(tmp_path: Path) -> Path:
    """Two short questions over the in-memory fox graph (`tests.unit.test_sweep`)."""
    from tests.unit.test_metakg_methods import QTEXT

    path = tmp_path / "fox.jsonl"
    path.write_text("".join(json.dumps({"id": f"fox{i}", "question": QTEXT, "answer": ["den"]})
                            + "\n" for i in range(2)))
    return path


def fox_platform(tmp: Path, method: str) -> Any:
    """The real MetaKGRAG (or the text `llm` beside it) over the in-memory fox graph,
    scripted for the two `fox` questions: the KG package's prompts guard a real KG run."""
    from tests.unit.test_sweep import RIGHT, MetaKGPlatform, per_question

    return MetaKGPlatform(tmp, per_question(RIGHT, RIGHT) if method == "metakgrag"
                          else [RIGHT] * 2)


def test_prompts_are_compared_only_for_packages_that_answered_in_both(
        tmp_path: Path, fox: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "run"
    _prompts(monkeypatch, PROMPTS)
    run_eval(fox_platform(tmp_path, "llm"), str(fox), ["llm"], n=2, out=out, domain="woods",  # type: ignore[arg-type]
             progress=False)
    # a new KG prompt does not lock the run of the baselines...
    _prompts(monkeypatch, [*PROMPTS, ("metakg/prompts/answer_short.txt", b"new")])
    run_eval(fox_platform(tmp_path, "metakgrag"), str(fox), ["metakgrag"], n=2,  # type: ignore[arg-type]
             out=out, domain="woods", progress=False)
    kg = [ln.prediction for ln in read_run(out)[1] if ln.prediction.method == "metakgrag"]
    assert len(kg) == 2 and all(any(s.stage == "refine" for s in p.trace) for p in kg)
    recorded = json.loads((out / "config.json").read_text())["prompt_digests"]
    assert sorted(recorded) == ["kgrag", "metakg"]
    # ...but a changed KG prompt refuses the KG method, and a changed baseline prompt the
    # baseline, even in a session that runs only the other package's methods
    _prompts(monkeypatch, [PROMPTS[0], ("metakg/prompts/answer_mcq.txt", b"edited")])
    with pytest.raises(KgragError, match="prompt_digests"):
        run_eval(fox_platform(tmp_path, "metakgrag"), str(fox), ["metakgrag"], n=2,  # type: ignore[arg-type]
                 out=out, domain="woods", progress=False)
    _prompts(monkeypatch, [("kgrag/prompts/llm_mcq.txt", b"edited"), PROMPTS[1]])
    with pytest.raises(KgragError, match="prompt_digests"):
        run_eval(fox_platform(tmp_path, "llm"), str(fox), ["llm"], n=2, out=out, domain="woods",  # type: ignore[arg-type]
                 progress=False)


@pytest.mark.parametrize("git_reproduces", [True, False])
def test_a_run_from_before_package_digests_is_checked_against_git(
        tmp_path: Path, fox: Path, monkeypatch: pytest.MonkeyPatch, caplog,
        git_reproduces: bool) -> None:
    out = tmp_path / "run"
    _prompts(monkeypatch, PROMPTS)
    run_eval(fox_platform(tmp_path, "llm"), str(fox), ["llm"], n=2, out=out, domain="woods",  # type: ignore[arg-type]
             progress=False)
    config = json.loads((out / "config.json").read_text())
    del config["prompt_digests"]  # as written before kgrag recorded them
    (out / "config.json").write_text(json.dumps(config))
    at_revision = PROMPTS if git_reproduces else [*PROMPTS, ("textrag/prompts/x.txt", b"?")]
    monkeypatch.setattr("eval.runner.prompts_at_revision", lambda rev: list(at_revision))
    _prompts(monkeypatch, [*PROMPTS, ("metakg/prompts/answer_short.txt", b"new")])
    if git_reproduces:  # the baselines' prompts are the same: the KG method may add its run
        run_eval(fox_platform(tmp_path, "metakgrag"), str(fox), ["metakgrag"], n=2,  # type: ignore[arg-type]
                 out=out, domain="woods", progress=False)
        assert sorted(json.loads((out / "config.json").read_text())["prompt_digests"]) == [
            "kgrag", "metakg"]
    else:  # unknown per package: every prompt must be unchanged, and one was added
        with caplog.at_level("WARNING", logger="eval.runner"), pytest.raises(
                KgragError, match="different configuration"):
            run_eval(fox_platform(tmp_path, "metakgrag"), str(fox), ["metakgrag"], n=2,  # type: ignore[arg-type]
                     out=out, domain="woods", progress=False)
        assert "predates per-package prompt digests" in caplog.text
        _prompts(monkeypatch, PROMPTS)  # unchanged prompts: accepted, per package from now on
        run_eval(fox_platform(tmp_path, "metakgrag"), str(fox), ["metakgrag"], n=2,  # type: ignore[arg-type]
                 out=out, domain="woods", progress=False)
        assert sorted(json.loads((out / "config.json").read_text())["prompt_digests"]) == [
            "*", "kgrag", "metakg"]


def test_prompts_at_revision_reads_the_committed_templates() -> None:
    from eval.runner import _working_prompts, prompts_at_revision, prompts_digest
    assert prompts_at_revision("") is None
    assert prompts_at_revision("no-such-revision") is None
    head = prompts_at_revision("HEAD")
    if head is None:
        pytest.skip("not a git checkout")
    names = [n for n, _ in head]
    assert "metakg/prompts/concepts.txt" in names and not any(n.startswith("eval/") for n in names)
    assert all(n in dict(_working_prompts()) for n in names)
    assert len(prompts_digest(head)) == 16


def test_same_questions_scores_every_method_on_the_first_k(tmp_path: Path, dataset: Path
                                                           ) -> None:
    out = tmp_path / "run"
    p = FakePlatform(["B", "B", "B", "B", "A", "A", "B"], tmp_path)
    run_eval(p, str(dataset), ["llm"], n=4, out=out, progress=False)  # type: ignore[arg-type]
    run_eval(p, str(dataset), ["cot"], n=2, out=out, progress=False)  # type: ignore[arg-type]
    run_eval(p, str(dataset), ["rag"], n=1, out=out, progress=False)  # type: ignore[arg-type]
    metrics = score_run(out, same=2)
    same = metrics.same
    assert same is not None and same.question_ids == ["q0", "q1"]
    assert sorted(same.methods) == ["cot", "llm"] and same.left_out == ["rag"]
    assert same.methods["llm"].n == 2 and same.methods["llm"].correct == 2  # not 4
    assert same.methods["cot"].correct == 0
    (test,) = [t for t in same.pairs if t.metric.startswith("correct")]
    assert (test.a, test.b, test.statistic, test.n) == ("cot", "llm", -2.0, 2)
    text = write_report([out], tmp_path / "report").read_text()
    assert "### The same 2 questions, every method" in text and "Left out" in text
    assert "| `llm` | +2 (0.500) | · |" in text and "| `cot` | · | -2 (0.500) |" in text
    with pytest.raises(KgragError, match="only 4 questions"):
        score_run(out, same=5)


def test_question_order_follows_the_method_with_most_answers() -> None:
    from eval.runner import RunLine
    from eval.scoring import question_order
    from kgrag.types import Prediction, Question

    def line(method: str, qid: str) -> RunLine:
        return RunLine(question=Question(id=qid, text="q?", answers=["x"]),
                       prediction=Prediction(question_id=qid, method=method, answer="x"))

    # `cot` wrote q1 first and `seakr` answered a question nobody else did; the method
    # with most answers (llm) fixes the dataset order, the others only add what it lacks
    by_method = {"cot": [line("cot", "q1"), line("cot", "q0")],
                 "llm": [line("llm", q) for q in ("q0", "q1", "q2")],
                 "seakr": [line("seakr", "q9")]}
    assert question_order(by_method) == ["q0", "q1", "q2", "q9"]
    assert question_order({}) == []


def test_redo_errors_answers_crashed_questions_again(tmp_path: Path) -> None:
    path = tmp_path / "predictions.jsonl"
    rows = [("llm", "q0", None), ("llm", "q1", "AttributeError: boom"), ("llm", "q2", "x"),
            ("llm", "q2", None)]  # q2 crashed, then was answered: the last line wins
    path.write_text("".join(json.dumps({"prediction": {
        "method": m, "question_id": q, "error": e}}) + "\n" for m, q, e in rows))
    assert done_pairs(path) == {("llm", "q0"), ("llm", "q1"), ("llm", "q2")}
    assert done_pairs(path, redo_errors=True) == {("llm", "q0"), ("llm", "q2")}


def test_a_repeated_prompt_is_answered_once_and_charged_to_both_methods(
        tmp_path: Path, dataset: Path) -> None:
    out = tmp_path / "run"
    replies = [Generation(f"({x})", 50, 2, seconds=4.0) for x in "BACB"]
    p = FakePlatform(replies, tmp_path, replay=True)  # type: ignore[arg-type]
    run_eval(p, str(dataset), ["llm", "llm-again"], n=None, out=out, progress=False)  # type: ignore[arg-type]
    assert p.model.inner.remaining == 0  # type: ignore[attr-defined]  # 4 decodes, 8 answers
    _, lines = read_run(out)
    by = {(ln.prediction.method, ln.question.id): ln.prediction for ln in lines}
    for q in ("q0", "q1", "q2", "q3"):
        first, again = by["llm", q], by["llm-again", q]
        assert again.answer == first.answer
        assert (first.usage.replayed_calls, again.usage.replayed_calls) == (0, 1)
        assert again.usage.llm_calls == 1 and again.usage.prompt_tokens == 50
        assert again.usage.seconds >= 4.0  # the recorded time, though nothing was decoded
        assert again.usage.stage_seconds["generate"] >= 4.0
        # ... and said to be credited, not spent (`kgrag progress` paces a run by the rest)
        assert (first.usage.replayed_seconds, again.usage.replayed_seconds) == (0.0, 4.0)
    assert json.loads((out / "config.json").read_text())["replay"] is True
    m = score_run(out).methods["llm-again"]
    assert (m.correct, m.wrong) == (2, 2) and m.llm_calls == 1.0 and m.replayed_calls == 1.0
    assert score_run(out).methods["llm"].replayed_calls == 0.0
    text = write_report([out], tmp_path / "report").read_text()
    assert "of them replayed/q" in text and "| 1.0 | 1.00 |" in text


def test_a_method_added_in_a_later_process_replays_the_kept_replies(
        tmp_path: Path, dataset: Path) -> None:
    out = tmp_path / "run"
    replies = [Generation(f"({x})", 50, 2, seconds=4.0) for x in "BACB"]
    run_eval(FakePlatform(replies, tmp_path, replay=True), str(dataset), ["llm"],  # type: ignore[arg-type]
             n=None, out=out, progress=False)
    assert (out / "replay.sqlite").is_file()
    later = FakePlatform([], tmp_path, replay=True)  # decodes nothing: all four are kept
    run_eval(later, str(dataset), ["llm-again"], n=None, out=out, progress=False,  # type: ignore[arg-type]
             force=True)
    _, lines = read_run(out)
    again = [ln.prediction for ln in lines if ln.prediction.method == "llm-again"]
    assert [p.usage.replayed_calls for p in again] == [1, 1, 1, 1]
    assert [p.answer for p in again] == [ln.prediction.answer for ln in lines
                                         if ln.prediction.method == "llm"]


def test_without_replay_every_method_decodes(tmp_path: Path, dataset: Path) -> None:
    p = FakePlatform(["B"] * 8, tmp_path, replay=True)
    run_eval(p, str(dataset), ["llm", "llm-again"], n=None, out=tmp_path / "run",  # type: ignore[arg-type]
             progress=False, replay=False)
    assert p.model.remaining == 0 and not isinstance(p.model, ReplayModel)


def test_the_runner_rule_cuts_only_answer_first_prompts() -> None:
    from kgrag.baselines import ChainOfThought
    from kgrag.parsing import settled_rule
    from kgrag.types import Choice, Question

    q = Question(id="q", text="Where?", kind="multiple_choice",
                 choices=[Choice(label="A", text="oven"), Choice(label="B", text="fridge")])
    reply = "B. fridge\nExplanation: it is cold.\nSo the answer is: A"
    cot = ChainOfThought(ScriptedModel([reply, {"A": -0.1, "B": -3.0}]))
    cot.settled = settled_rule
    # reasoning first: read whole, never cut; its final letter read after "the answer is:"
    assert cot.answer(q).answer == "B. fridge\nExplanation: it is cold.\nSo the answer is: A. oven"
    llm = GeneratingLLM(ScriptedModel([reply]))
    llm.settled = settled_rule
    assert llm.answer(q).answer == "B. fridge\nExplanation:"


def test_the_runner_answers_with_the_real_metakgrag_and_records_its_config(tmp_path: Path
                                                                          ) -> None:
    """Not a renamed stand-in: MetaKGRAG over the in-memory fox graph, its cycle in the
    recorded trace, its MetaKGConfig and the graph's fingerprint in config.json."""
    from tests.unit.test_metakg_methods import CONCEPTS_BOTH, QTEXT
    from tests.unit.test_sweep import MetaKGPlatform

    data = tmp_path / "fox.jsonl"
    data.write_text(json.dumps({"question": QTEXT, "answer": ["den"]}) + "\n")
    p = MetaKGPlatform(tmp_path, [CONCEPTS_BOTH, "So the answer is: den."])
    p.settings.metakg = p.settings.metakg.model_copy(update={"n_max": 1})
    out = tmp_path / "run"
    run_eval(p, str(data), ["metakgrag"], n=None, out=out, domain="woods",  # type: ignore[arg-type]
             progress=False)
    config, (line,) = read_run(out)
    assert config.settings["metakg"]["n_max"] == 1 and config.graph is not None
    stages = [s.stage for s in line.prediction.trace]
    assert stages[:4] == ["domain", "concepts", "match", "refine"]
    refine = next(s for s in line.prediction.trace if s.stage == "refine")
    assert len(refine.data["cycles"]) == 1  # n_max = 1 reached MetaKGRAG's cycle
    assert line.prediction.answer.endswith("den.") and p.model.remaining == 0


def test_a_prior_run_keeps_its_prior_and_refuses_another(tmp_path: Path, dataset: Path) -> None:
    from kgrag.datasets import load_dataset
    from kgrag.reader import prior_path

    priors = tmp_path / "priors"
    name = load_dataset(str(dataset), tmp_path).questions[0].dataset
    src = prior_path(priors, "scripted", name)
    src.parent.mkdir(parents=True)
    src.write_text('{"probs": [0.3, 0.7]}')

    platform = _prior_platform(priors, "prior")
    out = tmp_path / "run"
    run_eval(platform(["B"] * 4, tmp_path), str(dataset), ["llm"], n=None, out=out,
             progress=False)
    assert (out / "prior.json").read_text() == src.read_text()
    src.write_text('{"probs": [0.5, 0.5]}')
    with pytest.raises(KgragError, match="another position prior"):
        run_eval(platform([], tmp_path), str(dataset), ["llm"], n=None, out=out,
                 progress=False)


def _prior_platform(priors: Path, bias: str) -> Any:
    """A fake platform whose letter reader divides out priors from `priors`."""
    from kgrag.reader import ReaderConfig

    class PriorPlatform(FakePlatform):
        chat_model = type("M", (), {"name": "scripted"})()

        def reader_config(self) -> ReaderConfig:
            return ReaderConfig(bias=bias, prior_dir=priors)  # type: ignore[arg-type]

    return PriorPlatform


def test_a_prompt_prior_run_keeps_both_priors(tmp_path: Path, dataset: Path) -> None:
    from kgrag.datasets import load_dataset
    from kgrag.reader import prior_path

    priors = tmp_path / "priors"
    name = load_dataset(str(dataset), tmp_path).questions[0].dataset
    closed, kg = prior_path(priors, "scripted", name), prior_path(priors, "scripted", name,
                                                                   "answer_choose")
    closed.parent.mkdir(parents=True)
    closed.write_text('{"probs": [0.3, 0.7]}')
    kg.write_text('{"probs": [0.6, 0.4], "prompt": "answer_choose"}')

    platform = _prior_platform(priors, "prompt-prior")
    out = tmp_path / "run"
    run_eval(platform(["B"] * 4, tmp_path), str(dataset), ["llm"], n=None, out=out,
             progress=False)
    assert (out / "prior.json").read_text() == closed.read_text()
    assert (out / "prior.answer_choose.json").read_text() == kg.read_text()
    kg.write_text('{"probs": [0.5, 0.5], "prompt": "answer_choose"}')
    with pytest.raises(KgragError, match=r"another position prior \(answer_choose\)"):
        run_eval(platform([], tmp_path), str(dataset), ["llm"], n=None, out=out,
                 progress=False)
