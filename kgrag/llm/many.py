"""Several prompts answered together: parallel llama.cpp sequences with continuous batching.

On 2 CPU cores one generated token of the 1.5B model costs ~65 ms alone and ~156 ms for
4 sequences in one batched decode (~15 against ~26 tokens/s), so replies to different
prompts are cheaper together. `generate_many` keeps up to `slots` prompts in flight:

1. The prompts' common prefix (an extraction system prompt and its rules) is decoded
   once in sequence 0: the whole aligned blocks first, reusing those the cache already
   holds (`kgrag.llm.prefix`), then the rest of the common prefix as one piece. Each
   slot's sequence then shares those cells (`seq_cp` on a unified KV cache).
2. Every step is one `llama_decode` holding, for each slot, either its next generated
   token or the unread tail of a newly admitted prompt. A slot that finishes is freed
   at once and the next prompt moves in, so long replies do not hold short ones back.
3. Admission reserves each prompt's tail plus `max_tokens` cells, so the cache cannot
   fill up mid-reply.
4. A JSON schema becomes one llama.cpp grammar sampler per slot. At temperature 0 the
   greedy token is checked alone and the whole vocabulary is masked only when the
   grammar refuses it, which picks the same token as masking first.

The schedule depends only on the prompts and settings, so the replies are reproducible;
they may differ in the last bits from one-prompt-at-a-time replies (other batch shapes).

    replies = generate_many(llm, [Request(p1, 64), Request(p2, 64), Request(p3, 64)],
                            GenerationParams(), slots=2, kv=KvPrefix(), n_seq_max=8, seed=42)
    sorted(i for i, out in replies)  # in the order they finished
    # -> [0, 1, 2]
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import llama_cpp
import llama_cpp.llama_cpp as low
import numpy as np

from kgrag.errors import ModelError
from kgrag.llm.base import GenerationParams
from kgrag.llm.batched import (
    Sampled,
    _decode,
    _hits_stop,
    _logits,
    _pick,
    _record,
    keep_prefix_cells,
)
from kgrag.llm.prefix import KvPrefix

_TOKEN_DATA = np.dtype([("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])


class Grammar:
    """One llama.cpp grammar sampler: which tokens may come next, and the accepted ones."""

    def __init__(self, vocab: object, gbnf: str, n_vocab: int) -> None:
        self._smpl = low.llama_sampler_init_grammar(vocab, gbnf.encode("utf-8"), b"root")
        if not self._smpl:
            raise ModelError("llama.cpp could not parse the grammar of the JSON schema")
        self._one = (low.llama_token_data * 1)()
        self._one_arr = low.llama_token_data_array(data=self._one, size=1, selected=-1,
                                                   sorted=False)
        self._all = np.zeros(n_vocab, dtype=_TOKEN_DATA)
        self._all["id"] = np.arange(n_vocab, dtype=np.int32)
        self._all_arr = low.llama_token_data_array(
            data=self._all.ctypes.data_as(low.llama_token_data_p), size=n_vocab,
            selected=-1, sorted=False)

    def allows(self, token: int) -> bool:
        self._one[0] = low.llama_token_data(token, 0.0, 0.0)
        self._one_arr.size, self._one_arr.selected = 1, -1
        low.llama_sampler_apply(self._smpl, ctypes.byref(self._one_arr))
        return not math.isinf(self._one[0].logit)

    def mask(self, logits: np.ndarray) -> np.ndarray:
        """`logits` with -inf for every token the grammar refuses here."""
        self._all["logit"] = logits
        self._all_arr.size, self._all_arr.selected, self._all_arr.sorted = len(logits), -1, False
        low.llama_sampler_apply(self._smpl, ctypes.byref(self._all_arr))
        if self._all_arr.size != len(logits):
            raise ModelError("the grammar sampler resized the candidates (unexpected)")
        return self._all["logit"].astype(np.float64)

    def accept(self, token: int) -> None:
        low.llama_sampler_accept(self._smpl, token)

    def close(self) -> None:
        if self._smpl:
            low.llama_sampler_free(self._smpl)
            self._smpl = None


@dataclass
class _Slot:
    seq: int
    index: int  # which prompt
    pending: list[int]  # tokens to decode next: a prompt tail, then one token at a time
    pos: int  # position of pending[0]
    reserved: int  # KV cells set aside for this prompt
    grammar: Grammar | None
    out: Sampled = field(default_factory=Sampled)


def common_prefix(prompts: Sequence[Sequence[int]]) -> int:
    """Tokens all prompts share, leaving each at least its last token to decode."""
    first = prompts[0]
    n = min(len(p) for p in prompts) - 1
    for p in prompts[1:]:
        i = 0
        while i < n and p[i] == first[i]:
            i += 1
        n = i
    return max(n, 0)


def reply_budgets(requests: Sequence[Request], n_ctx: int) -> list[int]:
    """Each request's `max_tokens`, cut to what its prompt leaves of the context (as a
    one-prompt call would cut it); a prompt that leaves no room is refused.

    >>> reply_budgets([Request([1] * 10, 50), Request([1] * 90, 50)], n_ctx=100)
    [50, 10]
    """
    out = []
    for r in requests:
        room = n_ctx - len(r.tokens)
        if room < 1:
            raise ModelError(f"a prompt of {len(r.tokens)} tokens does not fit the context "
                             f"of {n_ctx}", hint="raise KGRAG_MODEL__N_CTX or shorten "
                             "the records (chunk size)")
        out.append(min(r.max_tokens, room))
    return out


@dataclass(frozen=True)
class Request:
    """One prompt of a `generate_many` call: its tokens, its reply budget and, for a
    constrained reply, GBNF text (root rule `root`)."""

    tokens: Sequence[int]
    max_tokens: int
    grammar: str | None = None


def generate_many(
    llm: llama_cpp.Llama,
    requests: Sequence[Request],
    params: GenerationParams,
    *,
    slots: int,
    kv: KvPrefix,
    n_seq_max: int,
    seed: int,
) -> Iterator[tuple[int, Sampled]]:
    """(index, reply) for every request, in the order the replies finish, up to `slots`
    decoded together (see the module docstring). Sampling settings come from `params`,
    budgets and grammars from each request. The caller must not use `llm` for anything
    else until the iterator is exhausted or closed; closing it early clears the cache."""
    if not requests:
        return
    if any(not r.tokens for r in requests):
        raise ModelError("an empty prompt cannot be answered")
    if slots < 1 or slots + 1 > n_seq_max:
        raise ModelError(f"{slots} parallel prompts need {slots + 1} sequences; this model "
                         f"was loaded with {n_seq_max}", hint="lower the parallel prompts")
    ctx, vocab = llm.ctx, low.llama_model_get_vocab(llm.model)
    n_vocab, n_ctx, n_batch = low.llama_vocab_n_tokens(vocab), llm.n_ctx(), llm.n_batch
    shared = common_prefix([r.tokens for r in requests])
    budgets = reply_budgets(requests, n_ctx)
    need = [len(r.tokens) - shared + b for r, b in zip(requests, budgets, strict=True)]
    rng = np.random.default_rng(seed)
    first = list(requests[0].tokens)
    whole = shared // kv.block * kv.block  # the common prefix's whole blocks
    keep = min(kv.reusable(first), whole)
    spans = kv.spans(first[: whole + 1], keep) if whole else []
    kv.clear()
    keep_prefix_cells(llm, keep, 1, n_seq_max)
    mem = low.llama_get_memory(ctx)
    queue = list(range(len(requests)))[::-1]  # pop() takes the next request
    active: list[_Slot] = []
    free_seqs = list(range(slots, 0, -1))
    batch = low.llama_batch_init(n_batch, 0, 1)
    try:
        # 1. the common prefix, once, in sequence 0
        pieces = [(a, min(a + n_batch, b)) for a0, b in spans for a in range(a0, b, n_batch)]
        if whole < shared:
            pieces += [(a, min(a + n_batch, shared)) for a in range(whole, shared, n_batch)]
        for a, b in pieces:
            _fill(batch, [(t, a + i, 0, False) for i, t in enumerate(first[a:b])])
            _decode(ctx, batch)
        kv.hold(first[: whole + 1])
        # 2. continuous batching
        while queue or active:
            in_use = sum(s.reserved for s in active)
            while queue and free_seqs and shared + in_use + need[queue[-1]] <= n_ctx:
                i = queue.pop()
                seq = free_seqs.pop()
                if shared:
                    low.llama_memory_seq_cp(mem, 0, seq, 0, shared)
                gbnf = requests[i].grammar
                g = Grammar(vocab, gbnf, n_vocab) if gbnf else None
                active.append(_Slot(seq, i, list(requests[i].tokens[shared:]), shared,
                                    need[i], g))
                in_use += need[i]
            rows: list[tuple[int, int, int, bool]] = []
            with_logits: list[_Slot] = []
            room = n_batch
            for s in active:
                take = s.pending[:room]
                last = len(take) == len(s.pending)
                rows += [(t, s.pos + k, s.seq, last and k == len(take) - 1)
                         for k, t in enumerate(take)]
                s.pending, s.pos, room = s.pending[len(take):], s.pos + len(take), room - len(take)
                if last and take:
                    with_logits.append(s)
                if not room:
                    break
            _fill(batch, rows)
            _decode(ctx, batch)
            finished = []
            for s in with_logits:
                row = next(k for k, r in enumerate(rows) if r[2] == s.seq and r[3])
                z = _logits(ctx, row, n_vocab)
                tok = _choose(z, params, rng, s.grammar)
                if tok is None or low.llama_vocab_is_eog(vocab, tok):
                    s.out.finish = "stop"
                else:
                    _record(s.out, z, tok, 0)
                    if s.grammar is not None:
                        s.grammar.accept(tok)
                    if params.stop and _hits_stop(llm, s.out.tokens, params.stop):
                        s.out.finish = "stop"
                    elif len(s.out.tokens) < budgets[s.index]:
                        s.pending = [tok]
                        continue
                    else:
                        s.out.finish = "length"
                _retire(mem, s, active, free_seqs)
                finished.append(s)
            for s in finished:
                yield s.index, s.out
    except BaseException:  # an error, or the caller closed the iterator early
        kv.clear()
        low.llama_memory_clear(mem, True)
        raise
    finally:
        for s in active:
            if s.grammar is not None:
                s.grammar.close()
        low.llama_batch_free(batch)
        llm.reset()  # the high-level object's record; chat() sets its own from kv


def _fill(batch: object, rows: Sequence[tuple[int, int, int, bool]]) -> None:
    """(token, position, sequence, wants logits) rows into a llama_batch."""
    batch.n_tokens = len(rows)  # type: ignore[attr-defined]
    for i, (tok, pos, seq, logits) in enumerate(rows):
        batch.token[i], batch.pos[i], batch.n_seq_id[i] = tok, pos, 1  # type: ignore[attr-defined]
        batch.seq_id[i][0] = seq  # type: ignore[attr-defined]
        batch.logits[i] = logits  # type: ignore[attr-defined]


def _choose(logits: np.ndarray, p: GenerationParams, rng: np.random.Generator,
            grammar: Grammar | None) -> int | None:
    """The next token; None when the grammar allows nothing (a dead end: stop)."""
    if grammar is None:
        return _pick(logits, p, rng)
    if p.temperature <= 0:
        tok = int(np.argmax(logits))
        if grammar.allows(tok):
            return tok
    masked = grammar.mask(logits.astype(np.float32))
    if np.isneginf(masked).all():
        return None
    return _pick(masked, p, rng)


def _retire(mem: object, s: _Slot, active: list[_Slot], free_seqs: list[int]) -> None:
    low.llama_memory_seq_rm(mem, s.seq, -1, -1)
    if s.grammar is not None:
        s.grammar.close()
        s.grammar = None
    active.remove(s)
    free_seqs.append(s.seq)
