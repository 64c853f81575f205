"""Reuse of a prompt prefix left in llama.cpp's KV cache, without history-dependent results.

On 2 CPU cores the 1.5B model reads a prompt at ~40 tokens/s, so the fixed part of a
prompt (an extraction system prompt with its relation kinds, IRCoT's exemplars) costs
more than the reply. Keeping its KV cells between calls saves that, but only if a call's
result does not depend on whether the cache was warm: llama.cpp's matrix kernels group
rows differently for different batch sizes, so a token decoded inside a 512-token batch
and the same token decoded at the head of a 30-token batch can differ in the last bits.

The rule that keeps results a function of the prompt alone: every prompt is decoded in
blocks aligned to absolute positions (`[0, B)`, `[B, 2B)`, ...), the last block ending
at the prompt's last whole block before its final token, then the tail (1..B tokens)
decoded with logits. A later prompt reuses the whole blocks it shares with what the cache
holds and decodes the rest the same way, so a warm call decodes exactly the blocks a cold
call would, with the same cells before them. Only blocks of the *prompt* count: generated
tokens were decoded one at a time, never as a block.

>>> kv = KvPrefix(block=4)
>>> kv.reusable([1, 2, 3, 4, 5, 6, 7, 8, 9])   # empty cache
0
>>> kv.spans([1, 2, 3, 4, 5, 6, 7, 8, 9], keep=0)  # blocks to decode before the tail
[(0, 4), (4, 8)]
>>> kv.hold([1, 2, 3, 4, 5, 6, 7, 8, 9])       # ... decoded
>>> kv.reusable([1, 2, 3, 4, 5, 6, 0, 0, 0, 0])  # shares 6 tokens: one whole block
4
"""

from __future__ import annotations

from collections.abc import Sequence

BLOCK = 64  # tokens; prompt speed here was ~35–55 tokens/s for 32- to 1024-token batches
# (noisy, no trend with size), so small blocks cost little and waste little at the seam
NO_REUSE = 1 << 30  # a block no prompt fills: nothing is decoded ahead or reused


def aligned_end(n_tokens: int, block: int) -> int:
    """Where the whole blocks of an `n_tokens` prompt end, leaving at least its last token."""
    return max(0, (n_tokens - 1) // block * block)


class KvPrefix:
    """The prompt tokens whose KV cells sit in sequence 0 as whole aligned blocks.

    The owner (the model) calls `reusable` and `clear` before decoding a prompt, decodes
    the blocks `spans` returns and the tail, then calls `hold`. Anything else that touches
    the cache (hidden-state reads, SeaKR's sampler) calls `clear`.
    """

    def __init__(self, block: int = BLOCK) -> None:
        if block < 1:
            raise ValueError("block must be at least 1 token")
        self.block = block
        self.tokens: list[int] = []
        self.reused = self.decoded = 0  # prompt tokens, for benchmarks and logs

    def reusable(self, prompt: Sequence[int]) -> int:
        """Leading tokens of `prompt` already in the cache, rounded down to whole blocks."""
        limit = min(len(self.tokens), aligned_end(len(prompt), self.block))
        n = 0
        while n < limit and self.tokens[n] == prompt[n]:
            n += 1
        return n // self.block * self.block

    def spans(self, prompt: Sequence[int], keep: int) -> list[tuple[int, int]]:
        """The whole blocks of `prompt` to decode after its first `keep` tokens (from
        `reusable`); the tail after them is the caller's, decoded with logits."""
        end = aligned_end(len(prompt), self.block)
        if keep % self.block or keep > end:
            raise ValueError(f"keep={keep} is not a whole-block prefix of {len(prompt)} tokens")
        self.reused += keep
        self.decoded += len(prompt) - keep
        return [(a, a + self.block) for a in range(keep, end, self.block)]

    def hold(self, prompt: Sequence[int]) -> None:
        """Record that `prompt`'s whole blocks are now in the cache (after `spans`)."""
        self.tokens = list(prompt[: aligned_end(len(prompt), self.block)])

    def clear(self) -> None:
        self.tokens = []
