"""Triple extraction: control flow with the scripted model, parsing, normalisation.

The scripted model replays fixed replies; these tests say nothing about extraction
quality, only about what the extractor does with each kind of reply.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from kg_builder.domains import BASE_KINDS, domain_spec
from kg_builder.extract import ExtractConfig, ExtractionResult, Triple, TripleExtractor
from kg_builder.normalize import clean_name, content_words, entity_key, relation_text
from kg_builder.reply import ReplyError, extraction_schema, parse_reply
from kg_builder.sources import Chunk
from kgrag.errors import ModelError
from kgrag.llm.base import Capabilities, Generation, GenerationParams, Message
from tests.doubles.scripted import ScriptedModel


class RecordingModel(ScriptedModel):
    """The scripted model, also keeping the generation parameters of every call."""

    def __init__(self, replies: Sequence[str], finish_reason: str = "stop", **kw: object
                 ) -> None:
        super().__init__(replies, **kw)  # type: ignore[arg-type]
        self.params: list[GenerationParams] = []
        self.finish_reason = finish_reason

    def chat(self, messages: Sequence[Message], params: GenerationParams) -> Generation:
        self.params.append(params)
        g = super().chat(messages, params)
        return Generation(g.text, g.prompt_tokens, g.completion_tokens, self.finish_reason)


def chunk(n: int, text: str = "", domain: str = "commonsense") -> Chunk:
    cid = f"{domain}:src:q{n}"
    return Chunk(id=cid, domain=domain, document_id=cid, source="src.jsonl", line=n,
                 text=text or f"Question: record {n}?\nAnswer: answer {n}", focus=f"concept{n}")


def item(h: str, r: str, t: str, k: str = "spatial", n: int | None = 1) -> dict:
    return {"n": n, "h": h, "r": r, "t": t, "k": k}


def reply(*items: dict) -> str:
    return json.dumps({"triples": list(items)}, ensure_ascii=False)


def keys(triples: list[Triple]) -> list[tuple[str, str, str]]:
    return [(t.head_key, t.relation, t.tail_key) for t in triples]


# ------------------------------------------------------------------ control flow
def test_valid_reply_gives_normalised_triples_with_provenance_and_counters() -> None:
    model = RecordingModel([reply(item("Foxes", "Lives In", "the Forest."),
                                  item("fox", "is a", "animal", k="conceptual"))])
    result = TripleExtractor(model, "commonsense").extract([chunk(1)])
    triples = result.triples["commonsense:src:q1"]
    assert triples[0] == Triple("Foxes", "lives in", "the Forest", "spatial", "fox",
                                "forest", "commonsense:src:q1", 1.0)
    assert keys(triples)[1] == ("fox", "is a", "animal")
    s = result.stats
    assert (s.calls, s.retries, s.records, s.triples, s.failed_records) == (1, 0, 1, 2, 0)
    assert s.prompt_tokens > 0 and s.completion_tokens > 0 and s.seconds >= 0
    assert model.remaining == 0
    prompt = model.prompts[0][-1].content
    assert "[1] (core concept: concept1)\nQuestion: record 1?" in prompt
    assert all(f"- {k.name}:" in prompt for k in BASE_KINDS)
    schema = model.params[0].json_schema
    assert schema is not None and schema["properties"]["triples"]["maxItems"] == 12
    assert model.params[0].temperature == 0.0 and model.params[0].seed == 42


def test_malformed_then_valid_retries_once_with_a_repair_note() -> None:
    model = RecordingModel(["Sure! Here are the triples: fox -> forest",
                            reply(item("fox", "lives in", "forest"))])
    result = TripleExtractor(model, "commonsense").extract([chunk(1)])
    assert keys(result.triples["commonsense:src:q1"]) == [("fox", "lives in", "forest")]
    assert result.triples["commonsense:src:q1"][0].confidence == 0.8
    assert (result.stats.calls, result.stats.retries, result.failures) == (2, 1, [])
    first, second = (p[-1].content for p in model.prompts)
    assert second.startswith(first) and "could not be used (no JSON in the reply)" in second
    assert model.params[1].seed == 43


def test_resample_policy_resends_the_same_prompt_warmer() -> None:
    model = RecordingModel(["{oops", reply(item("fox", "lives in", "forest"))])
    config = ExtractConfig(retry="resample", retry_temperature=0.6)
    result = TripleExtractor(model, "commonsense", config).extract([chunk(1)])
    assert result.stats.triples == 1
    assert model.prompts[0] == model.prompts[1]
    assert (model.params[1].temperature, model.params[1].seed) == (0.6, 43)


def test_malformed_twice_records_the_failure_and_moves_on() -> None:
    bad = "I cannot help with that. " * 100
    # a group's first replies come first (q1, q2), then the retry of q1
    model = RecordingModel([bad, reply(item("dog", "chases", "cat", n=1)), '{"facts": []}'])
    config = ExtractConfig(batch_size=1, raw_reply_chars=50)
    result = TripleExtractor(model, "commonsense", config).extract([chunk(1), chunk(2)])
    assert model.remaining == 0  # exactly one retry for the bad record
    [failure] = result.failures
    assert failure.record_ids == ("commonsense:src:q1",) and failure.attempts == 2
    assert len(failure.raw_reply) == len('{"facts": []}')
    assert "no JSON" in failure.error and "triples" in failure.error
    assert "commonsense:src:q1" not in result.triples
    assert keys(result.triples["commonsense:src:q2"]) == [("dog", "chases", "cat")]
    assert (result.stats.failed_records, result.stats.records, result.stats.retries) == (1, 1, 1)


def test_failed_reply_is_truncated_to_raw_reply_chars() -> None:
    model = RecordingModel(["x" * 5000, "y" * 5000])
    result = TripleExtractor(model, "commonsense", ExtractConfig(raw_reply_chars=100)).extract(
        [chunk(1)])
    assert result.failures[0].raw_reply == "y" * 100


def test_truncated_json_is_a_bad_reply_and_cut_off_is_explained() -> None:
    cut = '{"triples": [{"n": 1, "h": "fox", "r": "lives in", "t": "for'
    model = RecordingModel([cut, cut], finish_reason="length")
    result = TripleExtractor(model, "commonsense").extract([chunk(1)])
    assert result.stats.calls == 2 and len(result.failures) == 1
    assert "invalid JSON" in result.failures[0].error
    assert "cut off at the token limit" in model.prompts[1][-1].content


def test_two_hundred_triples_are_capped_and_counted() -> None:
    many = [item(f"thing {i}", "is near", f"place {i}") for i in range(200)]
    result = TripleExtractor(RecordingModel([reply(*many)]), "commonsense").extract([chunk(1)])
    triples = result.triples["commonsense:src:q1"]
    assert len(triples) == 12 and triples[0].head == "thing 0" and triples[-1].head == "thing 11"
    assert (result.stats.capped, result.stats.triples) == (188, 12)


def test_empty_self_referential_overlong_function_word_and_duplicate_triples_are_rejected() -> None:
    model = RecordingModel([reply(
        item("Heart Attack", "is", "heart attacks"),  # self after normalisation
        item("", "is", "x"), item("fox", "  ", "den"), item('""', "is", "x"),  # empty
        item("a" * 81, "is", "long"), item("fox", "r" * 61, "den"),  # over-long
        item("fox", "lives in", "den"), item("Foxes", "lives in", "dens"),  # duplicate
        item("impulse", "is", "not"), item("It", "causes", "pain"),  # no entity on one side
        item("fox", "hunts", "mouse", k="hunting"),  # unknown kind: kept as other
        {"n": 1, "h": "no tail"},  # invalid item
    )])
    result = TripleExtractor(model, "commonsense").extract([chunk(1)])
    assert keys(result.triples["commonsense:src:q1"]) == [("fox", "lives in", "den"),
                                                         ("fox", "hunts", "mouse")]
    assert result.triples["commonsense:src:q1"][1].kind == "other"
    s = result.stats
    assert dict(s.rejected) == {"self": 1, "empty": 3, "too_long": 2, "duplicate": 1,
                                "function_words": 2}
    assert (s.unknown_kinds, s.invalid_items) == (1, 1)


def test_hostile_names_are_kept_as_data() -> None:
    hostile = ["}) DETACH DELETE n //", "Robert'); DROP TABLE kids;--", "`rm -rf /`",
               'the "quoted" one', "🦊 fox ❤️", "line one\nline two"]
    model = RecordingModel([reply(*(item(h, "is", f"tail {i}") for i, h in enumerate(hostile)))])
    triples = TripleExtractor(model, "commonsense").extract([chunk(1)]).triples[
        "commonsense:src:q1"]
    assert [t.head for t in triples] == ["}) DETACH DELETE n //", "Robert'); DROP TABLE kids;--",
                                         "rm -rf /", 'the "quoted" one', "🦊 fox ❤️",
                                         "line one line two"]
    assert triples[0].head_key == "}) detach delete n //"


def test_batched_prompt_maps_triples_back_to_their_records() -> None:
    model = RecordingModel([reply(item("c3", "is", "three", n=3), item("c1", "is", "first", n=1),
                                  item("ghost", "is", "nowhere", n=7),
                                  item("c3b", "is", "three b", n=3))])
    batch = [chunk(1), chunk(2), chunk(3)]
    result = TripleExtractor(model, "commonsense").extract_batch(batch)
    assert keys(result.triples["commonsense:src:q1"]) == [("c1", "is", "first")]
    assert result.triples["commonsense:src:q2"] == []
    assert [t.head for t in result.triples["commonsense:src:q3"]] == ["c3", "c3b"]
    assert result.stats.bad_record_refs == 1
    prompt = model.prompts[0][-1].content
    assert prompt.index("[1] ") < prompt.index("[2] ") < prompt.index("[3] ")
    schema = model.params[0].json_schema
    assert schema is not None
    assert schema["properties"]["triples"]["items"]["properties"]["n"]["enum"] == [1, 2, 3]
    assert schema["properties"]["triples"]["maxItems"] == 36


def test_missing_record_number_only_allowed_for_a_single_record() -> None:
    single = TripleExtractor(RecordingModel([reply(item("ant", "is", "b", n=None))]), "x")
    assert single.extract_batch([chunk(1)]).stats.triples == 1
    double = TripleExtractor(RecordingModel([reply(item("ant", "is", "b", n=None))]), "x")
    assert double.extract_batch([chunk(1), chunk(2)]).stats.bad_record_refs == 1


def test_batches_group_short_records_and_send_long_ones_alone() -> None:
    extractor = TripleExtractor(ScriptedModel([]), "commonsense",
                                ExtractConfig(batch_size=2, batch_record_chars=100))
    chunks = [chunk(1), chunk(2, "x" * 500), chunk(3), chunk(4), chunk(5)]
    # a long record goes at once; short ones wait until their batch is full
    assert [[c.line for c in b] for b in extractor.batches(chunks)] == [[2], [1, 3], [4, 5]]


def test_constrained_decoding_needs_the_capability() -> None:
    plain = Capabilities(json_schema=False)
    with pytest.raises(ModelError, match="json_schema"):
        TripleExtractor(ScriptedModel([], capabilities=plain), "commonsense")
    model = RecordingModel([reply()], capabilities=plain)
    TripleExtractor(model, "commonsense", ExtractConfig(constrained=False)).extract([chunk(1)])
    assert model.params[0].json_schema is None


def test_results_add_up() -> None:
    model = RecordingModel([reply(item("ant", "is", "b")), reply(item("c", "is", "d"))])
    extractor = TripleExtractor(model, "commonsense", ExtractConfig(batch_size=1))
    total = ExtractionResult()
    for batch in extractor.batches([chunk(1), chunk(2)]):
        total.add(extractor.extract_batch(batch))
    assert (total.stats.calls, total.stats.triples, len(list(total.all_triples()))) == (2, 2, 2)


# ------------------------------------------------------------------ reply parsing, schema
def test_parse_reply_tolerates_fences_prose_and_bare_lists() -> None:
    fenced = '```json\n{"triples": [{"n": 1, "h": "a", "r": "is", "t": "b", "k": "x"}]}\n```'
    assert parse_reply(fenced).items[0].t == "b"
    prose = 'Here you go: [{"h": "a", "r": "is", "t": 1943}] Hope it helps.'
    assert parse_reply(prose).items[0].t == "1943"
    assert parse_reply('{"triples": []}').items == ()
    for bad in ["no json here", '{"triples": [', '{"triples": "none"}', '[{"x": 1}]']:
        with pytest.raises(ReplyError):
            parse_reply(bad)


def test_schema_caps_lengths_and_enumerates_kinds() -> None:
    schema = extraction_schema(["spatial", "causal"], 2, max_per_record=5, max_name_chars=80,
                               max_relation_chars=40)
    props = schema["properties"]["triples"]["items"]["properties"]
    assert props["h"]["maxLength"] == props["t"]["maxLength"] == 80
    assert props["r"]["maxLength"] == 40 and props["k"]["enum"] == ["spatial", "causal"]
    assert schema["properties"]["triples"]["maxItems"] == 10
    assert schema["properties"]["triples"]["items"]["required"] == ["n", "h", "r", "t", "k"]


@pytest.mark.parametrize("domain", ["commonsense", "medical", "legal", "wikipedia", "mine"])
def test_every_domain_prompt_renders_its_kinds(domain: str) -> None:
    extractor = TripleExtractor(ScriptedModel([]), domain)
    content = extractor.messages([chunk(1)])[-1].content
    assert all(f"- {name}:" in content for name in domain_spec(domain).kind_names)
    assert "$" not in content.replace("$1", "")  # no placeholder left unfilled
    assert len(extractor.prompt_digest()) == 25  # two 12-hex digests


# ------------------------------------------------------------------ normalisation
@pytest.mark.parametrize(("raw", "display", "key"), [
    ("  Heart\n\tAttacks ", "Heart Attacks", "heart attack"),
    ('"heart attack."', "heart attack", "heart attack"),
    ("“Allergies”", "Allergies", "allergy"),
    ("- boxes;", "boxes", "box"),
    ("(Diabetes)", "Diabetes", "diabetes"),
    ("AIDS", "AIDS", "aids"),
    ("glasses", "glasses", "glasses"),
    ("virus", "virus", "virus"),
    ("headaches", "headaches", "headache"),
    ("C++", "C++", "c++"),
    ("The Forests", "The Forests", "forest"),
    ("a", "a", "a"),
    ("2 mg/kg", "2 mg/kg", "2 mg/kg"),
    ("Ｆｕｌｌwidth", "Ｆｕｌｌwidth", "fullwidth"),
])
def test_names_normalise_to_display_and_key(raw: str, display: str, key: str) -> None:
    assert clean_name(raw) == display
    assert entity_key(raw) == key


def test_relation_text_and_content_words() -> None:
    assert relation_text("  Is LOCATED\nin. ") == "is located in"
    assert content_words("The foxes of Paris") == {"fox", "paris"}


# ------------------------------------------------------------------ parallel prompts
class StreamModel(RecordingModel):
    """A scripted backend that answers several prompts in one stream (as llama.cpp does
    with parallel sequences), finishing them in the order `finish` gives; it records each
    stream's prompt count and `parallel`."""

    def __init__(self, replies: Sequence[str], finish: Sequence[int] | None = None) -> None:
        super().__init__(replies)
        self.streams: list[tuple[int, int]] = []
        self.finish = finish

    def chat_stream(self, requests, *, parallel=1):
        self.streams.append((len(requests), parallel))
        order = self.finish if self.finish is not None else range(len(requests))
        for i in order:
            yield i, self.chat(*requests[i])


def test_stream_sends_every_record_in_one_stream_and_yields_as_replies_finish() -> None:
    model = StreamModel([reply(item(f"h{i}", "r", f"t{i}")) for i in (2, 0, 1)],
                        finish=[2, 0, 1])
    ticks: list[int] = []
    ex = TripleExtractor(model, "commonsense", ExtractConfig(parallel=2))
    out = list(ex.stream([chunk(i) for i in range(3)], on_reply=ticks.append))
    assert model.streams == [(3, 2)]
    assert ticks == [1, 1, 1]  # one progress tick per reply, as it arrives
    assert [(b[0].id, keys(r.triples[b[0].id])) for b, r in out] == [
        (f"commonsense:src:q{i}", [(f"h{i}", "r", f"t{i}")]) for i in (2, 0, 1)]
    assert sum(r.stats.calls for _, r in out) == 3


def test_unusable_replies_are_retried_after_the_stream() -> None:
    model = StreamModel(["no json here", reply(item("fox", "r", "den")),
                         reply(item("owl", "r", "nest"))])
    out = list(TripleExtractor(model, "commonsense").stream([chunk(1), chunk(2)]))
    assert [b[0].id for b, _ in out] == ["commonsense:src:q2", "commonsense:src:q1"]
    [(_, second), (_, first)] = out
    assert keys(first.triples["commonsense:src:q1"]) == [("owl", "r", "nest")]
    assert first.stats.retries == 1 and first.stats.calls == 2
    assert first.triples["commonsense:src:q1"][0].confidence == 0.8  # from the retry
    assert keys(second.triples["commonsense:src:q2"]) == [("fox", "r", "den")]


def test_batches_of_different_sizes_share_the_stream_with_their_own_budgets() -> None:
    """A long record is batched alone: its prompt has another schema and token budget."""
    long_text = "Question: " + "word " * 200 + "?\nAnswer: a"
    records = [chunk(1), chunk(2, long_text), chunk(3)]
    model = StreamModel([reply(item("x", "r", "y")),
                         reply(item("fox", "r", "den"), item("c", "r", "d", n=2))])
    ex = TripleExtractor(model, "commonsense", ExtractConfig(batch_size=2, parallel=4))
    out = list(ex.stream(records))
    assert [len(b) for b, _ in out] == [1, 2]  # the long one first, then the pair
    [(_, alone), (_, pair)] = out
    assert keys(alone.triples["commonsense:src:q2"]) == [("x", "r", "y")]
    assert keys(pair.triples["commonsense:src:q3"]) == [("c", "r", "d")]
    assert model.streams == [(2, 4)]
    assert [p.max_tokens for p in model.params] == [640, 1280]


def test_a_backend_without_chat_stream_is_asked_one_by_one() -> None:
    model = RecordingModel([reply(item("fox", "r", "den")), reply(item("c", "r", "d"))])
    ticks: list[int] = []
    out = list(TripleExtractor(model, "commonsense", ExtractConfig(parallel=8)).stream(
        [chunk(1), chunk(2)], on_reply=ticks.append))
    assert ticks == [1, 1] and model.remaining == 0
    assert [keys(r.triples[b[0].id]) for b, r in out] == [[("fox", "r", "den")],
                                                          [("c", "r", "d")]]


def test_an_interrupt_mid_stream_keeps_the_replies_already_yielded() -> None:
    class Interrupted(StreamModel):
        def chat_stream(self, requests, *, parallel=1):
            yield 1, self.chat(*requests[1])  # the 2nd finished first
            raise KeyboardInterrupt

    model = Interrupted([reply(item("fox", "r", "den"))])
    ex = TripleExtractor(model, "commonsense", ExtractConfig(parallel=2))
    got = []
    with pytest.raises(KeyboardInterrupt):
        for batch, result in ex.stream([chunk(1), chunk(2), chunk(3)]):
            got.append((batch[0].id, keys(result.triples[batch[0].id])))
    assert got == [("commonsense:src:q2", [("fox", "r", "den")])]
