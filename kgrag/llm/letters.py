"""Option letters as next tokens: their variants, and their distribution over valid letters.

A multiple-choice answer is read from the model's next-token distribution at the answer
position (`ChatModel.next_token_logprobs`). A letter can be written with or without a
leading space ("A", " A"), and both are single tokens in the tokenisers we use; the
letter's log-probability is the log-sum-exp over its variants. The distribution is then
renormalised over the valid letters only, so mass on other tokens ("The", "**") is not
counted against any option.

>>> probs = renormalise({"A": -1.0, "B": -2.0, "C": -9.0})
>>> round(sum(probs.values()), 6), max(probs, key=probs.get)
(1.0, 'A')
>>> letter_variants("B")
('B', ' B')
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from kgrag.errors import ModelError

NEG_INF = float("-inf")


def letter_variants(letter: str) -> tuple[str, ...]:
    """The spellings of `letter` as a next token: bare and after a space."""
    return (letter, f" {letter}")


def logsumexp(values: Iterable[float]) -> float:
    vals = [v for v in values if v != NEG_INF]
    if not vals:
        return NEG_INF
    top = max(vals)
    return top + math.log(sum(math.exp(v - top) for v in vals))


def renormalise(logprobs: Mapping[str, float]) -> dict[str, float]:
    """Probabilities over the given letters only (softmax of their log-probabilities).

    A letter at -inf gets 0; all at -inf is an error (nothing to read)."""
    total = logsumexp(logprobs.values())
    if total == NEG_INF:
        raise ModelError("no option letter has any probability at the answer position",
                         hint="the prompt must end where the option letter is written")
    return {k: (0.0 if v == NEG_INF else math.exp(v - total)) for k, v in logprobs.items()}


def from_top_logprobs(top: Sequence[tuple[str, float]], letters: Sequence[str]
                      ) -> dict[str, float]:
    """Letter log-probabilities from a server's `top_logprobs` list of one position.

    A token counts for a letter when, stripped of surrounding spaces, it is the letter
    (so "A" and " A" both count, log-sum-exp'd). A letter absent from the list gets -inf:
    its probability is below the listed ones, and with enough alternatives asked for
    (20) the listed letters hold nearly all the mass."""
    found: dict[str, list[float]] = {x: [] for x in letters}
    seen: set[str] = set()
    for token, lp in top:
        key = token.strip()
        if key in found and token not in seen:
            seen.add(token)
            found[key].append(lp)
    return {x: logsumexp(v) for x, v in found.items()}


def argmax(probs: Mapping[str, float]) -> str:
    """The most probable letter; ties go to the first listed (deterministic)."""
    return max(probs, key=lambda k: probs[k])
