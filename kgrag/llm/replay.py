"""Replaying identical greedy requests within one evaluation run.

Several methods of a run often send the model the very same greedy request: every KG
method asks ExtractConcepts with the same prompt, and MetaKGRAG and its ablations often
end with the same evidence, hence the same answer prompt. Greedy decoding of one prompt
gives one reply, so `ReplayModel` answers a repeat with the first reply instead of
decoding it again.

What a replay still does, so results and costs read as if each method ran alone:
- the model's `UsageMeter` records the call (tokens, and the recorded seconds), and
  counts it under `replayed`;
- `kgrag.clock` is credited the recorded seconds, so stage and total times include it.

Only `chat` with temperature 0 and `next_token_logprobs` (one forward pass, no sampling)
are replayed. Sampling, hidden states, log-probability
loops and batched streams go to the model as they are.

Why it is not in a run's identity: in the committed runs, 95 of the 100 answer prompts
that two methods sent identically got the same reply from llama.cpp anyway; the other 5
were decoded in other sessions or after another prefix in the KV cache, and differ in
the explanation (one in the option chosen). A replay picks one of those decodings.

>>> from tests.doubles.scripted import ScriptedModel
>>> from kgrag.llm.base import GenerationParams, Message
>>> m = ReplayModel(ScriptedModel(["first", "second"]))
>>> ask = [Message("user", "hi")]
>>> [m.chat(ask, GenerationParams()).text for _ in range(2)], m.usage.calls, m.usage.replayed
(['first', 'first'], 2, 1)
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from kgrag import clock
from kgrag.llm.base import (
    ChatModel,
    Generation,
    GenerationParams,
    Message,
    NextTokenScores,
    UsageMeter,
)


def request_key(messages: Sequence[Message], params: GenerationParams) -> str:
    """A digest of everything that decides a greedy reply."""
    data = {"messages": [[m.role, m.content] for m in messages], "params": asdict(params)}
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


class ReplayModel:
    """A `ChatModel` that answers a repeated greedy `chat` request with its first reply."""

    def __init__(self, inner: ChatModel, max_entries: int = 20_000) -> None:
        self.inner = inner
        self.name, self.capabilities = inner.name, inner.capabilities
        self.usage: UsageMeter = inner.usage  # the same meter: one account per model
        self.max_entries = max_entries
        self._replies: OrderedDict[str, Generation] = OrderedDict()
        self._scores: OrderedDict[str, NextTokenScores] = OrderedDict()

    def chat(self, messages: Sequence[Message], params: GenerationParams) -> Generation:
        if params.temperature > 0:
            return self.inner.chat(messages, params)
        key = request_key(messages, params)
        g = self._replies.get(key)
        if g is None:
            g = self.inner.chat(messages, params)
            self._replies[key] = g
            if len(self._replies) > self.max_entries:
                self._replies.popitem(last=False)
            return g
        self._replies.move_to_end(key)
        self.usage.record(g, replayed=True)
        clock.credit(g.seconds)
        return g

    def next_token_logprobs(self, messages: Sequence[Message], candidates: Sequence[str],
                            prefill: str = "") -> NextTokenScores:
        """The letter scores of an identical earlier request (the `llm` row's pass that an
        evidence gate asks again), else the model's."""
        key = request_key([*messages, Message("assistant", prefill)],
                          GenerationParams(stop=tuple(candidates)))
        s = self._scores.get(key)
        if s is None:
            s = self.inner.next_token_logprobs(messages, candidates, prefill)
            self._scores[key] = s
            if len(self._scores) > self.max_entries:
                self._scores.popitem(last=False)
            return s
        self._scores.move_to_end(key)
        self.usage.record(s.as_generation(), purpose="choose", replayed=True)
        clock.credit(s.seconds)
        return s

    def __getattr__(self, name: str) -> Any:  # sample, hidden_state, tokenize, …
        return getattr(self.inner, name)


def unwrapped(model: ChatModel) -> ChatModel:
    """The model under a `ReplayModel` (for code that needs the backend's own class)."""
    return model.inner if isinstance(model, ReplayModel) else model
