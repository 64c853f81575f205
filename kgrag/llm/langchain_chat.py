"""Put any LangChain chat model behind kgrag's `ChatModel` seam.

For users whose model lives behind a LangChain integration (a hosted API, a provider
kgrag has no backend for). Only plain chat is offered: LangChain does not expose
token log-probabilities, parallel samples or hidden states uniformly, so methods that
need them refuse such a model at construction (see `kgrag.llm.base.require`).

    from langchain_openai import ChatOpenAI               # any BaseChatModel
    model = LangChainChatModel(ChatOpenAI(model="gpt-4o-mini"))
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from kgrag.errors import ModelError
from kgrag.llm.base import Capabilities, Generation, GenerationParams, Message, UsageMeter

_ROLES = {"system": "system", "user": "human", "assistant": "ai"}


class LangChainChatModel:
    capabilities = Capabilities()

    def __init__(self, chat_model: Any, name: str | None = None) -> None:
        self._lc = chat_model
        self.name = name or type(chat_model).__name__
        self.usage = UsageMeter()

    def chat(self, messages: Sequence[Message], params: GenerationParams) -> Generation:
        if params.json_schema is not None or params.logprobs:
            raise ModelError(f"{self.name} (LangChain) offers plain chat only")
        lc_messages = [(_ROLES[m.role], m.content) for m in messages]
        start = time.perf_counter()
        reply = self._lc.invoke(lc_messages, stop=list(params.stop) or None)
        usage = getattr(reply, "usage_metadata", None) or {}
        g = Generation(
            text=str(reply.content),
            prompt_tokens=int(usage.get("input_tokens", 0)),
            completion_tokens=int(usage.get("output_tokens", 0)),
            seconds=time.perf_counter() - start,
        )
        self.usage.record(g)
        return g

    def sample(self, messages: Sequence[Message], n: int, params: GenerationParams
               ) -> list[Generation]:
        raise ModelError(f"{self.name} (LangChain) cannot draw parallel samples")

    def hidden_state(self, messages: Sequence[Message], completion: str, layer: int
                     ) -> np.ndarray:
        raise ModelError(f"{self.name} (LangChain) does not expose hidden states")
