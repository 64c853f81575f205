"""`kgrag corpus …`: load, inspect and benchmark the passage corpus of the text methods.

    kgrag corpus load [--file F] [--limit N] [--batch-size B]
    kgrag corpus stats
    kgrag corpus bench [--queries 100] [--load-sample 1000]

The root CLI adds this group with `register(app)`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

corpus_app = typer.Typer(no_args_is_help=True,
                         help="Load and inspect the passage corpus of the text methods.")
console = Console()


def register(app: typer.Typer) -> None:
    """Add the `corpus` command group to the root `kgrag` app."""
    app.add_typer(corpus_app, name="corpus")


@corpus_app.command("load")
def corpus_load(
    file: Annotated[Path | None, typer.Option(
        "--file", help="JSONL(.gz) of {id, title, text}; default: the shared Wikipedia "
        "corpus (wikipedia/wiki_passages.jsonl.gz under KGRAG_DATA_DIR).")] = None,
    limit: Annotated[int | None, typer.Option(min=0, help="Load only the first N passages.")
                     ] = None,
    batch_size: Annotated[int, typer.Option(min=1, help="Passages per embedding batch and "
                                            "write transaction.")] = 256,
) -> None:
    """Load passages with MiniLM embeddings (idempotent: stored passages are skipped)."""
    from kgrag.platform import Platform
    from textrag.corpus import default_corpus_path, load_corpus

    p = Platform()
    path = file or default_corpus_path(p.settings)
    p.store.apply_schema()
    report = load_corpus(p.store, p.embedder, path, limit=limit, batch_size=batch_size)
    console.print(str(report))
    for problem in report.problems[:20]:
        console.print(f"  [yellow]line {problem.line}:[/] {problem.message}")
    if report.broken > 20:
        console.print(f"  … and {report.broken - 20} more broken lines (see the log)")


@corpus_app.command("stats")
def corpus_stats() -> None:
    """How many passages are stored, and how many have their vector."""
    from kgrag.platform import Platform

    row = Platform().store.read("textrag/count_passages")[0]
    console.print(f"{row['passages']:,} passages, {row['embedded']:,} embedded")


@corpus_app.command("bench")
def corpus_bench(
    queries: Annotated[int, typer.Option(min=1, help="Queries (passage titles).")] = 100,
    load_sample: Annotated[int, typer.Option(min=0, help="Passages for the cold-load "
                                             "measure (loaded under temporary ids).")] = 1000,
) -> None:
    """Median BM25, dense and hybrid latency, and corpus load speed."""
    from kgrag.platform import Platform
    from textrag.bench import bench_retrieval

    bench_retrieval(Platform(), console, queries=queries, load_sample=load_sample)
