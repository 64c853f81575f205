"""What `kgrag.llm.eos_states` returns and keeps between calls: `EosSample` (one sampled
continuation and its EOS row), `EosStateCache` (EOS rows by token sequence, so identical
sequences get bit-identical vectors) and `PrefixState` (the KV cells of a shared prompt
prefix, restored into later calls).

    cache = EosStateCache(size=4096)
    sample_with_eos_states(model, tokens, 20, params, seed=42, cache=cache)
"""

from __future__ import annotations

import ctypes
import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import llama_cpp.llama_cpp as low
import numpy as np


@dataclass(frozen=True)
class EosSample:
    """One continuation: its tokens (a natural EOS is not included), the log-probability
    of each (temperature 1, before truncation), why it stopped, and the tapped EOS row."""

    tokens: tuple[int, ...]
    logprobs: tuple[float, ...]
    finish: str  # "stop" (EOS or a stop string), "length", or "context" (KV cells ran out)
    state: np.ndarray | None  # float32 row of the tapped tensor at the EOS position
    greedy: bool = False


class EosStateCache:
    """LRU of EOS rows keyed by (tensor, prompt + sample + EOS): identical token sequences
    always get the same, bit-identical vector, whichever batch computed it first.

    >>> cache = EosStateCache(size=1024)
    >>> row = cache.put(EosStateCache.key("ffn_out-12", [1, 2, 3]), np.zeros(896))
    >>> cache.get(EosStateCache.key("ffn_out-12", [1, 2, 3])) is row
    True
    """

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._rows: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self.hits = self.misses = 0

    @staticmethod
    def key(tensor: str, tokens: Sequence[int]) -> bytes:
        h = hashlib.blake2b(tensor.encode(), digest_size=20)
        h.update(np.asarray(tokens, dtype=np.int64).tobytes())
        return h.digest()

    def get(self, key: bytes) -> np.ndarray | None:
        row = self._rows.get(key)
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        self._rows.move_to_end(key)
        return row

    def put(self, key: bytes, row: np.ndarray) -> np.ndarray:
        row = np.array(row, dtype=np.float32, copy=True)
        row.setflags(write=False)
        self._rows[key] = row
        if len(self._rows) > self.size:
            self._rows.popitem(last=False)
        return row

    def __len__(self) -> int:
        return len(self._rows)


class PrefixState:
    """The KV cells of one token prefix (e.g. SeaKR's few-shot exemplars), saved after it
    was decoded on its own from position 0 and restored into later calls that start with
    the same tokens. The prefix is always decoded on its own, cached or not, so a call's
    result does not depend on whether the cache was warm."""

    def __init__(self) -> None:
        self.tokens: tuple[int, ...] = ()
        self.data: bytes = b""
        self.hits = self.misses = 0

    def save(self, ctx: object, tokens: Sequence[int]) -> None:
        size = low.llama_state_seq_get_size(ctx, 0)
        buf = (ctypes.c_uint8 * size)()
        written = low.llama_state_seq_get_data(ctx, buf, size, 0)
        self.tokens, self.data = tuple(tokens), bytes(buf[:written])

    def restore(self, ctx: object, tokens: Sequence[int], n_seqs: int) -> bool:
        """Put the saved cells back (into every sequence); False when it does not apply."""
        if not self.data or tuple(tokens) != self.tokens:
            self.misses += 1
            return False
        buf = (ctypes.c_uint8 * len(self.data)).from_buffer_copy(self.data)
        if low.llama_state_seq_set_data(ctx, buf, len(self.data), 0) == 0:
            self.misses += 1
            return False
        mem = low.llama_get_memory(ctx)
        for s in range(1, n_seqs):
            low.llama_memory_seq_cp(mem, 0, s, -1, -1)
        self.hits += 1
        return True
