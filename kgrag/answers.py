"""The short-answer line every chain-of-thought method ends with: "So the answer is: X".

DRAGIN and SeaKR read everything after the last "the answer is" (methods.md §1); the text
methods (`textrag.reasoning`) and the KG methods (`metakg.kg_method`) read it here, so
both kinds of method cut their answers the same way.

>>> extract_answer("Puccini was born in Lucca.\\nSo the answer is: **Italy**.")
'Italy'
>>> extract_answer("Italy") is None
True
"""

from __future__ import annotations

import re

ANSWER = re.compile(r"\bthe\s+(?:final\s+)?answer\s+is\b\s*:?", re.IGNORECASE)
_END_JUNK = re.compile(r"(?:</s>|<\|endoftext\|>|<\|im_end\|>)\s*$")
EDGE = " \t*_`\"'"


def extract_answer(text: str) -> str | None:
    """The short answer after the last "the answer is", or None when there is none.

    Only the line is cut and edge punctuation stripped; normalisation is eval's job.
    """
    marks = list(ANSWER.finditer(text))
    if not marks:
        return None
    rest = text[marks[-1].end():]
    line = next((ln for ln in rest.splitlines() if ln.strip(EDGE)), "")
    answer = _END_JUNK.sub("", line).strip(EDGE)
    if answer.endswith(".") and not answer.endswith(".."):
        answer = answer[:-1].rstrip(EDGE)
    return answer or None


def has_answer(text: str) -> bool:
    return ANSWER.search(text) is not None
