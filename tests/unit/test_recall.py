"""`kgrag corpus recall`'s measure on a fixed retriever: supporting titles any/all in the
top k, the answer as whole words in the passages' text, one search per question."""

from __future__ import annotations

import pytest

from kgrag.types import Passage, Question
from textrag.recall import measure_recall, paired_table, paired_tests, recall_json, recall_table
from textrag.retrieval import Retrieved, Setting


class Fixed:
    """Returns the listed passages for each query, best first; counts the searches."""

    setting: Setting = "open"

    def __init__(self, results: dict[str, list[tuple[str, str]]]) -> None:
        self.results, self.calls = results, []

    def search(self, query: str, k: int) -> list[Retrieved]:
        self.calls.append((query, k))
        return [Retrieved(Passage(id=f"{query}:{i}", title=t, text=x), 1.0 / (i + 1), i + 1)
                for i, (t, x) in enumerate(self.results[query][:k])]


def test_recall_counts_supporting_titles_and_answers_at_each_cut_off() -> None:
    questions = [
        Question(id="1", text="q1", answers=["Paris"], supporting=["France", "Seine"]),
        Question(id="2", text="q2", answers=["an art"], supporting=["Art"]),
        Question(id="3", text="q3", answers=["x"]),  # no supporting titles
    ]
    r = Fixed({"q1": [("France", "Its capital is Paris."), ("Other", "-"), ("Seine", "A river")],
               "q2": [("Cart", "A cart is old"), ("Art", "Art is old")],
               "q3": [("X", "the letter x")]})
    rows = {row.k: row for row in measure_recall(questions, {"fixed": r}, ks=(3, 1))}
    assert r.calls == [("q1", 3), ("q2", 3), ("q3", 3)]  # once each, with the largest k
    assert (rows[1].support_any, rows[1].support_all) == (0.5, 0.0)
    assert (rows[3].support_any, rows[3].support_all) == (1.0, 1.0)
    assert rows[1].n_supported == 2 and rows[1].n == 3
    # "an art" normalises to "art", not a whole word of "A cart is old" (k = 1)
    assert rows[1].answer == pytest.approx(2 / 3) and rows[3].answer == pytest.approx(1.0)
    assert recall_table([rows[3]])[2].startswith("| fixed | 3 | 3 | 100.0 | 100.0 | 100.0 |")


def test_no_questions_is_an_error() -> None:
    with pytest.raises(ValueError, match="no questions"):
        measure_recall([], {"fixed": Fixed({})})


def test_mean_recall_json_and_paired_tests() -> None:
    """`mean` is HippoRAG 2's share of supporting paragraphs found; `all` needs every one.
    The JSON has both per k; the paired tests compare retrievers on the same questions."""
    questions = [Question(id=str(i), text=f"q{i}", answers=["-"], supporting=["A", "B"])
                 for i in range(4)]
    half = Fixed({f"q{i}": [("A", "a"), ("C", "c")] for i in range(4)})
    both = Fixed({f"q{i}": [("A", "a"), ("B", "b")] for i in range(4)})
    rows = measure_recall(questions, {"half": half, "both": both}, ks=(1, 2))
    by = {(r.retriever, r.k): r for r in rows}
    assert (by["half", 2].support_all, by["half", 2].support_mean) == (0.0, 0.5)
    assert (by["both", 1].support_all, by["both", 1].support_mean) == (0.0, 0.5)
    assert (by["both", 2].support_all, by["both", 2].support_mean) == (1.0, 1.0)
    assert recall_json(rows) == {"questions": 4, "recall": {
        "half": {"all": {"1": 0.0, "2": 0.0}, "mean": {"1": 0.5, "2": 0.5}},
        "both": {"all": {"1": 0.0, "2": 1.0}, "mean": {"1": 0.5, "2": 1.0}}}}
    [t] = paired_tests(rows, 2)
    assert (t.a, t.b, t.all_diff, t.mean_diff) == ("half", "both", -1.0, -0.5)
    assert t.all_p == 0.125  # McNemar exact, 4 discordant questions all one way
    assert paired_table([t])[2].startswith("| half | both | 2 | -100.0 | 0.125 | -50.0 |")


def test_a_domain_title_matches_its_heading_path_or_file_case_folded() -> None:
    """Over a domain's passages a supporting title names a section (any leading part of
    the heading path) or a file; a heading deeper in the path alone does not match."""
    from textrag.recall import TitleMatcher

    questions = [Question(id="1", text="q", answers=["-"], supporting=["guide > SETUP"]),
                 Question(id="2", text="q", answers=["-"], supporting=["Guide"]),
                 Question(id="3", text="q", answers=["-"], supporting=["Setup"]),
                 Question(id="4", text="q", answers=["-"], supporting=["notes"])]

    class One:
        setting: Setting = "open"

        def search(self, query: str, k: int) -> list[Retrieved]:
            return [Retrieved(Passage(id="d:notes:L3", title="Guide > Setup", text="-"), 1, 1)]

    rows = measure_recall(questions, {"one": One()}, ks=(1,),
                          match=TitleMatcher.for_domain("d"))
    assert rows[0].all_found == (True, True, False, True)
    exact = measure_recall(questions, {"one": One()}, ks=(1,))
    assert exact[0].all_found == (False, False, False, False)
