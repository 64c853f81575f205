"""`ReplayModel`: a repeated greedy request is answered once; costs are still charged."""

from __future__ import annotations

import pytest

from kgrag import clock
from kgrag.llm.base import Generation, GenerationParams, Message, NextTokenScores, TokenLogprob
from kgrag.llm.replay import ReplayModel, request_key, unwrapped
from tests.doubles.scripted import ScriptedModel

ASK = [Message("system", "Be brief."), Message("user", "Where do foxes live?")]


def test_a_repeat_gets_the_first_reply_with_its_usage_and_time() -> None:
    inner = ScriptedModel([Generation("forest", 12, 1, seconds=3.0), "den"])
    m = ReplayModel(inner)
    t0 = clock.now()
    first = m.chat(ASK, GenerationParams(max_tokens=8))
    again = m.chat(list(ASK), GenerationParams(max_tokens=8))  # equal, not the same object
    assert again is first and inner.remaining == 1
    assert (m.usage.calls, m.usage.replayed, m.usage.prompt_tokens) == (2, 1, 24)
    assert m.usage.seconds == pytest.approx(6.0)
    assert clock.now() - t0 >= 3.0  # the replay's recorded seconds were credited


@pytest.mark.parametrize("other", [
    GenerationParams(max_tokens=9),
    GenerationParams(max_tokens=8, stop=("\n",)),
    GenerationParams(max_tokens=8, seed=7),
    GenerationParams(max_tokens=8, json_schema={"type": "object"}),
])
def test_any_other_parameter_is_a_new_request(other: GenerationParams) -> None:
    m = ReplayModel(ScriptedModel(["one", "two"]))
    m.chat(ASK, GenerationParams(max_tokens=8))
    assert m.chat(ASK, other).text == "two" and m.usage.replayed == 0


def test_other_messages_are_a_new_request() -> None:
    m = ReplayModel(ScriptedModel(["one", "two"]))
    m.chat(ASK, GenerationParams())
    assert m.chat([ASK[0], Message("user", "Where do owls live?")], GenerationParams()
                  ).text == "two"
    assert request_key(ASK, GenerationParams()) != request_key(ASK[1:], GenerationParams())


def test_sampled_requests_are_never_replayed() -> None:
    m = ReplayModel(ScriptedModel(["one", "two"]))
    hot = GenerationParams(temperature=0.7, seed=1)
    assert [m.chat(ASK, hot).text for _ in range(2)] == ["one", "two"]


def test_the_oldest_reply_is_forgotten_past_the_limit() -> None:
    m = ReplayModel(ScriptedModel(["a", "b", "c", "a2"]), max_entries=2)
    for q in ("1", "2", "3", "1"):
        m.chat([Message("user", q)], GenerationParams())
    assert m.usage.replayed == 0 and m.inner.remaining == 0  # type: ignore[attr-defined]


def test_everything_else_is_the_inner_model() -> None:
    inner = ScriptedModel(["x"], name="tiny")
    m = ReplayModel(inner)
    assert (m.name, m.capabilities, m.usage) == ("tiny", inner.capabilities, inner.usage)
    assert m.remaining == 1  # an attribute of the inner model only
    assert unwrapped(m) is inner and unwrapped(inner) is inner


def test_kept_replies_outlive_the_process(tmp_path) -> None:  # type: ignore[no-untyped-def]
    lp = (TokenLogprob("A", -0.1, (("A", -0.1), ("B", -2.3))),)
    first = ReplayModel(ScriptedModel([Generation("forest", 12, 1, logprobs=lp, seconds=2.0)],
                                      name="tiny"))
    first.keep_in(tmp_path / "replay.sqlite")
    g = first.chat(ASK, GenerationParams(max_tokens=8))

    later = ReplayModel(ScriptedModel(["never decoded"], name="tiny"))  # another process
    later.keep_in(tmp_path / "replay.sqlite")
    again = later.chat(ASK, GenerationParams(max_tokens=8))
    assert again == g and later.inner.remaining == 1  # type: ignore[attr-defined]
    assert (later.usage.calls, later.usage.replayed, later.usage.seconds) == (1, 1, 2.0)


def test_kept_replies_belong_to_their_model(tmp_path) -> None:  # type: ignore[no-untyped-def]
    a = ReplayModel(ScriptedModel(["from a"], name="model-a"))
    a.keep_in(tmp_path / "replay.sqlite")
    a.chat(ASK, GenerationParams())
    b = ReplayModel(ScriptedModel(["from b"], name="model-b"))
    b.keep_in(tmp_path / "replay.sqlite")
    assert b.chat(ASK, GenerationParams()).text == "from b" and b.usage.replayed == 0


def test_kept_letter_scores_are_replayed(tmp_path) -> None:  # type: ignore[no-untyped-def]
    scores = NextTokenScores({"A": -0.2, "B": -1.9}, prompt_tokens=40, seconds=1.5)

    class Scorer(ScriptedModel):
        def next_token_logprobs(self, messages, candidates, prefill=""):  # type: ignore[no-untyped-def]
            self.scored = getattr(self, "scored", 0) + 1
            return scores

    first = ReplayModel(Scorer([], name="tiny"))
    first.keep_in(tmp_path / "replay.sqlite")
    first.next_token_logprobs(ASK, ["A", "B"])
    later = ReplayModel(Scorer([], name="tiny"))
    later.keep_in(tmp_path / "replay.sqlite")
    assert later.next_token_logprobs(ASK, ["A", "B"]) == scores
    assert not hasattr(later.inner, "scored") and later.usage.replayed == 1
    assert later.next_token_logprobs(ASK, ["A", "C"]) == scores  # another request: asked
    assert later.inner.scored == 1  # type: ignore[attr-defined]


def test_a_damaged_replies_file_is_a_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from kgrag.errors import KgragError

    (tmp_path / "replay.sqlite").write_bytes(b"not a database" * 100)
    with pytest.raises(KgragError, match="delete the file"):
        ReplayModel(ScriptedModel([])).keep_in(tmp_path / "replay.sqlite")
