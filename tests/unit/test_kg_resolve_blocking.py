"""Blocked candidate generation of entity resolution (spelling blocks) and rule 5
(lexicon words stay apart). Vectors are synthetic with chosen cosines."""

from __future__ import annotations

import string

import numpy as np

from kg_builder.resolve import ResolveConfig, candidate_pairs, resolve_entities

SPELLING = ResolveConfig(spelling=True)


def _pseudo_words(n: int, seed: int = 1) -> list[str]:
    rng = np.random.default_rng(seed)
    letters = np.array(list(string.ascii_lowercase))
    words = {"".join(rng.choice(letters, size=int(rng.integers(6, 11)))) for _ in range(n)}
    return sorted(words)


def test_spelling_variants_become_candidates_among_thousands_of_names() -> None:
    variants = [("colour", "color"), ("haemoglobin", "hemoglobin"), ("analyse", "analyze"),
                ("grey whale", "gray whale")]
    names = [w for pair in variants for w in pair] + _pseudo_words(3000)
    pairs = candidate_pairs(names, "commonsense", SPELLING)
    for a, b in variants:
        assert (names.index(a), names.index(b)) in pairs
    n = len(names)
    assert len(pairs) < n  # all pairs would be n(n-1)/2 ≈ 4.5 million
    assert len(pairs) < 0.0001 * n * (n - 1) / 2


def test_without_spelling_blocks_words_without_a_shared_word_are_no_candidates() -> None:
    names = ["colour", "color"]
    assert candidate_pairs(names, "commonsense", ResolveConfig()) == set()
    assert candidate_pairs(names, "commonsense", SPELLING) == {(0, 1)}


def test_short_keys_form_no_spelling_blocks() -> None:
    # one edit in a 3-letter word is never a spelling variant (difflib ratio 0.67)
    assert candidate_pairs(["cat", "bat", "car"], "commonsense", SPELLING) == set()


def _vectors(*cosines_to_first: float, dim: int = 16) -> np.ndarray:
    basis = np.eye(dim)
    rows = [basis[0]]
    for i, c in enumerate(cosines_to_first, start=1):
        rows.append(c * basis[0] + np.sqrt(1 - c * c) * basis[i])
    return np.asarray(rows, dtype=np.float32)


def test_spelling_blocks_let_resolution_merge_variants() -> None:
    names = ["haemoglobin", "hemoglobin"]
    emb = _vectors(0.95)
    assert len(resolve_entities(names, emb, "medical").clusters) == 2
    assert len(resolve_entities(names, emb, "medical", config=SPELLING).clusters) == 1


def test_two_lexicon_words_never_merge_but_one_absorbs_a_variant() -> None:
    names = ["adverse", "averse", "adversee"]
    emb = _vectors(0.9, 0.99)
    cfg = ResolveConfig(spelling=True, min_string_similarity=0.8)
    merged = resolve_entities(names, emb, "commonsense", config=cfg)
    assert len(merged.clusters) == 1  # without rule 5 all three are one entity
    kept = resolve_entities(names, emb, "commonsense", config=cfg, distinct=[0, 1])
    clusters = sorted(sorted(names[i] for i in c.members) for c in kept.clusters)
    assert clusters == [["adverse", "adversee"], ["averse"]]
