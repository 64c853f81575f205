"""SeaKR's self-aware uncertainty U(c) and the engines that generate a step with it.

U(c) (SeaKR §3.1; official code `vllm_uncertainty/vllm/engine/llm_engine.py:720-744`):
sample k continuations of context c, take each one's hidden state at EOS (the middle
layer's feed-forward output), centre every vector over its own features, and score

    U(c) = logdet(Z_c Z_cᵀ + α I_k) / k        (float64, α = 1e-3; lower = more certain)

Only samples with non-empty text count (k ≤ 20); with none, U = 0.0, the official
code's substitute, which reads as "uncertain" for any negative threshold.

An engine turns a raw prompt into a `StepOutput`: the greedy continuation (SeaKR's
content), its tokens with probabilities (for query building) and, when asked, U(c).

- `LlamaSeakrEngine`: llama.cpp in process; greedy + k samples in one context with the
  EOS trick (`kgrag.llm.eos_states`), vectors cached by token sequence.
- `ChatModelSeakrEngine`: any `ChatModel` with logprobs, samples and hidden states
  through the protocol; the vector is `hidden_state(prompt, sample)` at the sample's last
  token (no EOS trick). Used with `ScriptedModel` in unit tests.

    engine = LlamaSeakrEngine(model, UncertaintyConfig())
    out = engine.generate("Question: Who wrote Hamlet?\\nAnswer:", stop=("\\n",),
                          uncertainty=True)
    out.text, out.uncertainty < -6
    # -> (' Hamlet was written by William Shakespeare.', True)
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

from kgrag.errors import ModelError
from kgrag.llm.base import ChatModel, GenerationParams, Message

if TYPE_CHECKING:
    from kgrag.llm.eos_cache import EosSample, EosStateCache
    from kgrag.llm.llama import LlamaCppModel


def eigen_score(vectors: Sequence[np.ndarray] | np.ndarray, alpha: float = 1e-3) -> float:
    """SeaKR/INSIDE EigenScore: logdet(Gram of feature-centred vectors + αI) / k.

    Centring is per vector (over its d features, J_d = I - 11ᵀ/d), not across samples.

        round(eigen_score([[1.0, -1.0], [1.0, -1.0]]), 6)   # (ln 4.001 + ln 0.001) / 2
        # -> -2.760255
    """
    z = np.asarray(vectors, dtype=np.float64)
    if z.ndim != 2 or z.shape[0] == 0:
        raise ValueError(f"need a non-empty k x d matrix, got shape {z.shape}")
    zc = z - z.mean(axis=1, keepdims=True)
    gram = zc @ zc.T
    sign, logdet = np.linalg.slogdet(gram + alpha * np.eye(z.shape[0]))
    if sign <= 0:  # a PSD Gram plus alpha*I is positive definite; anything else is a bug
        raise ValueError("Gram matrix + alpha*I is not positive definite")
    return float(logdet / z.shape[0])


@dataclass(frozen=True)
class UncertaintyConfig:
    """U(c) settings: the official code's values (`SEAKR/reasoner.py:67-113`)."""

    k: int = 20  # samples per context
    alpha: float = 1e-3  # Gram regulariser (`eigen_alpha`)
    temperature: float = 1.0
    top_k: int = 50
    top_p: float = 0.9
    min_p: float = 0.0  # llama.cpp's default 0.05 would cut the tail vLLM keeps
    max_tokens: int = 100  # per sample and for the greedy step
    sample_max_tokens: int | None = None  # a lower cap for the samples only (cost knob)
    seed: int = 42
    layer: int | None = None  # None: n_layers // 2 (LLaMA-2's 32 layers → 16; code reads 15)
    tensor: str = "ffn_out"  # the FFN output before the residual add, as the patched vLLM

    def sampling(self, stop: Sequence[str], max_tokens: int) -> GenerationParams:
        return GenerationParams(max_tokens=max_tokens, temperature=self.temperature,
                                top_p=self.top_p, top_k=self.top_k, min_p=self.min_p,
                                seed=self.seed, stop=tuple(stop))


@dataclass(frozen=True)
class TokenProb:
    """A generated token's text and its probability under the model (temperature 1)."""

    text: str
    prob: float


@dataclass(frozen=True)
class StepOutput:
    """One generation of SeaKR: greedy text (cut before the stop string) and U(c)."""

    text: str
    tokens: tuple[TokenProb, ...] = ()
    uncertainty: float | None = None
    samples: tuple[str, ...] = ()
    finish: str = "stop"
    seconds: float = 0.0
    vectors_used: int = 0  # samples with non-empty text that entered U(c)

    @property
    def u_or_inf(self) -> float:
        """U for comparisons: an empty greedy output ranks last (official `reasoner.py`)."""
        if not self.text.strip() or self.uncertainty is None:
            return math.inf
        return self.uncertainty


class SeakrEngine(Protocol):
    """Generates SeaKR's greedy step for a raw prompt and, if asked, its U(c)."""

    config: UncertaintyConfig

    def generate(self, prompt: str, stop: Sequence[str], *, uncertainty: bool,
                 max_tokens: int | None = None) -> StepOutput: ...


def cut_at_stop(text: str, stop: Sequence[str]) -> str:
    """Text before the first stop string (backends that return the stop string too)."""
    cut = min((i for s in stop if (i := text.find(s)) >= 0), default=len(text))
    return text[:cut]


def _score(texts: Sequence[str], vectors: Sequence[np.ndarray | None], alpha: float
           ) -> tuple[float, int]:
    used = [v for t, v in zip(texts, vectors, strict=True) if t.strip() and v is not None]
    return (eigen_score(used, alpha) if used else 0.0), len(used)


class LlamaSeakrEngine:
    """SeaKR's estimator on the in-process llama.cpp model (batched, EOS trick, cached).

    Prompts are raw text (no chat template), as the official code feeds vLLM."""

    def __init__(self, model: LlamaCppModel, config: UncertaintyConfig | None = None,
                 cache: EosStateCache | None = None, prefix: str | None = None) -> None:
        from kgrag.llm.eos_cache import EosStateCache, PrefixState

        self.model = model
        self.prefix = prefix  # a prompt start shared by most calls (the exemplars)
        self._prefix_state = PrefixState()
        self.config = config or UncertaintyConfig()
        layer = self.config.layer
        if layer is None:
            if model.n_layers is None:
                raise ModelError(f"{model.name} does not declare its layer count",
                                 hint="set the SeaKR layer explicitly")
            layer = model.n_layers // 2
        self.layer = layer
        self.tensor_name = f"{self.config.tensor}-{layer}"
        self.cache = cache or EosStateCache()

    def generate(self, prompt: str, stop: Sequence[str], *, uncertainty: bool,
                 max_tokens: int | None = None) -> StepOutput:
        from kgrag.llm.eos_states import sample_with_eos_states, token_pieces

        cfg = self.config
        params = cfg.sampling(stop, max_tokens or cfg.max_tokens)
        tokens, prefix_len = self._tokens(prompt)
        start = time.perf_counter()
        out = sample_with_eos_states(
            self.model, tokens, cfg.k if uncertainty else 0, params, seed=cfg.seed,
            tensor=self.tensor_name if uncertainty else None, greedy=True, cache=self.cache,
            prefix_len=prefix_len, prefix=self._prefix_state,
            sample_max_tokens=cfg.sample_max_tokens)
        seconds = time.perf_counter() - start
        greedy, samples = out[0], out[1:]
        pieces = token_pieces(self.model, greedy.tokens)
        text = cut_at_stop("".join(pieces), stop)
        kept, length = [], 0
        for piece, lp in zip(pieces, greedy.logprobs, strict=True):
            if length >= len(text):
                break
            kept.append(TokenProb(piece, math.exp(lp)))
            length += len(piece)
        self._meter(tokens, out, seconds)
        u, used = None, 0
        texts = tuple(cut_at_stop(self.model.detokenize(s.tokens), stop) for s in samples)
        if uncertainty:
            u, used = _score(texts, [s.state for s in samples], cfg.alpha)
        return StepOutput(text, tuple(kept), u, texts, greedy.finish, seconds, used)

    def _tokens(self, prompt: str) -> tuple[list[int], int]:
        """Prompt tokens and the length of the shared prefix. The prefix is tokenized on its
        own whenever the prompt starts with it, so its tokens never depend on what follows."""
        from kgrag.llm.eos_states import tokenize_prompt

        if self.prefix and prompt.startswith(self.prefix) and len(prompt) > len(self.prefix):
            head = tokenize_prompt(self.model, self.prefix)
            return head + self.model.tokenize(prompt[len(self.prefix):]), len(head)
        return tokenize_prompt(self.model, prompt), 0

    def _meter(self, prompt: Sequence[int], out: Sequence[EosSample], seconds: float) -> None:
        from kgrag.llm.base import Generation

        n = sum(len(s.tokens) for s in out)
        self.model.usage.record(Generation("", len(prompt), n, seconds=seconds), "seakr")


@dataclass
class _VectorCache:
    size: int = 4096
    rows: OrderedDict[tuple[str, str], np.ndarray] = field(default_factory=OrderedDict)

    def get(self, key: tuple[str, str]) -> np.ndarray | None:
        row = self.rows.get(key)
        if row is not None:
            self.rows.move_to_end(key)
        return row

    def put(self, key: tuple[str, str], row: np.ndarray) -> np.ndarray:
        self.rows[key] = row
        if len(self.rows) > self.size:
            self.rows.popitem(last=False)
        return row


class ChatModelSeakrEngine:
    """SeaKR's estimator through the `ChatModel` protocol: greedy with logprobs, k samples,
    and one `hidden_state` call per distinct non-empty sample (cached by text)."""

    def __init__(self, model: ChatModel, layer: int, config: UncertaintyConfig | None = None
                 ) -> None:
        self.model = model
        self.layer = layer
        self.config = config or UncertaintyConfig()
        self._cache = _VectorCache()

    def generate(self, prompt: str, stop: Sequence[str], *, uncertainty: bool,
                 max_tokens: int | None = None) -> StepOutput:
        cfg = self.config
        limit = max_tokens or cfg.max_tokens
        messages = [Message("user", prompt)]
        start = time.perf_counter()
        greedy = self.model.chat(messages, GenerationParams(
            max_tokens=limit, stop=tuple(stop), seed=cfg.seed, logprobs=True))
        tokens = tuple(TokenProb(t.token, math.exp(t.logprob)) for t in greedy.logprobs or ())
        u, used, texts = None, 0, tuple[str, ...]()
        if uncertainty:
            gens = self.model.sample(messages, cfg.k, cfg.sampling(stop, limit))
            texts = tuple(cut_at_stop(g.text, stop) for g in gens)
            vectors = [self._vector(messages, t) if t.strip() else None for t in texts]
            u, used = _score(texts, vectors, cfg.alpha)
        return StepOutput(cut_at_stop(greedy.text, stop), tokens, u, texts,
                          greedy.finish_reason, time.perf_counter() - start, used)

    def _vector(self, messages: list[Message], text: str) -> np.ndarray:
        key = (messages[-1].content, text)
        row = self._cache.get(key)
        if row is None:
            row = np.asarray(self.model.hidden_state(messages, text, self.layer),
                             dtype=np.float32)
            row = self._cache.put(key, row)
        return row
