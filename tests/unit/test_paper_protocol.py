"""The paper's Appendix B protocol graph (issue 43, item 5): its prompt carries each
evaluation question's correct answer, it lives in a domain of its own that is never a
default nor written into another way, and normal builds still refuse evaluation files.

The scripted model replays fixed replies: these tests cover control flow and prompts,
never extraction quality."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from app.views.ask import NO_GRAPH, default_domain_index
from eval.report import heading
from kg_builder.build import plan_build
from kg_builder.corpora import builtin_domains, check_user_source, knowledge_source_files
from kg_builder.graph_io import FORMAT, import_graph
from kg_builder.paper_protocol import (
    PAPER_PROTOCOL_DOMAIN,
    PAPER_PROTOCOL_TITLE,
    PaperProtocolExtractor,
    plan_paper_protocol,
)
from kgrag.cli import app
from kgrag.datasets import DATASETS
from kgrag.errors import KgragError
from kgrag.records import FORMATS
from tests.doubles.scripted import ScriptedModel


def csqa_row(qid: str, stem: str, concept: str, texts: list[str], key: str) -> dict:
    return {"answerKey": key, "id": qid, "question": {
        "question_concept": concept, "stem": stem,
        "choices": [{"label": "ABCDE"[i], "text": t} for i, t in enumerate(texts)]}}


@pytest.fixture
def data(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    (root / "commonsense").mkdir(parents=True)
    rows = [csqa_row("q1", "Where might he look for  farmland?", "farmland",
                     ["midwest", "countryside", "estate", "farming areas", "illinois"], "A"),
            csqa_row("q2", "What is vinyl an odd thing to replace?", "vinyl",
                     ["pants", "record albums", "record store", "cheese", "wallpaper"], "E"),
            csqa_row("q3", "Where is a fox?", "fox", ["den", "zoo", "sky", "sea", "car"], "A")]
    (root / "commonsense" / "csqa_dev300.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows))
    return root


def triples_reply(*triples: tuple[str, str, str]) -> str:
    return json.dumps({"triples": [{"n": 1, "h": h, "r": r, "t": t, "k": "spatial"}
                                   for h, r, t in triples]})


# ------------------------------------------------------------------ the protocol's build
def test_plan_reads_the_evaluation_questions_into_their_own_domain(data: Path) -> None:
    plan = plan_paper_protocol(data, n=2)
    assert plan.domain == PAPER_PROTOCOL_DOMAIN == "csqa-dev300-paper-protocol"
    assert plan.source_names == ["csqa_dev300.jsonl"]
    assert [c.id for c in plan.chunks] == [f"{PAPER_PROTOCOL_DOMAIN}:csqa_dev300:q1",
                                           f"{PAPER_PROTOCOL_DOMAIN}:csqa_dev300:q2"]
    assert {c.domain for c in plan.chunks} == {PAPER_PROTOCOL_DOMAIN}
    first = plan.chunks[0]
    assert first.text == ("Question: Where might he look for farmland?\n"
                          "Options: (A) midwest (B) countryside (C) estate (D) farming areas "
                          "(E) illinois\nCore Concept: farmland\nCorrect Answer: midwest")
    assert first.meta["answer"] == "midwest" and first.meta["answer_key"] == "A"
    assert len(plan_paper_protocol(data, n=None).chunks) == 3
    with pytest.raises(KgragError, match="csqa"):
        plan_paper_protocol(data, n=2, dataset="medqa")


def test_prompt_is_table_8_with_options_concept_and_correct_answer(data: Path) -> None:
    chunks = plan_paper_protocol(data, n=2).chunks
    model = ScriptedModel([triples_reply(("farmland", "found in", "midwest")),
                           triples_reply(("vinyl", "used for", "wallpaper"))])
    result = PaperProtocolExtractor(model).extract(chunks)
    assert len(model.prompts) == 2 and model.remaining == 0  # one question per prompt
    first, second = (p[-1].content for p in model.prompts)
    assert "Correct Answer: midwest" in first and "Correct Answer: wallpaper" in second
    assert "Focus on the core concept \"farmland\" in the question." in first
    assert "Options: (A) midwest (B) countryside (C) estate" in first
    assert "Carefully read the question description, all options, and the correct " \
           "answer." in first
    assert "midwest" not in second  # each prompt holds its own question only
    facts = {rid: [(t.head_key, t.relation, t.tail_key) for t in ts]
             for rid, ts in result.triples.items()}
    assert facts == {chunks[0].id: [("farmland", "found in", "midwest")],
                     chunks[1].id: [("vinyl", "used for", "wallpaper")]}


def test_extractor_refuses_batches_and_other_chunks(data: Path) -> None:
    chunks = plan_paper_protocol(data, n=2).chunks
    ex = PaperProtocolExtractor(ScriptedModel([]))
    assert ex.config.batch_size == 1
    with pytest.raises(ValueError, match="one question at a time"):
        ex.messages(chunks)
    with pytest.raises(ValueError, match="not a paper-protocol question"):
        ex.messages([chunks[0].model_copy(update={"meta": {}})])


# ------------------------------------------------------------------ separation
class _P:
    def __init__(self, data_dir: Path) -> None:
        self.settings = SimpleNamespace(data_dir=data_dir)


def test_normal_builds_refuse_what_is_not_a_knowledge_source(data: Path,
                                                              tmp_path: Path) -> None:
    dev = data / "commonsense" / "csqa_dev300.jsonl"
    with pytest.raises(KgragError, match="not a knowledge source"):
        plan_build(_P(data), "my-notes", [dev], None)  # type: ignore[arg-type]
    notes = tmp_path / "notes.md"
    notes.write_text("Foxes live in dens.\n")
    assert plan_build(_P(data), "my-notes", [notes], None).chunks  # type: ignore[arg-type]
    with pytest.raises(KgragError, match="reserved"):
        plan_build(_P(data), PAPER_PROTOCOL_DOMAIN, [notes], None)  # type: ignore[arg-type]


def test_only_knowledge_sources_of_the_data_folder_pass(tmp_path: Path) -> None:
    data = tmp_path / "data"
    task = data / "legal" / "legalbench" / "hearsay"
    task.mkdir(parents=True)
    (data / "medical").mkdir()
    passing = [data / "medical" / "medmcqa_dev.jsonl", data / "commonsense" / "csqa_train.jsonl",
               task / "train.jsonl", tmp_path / "mine" / "notes.md"]
    refused = [data / "medical" / "medquad_dev300.jsonl", task / "test.jsonl", task / "README.md",
               data / "legal" / "mmlu_professional_law_val.jsonl", data / "README.md",
               data / "medical" / ".." / "medical" / "medqa_us_dev300.jsonl"]
    assert {p.resolve() for p in passing[:3]} <= knowledge_source_files(data)
    for path in passing:
        check_user_source(path, data)
    for path in refused:
        with pytest.raises(KgragError, match="not a knowledge source"):
            check_user_source(path, data)


def test_the_protocol_domain_is_never_a_default() -> None:
    assert DATASETS["csqa"].domain == "commonsense"
    assert PAPER_PROTOCOL_DOMAIN not in {s.domain for s in DATASETS.values()}
    assert PAPER_PROTOCOL_DOMAIN not in {f.domain for f in FORMATS}
    assert PAPER_PROTOCOL_DOMAIN not in builtin_domains()
    # the app's domain picker: never preselected, only chosen by hand
    options = [NO_GRAPH, PAPER_PROTOCOL_DOMAIN, "legal"]
    assert default_domain_index(options, None) == 2
    assert default_domain_index([NO_GRAPH, PAPER_PROTOCOL_DOMAIN], None) == 0
    assert default_domain_index(options, "legal") == 2


def test_nothing_else_writes_into_the_protocol_domain(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["graph", "wordnet", "--domain", PAPER_PROTOCOL_DOMAIN])
    assert isinstance(result.exception, KgragError) and "reserved" in str(result.exception)
    export = tmp_path / "g.jsonl.gz"
    for source, target in ((PAPER_PROTOCOL_DOMAIN, "commonsense"),
                           ("commonsense", PAPER_PROTOCOL_DOMAIN)):
        with gzip.open(export, "wt", encoding="utf-8") as f:
            f.write(json.dumps({"type": "meta", "format": FORMAT, "domain": source}) + "\n")
        with pytest.raises(KgragError, match="reserved"):
            import_graph(None, None, export, target)  # type: ignore[arg-type]


def test_report_heading_names_the_protocol() -> None:
    run = SimpleNamespace(dataset="csqa", model="qwen", domain=PAPER_PROTOCOL_DOMAIN)
    assert heading(run) == f"csqa, {PAPER_PROTOCOL_TITLE} — model qwen"  # type: ignore[arg-type]
    assert PAPER_PROTOCOL_TITLE == ("graph built from the evaluation answers (paper's "
                                    "Appendix B protocol)")
    assert heading(SimpleNamespace(dataset="csqa", model="qwen",  # type: ignore[arg-type]
                                   domain="commonsense")) == "csqa — model qwen"
