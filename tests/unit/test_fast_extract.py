"""The fast extractor's control flow with a fake pipeline (hand-parsed Docs, no model):
bad input skipped and counted, batches in order, question/answer segments, caps, and the
model check. Extraction quality is measured by the precision samples in docs/precision."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from spacy.tokens import Doc

from kg_builder.fast_extract import (
    FastConfig,
    FastExtractor,
    package_digest,
    segments,
    skip_reason,
    verify_model,
)
from kg_builder.sources import Chunk
from kgrag.errors import KgragError
from tests.unit.test_fast_rules import FOXES_LIVE

HOSTILE = "x'}) MATCH (m) DETACH DELETE m //"


def chunk(i: int, text: str) -> Chunk:
    return Chunk(id=f"d:s:{i}", domain="d", document_id=f"d:s:{i}", text=text,
                 source="s.jsonl", line=i)


class FakeNlp:
    """Answers every text with the parse of "Foxes live in forests." except `parses`."""

    def __init__(self, parses: dict[str, Doc] | None = None) -> None:
        self.parses = parses or {}
        self.texts: list[str] = []

    def pipe(self, texts, as_tuples=False, batch_size=1, n_process=1):
        for text, ctx in texts:
            self.texts.append(text)
            yield self.parses.get(text, FOXES_LIVE.doc), ctx


def test_bad_input_is_skipped_counted_and_the_rest_extracted() -> None:
    chunks = [chunk(0, "Foxes live in forests."), chunk(1, "   "), chunk(2, "\x00\x01\x02bin"),
              chunk(3, "狐狸生活在森林里。"), chunk(4, "Foxes live in forests.")]
    nlp = FakeNlp()
    result = FastExtractor(nlp, "commonsense").extract(chunks)
    assert result.skipped == {"d:s:1": "empty", "d:s:2": "binary", "d:s:3": "not_english"}
    assert dict(result.stats.skipped) == {"empty": 1, "binary": 1, "not_english": 1}
    assert result.stats.records == 5 and result.stats.failed_records == 0
    assert len(nlp.texts) == 2  # only the good records were parsed
    t = result.triples["d:s:0"][0]
    assert (t.head_key, t.relation, t.tail_key, t.extractor) == ("fox", "live in", "forest",
                                                                 "spacy")
    assert t.record_id == "d:s:0" and result.triples["d:s:4"][0].record_id == "d:s:4"
    pair = result.cooccurrences["d:s:0"][0]
    assert (pair.head_key, pair.tail_key, pair.weight) == ("forest", "fox", 1)


def test_stream_yields_batches_in_order_and_reports_progress() -> None:
    chunks = [chunk(i, f"Foxes live in forests number {i}.") for i in range(7)]
    seen: list[int] = []
    ex = FastExtractor(FakeNlp(), "commonsense", FastConfig(batch_size=3))
    batches = [[c.id for c in b] for b, _ in ex.stream(chunks, on_reply=seen.append)]
    assert batches == [[c.id for c in chunks[i:i + 3]] for i in (0, 3, 6)]
    assert seen == [3, 3, 1]


def test_question_answer_segments_and_labels() -> None:
    qa = chunk(0, "Question: Where would you find a fox?\nAnswer: forest")
    assert segments(qa, 1000) == [
        type(segments(qa, 1000)[0])("Where would you find a fox?", "forest"),
        type(segments(qa, 1000)[0])("forest", None)]
    long = chunk(1, "Question: What is it?\nAnswer: a very long answer of many words here")
    assert all(s.answer is None for s in segments(long, 1000))


def test_a_one_megabyte_record_is_parsed_in_pieces_and_nothing_is_lost() -> None:
    sentence = "Foxes live in forests and hunt mice at night. "
    text = sentence * (1_000_000 // len(sentence))
    assert skip_reason(text) is None
    pieces = segments(chunk(0, text), 20_000)
    assert len(pieces) > 40 and all(len(p.text) <= 20_000 for p in pieces)
    assert "".join(p.text for p in pieces).replace(" ", "") == text.replace(" ", "")
    nlp = FakeNlp()
    result = FastExtractor(nlp, "commonsense").extract([chunk(0, text)])
    assert len(nlp.texts) == len(pieces) and result.stats.records == 1


def test_facts_per_record_are_capped_and_duplicates_counted() -> None:
    nlp = FakeNlp()
    cfg = FastConfig(max_facts_per_record=1)
    result = FastExtractor(nlp, "commonsense", cfg).extract(
        [chunk(0, "Foxes live in forests.\nFoxes live in forests.")])
    assert len(result.triples["d:s:0"]) == 1 and result.stats.rejected["duplicate"] == 1
    assert result.cooccurrences["d:s:0"][0].weight == 2  # two sentences name both


def test_hostile_text_is_data() -> None:
    assert skip_reason(HOSTILE) is None  # parsed like any English-looking text
    assert segments(chunk(0, HOSTILE), 1000)[0].text == HOSTILE


@pytest.mark.parametrize(("text", "reason"), [
    ("", "empty"), (" ...\n", "empty"), ("ok\x00", "binary"),
    ("\ufffd\ufffd\ufffd\ufffd text", "binary"), ("Фокс живёт в лесу и ест мышей.", "not_english"),
    ("Der Fuchs lebt im Wald und frisst gern kleine Mäuse, sagt man bei uns im Dorf seit "
     "langer Zeit immer wieder gern zu Kindern", "not_english"),
    ("Hanggin Rear Banner (Mongolian: ᠬᠠᠩᠭᠢᠨ), 300,000 inhabitants", None),
    ("Question: Why do I eat just enough when eating breakfast?", None)])
def test_skip_reasons(text: str, reason: str | None) -> None:
    assert skip_reason(text) == reason


def test_model_check_reports_a_missing_or_altered_package(tmp_path: Path) -> None:
    with pytest.raises(KgragError, match="not installed"):
        verify_model("no_such_spacy_model_pkg")
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "a.bin").write_bytes(b"weights")
    digest, files = package_digest(pkg)
    line = f"a.bin:{hashlib.sha256(b'weights').hexdigest()}\n"
    assert (digest, files) == (hashlib.sha256(line.encode()).hexdigest(), 1)
    (pkg / "a.bin").write_bytes(b"altered")
    assert package_digest(pkg)[0] != digest


def test_the_installed_model_matches_the_pinned_wheel() -> None:
    root = verify_model()  # raises if the installed files differ from the wheel's
    assert (root / "meta.json").is_file()
