"""k samples of one prompt with the hidden state at each sample's EOS (SeaKR's estimator input).

SeaKR (Yao et al.; official code `THU-KEG/SeaKR`, patched vLLM) reads, for each of k
sampled continuations, one layer's activation at an EOS token: the sample's last token is
replaced by EOS (a natural EOS is kept) and the model runs one more step, so the EOS
position attends to the prompt and the whole sample. This module does that inside one
llama.cpp context, with two savings over decoding k independent sequences:

- **Prefix sharing (a trie of sequences).** Sequences that have produced the same tokens
  so far have the same logits, so they share one KV cell per position: a step decodes one
  row per *distinct* prefix and extension, with all sequence ids that share it. Sampling
  stays per sequence (each draws its own uniform from a seeded stream, `draws[step, seq]`),
  so the distribution is exactly that of k independent samples. A confident model, whose
  samples agree, costs little more than one greedy generation.
- **The greedy continuation rides along** as sequence 0 (temperature 0), so SeaKR's greedy
  step and its k samples share the prompt decode and most positions.

The EOS rows of the sequences that finish at a step are decoded in that step's batch with
the layer tap armed; llama.cpp's `cb_eval` copies the named tensor for the whole batch and
row i belongs to batch position i. Sequences with the same tokens share one EOS row, and an
`EosStateCache` keyed by the token sequence makes identical sequences give bit-identical
vectors across calls too (SeaKR's log-det is sensitive to noise of order alpha).

    out = sample_with_eos_states(model, prompt_tokens, 20, params, seed=42,
                                 tensor="ffn_out-12", greedy=True)
    out[0].greedy, out[1].state.shape
    # -> (True, (896,))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import llama_cpp.llama_cpp as low
import numpy as np

from kgrag.errors import ModelError
from kgrag.llm.base import GenerationParams
from kgrag.llm.batched import _decode, _hits_stop, truncate
from kgrag.llm.eos_cache import EosSample, EosStateCache, PrefixState

if TYPE_CHECKING:
    from kgrag.llm.llama import LlamaCppModel


@dataclass
class _Seq:
    greedy: bool
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    finish: str = ""
    state: np.ndarray | None = None


@dataclass
class _Row:
    """One batch row: a next token shared by `members`, or an EOS row (token = EOS)."""

    members: list[int]
    token: int
    eos: bool
    key: bytes = b""


def sample_with_eos_states(
    model: LlamaCppModel,
    prompt: Sequence[int],
    n: int,
    params: GenerationParams,
    *,
    seed: int,
    tensor: str | None,
    greedy: bool = True,
    cache: EosStateCache | None = None,
    prefix_len: int = 0,
    prefix: PrefixState | None = None,
    sample_max_tokens: int | None = None,
) -> list[EosSample]:
    """The greedy continuation (if `greedy`) and `n` samples of `prompt`, each with the
    row of `tensor` (e.g. "ffn_out-12") at its EOS position (`tensor=None`: no states).

    Sampling follows `params` (temperature, top-k → top-p → min-p) with its own seeded
    stream; `params.stop` strings and `params.max_tokens` end a sequence, and the token
    that ended it is replaced by EOS for the state, as SeaKR's patched vLLM does.

    `sample_max_tokens` caps the samples (not the greedy sequence) below
    `params.max_tokens`. `prompt[:prefix_len]` is decoded on its own (and restored from or
    saved to `prefix` when given); it must be shorter than the prompt."""
    seqs = ([_Seq(greedy=True)] if greedy else []) + [_Seq(greedy=False) for _ in range(n)]
    if not seqs:
        return []
    if len(seqs) > model._max_parallel:
        raise ModelError(f"{len(seqs)} sequences exceed this model's {model._max_parallel} "
                         "parallel sequences", hint="raise max_parallel when loading")
    llm, tap = model.llm, model._tap
    with model._lock:
        n_ctx = llm.n_ctx()
        if not 0 <= prefix_len < len(prompt):
            raise ValueError(f"prefix_len {prefix_len} must be below the prompt's "
                             f"{len(prompt)} tokens")
        if len(prompt) + 2 > n_ctx:
            raise ModelError(f"prompt of {len(prompt)} tokens leaves no room in a context of "
                             f"{n_ctx}", hint="shorten the prompt or raise n_ctx")
        mem = low.llama_get_memory(llm.ctx)
        model.kv.clear()  # this call lays out the cache its own way
        low.llama_memory_clear(mem, True)
        batch = low.llama_batch_init(max(min(len(prompt), llm.n_batch), len(seqs)), 0,
                                     len(seqs))
        try:
            run = _TrieRun(model, batch, seqs, params, seed, tensor, cache, sample_max_tokens)
            run.decode_prompt(prompt, prefix_len, prefix)
            run.generate(n_ctx)
        finally:
            tap.wanted, tap.rows = None, None
            low.llama_batch_free(batch)
            low.llama_memory_clear(mem, True)
            llm.reset()
    return [EosSample(tuple(s.tokens), tuple(s.logprobs), s.finish, s.state, s.greedy)
            for s in seqs]


class _TrieRun:
    """State of one call: live groups of sequences sharing a prefix, and their logits."""

    def __init__(self, model: LlamaCppModel, batch: object, seqs: list[_Seq],
                 params: GenerationParams, seed: int, tensor: str | None,
                 cache: EosStateCache | None, sample_max_tokens: int | None = None) -> None:
        self.model, self.llm, self.batch, self.seqs = model, model.llm, batch, seqs
        self.sample_max_tokens = sample_max_tokens
        self.params, self.tensor, self.cache = params, tensor, cache
        self.vocab = low.llama_model_get_vocab(self.llm.model)
        self.n_vocab = low.llama_vocab_n_tokens(self.vocab)
        self.eos = model.eos_token
        self.rng = np.random.default_rng(seed)
        self.prompt: list[int] = []
        self.groups: list[tuple[list[int], np.ndarray]] = []
        self.used = 0  # KV cells in use

    def decode_prompt(self, prompt: Sequence[int], prefix_len: int = 0,
                      prefix: PrefixState | None = None) -> None:
        self.prompt = list(prompt)
        n = len(self.seqs)
        head, rest = self.prompt[:prefix_len], self.prompt[prefix_len:]
        if head and not (prefix is not None and prefix.restore(self.llm.ctx, head, n)):
            self._decode_span(head, 0, logits_last=False)
            if prefix is not None:
                prefix.save(self.llm.ctx, head)
        chunk_rows = self._decode_span(rest, len(head), logits_last=True)
        self.groups = [(list(range(n)), _row_logits(self.llm.ctx, chunk_rows - 1, self.n_vocab))]
        self.used = len(prompt)

    def _decode_span(self, tokens: Sequence[int], start: int, logits_last: bool) -> int:
        """Decode `tokens` at positions start.. for every sequence, in n_batch chunks;
        returns the size of the last chunk (its last row holds the logits)."""
        all_ids, b, step = list(range(len(self.seqs))), self.batch, self.llm.n_batch
        size = 0
        for off in range(0, len(tokens), step):
            chunk = tokens[off : off + step]
            b.n_tokens = size = len(chunk)  # type: ignore[attr-defined]
            for i, tok in enumerate(chunk):
                last = logits_last and off + i == len(tokens) - 1
                _set_row(b, i, tok, start + off + i, all_ids, last)
            _decode(self.llm.ctx, b)
        return size

    def generate(self, n_ctx: int) -> None:
        pos = len(self.prompt)
        for step in range(self.params.max_tokens):
            draws = self.rng.random(len(self.seqs))  # seq s always uses draws[s]
            rows = [r for members, logits in self.groups
                    for r in self._extend(members, logits, draws, step)]
            if self.used + len(rows) + sum(not r.eos for r in rows) > n_ctx:
                rows = self._finish_all(rows, "context")
            rows = self._resolve_cached(rows)
            if not rows:
                break
            self._decode_rows(rows, pos)
            self.used += len(rows)
            pos += 1
            if not self.groups:
                break

    # ---------------------------------------------------------------- one step
    def _extend(self, members: list[int], logits: np.ndarray, draws: np.ndarray,
                step: int) -> list[_Row]:
        """Pick each member's next token; rows for continuing tokens and one EOS row for
        the members that finished (they share a prefix, so their EOS rows coincide)."""
        logz = _log_z(logits)
        cdf: tuple[np.ndarray, np.ndarray] | None = None
        by_token: dict[int, list[int]] = {}
        for s in members:
            if self.seqs[s].greedy or self.params.temperature <= 0:
                tok = int(np.argmax(logits))
            else:
                if cdf is None:
                    cdf = _truncated_cdf(logits, self.params)
                idx, c = cdf
                tok = int(idx[min(int(np.searchsorted(c, draws[s] * c[-1], side="right")),
                                  len(idx) - 1)])
            by_token.setdefault(tok, []).append(s)
        prefix = list(self.seqs[members[0]].tokens)  # shared by every member
        finished: list[int] = []
        rows: list[_Row] = []
        for tok, group in by_token.items():
            if low.llama_vocab_is_eog(self.vocab, tok):
                self._end(group, "stop")
                finished += group
                continue
            for s in group:
                self.seqs[s].tokens.append(tok)
                self.seqs[s].logprobs.append(float(logits[tok] - logz))
            if self.params.stop and _hits_stop(self.llm, [*prefix, tok], self.params.stop):
                self._end(group, "stop")
                finished += group
                continue
            ending = [s for s in group if step == self._limit(s) - 1]
            self._end(ending, "length")
            finished += ending
            going = [s for s in group if s not in ending]
            if going:
                rows.append(_Row(going, tok, eos=False))
        if self.tensor is not None and any(not self.seqs[s].greedy for s in finished):
            # A natural EOS was not recorded and a stop/length token is replaced by EOS,
            # so in every case the EOS goes right after the shared prefix, at `pos`.
            rows.append(_Row(finished, self.eos, eos=True, key=self._key(prefix)))
        return rows

    def _limit(self, s: int) -> int:
        if self.sample_max_tokens is None or self.seqs[s].greedy:
            return self.params.max_tokens
        return min(self.params.max_tokens, self.sample_max_tokens)

    def _key(self, body: Sequence[int]) -> bytes:
        assert self.tensor is not None
        return EosStateCache.key(self.tensor, [*self.prompt, *body, self.eos])

    def _end(self, group: list[int], why: str) -> None:
        for s in group:
            self.seqs[s].finish = why

    def _finish_all(self, rows: list[_Row], why: str) -> list[_Row]:
        """Out of KV cells: every continuing sequence ends here (its token becomes EOS)."""
        out = [r for r in rows if r.eos]
        for r in rows:
            if r.eos:
                continue
            self._end(r.members, why)
            if self.tensor is not None:
                key = self._key(self.seqs[r.members[0]].tokens[:-1])
                same = next((o for o in out if o.key == key), None)
                if same is None:
                    out.append(_Row(list(r.members), self.eos, eos=True, key=key))
                else:
                    same.members += r.members
        return out

    def _resolve_cached(self, rows: list[_Row]) -> list[_Row]:
        if self.cache is None:
            return rows
        keep = []
        for r in rows:
            row = self.cache.get(r.key) if r.eos else None
            if row is None:
                keep.append(r)
            else:
                for s in r.members:
                    self.seqs[s].state = row
        return keep

    def _decode_rows(self, rows: list[_Row], pos: int) -> None:
        b, tap = self.batch, self.model._tap
        b.n_tokens = len(rows)  # type: ignore[attr-defined]
        for i, r in enumerate(rows):
            _set_row(b, i, r.token, pos, r.members, not r.eos)
        armed = any(r.eos for r in rows)
        tap.wanted = self.tensor.encode() if armed and self.tensor else None
        tap.rows = None
        try:
            _decode(self.llm.ctx, b)
        finally:
            tap.wanted = None
        if armed:
            states = tap.rows
            if states is None or states.shape[0] != len(rows):
                got = None if states is None else states.shape[0]
                raise ModelError(f"tensor {self.tensor} gave {got} rows for a batch of "
                                 f"{len(rows)}", hint="use a layer below the last one")
            for i, r in enumerate(rows):
                if r.eos:
                    row = states[i]
                    if self.cache is not None:
                        row = self.cache.put(r.key, row)
                    else:
                        row = np.array(row, copy=True)
                    for s in r.members:
                        self.seqs[s].state = row
        self.groups = [(r.members, _row_logits(self.llm.ctx, i, self.n_vocab))
                       for i, r in enumerate(rows) if not r.eos]


def _row_logits(ctx: object, i: int, n_vocab: int) -> np.ndarray:
    """A float32 copy of batch row i's logits (float64 over a 150k vocabulary would make
    the per-step numpy work cost as much as a decode on a 2-core CPU)."""
    ptr = low.llama_get_logits_ith(ctx, i)
    return np.array(np.ctypeslib.as_array(ptr, shape=(n_vocab,)), dtype=np.float32)


def _log_z(logits: np.ndarray) -> float:
    m = float(logits.max())
    return m + float(np.log(np.exp(logits - m, dtype=np.float32).sum(dtype=np.float64)))


def _truncated_cdf(logits: np.ndarray, p: GenerationParams) -> tuple[np.ndarray, np.ndarray]:
    """Candidates and their cumulative probabilities after top-k → top-p → min-p
    (`kgrag.llm.batched.truncate`); a uniform u is mapped through u * cdf[-1]."""
    idx, probs = truncate(logits, p)
    return idx, np.cumsum(probs)


def _set_row(b: object, i: int, tok: int, pos: int, seq_ids: Sequence[int],
             logits: bool) -> None:
    b.token[i] = tok  # type: ignore[attr-defined]
    b.pos[i] = pos  # type: ignore[attr-defined]
    b.n_seq_id[i] = len(seq_ids)  # type: ignore[attr-defined]
    for j, s in enumerate(seq_ids):
        b.seq_id[i][j] = s  # type: ignore[attr-defined]
    b.logits[i] = logits  # type: ignore[attr-defined]


def tokenize_prompt(model: LlamaCppModel, text: str) -> list[int]:
    """Tokens of a raw (non-chat) prompt, with BOS only if the model's vocabulary wants it."""
    return list(model.llm.tokenize(text.encode(), add_bos=True, special=False))


def token_pieces(model: LlamaCppModel, tokens: Sequence[int]) -> list[str]:
    """The text each token adds, so that ''.join(pieces) == the detokenized text (a
    multi-byte character split over tokens is attributed to the token that completes it)."""
    pieces, done, raw = [], "", b""
    for t in tokens:
        raw += model.llm.detokenize([t])
        text = raw.decode("utf-8", errors="ignore")
        pieces.append(text[len(done):])
        done = text
    return pieces
