"""Pieces the text methods share: sentences, "So the answer is" lines, passages in
prompts, logged retrieval, and the forced final answer.

>>> first_sentence("Ada Lovelace was born in London. She died in 1852.")
'Ada Lovelace was born in London.'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from kgrag.answers import ANSWER, completion_answer
from kgrag.llm.base import ChatModel, GenerationParams
from kgrag.method import Trace
from kgrag.prompt import package_prompt
from kgrag.types import Passage
from textrag.retrieval import Retrieved, Retriever

# DRAGIN/SeaKR's answer line ("… the answer is: X") is read by kgrag.answers, the one
# answer extractor of every method and the scorer.
# A sentence ends at . ! ? (and closing quotes/brackets) followed by whitespace or the end.
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*(?=\s|$)")
_ABBREVIATIONS = frozenset({
    "mr", "mrs", "ms", "dr", "st", "jr", "sr", "vs", "no", "mt", "ft", "co", "inc", "ltd", "gen",
    "col", "lt", "sgt", "prof", "rev", "fr", "ca", "approx", "etc", "jan", "feb", "mar", "apr",
    "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
})
# "Thought:", "Answer 2:", "Step 1:", or a list marker ("1.", "2)", "-", "*") before a reply
_LABEL = re.compile(r"^\s*(?:(?:thought|answer|reasoning|next thought|step)\s*\d*\s*:|\d{1,2}[.)]"
                    r"(?=\s)|[-*\u2022](?=\s))\s*", re.IGNORECASE)


def sentence_end(text: str, start: int = 0) -> int:
    """Index just past the first sentence of `text[start:]` (a newline also ends one)."""
    newline = text.find("\n", start)
    limit = len(text) if newline < 0 else newline
    for m in _SENTENCE_END.finditer(text, start, limit):
        if m.group().startswith(".") and _is_abbreviation(text[start:m.start()]):
            continue
        return m.end()
    return limit


def _is_abbreviation(before: str) -> bool:
    word = re.search(r"(\w+)$", before)
    if word is None:
        return False
    w = word.group(1)
    # "J. R. R. Tolkien", "St. Louis", "U.S." (a one-letter word before the full stop)
    return len(w) == 1 and w.isalpha() or w.lower() in _ABBREVIATIONS


def first_sentence(text: str) -> str:
    """The first sentence of a reply, without a "Thought:" label or list marker.

    A sentence that starts the final answer runs to the end of the answer's line, so
    "So the answer is: St. Louis." is kept whole.
    """
    text = _LABEL.sub("", text.lstrip(), count=1)
    end = sentence_end(text)
    mark = ANSWER.search(text)
    if mark is not None and mark.start() < end:
        rest = text[mark.end():]
        skipped = len(rest) - len(rest.lstrip())
        newline = rest.find("\n", skipped)
        end = mark.end() + (len(rest) if newline < 0 else newline)
    return text[:end].strip()


def format_passages(passages: Sequence[Passage]) -> str:
    """Numbered passages with their titles: `[1] Title: text`."""
    return "\n".join(f"[{i}] {p.title}: {p.text}" if p.title else f"[{i}] {p.text}"
                     for i, p in enumerate(passages, 1))


def format_wikipedia(passages: Sequence[Passage]) -> str:
    """IRCoT's paragraph format: `Wikipedia Title: T` then the text, blank-line separated."""
    return "\n\n".join(f"Wikipedia Title: {p.title}\n{p.text}" for p in passages)


@dataclass
class RetrievalLog:
    """Retrieval calls made for one question and the passages they brought, in order."""

    calls: int = 0
    passages: dict[str, Passage] = field(default_factory=dict)

    def search(self, retriever: Retriever, query: str, k: int, trace: Trace, *,
               step: int = 0, stage: str = "retrieve") -> list[Retrieved]:
        """Run one retrieval and record its query, passage ids, titles and scores."""
        hits = retriever.search(query, k)
        self.calls += 1
        for h in hits:
            self.passages.setdefault(h.passage.id, h.passage)
        trace.add(stage, f"{len(hits)} passages for {query!r}", step=step, query=query, k=k,
                  setting=retriever.setting, ids=[h.passage.id for h in hits],
                  titles=[h.passage.title for h in hits],
                  scores=[round(h.score, 4) for h in hits])
        return hits

    @property
    def evidence(self) -> list[str]:
        """Titles of every passage shown to the model (for supporting-fact recall)."""
        return list(dict.fromkeys(p.title or p.id for p in self.passages.values()))


def forced_answer(model: ChatModel, question: str, reasoning: str, passages: Sequence[Passage],
                  trace: Trace, max_tokens: int = 20) -> str:
    """DRAGIN's fallback when the reasoning stopped without "So the answer is": ask for
    the completion of that line (greedy, `max_tokens`=20) and keep its first line."""
    context = f"Passages:\n{format_passages(passages)}\n\n" if passages else ""
    messages = package_prompt(__file__, "answer_forced").render(
        context=context, question=question, reasoning=reasoning or "(none)")
    reply = model.chat(messages, GenerationParams(max_tokens=max_tokens))
    text = reply.text.strip()
    answer = completion_answer(text)
    trace.add("answer", answer, forced=True, reply=reply.text)
    return answer
