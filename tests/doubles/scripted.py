"""A deterministic fake model for unit tests of control flow (never of quality).

It replays a script of replies in order and raises when the script runs out, so a
test fails if a method makes an extra LLM call. It also records every prompt. A scripted
reply is a string, or a whole `Generation` (e.g. with scripted token log-probabilities);
a `next_token_logprobs` call takes a `NextTokenScores` (or a plain {letter: log-prob}
mapping) from the same script.

>>> m = ScriptedModel(["A. forest"])
>>> m.chat([Message("user", "…")], GenerationParams()).text
'A. forest'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from kgrag.errors import ModelError
from kgrag.llm.base import (
    Capabilities,
    Generation,
    GenerationParams,
    Message,
    NextTokenScores,
    UsageMeter,
)

Scripted = str | Generation | NextTokenScores | Mapping[str, float]


class ScriptError(ModelError):
    """The method asked the scripted model for something the script does not hold. A
    `ModelError`, so a run stops on it as on a real model failure (a question's ordinary
    exception is recorded on its prediction instead), with no test-only case in the
    packages."""


class ScriptExhausted(ScriptError):
    """The method asked for more replies than the test scripted (a test interrupts a run
    this way: `pytest.raises(ScriptExhausted)`)."""


class ScriptedModel:
    def __init__(
        self,
        replies: Sequence[Scripted],
        *,
        capabilities: Capabilities | None = None,
        hidden: dict[str, np.ndarray] | None = None,
        name: str = "scripted",
    ) -> None:
        self.name = name
        self.capabilities = capabilities or Capabilities(json_schema=True,
                                                         option_logprobs=True)
        self.usage = UsageMeter()
        self._replies = list(replies)
        self._hidden = hidden or {}
        self.prompts: list[list[Message]] = []

    @property
    def remaining(self) -> int:
        return len(self._replies)

    def _pop(self, messages: Sequence[Message]) -> Scripted:
        self.prompts.append(list(messages))
        if not self._replies:
            raise ScriptExhausted(f"unscripted call #{len(self.prompts)}: {messages[-1].content!r}")
        return self._replies.pop(0)

    def _next(self, messages: Sequence[Message]) -> Generation:
        reply = self._pop(messages)
        if isinstance(reply, NextTokenScores | Mapping):
            raise ScriptError(f"call #{len(self.prompts)} asked for a reply; the script "
                                 "has next-token scores there")
        if isinstance(reply, Generation):
            return reply
        text = reply
        prompt_tokens = sum(len(m.content.split()) for m in messages)
        return Generation(text, prompt_tokens, len(text.split()))

    def chat(self, messages: Sequence[Message], params: GenerationParams) -> Generation:
        g = self._next(messages)
        if params.until is not None:  # a decoder checks after each token; we, each character
            cut = next((i for i in range(1, len(g.text)) if params.until(g.text[:i])), None)
            if cut is not None:
                g = Generation(g.text[:cut], g.prompt_tokens, len(g.text[:cut].split()),
                               finish_reason="until")
        self.usage.record(g)
        return g

    def sample(
        self, messages: Sequence[Message], n: int, params: GenerationParams
    ) -> list[Generation]:
        gens = [self._next(messages) for _ in range(n)]
        self.usage.record(gens[0])
        return gens

    def next_token_logprobs(self, messages: Sequence[Message], candidates: Sequence[str],
                            prefill: str = "") -> NextTokenScores:
        reply = self._pop(messages)
        if isinstance(reply, Mapping):
            reply = NextTokenScores(dict(reply), sum(len(m.content.split()) for m in messages))
        if not isinstance(reply, NextTokenScores):
            raise ScriptError(f"call #{len(self.prompts)} asked for next-token scores; "
                                 f"the script has a reply there: {reply!r}")
        missing = set(candidates) - set(reply.logprobs)
        if missing:
            raise ScriptError(f"scripted scores lack {sorted(missing)}")
        self.usage.record(reply.as_generation(), purpose="choose")
        return NextTokenScores({c: reply.logprobs[c] for c in candidates},
                               reply.prompt_tokens, reply.seconds)

    def hidden_state(self, messages: Sequence[Message], completion: str, layer: int) -> np.ndarray:
        if completion not in self._hidden:
            raise ScriptExhausted(f"no scripted hidden state for {completion!r}")
        return self._hidden[completion]
