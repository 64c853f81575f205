"""The `kgrag` root command line: infrastructure commands, and every package's commands.

Where commands live (add new ones there, not here):
- kgrag/cli.py (this file): `neo4j`, `models`, `ask`, `methods`, `bench neo4j|model`;
- kg_builder/cli.py: `build`, `demo`, `graph export|import|drop|resolve|wordnet|stats`,
  `bench import|extract`;
- metakg/cli.py: `graph coverage`;
- textrag/cli.py: `corpus …`, `calibrate …`, `bench seakr`;
- eval/cli.py: `eval`, `score`, `report`, `sweep`, `evidence`, `reader prior`, `bench scoring`;
- app/cli.py: `app`.
Each package's `register(app)` is an entry point of the group `kgrag.commands`
(pyproject.toml; `pip install -e .` registers it), loaded by `kgrag.commands.load_commands`;
kgrag/ imports nothing from the packages above it. Shared groups (`graph`, `bench`) are
created here; a package adds to them with `kgrag.commands.group(app, "graph")`.
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from kgrag.commands import cli_group, console, err, load_commands, platform_for
from kgrag.errors import KgragError
from kgrag.platform import Platform, available_methods

if TYPE_CHECKING:
    from kgrag.types import Choice, Prediction

app = cli_group("Knowledge-graph RAG on Neo4j with local quantized models.", root=True)
neo4j_app = cli_group("Manage the local Neo4j server.")
models_app = cli_group("List and fetch models.")
bench_app = cli_group("Benchmarks whose numbers go in the README.")
app.add_typer(neo4j_app, name="neo4j")
app.add_typer(models_app, name="models")
app.add_typer(bench_app, name="bench")
graph_app = cli_group("Inspect, export and import domain graphs.")
app.add_typer(graph_app, name="graph")


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
    console.print(f"chat model in use: {p.settings.model.chat} (KGRAG_MODEL__CHAT); "
                  f"embedder: {p.settings.embedding.model} (KGRAG_EMBEDDING__MODEL)")


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
        extra = f", {size / 1e6:.0f} MB, sha256 verified" if spec.sha256 else \
            ", model.onnx and tokenizer.json sha256 verified" if spec.onnx else ""
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
    _print_answer(method, pred)
    u = pred.usage
    console.print(f"[dim]{u.llm_calls} LLM calls, {u.prompt_tokens}+{u.completion_tokens} tokens, "
                  f"{u.cypher_queries} Cypher queries, {u.seconds:.1f} s[/]")


def _print_answer(method: str, pred: Prediction) -> None:
    """The answer a reply states on its answer line (the whole reply above it), and a
    mark when the reply was cut by the token limit."""
    from kgrag.answers import ANSWER, reply_answer

    marks = list(ANSWER.finditer(pred.answer))
    before = pred.answer[:marks[-1].start()].strip() if marks else ""
    if before.casefold() not in ("", "so"):  # reasoning before the answer line: shown
        console.print(f"\n[dim]{escape(pred.answer.strip())}[/]")
    console.print(f"\n[bold]Answer ({method}):[/] {escape(reply_answer(pred.answer))}")
    cut = [s for s in pred.trace if s.data.get("cut")]
    if cut:
        console.print(f"[yellow]the reply was cut at the token limit "
                      f"({cut[0].data.get('max_tokens', '?')} tokens)[/]"
                      + ("; its answer line was completed by a second call"
                         if any(s.data.get("forced") for s in pred.trace) else ""))


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


@bench_app.command("embed")
def bench_embed(
    models: Annotated[str, typer.Option(help="Embedders, comma-separated.")] =
    "all-minilm-l6-v2,bge-small-en-v1.5-q,bge-small-en-v1.5,e5-small-v2-q,e5-small-v2",
    n: Annotated[int, typer.Option(min=1, help="Names and paragraphs per model.")] = 500,
) -> None:
    """Texts per second of each embedder on short names and on Wikipedia paragraphs."""
    from kgrag.bench import bench_embed as run

    run(Platform(), console, [m.strip() for m in models.split(",") if m.strip()], n)


# `from kgrag.cli import _platform` (older scripts): the shared helper's old name.
_platform = platform_for
load_commands(app)  # every package's commands (entry points `kgrag.commands`)


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
