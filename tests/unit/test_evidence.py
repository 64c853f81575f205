"""`kgrag evidence` with a scripted model over the in-memory fox graph of
`test_metakg_methods`: batched concept extraction with its retry, `gather` without the
answer call, resumable rows per (setting, method, question), what the rows measure, and
the refusals."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from eval.evidence import run_evidence
from eval.evidence_summary import comparisons, read_rows, score_only, summarise
from kgrag.config import Settings
from kgrag.errors import KgragError
from kgrag.method import QAMethod, Trace
from kgrag.types import Choice, Question
from metakg.config import MetaKGConfig
from metakg.kg_method import extract_concepts_many
from metakg.methods import FACTORIES, METHOD_CLASSES, MetaKGRAG
from tests.conftest import FixedGraphStore, write_questions
from tests.doubles.memory import MemoryBackend
from tests.doubles.scripted import ScriptedModel
from tests.unit.test_metakg_methods import (
    CONCEPTS_BOTH,
    CONCEPTS_FOX,
    KEYS,
    QTEXT,
    TRIPLES,
    TableEmbedder,
)


class AnyTextEmbedder(TableEmbedder):
    """The fox table; any other text (a question with its options) embeds as the
    question."""

    def embed(self, texts):  # type: ignore[no-untyped-def]
        return np.array([self.vectors.get(t, self.vectors[QTEXT]) for t in texts])


def fox_question(qid: str) -> dict:
    return {"id": qid, "question": {"stem": QTEXT, "choices": [
        {"label": "A", "text": "den"}, {"label": "B", "text": "pet"}]}, "answerKey": "A"}


class EvidencePlatform:
    """What `run_evidence` reads of a platform: settings, a store for the fingerprint,
    the chat model (concepts only) and KG methods over the in-memory graph built from
    the current settings, as the real factories do."""

    def __init__(self, tmp: Path, replies: list[str]) -> None:
        self.settings = Settings(home=tmp / "home", data_dir=tmp,
                                 metakg=MetaKGConfig(n_starts=1))  # Fox only, as ONE_START
        self.store = FixedGraphStore()
        self.chat_model = ScriptedModel(replies)
        self.built: list[tuple[str, int]] = []
        self.embedded: list[str] = []  # what the study embeds before the methods run
        self.embedder = self

    def embed(self, texts: list[str]) -> np.ndarray:
        self.embedded += texts
        return AnyTextEmbedder().embed(texts)

    def method(self, name: str, domain: str | None) -> QAMethod:
        cls = next(c for c in METHOD_CLASSES if c.name == name)
        cfg = self.settings.metakg
        self.built.append((name, cfg.n_max))
        return cls(self.chat_model, MemoryBackend(KEYS, TRIPLES, AnyTextEmbedder(), cfg),
                   domain, cfg)


def test_batched_concepts_retry_a_bad_reply_after_the_batch() -> None:
    q = [Question(id=f"q{i}", text=QTEXT) for i in range(3)]
    model = ScriptedModel([CONCEPTS_FOX, "Concepts: fox", CONCEPTS_BOTH, CONCEPTS_BOTH])
    seen: list[int] = []
    got = extract_concepts_many(model, q, "woods", 5, on_done=lambda i, c: seen.append(i))
    assert got == [("fox",), ("fox", "forest"), ("fox", "forest")]
    assert seen == [0, 2, 1] and model.remaining == 0  # the retry comes last
    assert "could not be used (no JSON object in the reply)" in model.prompts[3][-1].content
    assert model.prompts[3][-1].content.startswith(model.prompts[1][-1].content)


def test_two_bad_replies_give_none() -> None:
    model = ScriptedModel(['{"concepts": "fox"}', '{"concepts": ['])
    assert extract_concepts_many(model, [Question(id="q", text=QTEXT)], "woods", 5) == [None]


def test_gather_with_given_concepts_asks_nothing_and_finds_what_answer_finds() -> None:
    answered = MetaKGRAG(ScriptedModel([CONCEPTS_BOTH, "A den."]),
                         MemoryBackend(KEYS, TRIPLES, TableEmbedder()), "woods"
                         ).answer(Question(id="q1", text=QTEXT))
    model = ScriptedModel([])
    trace = Trace()
    found = MetaKGRAG(model, MemoryBackend(KEYS, TRIPLES, TableEmbedder()), "woods").gather(
        Question(id="q1", text=QTEXT), trace, ["fox", " forest", "Fox"])
    assert model.prompts == []  # neither concepts nor an answer were asked for
    assert found.lines == answered.evidence
    concepts = next(s for s in trace.steps if s.stage == "concepts")
    assert concepts.data["concepts"] == ["fox", "forest"]  # normalised as extracted ones
    assert concepts.data["given"] and concepts.data["llm_calls"] == 0
    assert [s.stage for s in trace.steps][-1] == "evidence"


def test_rows_measure_the_answer_and_the_wrong_options_in_the_evidence(tmp_path: Path) -> None:
    data = write_questions(tmp_path, [fox_question("f1"), fox_question("f2")])
    p = EvidencePlatform(tmp_path, [CONCEPTS_BOTH, CONCEPTS_BOTH])
    out = tmp_path / "ev"
    run_evidence(p, str(data), out=out, n=None, domain="woods", parallel=1, progress=False,
                 methods=["metakgrag", "metakgrag-no-cycle"])
    assert p.embedded[:3] == [f"{QTEXT} den pet", "fox", "forest"]  # one batch, first
    rows = {(r.method, r.id): r for r in read_rows(out)}
    full, flat = rows[("metakgrag", "f1")], rows[("metakgrag-no-cycle", "f1")]
    # the cycle moves the path from fox → animal → pet to fox → den → forest (see
    # test_metakg_methods): the answer "den" comes into the evidence, the wrong "pet" goes
    assert (full.answer, full.distractor, full.refined_starts) == (True, False, 1)
    assert (flat.answer, flat.distractor, flat.refined_starts) == (False, True, 0)
    assert full.lines == ["Evidence 1: Fox lives_in den", "Evidence 2: den found_in Forest"]
    assert full.concepts == 2 and full.concepts_matched == 2
    questions = {q: Question(id=q, text=QTEXT, answers=["A"], choices=[
        Choice(label="A", text="den"), Choice(label="B", text="pet")]) for q in ("f1", "f2")}
    s = {x.method: x for x in summarise(read_rows(out), questions)}
    assert s["metakgrag"].answer[0] == 1.0 and s["metakgrag"].answer_only == [1.0, 1.0, 1.0]
    assert s["metakgrag-no-cycle"].distractor_only == 1.0
    assert s["metakgrag"].wrong_option_each == 0.0 and s["metakgrag"].option_lift is None
    assert s["metakgrag-no-cycle"].option_lift == 0.0  # only the wrong option is there
    assert (s["metakgrag"].favours, s["metakgrag"].favours_correct) == (1.0, 1.0)
    assert s["metakgrag-no-cycle"].favours_correct == 0.0 and s["metakgrag"].chance == 0.5
    assert s["metakgrag"].prr_questions == 1.0 and s["metakgrag-no-cycle"].prr_questions == 0.0
    table = comparisons(read_rows(out))
    assert "| metakgrag [default] | metakgrag-no-cycle [default] | 2 | 2 | 0 | 0.500 |" in table
    assert json.loads((out / "concepts.jsonl").read_text().splitlines()[0]) == {
        "id": "f1", "concepts": ["fox", "forest"], "parallel": 1}
    assert "metakgrag-no-cycle" in (out / "evidence.md").read_text()


def test_a_second_run_resumes_and_a_setting_adds_its_own_rows(tmp_path: Path) -> None:
    data = write_questions(tmp_path, [fox_question("f1")])
    p = EvidencePlatform(tmp_path, [CONCEPTS_BOTH])
    out = tmp_path / "ev"
    run_evidence(p, str(data), out=out, n=None, domain="woods", methods=["metakgrag"],
                 progress=False, parallel=2)
    assert json.loads((out / "concepts.jsonl").read_text())["parallel"] == 2
    run_evidence(p, str(data), out=out, n=None, domain="woods", methods=["metakgrag"],
                 progress=False, param="n_max", values="0")
    assert p.chat_model.remaining == 0  # concepts were read back, not asked again
    assert p.built[-1] == ("metakgrag", 0) and p.settings.metakg.n_max == 3  # restored
    rows = {(r.setting, r.id): r for r in read_rows(out)}
    assert set(rows) == {("default", "f1"), ("n_max=0", "f1")}
    assert rows[("default", "f1")].answer and not rows[("n_max=0", "f1")].answer
    assert len((out / "rows.jsonl").read_text().splitlines()) == 2
    assert [s.setting for s in score_only(out, tmp_path)] == ["default", "n_max=0"]
    # compressed for a commit, the rows still count as done and score the same
    rows_file = out / "rows.jsonl"
    with gzip.open(out / "rows.jsonl.gz", "wt", encoding="utf-8") as f:
        f.write(rows_file.read_text())
    rows_file.unlink()
    run_evidence(p, str(data), out=out, n=None, domain="woods", methods=["metakgrag"],
                 progress=False)
    assert not rows_file.exists() or rows_file.read_text() == ""
    assert [s.setting for s in score_only(out, tmp_path)] == ["default", "n_max=0"]


def test_methods_without_llm_free_retrieval_and_changed_defaults_are_refused(
        tmp_path: Path) -> None:
    data = write_questions(tmp_path, [fox_question("f1")])
    p = EvidencePlatform(tmp_path, [CONCEPTS_BOTH])
    out = tmp_path / "ev"
    assert "tog" in FACTORIES
    with pytest.raises(KgragError, match="tog do not retrieve"):
        run_evidence(p, str(data), out=out, n=None, domain="woods", methods=["tog"],
                     progress=False)
    with pytest.raises(KgragError, match="--param and --values go together"):
        run_evidence(p, str(data), out=out, n=None, domain="woods", param="n_max",
                     progress=False)
    run_evidence(p, str(data), out=out, n=None, domain="woods", methods=["metakgrag"],
                 progress=False)
    p.settings = p.settings.model_copy(update={
        "metakg": p.settings.metakg.model_copy(update={"delta": 0.3})})
    with pytest.raises(KgragError, match="different configuration"):
        run_evidence(p, str(data), out=out, n=None, domain="woods", methods=["metakgrag"],
                     progress=False)
    run_evidence(p, str(data), out=out, n=None, domain="woods", methods=["metakgrag"],
                 progress=False, force=True)  # mixed knowingly, and recorded
    assert "delta" in json.loads((out / "evidence.json").read_text())["forced_mix"][0]
    with pytest.raises(KgragError, match="not an evidence directory"):
        score_only(tmp_path / "nothing", tmp_path)


def test_choice_texts_are_matched_as_whole_words() -> None:
    from eval.evidence_summary import gold_and_wrong, mentions

    q = Question(id="q", text="?", choices=[Choice(label="A", text="The art"),
                                            Choice(label="B", text="cart")], answers=["A"])
    assert gold_and_wrong(q) == (["The art"], ["cart"])
    assert not mentions(["The art"], ["Evidence 1: cart is a vehicle"])
    assert mentions(["cart"], ["Evidence 1: a Cart, is a vehicle"])
    assert gold_and_wrong(Question(id="o", text="?", answers=["Paris"])) == (["Paris"], None)


def test_the_favoured_option_is_the_one_whose_words_the_evidence_covers_best() -> None:
    from eval.evidence_summary import favoured_option

    q = Question(id="q", text="?", answers=["B"], choices=[
        Choice(label="A", text="a forest"), Choice(label="B", text="a den in the hills"),
        Choice(label="C", text="The den is legal")])
    assert favoured_option(q, ["Evidence 1: fox lives in den"]) is None  # B and C: 1/2
    assert favoured_option(q, ["Evidence 1: fox den in hills"]) == "B"  # B 2/2, C 1/2
    assert favoured_option(q, ["Evidence 1: forest is green"]) == "A"
    assert favoured_option(q, []) is None


def test_an_unbuilt_domain_or_a_broken_record_is_refused_before_any_model_call(
        tmp_path: Path) -> None:
    data = write_questions(tmp_path, [fox_question("f1")])
    p = EvidencePlatform(tmp_path, [])  # any concept request would exhaust the script
    p.method = lambda name, domain: MetaKGRAG(  # type: ignore[method-assign]
        p.chat_model, MemoryBackend({}, [], AnyTextEmbedder()), domain)
    with pytest.raises(KgragError, match="kgrag build"):
        run_evidence(p, str(data), out=tmp_path / "ev", n=None, domain="woods",
                     methods=["metakgrag"], progress=False)
    assert p.chat_model.prompts == [] and not (tmp_path / "ev" / "concepts.jsonl").exists()
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "evidence.json").write_text("{not json")
    with pytest.raises(KgragError, match="not an evidence record"):
        run_evidence(EvidencePlatform(tmp_path, []), str(data), out=broken, n=None,
                     domain="woods", methods=["metakgrag"], progress=False)
