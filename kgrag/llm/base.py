"""The chat-model seam: one protocol, capability flags, typed values.

A method declares the capabilities it needs and calls `require()` at construction,
so a backend without, say, hidden states fails with a clear message before any work.

    model.chat([Message("user", "Say hi")], GenerationParams(max_tokens=8)).text
    # -> 'Hi!'
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from kgrag.errors import ModelError

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class Message:
    role: Role
    content: str


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do beyond plain chat."""

    json_schema: bool = False  # constrained decoding to a JSON schema
    logprobs: bool = False  # per-token log-probabilities of the generated text
    parallel_samples: bool = False  # n samples of one prompt in one batched decode
    hidden_states: bool = False  # a named layer's activations (llama.cpp cb_eval)
    # log-probabilities of chosen next tokens after a prompt (`next_token_logprobs`): how
    # multiple-choice answers are read (`kgrag.reader`)
    option_logprobs: bool = False

    def missing(self, needed: Capabilities) -> list[str]:
        return [name for name, want in vars(needed).items() if want and not getattr(self, name)]


@dataclass(frozen=True)
class GenerationParams:
    max_tokens: int = 256
    temperature: float = 0.0  # 0 = greedy
    top_p: float = 1.0
    top_k: int = 0  # 0 = off
    min_p: float = 0.0
    seed: int | None = None
    stop: tuple[str, ...] = ()
    json_schema: dict[str, Any] | None = None
    logprobs: bool = False
    top_logprobs: int = 0  # alternatives per position (needs logprobs)
    # Stop once until(reply so far) is true, like a stop string but decided by code (e.g.
    # `kgrag.parsing.SettledChoice`: the option of an answer-first reply is read). The
    # reply keeps what was decoded, finish_reason "until". Greedy decoding makes the kept
    # text the start of the full reply, so a rule that is true only when the rest cannot
    # matter changes nothing but time. llama.cpp's `chat` stops; other paths (HTTP, batched
    # streams) decode the whole reply. Give a dataclass, so that the replay key is the
    # same in every process.
    until: Callable[[str], bool] | None = None


@dataclass(frozen=True)
class TokenLogprob:
    """A generated token, its log-probability, and (if asked) the top alternatives."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Generation:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str = "stop"  # "stop", "length", or "until" (GenerationParams.until)
    logprobs: tuple[TokenLogprob, ...] | None = None
    seconds: float = 0.0


@dataclass(frozen=True)
class NextTokenScores:
    """`next_token_logprobs`' answer: per candidate, log P(next token is one of its
    variants) under the full vocabulary (not renormalised), and what reading it cost."""

    logprobs: dict[str, float]
    prompt_tokens: int
    seconds: float = 0.0

    def as_generation(self) -> Generation:
        """For `UsageMeter.record`: a call that read the prompt and generated nothing."""
        return Generation("", self.prompt_tokens, 0, "scores", seconds=self.seconds)


@dataclass
class UsageMeter:
    """Running totals of a model's calls (read by methods for `Usage`)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    by_purpose: dict[str, int] = field(default_factory=dict)
    replayed: int = 0  # calls answered from an identical earlier one (`llm.replay`)

    def record(self, g: Generation, purpose: str = "", replayed: bool = False) -> None:
        self.calls += 1
        self.replayed += replayed
        self.prompt_tokens += g.prompt_tokens
        self.completion_tokens += g.completion_tokens
        self.seconds += g.seconds
        if purpose:
            self.by_purpose[purpose] = self.by_purpose.get(purpose, 0) + 1


@runtime_checkable
class ChatModel(Protocol):
    """What every generation backend offers. Optional abilities raise `ModelError`."""

    name: str
    capabilities: Capabilities
    usage: UsageMeter

    def chat(self, messages: Sequence[Message], params: GenerationParams) -> Generation: ...

    def sample(
        self, messages: Sequence[Message], n: int, params: GenerationParams
    ) -> list[Generation]: ...

    def hidden_state(self, messages: Sequence[Message], completion: str, layer: int) -> np.ndarray:
        """The chosen layer's activation at the last token of prompt + completion."""
        ...

    def next_token_logprobs(self, messages: Sequence[Message], candidates: Sequence[str],
                            prefill: str = "") -> NextTokenScores:
        """log P of each candidate (an option letter, with or without a leading space:
        `kgrag.llm.letters`) as the first token of the assistant's reply, after `prefill`
        (text the reply already starts with). One forward pass over the prompt."""
        ...


def require(model: ChatModel, needed: Capabilities, method: str) -> None:
    """Fail at construction when `model` lacks what `method` needs (no silent fallbacks)."""
    missing = model.capabilities.missing(needed)
    if missing:
        raise ModelError(
            f"{method} needs {', '.join(missing)}, which the {model.name!r} backend lacks",
            hint="use the in-process llama.cpp backend (KGRAG_MODEL__BACKEND=llama)",
        )


def chat_stream(
    model: ChatModel, requests: Sequence[tuple[Sequence[Message], GenerationParams]], *,
    parallel: int = 1,
) -> Iterator[tuple[int, Generation]]:
    """(index, reply) per request as each finishes: decoded together by a backend that
    offers `chat_stream` (llama.cpp sequences, concurrent HTTP requests), else asked one
    by one in order. Do not use `model` otherwise until the iterator is done."""
    stream = getattr(model, "chat_stream", None)
    if stream is not None:
        yield from stream(requests, parallel=parallel)
        return
    for i, (messages, params) in enumerate(requests):
        yield i, model.chat(messages, params)

