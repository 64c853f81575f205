"""Entity resolution: merges by key, string + cosine similarity, guards, domains, blocking.

Embeddings are synthetic unit vectors with chosen cosines, so each test controls the
embedding side of the decision exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

from kg_builder.resolve import ResolveConfig, resolve_entities

DIM = 64


class Vectors:
    """Unit vectors: `new()` nearly orthogonal to all others, `near(v, c)` at cosine c."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.basis = np.linalg.qr(self.rng.standard_normal((DIM, DIM)))[0]
        self.used = 0

    def new(self) -> np.ndarray:
        self.used += 1
        return self.basis[self.used - 1].copy()

    def near(self, v: np.ndarray, cosine: float) -> np.ndarray:
        w = self.new()  # orthogonal to v
        return cosine * v + np.sqrt(1 - cosine**2) * w


def groups(names: list[str], result: object) -> list[set[str]]:
    cluster_of = result.cluster_of  # type: ignore[attr-defined]
    out: dict[int, set[str]] = {}
    for name, c in zip(names, cluster_of, strict=True):
        out.setdefault(int(c), set()).add(name)
    return sorted(out.values(), key=lambda s: sorted(s))


def test_heart_attack_variants_merge_but_heart_does_not() -> None:
    vec = Vectors()
    base = vec.new()
    names = ["heart attack", "heart attacks", "Heart Attack", "heart"]
    emb = np.stack([base, vec.near(base, 0.97), vec.near(base, 0.99), vec.near(base, 0.99)])
    result = resolve_entities(names, emb, "medical")
    assert groups(names, result) == [{"Heart Attack", "heart attack", "heart attacks"},
                                     {"heart"}]
    cluster = result.clusters[int(result.cluster_of[0])]
    assert cluster.key == "heart attack" and cluster.domain == "medical"
    assert cluster.canonical == "Heart Attack"  # equal counts and lengths: alphabetical
    assert cluster.aliases == ("heart attack", "heart attacks")
    assert result.key_map()[("medical", "heart attack")] == "heart attack"


def test_never_merges_across_domains() -> None:
    vec = Vectors()
    v = vec.new()
    names = ["heart attack", "heart attack", "Heart Attacks", "colour", "color"]
    domains = ["medical", "commonsense", "commonsense", "medical", "commonsense"]
    emb = np.stack([v, v, v, vec.new(), vec.new()])
    emb[4] = emb[3]
    result = resolve_entities(names, emb, domains, config=ResolveConfig(neighbours=4))
    assert len(result.clusters) == 4
    assert {(c.domain, c.key) for c in result.clusters} == {
        ("medical", "heart attack"), ("commonsense", "heart attack"),
        ("medical", "colour"), ("commonsense", "color")}
    assert result.cluster_of[1] == result.cluster_of[2] != result.cluster_of[0]


def test_similar_spelling_needs_close_embeddings_too() -> None:
    vec = Vectors()
    a = vec.new()
    names = ["alzheimer's disease", "alzheimer disease"]
    close = resolve_entities(names, np.stack([a, vec.near(a, 0.95)]), "medical")
    far = resolve_entities(names, np.stack([a, vec.near(a, 0.50)]), "medical")
    assert len(close.clusters) == 1 and close.similarity_merges == 1
    assert len(far.clusters) == 2 and far.similarity_merges == 0


@pytest.mark.parametrize(("a", "b"), [
    ("hypertension", "hypotension"),
    ("hyperthyroidism", "hypothyroidism"),
    ("type 1 diabetes", "type 2 diabetes"),
    ("vitamin a", "vitamin d"),
    ("typical pneumonia", "atypical pneumonia"),
    ("male", "female"),
    ("smoker", "non smoker"),
])
def test_guards_keep_meaning_changing_variants_apart(a: str, b: str) -> None:
    vec = Vectors()
    v = vec.new()
    emb = np.stack([v, vec.near(v, 0.99)])
    lenient = ResolveConfig(min_string_similarity=0.6, guards=True, neighbours=1)
    assert len(resolve_entities([a, b], emb, "medical", config=lenient).clusters) == 2


def test_guards_are_what_keeps_them_apart() -> None:
    vec = Vectors()
    v = vec.new()
    emb = np.stack([v, vec.near(v, 0.99)])
    names = ["hypertension", "hypotension"]
    off = ResolveConfig(guards=False, neighbours=1)
    assert len(resolve_entities(names, emb, "medical", config=off).clusters) == 1


def test_nearest_neighbour_blocking_finds_variants_without_a_shared_word() -> None:
    vec = Vectors()
    v = vec.new()
    names = ["colour", "color", "paint"]
    emb = np.stack([v, vec.near(v, 0.95), vec.new()])
    assert len(resolve_entities(names, emb, "commonsense").clusters) == 3  # token blocking only
    knn = resolve_entities(names, emb, "commonsense", config=ResolveConfig(neighbours=2))
    assert groups(names, knn) == [{"color", "colour"}, {"paint"}]


def test_very_common_words_do_not_form_blocks() -> None:
    vec = Vectors()
    v = vec.new()
    names = ["colour disease", "color disease", "beta disease", "gamma disease"]
    emb = np.stack([v, v, v, v])
    small = resolve_entities(names, emb, "medical", config=ResolveConfig(max_block_size=3))
    assert small.candidate_pairs == 0  # the only shared word, "disease", is in 4 names
    assert len(small.clusters) == 4
    wide = resolve_entities(names, emb, "medical")
    assert wide.candidate_pairs == 6
    assert groups(names, wide) == [{"beta disease"}, {"color disease", "colour disease"},
                                   {"gamma disease"}]


def test_canonical_is_most_frequent_then_shortest() -> None:
    vec = Vectors()
    v = vec.new()
    names = ["Myocardial Infarctions", "myocardial infarction", "myocardial infarctions"]
    emb = np.stack([v, v, v])
    by_count = resolve_entities(names, emb, "medical", counts=[5, 1, 1])
    assert by_count.clusters[0].canonical == "Myocardial Infarctions"
    by_length = resolve_entities(names, emb, "medical", counts=[1, 1, 1])
    assert by_length.clusters[0].canonical == "myocardial infarction"
    assert by_length.clusters[0].key == "myocardial infarction"
    assert set(by_length.clusters[0].aliases) == {"Myocardial Infarctions",
                                                  "myocardial infarctions"}


def test_merges_are_transitive() -> None:
    vec = Vectors()
    v = vec.new()
    names = ["haemoglobin level", "hemoglobin level", "hemoglobin levels"]
    emb = np.stack([v, vec.near(v, 0.93), vec.near(v, 0.93)])
    result = resolve_entities(names, emb, "medical")
    assert len(result.clusters) == 1


def test_input_validation_and_empty_input() -> None:
    with pytest.raises(ValueError, match="same length"):
        resolve_entities(["a", "b"], np.zeros((3, DIM)), "x")
    with pytest.raises(ValueError, match="same length"):
        resolve_entities(["a"], np.zeros((1, DIM)), ["x", "y"])
    empty = resolve_entities([], np.zeros((0, DIM)), "x")
    assert empty.clusters == () and empty.cluster_of.shape == (0,)


def test_names_a_fact_relates_stay_apart_directly_and_through_a_third() -> None:
    vec = Vectors()
    a = vec.new()
    names = ["haemoglobin", "hemoglobin", "hemoglobine"]
    emb = np.stack([a, vec.near(a, 0.95), vec.near(a, 0.95)])
    knn = ResolveConfig(neighbours=2)
    assert len(resolve_entities(names, emb, "medical", config=knn).clusters) == 1
    # a fact between the first two: never one cluster, even through the third
    kept = resolve_entities(names, emb, "medical", config=knn, apart=[(0, 1)])
    assert groups(names, kept) == [{"haemoglobin", "hemoglobine"}, {"hemoglobin"}]
    chained = resolve_entities(names, emb, "medical", config=knn, apart=[(0, 2)])
    assert groups(names, chained) == [{"haemoglobin", "hemoglobin"}, {"hemoglobine"}]


def test_identity_predicates_do_not_keep_names_apart() -> None:
    from kg_builder.resolve import IDENTITY

    for same in ("also called", "is also known as", "abbreviation of", "same as"):
        assert IDENTITY.search(same), same
    for other in ("is a", "type of", "part of", "called for", "recalled"):
        assert not IDENTITY.search(other), other


def test_the_resolution_marker_stays_in_the_domain_jobs_folder_whatever_the_name() -> None:
    """Hostile or odd domain names give one folder each under home/jobs, none the same."""
    from pathlib import Path

    from kg_builder.domains import jobs_folder
    from kg_builder.resolution import resolved_marker

    home = Path("/home/k")
    names = ["wikipedia", "a/b", "a%2Fb", "..", ".", ".x", "", "%", "c:\\x", "../../etc",
             "my docs", "tést", "a\nb", "a~b", "x" * 300, "x" * 301, "é" * 150]
    folders = [resolved_marker(home, n).parent for n in names]
    assert all(f.parent == home / "jobs" and f.name not in {"", ".", ".."}
               and len(f.name.encode()) <= 200 for f in folders)
    assert len(set(folders)) == len(names)
    assert resolved_marker(home, "wikipedia") == home / "jobs/wikipedia/resolved.fingerprint"
    assert all(resolved_marker(home, n).parent == jobs_folder(home, n) for n in names)
    assert jobs_folder(home, "tést").name == "tést"  # earlier builds' folders stay put
