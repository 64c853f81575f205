"""The graph fingerprint a run records: the digest itself, when the runner takes one, and
how extending a run compares it (changed graph refused, older run dirs adopt it)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from eval.report import write_report
from eval.runner import read_run, run_eval
from eval.scoring import score_run
from kg_builder.fingerprint import fact_key, fingerprint_of
from kgrag.errors import KgragError
from kgrag.platform import graph_methods
from tests.conftest import write_questions
from tests.unit.test_eval_runner import QUESTIONS, FakePlatform

FOX = ("fox", "lives in", "forest")
HEN = ("hen", "is eaten by", "fox")


@pytest.fixture()
def dataset(tmp_path: Path) -> Path:
    return write_questions(tmp_path, QUESTIONS)


def _fp(*facts: tuple[str, str, str], chunks: int = 1):
    keys = sorted({k for h, _, t in facts for k in (h, t)})
    return fingerprint_of(keys, [fact_key(*f) for f in facts], chunks)


def _run(p: FakePlatform, dataset: Path, out: Path, methods: list[str],
         force: bool = False) -> None:
    run_eval(p, str(dataset), methods, n=None, out=out, force=force,  # type: ignore[arg-type]
             progress=False)


def test_the_digest_ignores_order_and_follows_every_key() -> None:
    base = _fp(FOX, HEN)
    assert base == _fp(HEN, FOX)
    assert (base.entities, base.facts, base.chunks) == (3, 2, 1)
    assert base.digest != _fp(FOX).digest
    assert base.digest != _fp(FOX, ("hen", "eats", "fox")).digest  # a renamed predicate
    assert base.digest == _fp(FOX, HEN, chunks=2).digest and base != _fp(FOX, HEN, chunks=2)


def test_fact_keys_are_unambiguous() -> None:
    # Plain concatenation would make these equal ("abcd", "a:b:c"); the lengths do not.
    assert fact_key("ab", "c", "d") != fact_key("a", "bc", "d")
    assert fact_key("a:", "b", "c") != fact_key("a", ":b", "c")
    assert fact_key("1:a", "b", "c") != fact_key("1", ":ab", "c")


def test_only_kg_methods_make_the_runner_read_the_graph(tmp_path: Path, dataset: Path) -> None:
    assert {"kg-vanilla", "metakgrag", "tog"} <= graph_methods()
    assert not {"llm", "cot", "rag", "seakr", "imrag-gold"} & graph_methods()
    p = FakePlatform(["B"] * 4, tmp_path)
    _run(p, dataset, tmp_path / "llm", ["llm"])
    assert read_run(tmp_path / "llm")[0].graph is None and p.store.domains == []
    p = FakePlatform(["B"] * 4, tmp_path)
    _run(p, dataset, tmp_path / "kg", ["kg-vanilla"])
    config = read_run(tmp_path / "kg")[0]
    assert config.graph == _fp(FOX) and p.store.domains == [config.domain]


def _kg_run_then_regrow(tmp_path: Path, dataset: Path, out: Path) -> FakePlatform:
    """A kg-vanilla run over the FOX graph in `out`; then a platform whose graph gained HEN."""
    _run(FakePlatform(["B"] * 4, tmp_path), dataset, out, ["kg-vanilla"])
    regrown = FakePlatform(["B"] * 4, tmp_path)
    regrown.store.facts.append(HEN)
    return regrown


def test_extending_a_run_after_the_graph_changed_is_refused(tmp_path: Path, dataset: Path
                                                            ) -> None:
    out = tmp_path / "run"
    regrown = _kg_run_then_regrow(tmp_path, dataset, out)
    with pytest.raises(KgragError, match="graph changed since the run was written") as e:
        _run(regrown, dataset, out, ["metakgrag"])
    assert f"recorded: {_fp(FOX)}; now: {_fp(FOX, HEN)}" in str(e.value)
    assert "--force" in (e.value.hint or "")
    assert read_run(out)[0].methods == ["kg-vanilla"]  # nothing was written
    _run(regrown, dataset, out, ["metakgrag"], force=True)
    config = read_run(out)[0]
    assert config.graph == _fp(FOX, HEN)
    assert json.loads(config.forced_mix[0]) == {"graph": [str(_fp(FOX)), str(_fp(FOX, HEN))]}


def test_a_session_without_kg_methods_keeps_the_recorded_graph(tmp_path: Path, dataset: Path
                                                               ) -> None:
    out = tmp_path / "run"
    regrown = _kg_run_then_regrow(tmp_path, dataset, out)
    _run(regrown, dataset, out, ["llm"])  # llm does not read the graph: not refused
    config = read_run(out)[0]
    assert config.graph == _fp(FOX) and not config.forced_mix and regrown.store.domains == []


def _forget_graph(out: Path) -> None:
    """Make config.json look written before fingerprints were recorded."""
    path = out / "config.json"
    raw = json.loads(path.read_text())
    del raw["graph"]
    path.write_text(json.dumps(raw))


def test_a_run_from_before_fingerprints_adopts_the_current_graph(
        tmp_path: Path, dataset: Path, caplog: pytest.LogCaptureFixture) -> None:
    out = tmp_path / "run"
    _run(FakePlatform(["B"] * 4, tmp_path), dataset, out, ["kg-vanilla"])
    _forget_graph(out)
    regrown = FakePlatform(["B"] * 4, tmp_path)
    regrown.store.facts.append(HEN)
    with caplog.at_level(logging.WARNING, logger="eval.runner"):
        _run(regrown, dataset, out, ["metakgrag"])
    config = read_run(out)[0]
    assert config.graph == _fp(FOX, HEN) and not config.forced_mix
    warning = " ".join(r.getMessage() for r in caplog.records)
    assert "records no graph fingerprint" in warning
    assert "predictions of kg-vanilla are not covered" in warning
    # From now on the recorded fingerprint is compared as usual.
    with pytest.raises(KgragError, match="graph changed"):
        _run(FakePlatform(["B"] * 4, tmp_path), dataset, out, ["kg-vanilla"])


def test_an_older_run_without_kg_methods_adopts_the_graph_silently(
        tmp_path: Path, dataset: Path, caplog: pytest.LogCaptureFixture) -> None:
    out = tmp_path / "run"
    _run(FakePlatform(["B"] * 4, tmp_path), dataset, out, ["llm"])
    _forget_graph(out)
    with caplog.at_level(logging.WARNING, logger="eval.runner"):
        _run(FakePlatform(["B"] * 4, tmp_path), dataset, out, ["kg-vanilla"])
    assert read_run(out)[0].graph == _fp(FOX)
    assert not [r for r in caplog.records if "fingerprint" in r.getMessage()]


def test_score_and_report_show_the_graph(tmp_path: Path, dataset: Path) -> None:
    out = tmp_path / "run"
    _run(FakePlatform(["B"] * 8, tmp_path), dataset, out, ["llm", "kg-vanilla"])
    metrics = score_run(out)
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["graph"] == _fp(FOX).model_dump() and saved["domain"] == metrics.domain
    md = write_report([out], tmp_path / "report").read_text()
    assert (f"graph `{metrics.domain}`: 2 entities, 1 facts, 1 chunks, keys "
            f"`{_fp(FOX).digest}`") in md
    plain = tmp_path / "plain"
    _run(FakePlatform(["B"] * 4, tmp_path), dataset, plain, ["llm"])
    assert "graph `" not in write_report([plain], tmp_path / "r2").read_text()
