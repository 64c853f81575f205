"""`kgrag calibrate seakr`: wiring, the evaluation-data guard, and the backend refusal
(also of `kgrag bench seakr`, whose timings come from running it, not from tests).

The engine is a fake (control flow only): these tests say nothing about the δ a real
model gets; that comes from running the command.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgrag.cli import app
from kgrag.errors import KgragError, ModelError
from kgrag.platform import Platform
from tests.conftest import DATA_DIR, require_data
from tests.doubles.scripted import ScriptedModel
from tests.unit.test_seakr import FULL, FakeEngine, out
from textrag.seakr.calibrate import (
    CALIBRATION_SOURCES,
    CalibrationLeak,
    calibrated_threshold,
    calibration_path,
    calibration_questions,
    check_disjoint_from_evaluation,
)
from textrag.seakr.uncertainty import StepOutput

CALIBRATION_FILE = CALIBRATION_SOURCES["csqa-train"]
CSQA = ["calibrate", "seakr", "--source", "csqa-train"]

STEP_U = [-7.0, -6.5, -4.0, -3.0]  # questions 0 and 1 are answered right, 2 and 3 wrong


def _csqa(qid: str, stem: str) -> dict[str, object]:
    return {"answerKey": "B", "id": qid, "question": {
        "question_concept": "fox", "stem": stem,
        "choices": [{"label": "A", "text": "sea"}, {"label": "B", "text": "forest"}]}}


def _write(path: Path, records: list[dict[str, object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    """A kgrag home, a data folder with 4 training and 2 evaluation questions, no config."""
    data = tmp_path / "data"
    _write(data / CALIBRATION_FILE,
           [_csqa(f"t{i}", f"Where does fox number {i} live?") for i in range(4)])
    _write(data / "commonsense" / "csqa_dev300.jsonl",
           [_csqa(f"d{i}", f"Where does owl number {i} live?") for i in range(2)])
    return {"KGRAG_HOME": str(tmp_path / "home"), "KGRAG_DATA_DIR": str(data),
            "KGRAG_CONFIG": str(tmp_path / "none.toml"), "KGRAG_MODEL__CHAT": "fake-model",
            "KGRAG_MODEL__BACKEND": "llama"}


@pytest.fixture()
def fake_model(monkeypatch: pytest.MonkeyPatch) -> FakeEngine:
    """The platform's model is a strict scripted model; the engine answers from a table."""

    def respond(tail: str, stop: tuple[str, ...], u: bool) -> StepOutput:
        i = int(tail.split("fox number ")[1][0])
        if stop[-1] == ". ":
            return out("A first step", STEP_U[i])
        return out("So the answer is forest" if i < 2 else "So the answer is sea", None)

    engine = FakeEngine(respond)
    monkeypatch.setattr(Platform, "chat_model", property(
        lambda self: ScriptedModel([], capabilities=FULL, name="fake-model")))
    monkeypatch.setattr("textrag.seakr.calibrate.default_engine", lambda *a, **k: engine)
    return engine


def test_command_prints_delta_and_saves_it_where_seakr_reads_it(env, fake_model) -> None:
    result = CliRunner().invoke(app, [*CSQA, "--n", "4"], env=env)
    assert result.exit_code == 0, result.output
    assert "δ = -5.2500 for fake-model" in result.output
    assert "accuracy 50.0% (2 right, 2 wrong)" in result.output
    assert "Youden J 1.000" in result.output and "SeaKR reads it by default" in result.output
    home = Path(env["KGRAG_HOME"])
    assert calibration_path(home, "fake-model").is_file()
    assert calibrated_threshold(home, "fake-model") == pytest.approx(-5.25)
    assert len(fake_model.calls) == 8  # a step with U and an answer line per question


def test_out_writes_elsewhere_and_says_seakr_will_not_read_it(env, fake_model, tmp_path
                                                               ) -> None:
    target = tmp_path / "cal.json"
    result = CliRunner().invoke(app, [*CSQA, "--n", "4", "--out", str(target)],
                                env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(target.read_text())["threshold"] == pytest.approx(-5.25)
    assert "not this file" in result.output
    assert not calibration_path(Path(env["KGRAG_HOME"]), "fake-model").exists()


def test_a_calibration_question_in_an_evaluation_file_stops_the_command(env, fake_model
                                                                        ) -> None:
    dev = Path(env["KGRAG_DATA_DIR"]) / "wikipedia" / "nq_open_dev300.jsonl"
    _write(dev, [{"question": "where does FOX number 2  live?", "answer": ["forest"]}])
    result = CliRunner().invoke(app, [*CSQA, "--n", "4"], env=env)
    assert isinstance(result.exception, CalibrationLeak), result.output
    assert "t2" in result.exception.message
    assert fake_model.calls == []  # refused before any generation
    assert not calibration_path(Path(env["KGRAG_HOME"]), "fake-model").exists()


def test_a_backend_without_hidden_states_is_refused_with_a_clear_message(env) -> None:
    env = {**env, "KGRAG_MODEL__BACKEND": "openai", "KGRAG_DATA_DIR": "/nonexistent"}
    result = CliRunner().invoke(app, ["calibrate", "seakr"], env=env)
    assert isinstance(result.exception, ModelError), result.output
    assert "SeaKR calibration needs parallel_samples, hidden_states" in \
        result.exception.message
    assert "KGRAG_MODEL__BACKEND=llama" in result.exception.hint


def test_real_calibration_split_is_disjoint_from_every_dev300_file() -> None:
    require_data(DATA_DIR / CALIBRATION_FILE)
    dev_files = sorted(DATA_DIR.rglob("*_dev300.jsonl*"))
    # raises CalibrationLeak on any overlap
    qs = calibration_questions(DATA_DIR, n=300, source="csqa-train")
    assert len(qs) == 300 and len(dev_files) >= 7
    assert check_disjoint_from_evaluation(qs, DATA_DIR) == 300 * len(dev_files)
    nq = calibration_questions(DATA_DIR, n=300)  # the default source, NQ-open dev
    own = DATA_DIR / CALIBRATION_SOURCES["nq"]
    assert check_disjoint_from_evaluation(nq, DATA_DIR, own=own) == 300 * (len(dev_files) - 1)


def test_without_evaluation_files_the_guard_refuses_rather_than_passes(tmp_path) -> None:
    with pytest.raises(KgragError, match="dev300"):
        check_disjoint_from_evaluation([], tmp_path)


@pytest.mark.parametrize(("backend", "scripted", "message"), [
    ("openai", False, "the SeaKR benchmark needs parallel_samples, hidden_states"),
    ("llama", True, "measures the batched llama.cpp engine"),  # capable, but no llama.cpp
])
def test_bench_refuses_a_backend_it_cannot_measure(env, monkeypatch, backend, scripted,
                                                   message) -> None:
    if scripted:
        monkeypatch.setattr(Platform, "chat_model", property(
            lambda self: ScriptedModel([], capabilities=FULL, name="fake-model")))
    result = CliRunner().invoke(app, ["bench", "seakr", "--runs", "1"],
                                env={**env, "KGRAG_MODEL__BACKEND": backend})
    assert isinstance(result.exception, ModelError), result.output
    assert message in result.exception.message


def test_nq_source_is_calibrated_on_and_the_run_on_it_is_refused(env, tmp_path) -> None:
    """The default source: NQ-open dev, checked against the *other* dev300 files only, and
    a SeaKR evaluation of that very file is named a leak."""
    from textrag.seakr.calibrate import calibration_leak

    data = Path(env["KGRAG_DATA_DIR"])
    nq = data / CALIBRATION_SOURCES["nq"]
    _write(nq, [{"question": f"who wrote book {i}", "answer": [f"author {i}"]}
                for i in range(3)])
    qs = calibration_questions(data, n=3)
    assert [q.answers for q in qs] == [["author 0"], ["author 1"], ["author 2"]]
    assert all("Answer choices" not in q.text for q in qs)
    record = {"threshold": -2.0, "source": "the first 3 questions of nq",
              "source_file": CALIBRATION_SOURCES["nq"]}
    leak = calibration_leak(record, nq, data)
    assert leak is not None and "its own calibration questions" in leak
    assert calibration_leak(record, data / "wikipedia" / "hotpotqa_dev300.jsonl", data) is None
    assert calibration_leak(None, nq, data) is None


def test_nq_calibration_still_refuses_questions_of_other_evaluation_files(env) -> None:
    data = Path(env["KGRAG_DATA_DIR"])
    _write(data / CALIBRATION_SOURCES["nq"],
           [{"question": "Where does owl number 1 live?", "answer": ["forest"]}])
    with pytest.raises(CalibrationLeak, match="1 calibration questions are also evaluation"):
        calibration_questions(data, n=1)


def test_unknown_source_is_a_clear_error(env) -> None:
    with pytest.raises(KgragError, match="unknown SeaKR calibration source"):
        calibration_questions(Path(env["KGRAG_DATA_DIR"]), n=1, source="squad")
