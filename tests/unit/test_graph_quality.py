"""Connected components of the graph-quality report (`kgrag graph stats`)."""

from __future__ import annotations

from kg_builder.quality import components


def test_components_are_undirected_and_count_isolated_keys() -> None:
    edges = [("a", "b"), ("c", "b"), ("d", "e"), ("f", "f")]
    assert components("ag", edges) == [3, 2, 1, 1]  # {a,b,c} {d,e} {f} {g}
    assert components([], []) == []


def test_components_of_a_long_chain_do_not_recurse() -> None:
    n = 50_000
    assert components([], ((str(i), str(i + 1)) for i in range(n))) == [n + 1]
