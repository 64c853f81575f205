"""Control flow of the HTTP and LangChain backends (the servers are stand-ins here)."""

from __future__ import annotations

import json

import httpx
import pytest

from kgrag.errors import ModelError
from kgrag.llm.base import GenerationParams, Message, chat_stream
from kgrag.llm.openai_http import OpenAICompatibleModel

MSGS = [Message("user", "Hi")]


def _server(handler):
    return httpx.Client(base_url="http://model.test/v1", transport=httpx.MockTransport(handler))


def test_openai_request_carries_schema_and_reads_logprobs() -> None:
    seen = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen.update(json.loads(request.content))
        return httpx.Response(200, json={
            "choices": [{"message": {"content": "Hi!"}, "finish_reason": "stop",
                         "logprobs": {"content": [
                             {"token": "Hi", "logprob": -0.1,
                              "top_logprobs": [{"token": "Hi", "logprob": -0.1}]},
                             {"token": "!", "logprob": -0.5, "top_logprobs": []}]}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2}})

    m = OpenAICompatibleModel("http://model.test/v1", model="q", client=_server(handler))
    schema = {"type": "object"}
    g = m.chat(MSGS, GenerationParams(max_tokens=4, json_schema=schema))
    assert seen["response_format"]["json_schema"]["schema"] == schema
    assert seen["max_tokens"] == 4 and seen["n"] == 1
    assert g.text == "Hi!" and g.prompt_tokens == 5
    g = m.chat(MSGS, GenerationParams(logprobs=True, top_logprobs=2))
    assert seen["top_logprobs"] == 2
    assert [t.logprob for t in g.logprobs] == [-0.1, -0.5]
    assert m.usage.calls == 2
    obj = OpenAICompatibleModel("http://model.test/v1", model="q", client=_server(handler),
                                json_format="json_object")  # llama-cpp-python's server
    obj.chat(MSGS, GenerationParams(max_tokens=4, json_schema=schema))
    assert seen["response_format"] == {"type": "json_object", "schema": schema}


def test_openai_errors_are_model_errors() -> None:
    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    m = OpenAICompatibleModel("http://model.test/v1", client=_server(down))
    with pytest.raises(ModelError, match="not reachable"):
        m.chat(MSGS, GenerationParams())
    m = OpenAICompatibleModel("http://model.test/v1",
                              client=_server(lambda r: httpx.Response(500, text="boom")))
    with pytest.raises(ModelError, match="500"):
        m.chat(MSGS, GenerationParams())
    with pytest.raises(ModelError, match="hidden states"):
        m.hidden_state(MSGS, "x", 1)


def test_langchain_chat_model_behind_the_seam() -> None:
    fake = pytest.importorskip("langchain_core.language_models.fake_chat_models")
    from kgrag.baselines import LLMOnly
    from kgrag.llm.langchain_chat import LangChainChatModel
    from kgrag.types import Question

    lc = fake.FakeListChatModel(responses=["Paris."])
    pred = LLMOnly(LangChainChatModel(lc)).answer(Question(id="1", text="Capital of France?"))
    assert pred.answer == "Paris." and pred.usage.llm_calls == 1
    with pytest.raises(ModelError):
        LangChainChatModel(lc).chat(MSGS, GenerationParams(logprobs=True))


def test_openai_chat_stream_sends_requests_concurrently() -> None:
    import threading

    inside, peak, lock = 0, 0, threading.Lock()
    gate = threading.Barrier(3, timeout=5)  # all three requests must be in flight at once

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal inside, peak
        with lock:
            inside += 1
            peak = max(peak, inside)
        gate.wait()
        text = json.loads(request.content)["messages"][0]["content"]
        with lock:
            inside -= 1
        return httpx.Response(200, json={
            "choices": [{"message": {"content": text.upper()}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1}})

    m = OpenAICompatibleModel("http://model.test/v1", client=_server(handler))
    replies = dict(chat_stream(m, [([Message("user", w)], GenerationParams())
                                   for w in ("a", "b", "c")], parallel=3))
    assert [replies[i].text for i in range(3)] == ["A", "B", "C"] and peak == 3
    assert m.usage.calls == 3
