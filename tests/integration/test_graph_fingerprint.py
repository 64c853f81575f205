"""The graph fingerprint against the real Neo4j: Cypher and Python encode facts alike, a
changed graph changes it, and the runner then refuses to extend a run."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.runner import read_run, run_eval
from kg_builder.fingerprint import fact_key, fingerprint_of, graph_fingerprint
from kg_builder.graph_io import GraphWriter, WriteReport
from kgrag.baselines import LLMOnly
from kgrag.errors import KgragError
from tests.conftest import write_questions
from tests.doubles.scripted import ScriptedModel
from tests.integration.test_graph_io import HashEmbedder
from tests.unit.test_eval_runner import QUESTIONS

# Keys a naive "head:predicate:tail" join would confuse, and characters beyond ASCII
# (Neo4j's size() must count them as Python's len() does).
ENTITIES = ["1:fox", "fox 🦊", "forêt"]
FACTS = [("1:fox", "lives:in", "forêt"), ("fox 🦊", "is a", "1:fox")]


def _write(store, domain: str, facts: list[tuple[str, str, str]]) -> None:
    chunks = [{"id": f"{domain}:c1", "doc": f"{domain}:d1", "text": "Foxes live in forests.",
               "source": "t", "title": "fox", "line": 1}]
    entities = [{"key": k, "name": k, "aliases": []} for k in ENTITIES]
    rows = [{"h": h, "r": r, "t": t, "k": "conceptual", "chunks": [f"{domain}:c1"],
             "conf": 1.0} for h, r, t in facts]
    GraphWriter(store, HashEmbedder(), domain).write(chunks, entities, rows,
                                                     WriteReport(domain))


class TextLLM(LLMOnly):
    """`llm` answering with a scripted text reply, parsed (not letter log-probabilities)."""

    reads_letters = False


class GraphPlatform:
    """The real store, with a scripted stand-in for a KG method (the answers do not
    matter here, only what the runner records about the graph)."""

    def __init__(self, platform, tmp: Path) -> None:
        self.settings = platform.settings.model_copy(update={"data_dir": tmp})
        self.store = platform.store
        self.model = ScriptedModel(["B"] * len(QUESTIONS))

    def method(self, name: str, domain: str | None) -> LLMOnly:
        m = TextLLM(self.model)
        m.name = name  # type: ignore[misc]
        return m

    def replay_repeats(self) -> None:
        """The runner's call; one method here, nothing repeats."""


def test_fingerprint_follows_the_graph_and_guards_the_run(platform, test_domain,
                                                          tmp_path: Path) -> None:
    _write(platform.store, test_domain, FACTS)
    before = graph_fingerprint(platform.store, test_domain)
    assert before == fingerprint_of(ENTITIES, [fact_key(*f) for f in FACTS], 1)
    assert graph_fingerprint(platform.store, test_domain) == before  # stable

    dataset = write_questions(tmp_path, QUESTIONS)
    out = tmp_path / "run"
    run_eval(GraphPlatform(platform, tmp_path), str(dataset), ["kg-vanilla"],  # type: ignore[arg-type]
             n=None, out=out, domain=test_domain, progress=False)
    assert read_run(out)[0].graph == before

    _write(platform.store, test_domain, [*FACTS, ("forêt", "has", "fox 🦊")])
    after = graph_fingerprint(platform.store, test_domain)
    assert (after.entities, after.facts) == (3, 3) and after.digest != before.digest
    with pytest.raises(KgragError, match="graph changed") as e:
        run_eval(GraphPlatform(platform, tmp_path), str(dataset),  # type: ignore[arg-type]
                 ["metakgrag"], n=None, out=out, domain=test_domain, progress=False)
    assert str(before) in str(e.value) and str(after) in str(e.value)


def test_graph_drop_removes_one_domain_only(platform, test_domain, monkeypatch) -> None:
    from typer.testing import CliRunner

    from kgrag.cli import app

    other = f"{test_domain}-other"
    _write(platform.store, test_domain, FACTS)
    _write(platform.store, other, FACTS[:1])
    monkeypatch.setattr("kg_builder.cli.Platform", lambda *a, **k: platform)
    try:
        refused = CliRunner().invoke(app, ["graph", "drop", "--domain", test_domain],
                                     input="n\n")
        assert refused.exit_code == 1
        assert graph_fingerprint(platform.store, test_domain).entities == 3
        done = CliRunner().invoke(app, ["graph", "drop", "--domain", test_domain, "--yes"])
        assert done.exit_code == 0, done.output
        assert "3 entities, 2 facts, 1 chunks" in done.output
        gone = graph_fingerprint(platform.store, test_domain)
        assert (gone.entities, gone.facts, gone.chunks) == (0, 0, 0)
        assert graph_fingerprint(platform.store, other).facts == 1
        again = CliRunner().invoke(app, ["graph", "drop", "--domain", test_domain, "--yes"])
        assert isinstance(again.exception, KgragError)
        assert "no graph" in again.exception.message
    finally:
        platform.store.run_autocommit("graph/delete_domain", {"domain": other})
