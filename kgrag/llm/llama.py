# Over 400 lines: the one module that imports llama_cpp (the seam keeps it in one place).
"""In-process llama.cpp backend: the only module that imports `llama_cpp`.

Offers chat with JSON-schema constrained output, token log-probabilities, n samples
of one prompt decoded together as parallel sequences (one shared prompt, one batched
decode per step), and hidden-state capture of a named layer through `cb_eval`.

The model is not thread-safe: every call takes the instance lock, so one process can
share one model between a CLI job and app sessions. Chat and sampling calls reuse the
whole 64-token blocks a prompt shares with the previous prompt (`kgrag.llm.prefix`), in a
way that gives the same result whether or not the cache was warm.

    m = LlamaCppModel(Path("qwen.gguf"), name="qwen2.5-coder-0.5b", n_layers=24)
    m.hidden_state([Message("user", "Hi")], "Hello", layer=12).shape
    # -> (896,)
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import llama_cpp
import llama_cpp.llama_cpp as llama_low
import numpy as np
from llama_cpp._ggml import libggml
from llama_cpp.llama_grammar import json_schema_to_gbnf

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
from kgrag.llm.batched import Sampled, keep_prefix_cells
from kgrag.llm.letters import letter_variants, logsumexp
from kgrag.llm.prefix import NO_REUSE, KvPrefix, aligned_end

log = logging.getLogger(__name__)

# ggml helpers used inside the eval callback.
libggml.ggml_get_name.argtypes = [ctypes.c_void_p]
libggml.ggml_get_name.restype = ctypes.c_char_p
libggml.ggml_nbytes.argtypes = [ctypes.c_void_p]
libggml.ggml_nbytes.restype = ctypes.c_size_t
libggml.ggml_backend_tensor_get.argtypes = [
    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t,
]
libggml.ggml_backend_tensor_get.restype = None
GGML_TYPE_F32 = 0


class _TensorHead(ctypes.Structure):
    """The first fields of `struct ggml_tensor` (type, buffer, ne[4])."""

    _fields_ = [("type", ctypes.c_int), ("buffer", ctypes.c_void_p),
                ("ne", ctypes.c_int64 * 4)]


class _LayerTap:
    """cb_eval state: which tensor to copy out, and the rows it produced."""

    def __init__(self) -> None:
        self.wanted: bytes | None = None
        self.rows: np.ndarray | None = None
        self.callback = llama_low.ggml_backend_sched_eval_callback(self._on_tensor)

    def _on_tensor(self, tensor: int, ask: bool, _user: int) -> bool:
        if self.wanted is None:
            return not ask  # ask: "no, don't copy"; after eval: "continue"
        name = libggml.ggml_get_name(tensor)
        if ask:
            return bool(name == self.wanted)
        if name == self.wanted:
            head = _TensorHead.from_address(tensor)
            if head.type != GGML_TYPE_F32:
                return True
            n_embd, n_tok = int(head.ne[0]), int(head.ne[1])
            out = np.empty((n_tok, n_embd), dtype=np.float32)
            libggml.ggml_backend_tensor_get(tensor, out.ctypes.data, 0, out.nbytes)
            self.rows = out
        return True


class LlamaCppModel:
    """A GGUF model loaded in this process through llama-cpp-python."""

    capabilities = Capabilities(json_schema=True, logprobs=True, parallel_samples=True,
                                hidden_states=True, option_logprobs=True)

    def __init__(
        self,
        path: Path,
        *,
        name: str | None = None,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        n_batch: int = 512,
        seed: int = 42,
        n_layers: int | None = None,
        max_parallel: int = 32,
        prefix_block: int = 64,
    ) -> None:
        if not path.is_file():
            raise ModelError(f"model file {path} does not exist",
                             hint="run `kgrag models fetch <name>` or give an existing .gguf path")
        self.name = name or path.stem
        self.path = path
        self.usage = UsageMeter()
        self.seed = seed
        self._lock = threading.RLock()
        self._tap = _LayerTap()
        self._max_parallel = max_parallel
        self.kv = KvPrefix(prefix_block or NO_REUSE)
        self._template_checked = False
        threads = n_threads or os.cpu_count() or 2
        start = time.perf_counter()
        try:
            with _context_params_patch(self._tap, max_parallel):
                self.llm = llama_cpp.Llama(
                    model_path=str(path), n_ctx=n_ctx, n_threads=threads,
                    n_threads_batch=threads, n_batch=n_batch, seed=seed, verbose=False,
                )
        except ValueError as e:
            raise ModelError(f"llama.cpp could not load {path}: {e}",
                             hint="the file may be truncated or not GGUF; re-fetch it") from e
        self.load_seconds = time.perf_counter() - start
        self.context_tokens = self.llm.n_ctx()
        declared = int(self.llm.metadata.get(_block_count_key(self.llm), 0))
        self.n_layers = n_layers or declared or None

    # ------------------------------------------------------------------ chat
    def chat(self, messages: Sequence[Message], params: GenerationParams) -> Generation:
        """One reply. JSON-schema replies use llama.cpp's grammar sampler; replies with
        log-probabilities use kgrag's own decode loop (llama.cpp's high-level API would
        need `logits_all`, i.e. a vocabulary-sized row for every context position)."""
        if params.until is not None and (params.logprobs or params.json_schema is not None):
            raise ModelError("a stopping rule (until) is not supported with logprobs or "
                             "constrained JSON", hint="ask for one of them at a time")
        if params.logprobs:
            if params.json_schema is not None:
                raise ModelError("constrained JSON with logprobs is not supported together")
            return self._sampled(messages, 1, params)[0]
        kwargs: dict[str, Any] = dict(
            messages=[{"role": m.role, "content": m.content} for m in messages],
            max_tokens=params.max_tokens, temperature=params.temperature, top_p=params.top_p,
            top_k=params.top_k, min_p=params.min_p, stop=list(params.stop) or None,
            seed=self.seed if params.seed is None else params.seed,
        )
        if params.json_schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": params.json_schema}
        prompt = self.tokenize_chat(messages)
        with self._lock:
            start = time.perf_counter()
            try:
                self._decode_blocks(prompt)
                # llama-cpp-python's generate() reuses the cells whose tokens match its own
                # record (input_ids[:n_tokens]) and decodes only the tail.
                reply: Any = (self.llm.create_chat_completion(**kwargs)
                              if params.until is None else
                              self._completion_until(kwargs, params.until, prompt))
            except BaseException:
                self.kv.clear()
                raise
            if not self._template_checked:
                self._check_template(prompt)
            seconds = time.perf_counter() - start
        choice = reply["choices"][0]
        g = Generation(
            text=choice["message"]["content"] or "",
            prompt_tokens=reply["usage"]["prompt_tokens"],
            completion_tokens=reply["usage"]["completion_tokens"],
            finish_reason=choice.get("finish_reason") or "stop",
            seconds=seconds,
        )
        self.usage.record(g)
        return g

    def _completion_until(self, kwargs: dict[str, Any], until: Callable[[str], bool],
                          prompt: list[int]) -> dict[str, Any]:
        """The reply `create_chat_completion(**kwargs)` gives, cut as soon as `until(text
        so far)` holds (`GenerationParams.until`).

        llama-cpp-python's chat handler takes no stopping criteria of its own, so this
        asks `create_completion` with what the handler would pass (the same prompt tokens,
        checked by `_check_template`, sampling values and seed; the end-of-generation
        tokens stop both, and the handler's stop string for them never matches the text,
        which holds no special tokens). Not a stream: this way the reply's text and token
        counts are llama-cpp-python's own, decoded from the whole token sequence as for a
        reply without `until`.

        finish_reason "until" says the rule held on the reply (llama-cpp-python checks it
        once more after the last token, so also when the reply ended there anyway)."""
        from llama_cpp import StoppingCriteriaList

        fired = False

        def check(ids: Any, _logits: Any) -> bool:
            nonlocal fired
            tail = [int(t) for t in ids[len(prompt):]]
            text = self.llm.detokenize(tail, prev_tokens=prompt).decode("utf-8", "ignore")
            fired = fired or (bool(text) and until(text))
            return fired

        reply: Any = self.llm.create_completion(
            prompt=prompt, max_tokens=kwargs["max_tokens"], temperature=kwargs["temperature"],
            top_p=kwargs["top_p"], top_k=kwargs["top_k"], min_p=kwargs["min_p"],
            stop=kwargs["stop"], seed=kwargs["seed"],
            stopping_criteria=StoppingCriteriaList([check]))
        choice = reply["choices"][0]
        return {"choices": [{"message": {"content": choice["text"]},
                             "finish_reason": "until" if fired else choice["finish_reason"]}],
                "usage": reply["usage"]}

    def _decode_blocks(self, prompt: list[int]) -> None:
        """Leave the prompt's whole aligned blocks in the cache, reusing those it shares
        with the previous prompt (see `kgrag.llm.prefix`); the tail is the caller's."""
        keep = self.kv.reusable(prompt)
        spans = self.kv.spans(prompt, keep)
        self.kv.clear()
        llm = self.llm
        keep_prefix_cells(llm, keep, 1, self._max_parallel)
        llm.input_ids[:keep] = prompt[:keep]
        llm.n_tokens = keep
        for a, b in spans:
            llm.eval(prompt[a:b])
        self.kv.hold(prompt)

    def _check_template(self, prompt: list[int]) -> None:
        """Our chat tokens must be the ones llama-cpp-python's handler decoded, or the
        blocks decoded ahead would not match and every prompt would be read twice."""
        used = [int(t) for t in self.llm.input_ids[: len(prompt)]]
        if used != prompt:
            self.kv.block = NO_REUSE
            log.warning("%s: the chat handler's prompt tokens differ from kgrag's chat "
                        "template tokens; prompt-prefix reuse is off", self.name)
        self._template_checked = True

    # ------------------------------------------------------------------ next-token scores
    def next_token_logprobs(self, messages: Sequence[Message], candidates: Sequence[str],
                            prefill: str = "") -> NextTokenScores:
        """log P(candidate) as the next token after the chat prompt (+ `prefill`), from the
        logits of one forward pass: the log-sum-exp over the candidate's single-token
        variants (`letter_variants`), under the full vocabulary's softmax.

        The prompt's whole blocks shared with the previous prompt are reused from the KV
        cache (`kgrag.llm.prefix`): calls that differ only in their options (rotations)
        decode only the tail from the first differing block."""
        ids = {c: self._single_tokens(c) for c in candidates}
        prompt = self.tokenize_chat(messages) + (self.tokenize(prefill) if prefill else [])
        if len(prompt) >= self.context_tokens:
            raise ModelError(f"prompt ({len(prompt)} tokens) exceeds the context of "
                             f"{self.context_tokens}", hint="shorten the evidence or raise n_ctx")
        with self._lock:
            start = time.perf_counter()
            try:
                self._decode_blocks(prompt)
                self.llm.eval(prompt[aligned_end(len(prompt), self.kv.block):])
                ptr = llama_low.llama_get_logits_ith(self.llm.ctx, -1)
                logits = np.ctypeslib.as_array(ptr, shape=(self.llm.n_vocab(),)
                                               ).astype(np.float64)
            except BaseException:
                self.kv.clear()
                raise
            seconds = time.perf_counter() - start
        top = float(logits.max())
        log_z = top + float(np.log(np.exp(logits - top).sum()))
        scores = NextTokenScores(
            {c: logsumexp(float(logits[t]) - log_z for t in tids) for c, tids in ids.items()},
            len(prompt), seconds)
        self.usage.record(scores.as_generation(), purpose="choose")
        return scores

    def _single_tokens(self, candidate: str) -> list[int]:
        """The token ids of `candidate`'s variants; each must be one token."""
        out = []
        for v in letter_variants(candidate):
            toks = self.tokenize(v)
            if len(toks) != 1:
                raise ModelError(f"{self.name} writes {v!r} as {len(toks)} tokens; option "
                                 "letters must be single tokens to be read at one position",
                                 hint="use option labels the tokenizer keeps whole (A, B, …)")
            out.append(toks[0])
        return sorted(set(out))

    # ------------------------------------------------------------------ n samples, batched
    def sample(
        self, messages: Sequence[Message], n: int, params: GenerationParams
    ) -> list[Generation]:
        """n samples of one prompt: the prompt is decoded once, then all n sequences
        advance together, one batched decode per generated position."""
        return self._sampled(messages, n, params)

    def _sampled(
        self, messages: Sequence[Message], n: int, params: GenerationParams
    ) -> list[Generation]:
        from kgrag.llm.batched import sample_parallel  # the low-level loop lives apart

        if n > self._max_parallel:
            raise ModelError(f"asked for {n} parallel samples; this model allows "
                             f"{self._max_parallel}", hint="raise max_parallel when loading")
        prompt = self.tokenize_chat(messages)
        seed = self.seed if params.seed is None else params.seed
        with self._lock:
            start = time.perf_counter()
            seqs = sample_parallel(self.llm, prompt, n, params, seed, params.top_logprobs,
                                   kv=self.kv, n_seq_max=self._max_parallel)
            seconds = time.perf_counter() - start
        gens = [self._generation(seq, len(prompt), params, seconds / n) for seq in seqs]
        self.usage.record(gens[0])
        for g in gens[1:]:  # one call, all tokens
            self.usage.completion_tokens += g.completion_tokens
        return gens

    # ------------------------------------------------------------------ several prompts
    def chat_stream(
        self, requests: Sequence[tuple[Sequence[Message], GenerationParams]], *,
        parallel: int = 4,
    ) -> Iterator[tuple[int, Generation]]:
        """(index, reply) per request as each finishes, up to `parallel` decoded together
        (`kgrag.llm.many`). Requests may differ in `max_tokens` and `json_schema` (one
        grammar sampler per sequence), not in sampling settings. The model is busy until
        the iterator is exhausted or closed: do not call it in between. `seconds` of a
        reply is the wall time since the previous reply (they add up to the call's)."""
        from kgrag.llm.many import Request, generate_many

        if not requests:
            return
        params = requests[0][1]
        sampling = _sampling(params)
        if any(_sampling(p) != sampling for _, p in requests):
            raise ModelError("requests answered together must share their sampling settings")
        if params.logprobs and any(p.json_schema is not None for _, p in requests):
            raise ModelError("constrained JSON with logprobs is not supported together")
        grammars: dict[str, str] = {}
        reqs = []
        for messages, p in requests:
            gbnf = None
            if p.json_schema is not None:
                key = json.dumps(p.json_schema, sort_keys=True)
                if key not in grammars:
                    grammars[key] = json_schema_to_gbnf(json.dumps(p.json_schema))
                gbnf = grammars[key]
            reqs.append(Request(self.tokenize_chat(messages), p.max_tokens, gbnf))
        seed = self.seed if params.seed is None else params.seed
        with self._lock:
            last = time.perf_counter()
            for i, seq in generate_many(self.llm, reqs, params,
                                        slots=min(parallel, len(reqs)), kv=self.kv,
                                        n_seq_max=self._max_parallel, seed=seed):
                now = time.perf_counter()
                g = self._generation(seq, len(reqs[i].tokens), params, now - last)
                last = now
                self.usage.record(g)
                yield i, g

    def _generation(self, seq: Sampled, prompt_tokens: int, params: GenerationParams,
                    seconds: float) -> Generation:
        lps = None
        if params.logprobs:
            lps = tuple(
                TokenLogprob(self.detokenize([t]), lp,
                             tuple((self.detokenize([a]), alp) for a, alp in alts))
                for t, lp, alts in zip(seq.tokens, seq.logprobs,
                                       seq.top or [()] * len(seq.tokens), strict=True)
            )
        return Generation(self.detokenize(seq.tokens), prompt_tokens, len(seq.tokens),
                          seq.finish, lps, seconds)

    # ------------------------------------------------------------------ hidden states
    def hidden_state(
        self, messages: Sequence[Message], completion: str, layer: int, tensor: str = "l_out"
    ) -> np.ndarray:
        """Activation of `<tensor>-<layer>` at the last token of chat prompt + completion."""
        tokens = self.tokenize_chat(messages) + self.tokenize(completion)
        return self.hidden_state_tokens(tokens, layer, tensor)[-1]

    def hidden_state_tokens(self, tokens: Sequence[int], layer: int, tensor: str = "l_out"
                            ) -> np.ndarray:
        """Rows of `<tensor>-<layer>` for every token of `tokens` (evaluated from scratch)."""
        if self.n_layers is not None and not 0 <= layer < self.n_layers:
            raise ModelError(f"{self.name} has layers 0–{self.n_layers - 1}; asked for {layer}")
        with self._lock:
            self.kv.clear()
            llama_low.llama_memory_clear(llama_low.llama_get_memory(self.llm.ctx), True)
            self.llm.reset()
            self._tap.wanted, self._tap.rows = f"{tensor}-{layer}".encode(), None
            rows: list[np.ndarray] = []
            try:
                for chunk in _chunks(list(tokens), self.llm.n_batch):
                    self.llm.eval(chunk)
                    if self._tap.rows is None:
                        raise ModelError(f"tensor {tensor}-{layer} was not computed by "
                                         f"{self.name}", hint="see `kgrag models layers`")
                    rows.append(self._tap.rows)
                    self._tap.rows = None
            finally:
                self._tap.wanted = None
                self.llm.reset()
        return np.concatenate(rows, axis=0)

    # ------------------------------------------------------------------ tokens
    def tokenize(self, text: str, special: bool = False) -> list[int]:
        return self.llm.tokenize(text.encode(), add_bos=False, special=special)

    def detokenize(self, tokens: Sequence[int]) -> str:
        return self.llm.detokenize(list(tokens)).decode("utf-8", errors="replace")

    def tokenize_chat(self, messages: Sequence[Message]) -> list[int]:
        """Tokens of the chat template applied to `messages`, ready for the assistant turn."""
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        template = self.llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise ModelError(f"{self.name} has no chat template in its GGUF metadata")
        eos = self.detokenize([self.llm.token_eos()])
        bos = self.detokenize([self.llm.token_bos()]) if self.llm.token_bos() >= 0 else ""
        fmt = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos)
        chat: Any = [{"role": m.role, "content": m.content} for m in messages]
        prompt = fmt(messages=chat).prompt
        return self.llm.tokenize(prompt.encode(), add_bos=False, special=True)

    @property
    def eos_token(self) -> int:
        return int(self.llm.token_eos())

    def close(self) -> None:
        self.llm.close()


def build_info() -> str:
    """Which llama.cpp build answers: the llama-cpp-python version and the CPU features its
    ggml was compiled with. Greedy replies repeat only on the same build, so runs record it.

    >>> build_info()  # doctest: +SKIP
    'llama-cpp-python 0.3.36: SSE3 SSSE3 AVX AVX_VNNI AVX2 F16C FMA ... OPENMP REPACK'
    """
    info = llama_cpp.llama_print_system_info().decode(errors="replace")
    return f"llama-cpp-python {llama_cpp.__version__}: " + " ".join(
        re.findall(r"(\w+) = 1\b", info))


@contextlib.contextmanager
def _context_params_patch(tap: _LayerTap, n_seq_max: int) -> Iterator[None]:
    """The high-level `Llama` builds its context in its constructor from
    `llama_context_default_params()`; put the eval callback and the number of parallel
    sequences into those defaults for the duration of that constructor."""
    original = llama_low.llama_context_default_params

    def patched() -> Any:
        p = original()
        p.cb_eval = tap.callback
        p.cb_eval_user_data = None
        p.n_seq_max = n_seq_max
        p.kv_unified = True  # all sequences share one KV buffer (needed for a shared prompt)
        return p

    llama_low.llama_context_default_params = patched
    try:
        yield
    finally:
        llama_low.llama_context_default_params = original


def _block_count_key(llm: llama_cpp.Llama) -> str:
    arch = llm.metadata.get("general.architecture", "llama")
    return f"{arch}.block_count"


def _chunks(seq: list[int], size: int) -> Iterator[list[int]]:
    for i in range(0, len(seq), size):
        yield seq[i : i + size]


def _sampling(p: GenerationParams) -> tuple[object, ...]:
    """The settings that requests decoded together must share."""
    return (p.temperature, p.top_p, p.top_k, p.min_p, p.seed, p.stop, p.logprobs,
            p.top_logprobs)
