"""`kgrag bench chunks`' table and paired tests on fixed rows (the measure itself runs on
the real Neo4j: tests/integration/test_corpus_recall.py)."""

from __future__ import annotations

from textrag.chunk_bench import ChunkRow, chunk_table, paired_sizes


def _row(size: int, found: tuple[bool, ...]) -> ChunkRow:
    share = sum(found) / len(found)
    return ChunkRow(size, passages=1000 // size, mean_words=size * 0.8, index_seconds=1.0,
                    recall={"bm25": {5: share}}, mean={"bm25": {5: share}},
                    found={"bm25": {5: found}})


def test_each_size_is_tested_against_the_base_on_the_same_questions() -> None:
    rows = [_row(100, (False,) * 8 + (True,) * 2), _row(150, (True,) * 10),
            _row(400, (True,) * 10)]
    lines = paired_sizes(rows, 150, 5)
    assert lines == ["bm25 @5: 100 against 150 words -80.0 points, McNemar p = 0.00781",
                     "bm25 @5: 400 against 150 words +0.0 points, McNemar p = 1"]
    assert paired_sizes(rows, 200, 5) == []  # no row of the base size
    table = chunk_table(rows, (5,))
    assert table[0].endswith("| bm25 all / mean @5 % |")
    assert table[2] == "| 100 | 10 | 80 | 1.0 | 20.0 / 20.0 |"
