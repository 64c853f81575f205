"""Prompt-prefix reuse bookkeeping (kgrag.llm.prefix): which blocks a prompt may reuse."""

from __future__ import annotations

import pytest

from kgrag.llm.prefix import NO_REUSE, KvPrefix, aligned_end


def test_aligned_end_always_leaves_the_last_token() -> None:
    assert [aligned_end(n, 4) for n in (0, 1, 4, 5, 8, 9)] == [0, 0, 0, 4, 4, 8]


def test_only_whole_shared_prompt_blocks_are_reused() -> None:
    kv = KvPrefix(block=4)
    first = list(range(10))
    assert kv.reusable(first) == 0
    assert kv.spans(first, 0) == [(0, 4), (4, 8)]
    kv.hold(first)
    assert kv.tokens == first[:8]  # the tail [8, 10) was decoded with logits, not as a block
    assert kv.reusable([0, 1, 2, 3, 4, 5, 99, 99, 99, 99]) == 4  # 6 shared → 1 block
    assert kv.reusable(first + [10, 11, 12]) == 8
    assert kv.reusable(first[:9]) == 8  # identical prefix, shorter prompt
    assert kv.reusable(first[:8]) == 4  # its last token must stay in the tail
    assert kv.spans(first + [10, 11, 12], 8) == [(8, 12)]
    kv.clear()
    assert kv.reusable(first) == 0


def test_keep_must_be_a_whole_block_within_the_prompt() -> None:
    kv = KvPrefix(block=4)
    with pytest.raises(ValueError):
        kv.spans(list(range(10)), 3)
    with pytest.raises(ValueError):
        kv.spans(list(range(5)), 8)
    with pytest.raises(ValueError):
        KvPrefix(block=0)


def test_no_reuse_decodes_nothing_ahead() -> None:
    kv = KvPrefix(NO_REUSE)
    prompt = list(range(3000))
    assert kv.spans(prompt, 0) == []
    kv.hold(prompt)
    assert kv.reusable(prompt) == 0


def test_common_prefix_leaves_every_prompt_a_token() -> None:
    from kgrag.llm.many import common_prefix

    assert common_prefix([[1, 2, 3, 4], [1, 2, 3, 5], [1, 2, 9]]) == 2
    assert common_prefix([[1, 2, 3], [1, 2, 3]]) == 2  # identical: the last token stays
    assert common_prefix([[7], [7, 8]]) == 0
    assert common_prefix([[1, 2], [3, 4]]) == 0


def test_reply_budgets_are_cut_to_the_context_and_a_prompt_that_cannot_fit_is_refused(
) -> None:
    import pytest

    from kgrag.errors import ModelError
    from kgrag.llm.many import Request, reply_budgets

    assert reply_budgets([Request([1] * 10, 50), Request([1] * 90, 50)], n_ctx=100) == [50, 10]
    with pytest.raises(ModelError, match="does not fit"):
        reply_budgets([Request([1] * 100, 5)], n_ctx=100)
