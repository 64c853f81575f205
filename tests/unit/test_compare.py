"""The comparison of a run's methods (`eval.compare`): settings, row order, the scatter,
and the evidence shown beside each answer."""

from __future__ import annotations

from pathlib import Path

from eval.compare import (
    compare_markdown,
    compare_rows,
    evidence_items,
    plot_score_seconds,
    setting_class,
)
from eval.runner import RunLine
from eval.scoring import Interval, MethodMetrics, RunMetrics
from kgrag.types import Passage, Prediction, Question, TraceStep


def test_settings_are_grouped_for_the_comparison() -> None:
    assert setting_class("llm", "closed-book") == "closed-book"
    assert setting_class("rag", "open") == "open"
    assert setting_class("rag-gold", "gold") == "gold"
    assert setting_class("metakgrag", "kg,kg-none") == "kg"
    assert setting_class("kg-no-evidence", "kg-none") == "kg"
    assert setting_class("kg-ppr", "open") == "hybrid"
    assert setting_class("ircot-ppr", "open") == "hybrid"
    assert setting_class("metarag-ppr", "open") == "hybrid"


def _m(method: str, setting: str, f1: float, seconds: float) -> MethodMetrics:
    x = Interval(mean=f1, low=f1 - 0.05, high=f1 + 0.05)
    return MethodMetrics(method=method, n=10, setting=setting, f1=x, em=x, seconds=seconds,
                         median_seconds=seconds)


def _metrics() -> RunMetrics:
    ms = [_m("kg-vanilla", "kg", 0.2, 20), _m("rag", "open", 0.3, 25),
          _m("llm", "closed-book", 0.1, 4), _m("ircot", "open", 0.4, 30),
          _m("kg-ppr", "open", 0.45, 35)]
    return RunMetrics(run="r", dataset="hotpotqa", model="m",
                      methods={m.method: m for m in ms})


def test_rows_go_by_setting_then_best_first(tmp_path: Path) -> None:
    rows = compare_rows(_metrics())
    assert [(r.method, r.setting) for r in rows] == [
        ("llm", "closed-book"), ("ircot", "open"), ("rag", "open"), ("kg-ppr", "hybrid"),
        ("kg-vanilla", "kg")]
    assert {r.headline for r in rows} == {"F1"}
    md = compare_markdown(_metrics(), "x.png")
    assert "| kg-ppr | hybrid | 10 | 45.0 [40.0, 50.0] | 45.0 | 35.0 |" in md
    assert md.rstrip().endswith("![score against seconds per question](x.png)")
    path = plot_score_seconds(_metrics(), tmp_path / "c.png", exclude=["rag"])
    assert path is not None and path.stat().st_size > 1000
    empty = RunMetrics(run="r", dataset="d", model="m", methods={})
    assert plot_score_seconds(empty, tmp_path / "e.png") is None
    assert compare_markdown(empty) == ""


def _line(method: str, setting: str, evidence: list[str], trace: list[TraceStep] = ()
          ) -> RunLine:
    q = Question(id="q", text="Who?", answers=["x"], contexts=[
        Passage(id="1", title="Star Wars: Episode IV", text="A 1977 film."),
        Passage(id="2", title="Jaws", text="A 1975 film.")])
    pred = Prediction(question_id="q", method=method, answer="x", evidence=evidence,
                      setting=setting, trace=list(trace))
    return RunLine(question=q, prediction=pred)


def test_evidence_is_paths_triples_or_passages() -> None:
    refine = TraceStep(stage="refine", summary="…", data={
        "final": {"entities": ["a", "b"]}, "names": {"a": "Alpha", "b": "Beta"}})
    paths = evidence_items(_line("metakgrag", "kg", ["Evidence 1: a r b"], [refine]))
    assert [(i.kind, i.title) for i in paths] == [("path", "Alpha → Beta")]
    triples = evidence_items(_line("kg-vanilla", "kg", ["Evidence 1: a r b"]))
    assert [(i.kind, i.title) for i in triples] == [("triple", "Evidence 1: a r b")]
    passages = evidence_items(_line("rag", "open", [
        "Jaws", "Star Wars: Episode IV: A space opera.", "Unknown title: some text",
        "Bare"]))
    assert [(i.title, i.text) for i in passages] == [
        ("Jaws", "A 1975 film."), ("Star Wars: Episode IV", "A space opera."),
        ("Unknown title", "some text"), ("Bare", "")]
    assert evidence_items(_line("llm", "closed-book", [])) == []
