"""Any OpenAI-compatible chat server (llama.cpp server, vLLM, Ollama) behind `ChatModel`.

The scale-out path: run the model on a bigger machine and point kgrag at it with
`KGRAG_MODEL__BACKEND=openai KGRAG_MODEL__OPENAI_BASE_URL=http://host:8080/v1`.
Hidden states are not available over HTTP, so methods that need them (SeaKR) refuse to
start with this backend; parallel samples are n separate requests' worth of work on the
server (`n` in one request where the server supports it).

    m = OpenAICompatibleModel("http://127.0.0.1:8080/v1", model="qwen")
    m.chat([Message("user", "Hi")], GenerationParams(max_tokens=8)).text
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, Literal

import httpx
import numpy as np

from kgrag.errors import ModelError
from kgrag.llm.base import (
    Capabilities,
    Generation,
    GenerationParams,
    Message,
    NextTokenScores,
    TokenLogprob,
    UsageMeter,
)
from kgrag.llm.letters import from_top_logprobs

TOP_LOGPROBS = 20  # the most alternatives OpenAI's API lists per position


def model_name(model: str, base_url: str) -> str:
    """How an `OpenAICompatibleModel` names itself (stored judge scores are keyed by it)."""
    return f"{model}@{base_url}"


class OpenAICompatibleModel:
    capabilities = Capabilities(json_schema=True, logprobs=True, parallel_samples=False,
                                hidden_states=False, option_logprobs=True)

    def __init__(self, base_url: str, *, model: str = "default", api_key: str = "not-needed",
                 timeout_s: float = 300.0, seed: int = 42,
                 client: httpx.Client | None = None,
                 json_format: Literal["json_schema", "json_object"] = "json_schema") -> None:
        self.name = model_name(model, base_url)
        self.model = model
        self.seed = seed
        self.json_format = json_format
        self.usage = UsageMeter()
        self._client = client or httpx.Client(
            base_url=base_url.rstrip("/"), timeout=timeout_s,
            headers={"Authorization": f"Bearer {api_key}"},
        )

    def chat(self, messages: Sequence[Message], params: GenerationParams) -> Generation:
        return self._request(messages, params, 1)[0]

    def sample(
        self, messages: Sequence[Message], n: int, params: GenerationParams
    ) -> list[Generation]:
        return self._request(messages, params, n)

    def chat_stream(
        self, requests: Sequence[tuple[Sequence[Message], GenerationParams]], *,
        parallel: int = 4,
    ) -> Iterator[tuple[int, Generation]]:
        """(index, reply) as each arrives, up to `parallel` requests in flight (a server
        with several slots, such as `llama-server --parallel N` or vLLM, batches them)."""
        if not requests:
            return
        pool = ThreadPoolExecutor(max_workers=max(1, min(parallel, len(requests))))
        futures = {pool.submit(self._request, m, p, 1, False): i
                   for i, (m, p) in enumerate(requests)}
        try:
            for future in as_completed(futures):
                g = future.result()[0]
                self.usage.record(g)
                yield futures[future], g
        finally:  # also when the caller stops early: requests not yet sent are dropped
            pool.shutdown(wait=True, cancel_futures=True)

    def hidden_state(self, messages: Sequence[Message], completion: str, layer: int) -> np.ndarray:
        raise ModelError("an OpenAI-compatible server does not expose hidden states",
                         hint="use the in-process llama.cpp backend for SeaKR")

    def next_token_logprobs(self, messages: Sequence[Message], candidates: Sequence[str],
                            prefill: str = "") -> NextTokenScores:
        """Letter log-probabilities from the `top_logprobs` of the reply's first token (one
        greedy token, 20 alternatives; `kgrag.llm.letters.from_top_logprobs`). `prefill`
        is sent as a final assistant message, which llama.cpp's server and vLLM continue.
        A server that lists none of the candidates raises `ModelError`."""
        convo = list(messages) + ([Message("assistant", prefill)] if prefill else [])
        params = GenerationParams(max_tokens=1, logprobs=True, top_logprobs=TOP_LOGPROBS)
        g = self._request(convo, params, 1, record=False)[0]
        if not g.logprobs:
            raise ModelError(f"the model server at {self._client.base_url} returned no "
                             "logprobs", hint="use a server that supports logprobs and "
                             "top_logprobs (llama.cpp server, vLLM)")
        first = g.logprobs[0]
        logprobs = from_top_logprobs(((first.token, first.logprob),) + first.top, candidates)
        if all(v == float("-inf") for v in logprobs.values()):
            raise ModelError(f"none of {', '.join(candidates)} is among the server's top "
                             f"{TOP_LOGPROBS} first tokens (it began {first.token!r})",
                             hint="check that the prompt ends where the letter is written")
        scores = NextTokenScores(logprobs, g.prompt_tokens, g.seconds)
        self.usage.record(scores.as_generation(), purpose="choose")
        return scores

    def _request(self, messages: Sequence[Message], p: GenerationParams, n: int,
                 record: bool = True) -> list[Generation]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "max_tokens": p.max_tokens, "temperature": p.temperature, "top_p": p.top_p,
            "seed": self.seed if p.seed is None else p.seed, "n": n,
        }
        if p.stop:
            body["stop"] = list(p.stop)
        if p.top_k:
            body["top_k"] = p.top_k  # llama.cpp server and vLLM accept it; others ignore it
        if p.json_schema is not None and self.json_format == "json_object":
            body["response_format"] = {"type": "json_object", "schema": p.json_schema}
        elif p.json_schema is not None:
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "reply", "schema": p.json_schema, "strict": True}}
        if p.logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = max(p.top_logprobs, 1)
        start = time.perf_counter()
        try:
            r = self._client.post("/chat/completions", json=body)
        except httpx.HTTPError as e:
            raise ModelError(f"the model server at {self._client.base_url} is not reachable: {e}",
                             hint="start it, or fix KGRAG_MODEL__OPENAI_BASE_URL") from e
        if r.status_code != 200:
            raise ModelError(f"the model server answered {r.status_code}: {r.text[:300]}")
        data = r.json()
        seconds = time.perf_counter() - start
        usage = data.get("usage") or {}
        gens = [self._generation(c, usage, seconds / max(n, 1)) for c in data["choices"]]
        if not gens:
            raise ModelError("the model server returned no choices")
        if record:
            self.usage.record(gens[0])
        return gens

    @staticmethod
    def _generation(choice: dict[str, Any], usage: dict[str, Any], seconds: float) -> Generation:
        lps = None
        content = (choice.get("logprobs") or {}).get("content")
        if content:
            lps = tuple(
                TokenLogprob(t["token"], float(t["logprob"]),
                             tuple((a["token"], float(a["logprob"]))
                                   for a in t.get("top_logprobs") or []))
                for t in content
            )
        return Generation(
            text=(choice.get("message") or {}).get("content") or "",
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            finish_reason=choice.get("finish_reason") or "stop",
            logprobs=lps, seconds=seconds,
        )
