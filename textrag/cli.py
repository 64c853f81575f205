"""`kgrag corpus …`: load, inspect and benchmark the passage corpus of the text methods.

    kgrag corpus load [--domain medical] [--file F] [--limit N] [--batch-size B]
    kgrag corpus stats [--domain medical]
    kgrag corpus embed --model bge-small-en-v1.5-q [--domain medical]
    kgrag corpus recall [--dataset 2wiki|FILE] [--domain D] [--json]
    kgrag corpus bench [--queries 100] [--load-sample 1000]
    kgrag calibrate seakr [--model M] [--n 300] [--out FILE]
    kgrag bench seakr [--runs 3] [--k 20]
    kgrag bench chunks --source DOCS --dataset QUESTIONS [--sizes 100,150,200,400]

The root CLI (kgrag/cli.py) calls `register(app)` through the `kgrag.commands` entry point.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kgrag.commands import cli_group, console, group, platform_for
from kgrag.errors import DomainNotBuilt, KgragError

if TYPE_CHECKING:
    from kgrag.platform import Platform
    from textrag.corpora import CorpusSpec
    from textrag.retrieval import Retriever
    from textrag.seakr.calibrate import SeakrCalibration

corpus_app = cli_group("Load and inspect the passage corpus of the text methods.")
calibrate_app = cli_group("Calibrate method thresholds for the configured model.")


def register(app: typer.Typer) -> None:
    """Add the `corpus` and `calibrate` command groups and `bench seakr` to the root
    `kgrag` app."""
    app.add_typer(corpus_app, name="corpus")
    app.add_typer(calibrate_app, name="calibrate")
    group(app, "bench").command("seakr")(bench_seakr)
    group(app, "bench").command("chunks")(bench_chunks)
    group(app, "graph").command("hippo")(graph_hippo)


def bench_seakr(model: Annotated[str | None, typer.Option()] = None, runs: int = 3,
                k: int = 20, sequential: Annotated[bool, typer.Option(
                    help="Also time the k samples as k separate calls.")] = False) -> None:
    """One SeaKR uncertainty estimate (k batched samples) against one greedy step."""
    from textrag.seakr.bench import bench_seakr as run

    run(platform_for(model), console, runs, k, sequential)


def bench_chunks(
    source: Annotated[Path, typer.Option(help="Documents (.md, .txt or .jsonl, as `kgrag "
                                         "build --source` reads them).")],
    dataset: Annotated[str, typer.Option(help="Question file whose lines carry "
                                         "`supporting_titles` (heading paths, file names).")],
    sizes: Annotated[str, typer.Option(help="Words per passage at most, comma-separated.")
                     ] = "100,150,200,400",
    retrievers: Annotated[str, typer.Option(help="Of bm25, dense, hybrid (dense embeds "
                                            "every size's passages with the passage "
                                            "embedder).")] = "bm25",
    k: Annotated[str, typer.Option(help="Cut-offs, comma-separated.")] = "5",
    n: Annotated[int | None, typer.Option(help="First N questions.")] = None,
    prefix: Annotated[str, typer.Option(help="The throw-away domains are <prefix>-<size> "
                                        "(another prefix for a second run at once).")
                      ] = "bench-chunks",
) -> None:
    """Recall at each passage size: the documents chunked into a throw-away domain per
    size, searched with the questions, the passages deleted again (no LLM call)."""
    import os

    from kgrag.datasets import load_dataset
    from kgrag.platform import Platform
    from textrag.chunk_bench import bench_chunk_sizes, chunk_table, paired_sizes

    ks = _cut_offs(k)
    words = _cut_offs(sizes, "--sizes", "100,150,200")
    p = Platform()
    questions = load_dataset(dataset, p.settings.data_dir, limit=n).questions
    kinds = [r.strip() for r in retrievers.split(",") if r.strip()]
    console.print(f"load average {os.getloadavg()[0]:.2f}; {len(questions)} questions of "
                  f"{dataset}; "
                  f"{source.name} at {', '.join(map(str, words))} words per passage"
                  + (f"; passages embedded by {p.passage_embedder.name}"
                     if {"dense", "hybrid"} & set(kinds) else ""))
    rows = bench_chunk_sizes(p, source, questions, words, kinds, ks, prefix=prefix)
    console.print("\n".join(chunk_table(rows, ks)))
    base = 150 if 150 in words else words[0]
    console.print("\n".join(paired_sizes(rows, base, max([x for x in ks if x <= 5] or ks))))
    console.print(f"load average {os.getloadavg()[0]:.2f}")


DomainOption = Annotated[str | None, typer.Option(
    help="The domain whose passage corpus to use: medical (MedQuAD answers, label "
    "MedicalPassage); wikipedia, commonsense, legal or none: Wikipedia; any other: the "
    "domain's chunks (load indexes those of its graph).")]


@corpus_app.command("load")
def corpus_load(
    domain: DomainOption = None,
    file: Annotated[Path | None, typer.Option(
        "--file", help="JSONL(.gz) of the corpus's records; default: its shared file under "
        "KGRAG_DATA_DIR (wikipedia/wiki_passages.jsonl.gz, medical/medquad_corpus.jsonl.gz).")
                    ] = None,
    limit: Annotated[int | None, typer.Option(min=0, help="Load only the first N passages.")
                     ] = None,
    batch_size: Annotated[int, typer.Option(min=1, help="Passages per embedding batch and "
                                            "write transaction.")] = 256,
) -> None:
    """Load passages with the passage embedder's vectors (idempotent: stored passages are
    skipped; a stored corpus keeps the model its vectors were made by)."""
    from kgrag.platform import Platform
    from textrag.corpora import corpus_for_domain, corpus_path
    from textrag.corpus import load_corpus

    p = Platform()
    spec = corpus_for_domain(domain)
    if spec.is_chunks:
        _index_domain(p, spec.domain, file)
        return
    path = file or corpus_path(spec, p.settings.data_dir)
    exclude = _overlaps(spec, path, p.settings.data_dir)
    p.store.apply_schema()
    from textrag.corpus_vectors import ready_to_load

    embedder = ready_to_load(p, spec)
    console.print(f"{spec.name} corpus: passages embedded by {embedder.name}")
    report = load_corpus(p.store, embedder, path, limit=limit, batch_size=batch_size,
                         corpus=spec, exclude=exclude)
    console.print(f"{spec.name} corpus (label {spec.label}): {report}")
    for problem in report.problems[:20]:
        console.print(f"  [yellow]line {problem.line}:[/] {problem.message}")
    if report.broken > 20:
        console.print(f"  … and {report.broken - 20} more broken lines (see the log)")


def _index_domain(p: Platform, domain: str, file: Path | None) -> None:
    """`corpus load --domain D` for a domain of one's own: its graph's chunks become its
    passages (a graph built before they were, or imported)."""
    from kg_builder.passages import index_graph_chunks

    if file is not None:
        raise KgragError(f"{domain!r} is a domain of your own: its passages are its "
                         "chunks, not a --file", hint=f"`kgrag build --domain {domain} "
                         "--source FILE` builds the graph and the passages of a file")
    p.store.apply_schema()
    report = index_graph_chunks(p.store, p.passage_embedder, domain)
    if not report.chunks:
        from textrag.corpora import PASSAGES_HINT

        raise DomainNotBuilt(domain, "has no chunks", hint=PASSAGES_HINT.format(domain=domain))
    console.print(str(report))


def _overlaps(spec: CorpusSpec, path: Path, data_dir: Path) -> frozenset[str]:
    """The ids of `spec`'s records that repeat one of its evaluation questions (printed
    by reason); empty for a corpus without evaluation sets to protect."""
    if not spec.exclude_overlap_with:
        return frozenset()
    from textrag.corpora import corpus_overlaps

    found = corpus_overlaps(spec, path, data_dir)
    reasons = Counter(o.reason for o in found)
    console.print(f"left out of the {spec.name} corpus: {len(found)} records that repeat a "
                  f"{'/'.join(spec.exclude_overlap_with)} evaluation question (by qid "
                  f"{reasons['qid']}, same question {reasons['question']}, same answer "
                  f"{reasons['answer']}; {len({o.question_id for o in found})} questions)")
    return frozenset(o.corpus_id for o in found)


@corpus_app.command("embed")
def corpus_embed(
    model: Annotated[str | None, typer.Option(help="Embedder (`kgrag models list`); default "
                                              "KGRAG_EMBEDDING__PASSAGE_MODEL, else "
                                              "bge-small-en-v1.5-q for Wikipedia and "
                                              "KGRAG_EMBEDDING__MODEL for MedQuAD.")
                     ] = None,
    domain: DomainOption = None,
    batch_size: Annotated[int, typer.Option(min=1, help="Passages per write.")] = 256,
) -> None:
    """Re-embed a stored corpus in place with another model (resumable: stop any time, run
    again). Queries then use that model."""
    from kgrag.platform import Platform
    from textrag.corpora import corpus_for_domain
    from textrag.corpus_vectors import embed_corpus, fresh_model

    p = Platform()
    spec = corpus_for_domain(domain)
    report = embed_corpus(p, spec, model or fresh_model(p, spec), batch_size=batch_size)
    console.print(str(report))
    if p.settings.embedding.passage_model not in (None, report.model):
        console.print(f"query it with KGRAG_EMBEDDING__PASSAGE_MODEL={report.model} (or unset)")


def graph_hippo(
    domain: Annotated[str, typer.Option(help="Domain whose graph kg-ppr reads.")],
    model: Annotated[str | None, typer.Option(help="Embedder of the fact vectors; default "
                                              "the query model of the domain's corpus "
                                              "(queries need it).")] = None,
    facts: Annotated[bool, typer.Option(help="Embed the facts (only those not yet "
                                        "embedded by this model: resumable).")] = True,
    synonyms: Annotated[bool, typer.Option(help="Rebuild the synonym edges.")] = True,
) -> None:
    """kg-ppr's index (HippoRAG 2): fact vectors "subject relation object" and synonym
    edges between entities with vectors of cosine >= 0.8 (KGRAG_HIPPO__SYNONYM_THRESHOLD)."""
    from kgrag.platform import Platform
    from metakg.hippo_index import build_index
    from textrag.corpora import corpus_for_domain
    from textrag.corpus_vectors import corpus_embedder

    p = Platform()
    p.store.apply_schema()
    embedder = (p.embedder_named(model) if model
                else corpus_embedder(p, corpus_for_domain(domain)))
    report = build_index(p.store, domain, embedder, p.settings.hippo, facts=facts,
                         synonyms=synonyms)
    console.print(str(report))


@corpus_app.command("stats")
def corpus_stats(domain: DomainOption = None) -> None:
    """How many passages a corpus holds, and how many have their vector."""
    from kgrag.platform import Platform
    from textrag.corpora import corpus_for_domain

    spec = corpus_for_domain(domain)
    row = Platform().store.read(spec.statement("count_passages"), spec.params)[0]
    console.print(f"{spec.name} corpus (label {spec.label}): {row['passages']:,} passages, "
                  f"{row['embedded']:,} embedded")


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


@corpus_app.command("recall")
def corpus_recall(
    dataset: Annotated[str, typer.Option(help="Question file or name (hotpotqa, 2wiki); "
                                         "its questions name their supporting passages "
                                         "(HotpotQA's supporting facts, or "
                                         "`supporting_titles` in a file of one's own).")
                       ] = "hotpotqa",
    n: Annotated[int | None, typer.Option(help="First N questions.")] = 300,
    k: Annotated[str, typer.Option(help="Cut-offs, comma-separated.")] = "1,3,5,10",
    retrievers: Annotated[str, typer.Option(help="Of bm25, dense, hybrid, kg-ppr (HippoRAG "
                                            "2's PPR: fact seeds, passage nodes, synonym "
                                            "edges), kg-ppr-keys (the earlier seeding by "
                                            "entity keys, fused with bm25 and dense), ppr "
                                            "(that graph ranking alone).")
                          ] = "bm25,dense,hybrid",
    domain: Annotated[str, typer.Option(help="The domain whose passages are searched "
                                        "(wikipedia: the Wikipedia corpus; any domain "
                                        "built with `kgrag build`: its chunks), and the "
                                        "graph of kg-ppr and ppr.")] = "wikipedia",
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object: "
                                           '{"questions": N, "recall": {retriever: {"all": '
                                           '{k: share}, "mean": {k: share}}}}.')] = False,
) -> None:
    """How often the gold supporting passages and the answer are in the top k, per
    retriever, over the domain's passages in Neo4j (no LLM); paired tests between
    retrievers at 5 (or the largest k below it)."""
    import json

    from kgrag.datasets import load_dataset
    from kgrag.platform import Platform
    from textrag.corpora import corpus_for_domain
    from textrag.recall import (
        EXACT,
        TitleMatcher,
        measure_recall,
        paired_table,
        paired_tests,
        recall_json,
        recall_table,
    )
    from textrag.retrievers import DenseRetriever

    ks = _cut_offs(k)
    chosen = [r.strip() for r in retrievers.split(",") if r.strip()]
    p = Platform()
    corpus = corpus_for_domain(domain)
    known = _recall_retrievers(p, domain, chosen)
    questions = load_dataset(dataset, p.settings.data_dir, limit=n).questions
    supported = sum(bool(q.supporting) for q in questions)
    if not supported:
        raise KgragError(f"none of the {len(questions)} questions of {dataset} names the "
                         "passages that support it, so there is no recall to measure",
                         hint='give each question "supporting_titles": [...] (the titles '
                         "or heading paths of its passages, or its file's name)")
    for r in chosen:  # warm-up: driver pool, query plans, model threads
        known[r].search("warm-up query about a film director", 1)
    match = TitleMatcher.for_domain(domain) if corpus.is_chunks else EXACT
    rows = measure_recall(questions, {r: known[r] for r in chosen}, ks, progress=True,
                          match=match)
    if json_out:
        print(json.dumps(recall_json(rows)))
        return
    count = p.store.read(corpus.statement("count_passages"), corpus.params)[0]["passages"]
    console.print(f"{count:,} passages of {corpus.name}; {len(questions)} questions of "
                  f"{dataset} ({supported} name their supporting passages)"
                  + (f"; dense queries embedded by {dense.embedder.name}"
                     if isinstance(dense := known.get("dense"), DenseRetriever) else ""))
    console.print("\n".join(recall_table(rows)))
    k_test = max([x for x in ks if x <= 5] or ks)
    if len(chosen) > 1:
        console.print("\n".join(paired_table(paired_tests(rows, k_test))))


def _cut_offs(k: str, option: str = "--k", example: str = "1,3,5") -> list[int]:
    """`--k 1,3,5` (or another `option`'s list) as whole numbers of at least 1."""
    try:
        ks = [int(x) for x in k.split(",") if x.strip()]
    except ValueError:
        raise KgragError(f"{option} takes whole numbers, got {k!r}",
                         hint=f"e.g. {option} {example}") from None
    if not ks or min(ks) < 1:
        raise KgragError(f"{option} takes values of at least 1, got {k!r}",
                         hint=f"e.g. {option} {example}")
    return ks


def _recall_retrievers(p: Platform, domain: str, chosen: list[str]) -> dict[str, Retriever]:
    """The retrievers `chosen` over `domain`'s passages; a domain without passages is
    `DomainNotBuilt` (naming the build command), an unknown name a clear error."""
    from textrag.retrievers import HybridRetriever
    from textrag.setting import open_retriever

    text_rows, graph_rows = ("bm25", "dense", "hybrid"), ("kg-ppr", "kg-ppr-keys", "ppr")
    unknown = [r for r in chosen if r not in {*text_rows, *graph_rows}]
    if unknown or not chosen:
        raise KgragError(f"unknown retrievers: {', '.join(unknown) or '(none given)'}",
                         hint="choose among bm25, dense, hybrid, kg-ppr, kg-ppr-keys, ppr")
    known: dict[str, Retriever] = {"bm25": open_retriever(p, "bm25", domain)}
    if {"dense", "hybrid"} & set(chosen):
        known["dense"] = open_retriever(p, "dense", domain)
        known["hybrid"] = HybridRetriever([known["bm25"], known["dense"]])
    if "kg-ppr" in chosen:
        from textrag.hippo import hippo_retriever

        known["kg-ppr"] = hippo_retriever(p, domain)
    for name in ("kg-ppr-keys", "ppr"):
        if name in chosen:
            from textrag.ppr import ppr_retriever

            known[name] = ppr_retriever(p, domain, fused=name == "kg-ppr-keys")
    return known


@calibrate_app.command("seakr")
def calibrate_seakr(
    model: Annotated[str | None, typer.Option(help="Chat model (registry name or .gguf); "
                                              "default KGRAG_MODEL__CHAT.")] = None,
    n: Annotated[int, typer.Option(min=2, help="Calibration questions: the first N of "
                                   "the source.")] = 300,
    source: Annotated[str, typer.Option(help="nq: NaturalQuestions-open dev (the paper's "
                                        "choice; SeaKR then refuses to be evaluated on "
                                        "it); csqa-train: CommonsenseQA train with its "
                                        "options.")] = "nq",
    out: Annotated[Path | None, typer.Option(help="Write the JSON here instead of "
                                             "$KGRAG_HOME/calibration/seakr-<model>.json, "
                                             "the file SeaKR reads.")] = None,
) -> None:
    """Fit SeaKR's retrieval threshold δ for a model and save it where SeaKR reads it."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from textrag.seakr.calibrate import calibrate_platform, calibration_path

    p = platform_for(model)
    with Progress("[progress.description]{task.description}", BarColumn(),
                  MofNCompleteColumn(), TimeElapsedColumn(), console=console) as bar:
        task = bar.add_task(f"SeaKR calibration on {p.settings.model.chat}", total=n)
        cal, path = calibrate_platform(
            p, n, out, progress=lambda i, total: bar.update(task, completed=i, total=total),
            source=source)
    _print_calibration(cal)
    default = calibration_path(p.settings.home, p.settings.model.chat)
    where = "SeaKR reads it by default" if path == default else \
        f"SeaKR reads {default}, not this file"
    console.print(f"saved to {path} ({where})", soft_wrap=True)


def _print_calibration(cal: SeakrCalibration) -> None:
    from statistics import median

    from textrag.seakr.calibrate import best_cut

    best = best_cut(cal.cuts)
    right = [pt.uncertainty for pt in cal.points if pt.correct]
    wrong = [pt.uncertainty for pt in cal.points if not pt.correct]
    kept = "n/a" if best.accuracy_kept is None else f"{best.accuracy_kept:.1%}"
    console.print(
        f"δ = {cal.threshold:.4f} for {cal.model} (paper: -6.0 for LLaMA-2-7B)\n"
        f"  from {cal.source}: closed-book accuracy {cal.accuracy:.1%} "
        f"({len(right)} right, {len(wrong)} wrong)\n"
        f"  median U: right {median(right):.3f}, wrong {median(wrong):.3f}\n"
        f"  at δ: Youden J {best.youden:.3f} = P(U>δ | wrong) {best.wrong_retrieved:.1%} "
        f"- P(U>δ | right) {best.right_retrieved:.1%}; retrieves for "
        f"{best.retrieve_rate:.1%} of questions; accuracy of the kept answers {kept}\n"
        f"  estimator: {cal.settings}", soft_wrap=True)
