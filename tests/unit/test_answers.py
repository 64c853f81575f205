"""kgrag.answers, the one answer extractor: the behaviours of the three parsers it replaced
(the methods' `kgrag.answers`, the scorer's `extract_answer`, SeaKR's
`textrag.seakr.text.find_answer`), and every committed reply read as it was scored."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kgrag.answers import clean_answer, completion_answer, find_answer, has_answer, reply_answer
from textrag.seakr.text import seakr_answer

ROOT = Path(__file__).resolve().parents[2]


# The methods' reading (chain-of-thought, KG short answers): the last marker, its line.
@pytest.mark.parametrize(("text", "answer"), [
    ("Babbage was born in London. So the answer is: London.", "London"),
    ("so the answer is **St. Louis**", "St. Louis"),  # the line, not the first sentence
    ("The answer is:\n\nGreenwich Village, New York City.", "Greenwich Village, New York City"),
    ("So the answer is: London.<|im_end|>", "London"),
    ("He answered no. Then: so the answer is: yes", "yes"),  # the last marker wins
    ("The answer is A. Later: the final answer is B", "B"),
    ("Step 4: So the answer is: Paris\nThis answer is directly stated in the passage.",
     "Paris"),  # "This answer is" is no marker
    ("Genina died there. Rome is the answer", "Rome"),
    ("No marker here.", None),
    ("So the answer is:", None),
])
def test_methods_read_the_last_answer_line(text: str, answer: str | None) -> None:
    assert find_answer(text) == answer


# The scorer: the stated answer, or the whole reply when it states none.
@pytest.mark.parametrize(("text", "expected"), [
    ("Paris is in France.\nSo the answer is: Paris.", "Paris"),
    ("Answer: **Greenwich Village, New York City**", "Greenwich Village, New York City"),
    ("So the answer is Sonnac", "Sonnac"),
    ('The answer is:\n\n  "1972"\nmore text', "1972"),
    ("  Sonnac \n", "Sonnac"),  # no marker: the whole reply
    ("So the answer is:", ""),  # a marker with nothing after it is no answer
])
def test_the_scorer_reads_the_stated_answer_or_the_whole_reply(text: str, expected: str
                                                               ) -> None:
    assert reply_answer(text) == expected


# SeaKR: the first marker and its first sentence, as the official reasoner reads them.
@pytest.mark.parametrize(("text", "answer"), [
    ("Rome is big. So the answer is Rome.", "Rome"),
    ("So the answer is: F.W. Murnau.", "F.W. Murnau"),  # an initial is no sentence end
    ("So the answer is August 25, 1963. Then more.", "August 25, 1963"),
    ("So the answer is Gyeongju. So the answer is Gyeongju. So the answer is Gye", "Gyeongju"),
    ("Genina died there. Rome is the answer", "Rome"),
    ("Genina died in Rome", None),
    ("So the answer is .", None),
])
def test_seakr_reads_the_first_answer_sentence(text: str, answer: str | None) -> None:
    assert seakr_answer(text) == answer


def test_marker_detection_and_forced_completions() -> None:
    assert has_answer("so the answer is") and has_answer("Answer: 4")
    assert not has_answer("This answer is directly stated.") and not has_answer("Rome.")
    assert completion_answer(" Lima.\nmore") == "Lima"  # the bare rest of the line
    assert completion_answer("So the answer is: Lima") == "Lima"
    assert clean_answer("  ") is None


def _committed() -> Iterator[tuple[str, dict[str, Any]]]:
    for path in sorted((ROOT / "docs" / "results").glob("*/predictions.jsonl")):
        for line in path.read_text().splitlines():
            yield path.parent.name, json.loads(line)


@pytest.mark.results
def test_every_committed_reply_reads_as_its_method_read_it() -> None:
    """The text methods' recorded answer is what `find_answer` reads from their recorded
    reasoning; SeaKR's what `seakr_answer` reads from its chains of thought."""
    checked = {"methods": 0, "seakr": 0}
    for run, line in _committed():
        for step in line["prediction"]["trace"]:
            data = step.get("data") or {}
            if step["stage"] == "answer" and data.get("reasoning") and not data.get("forced"):
                checked["methods"] += 1
                assert find_answer(data["reasoning"]) == step["summary"], (run, step)
            for part in ("rationales", "knowledge") if step["stage"] == "reason" else ():
                read = data.get(part)
                if isinstance(read, dict) and read.get("cot") and not read.get("forced"):
                    checked["seakr"] += 1
                    assert seakr_answer(read["cot"]) == read["answer"], (run, read)
    assert checked["methods"] > 1000 and checked["seakr"] > 1000, checked
