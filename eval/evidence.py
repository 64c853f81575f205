"""What the KG methods retrieve, without answering: the evidence study.

An evaluation run costs ~17 s per question and KG method on 2 CPU cores, nearly all of it
the answer's generation; retrieval itself takes ~0.2 s. Whether a method brings the
answer's words into its evidence can therefore be measured on every dev question, for
every cycle ablation and for every value of a traversal parameter, at the cost of one
concept extraction per question, kept in the output directory: one call per question as
`kgrag eval` asks, or `parallel` prompts decoded together, which gives other concept
lists for some questions (other batch shapes flip near ties). This is the
question MetaKGRAG's cycle is about (§3.3: paths that miss concepts or drift), asked
directly of the graph.

    kgrag evidence --dataset csqa --domain commonsense --n 300 --out docs/results/evidence-csqa
    kgrag evidence --dataset csqa --domain commonsense --n 300 --out docs/results/evidence-csqa \\
        --methods metakgrag --param max_path_length --values 2,4

Layout of `<out>`:

    evidence.json    what produced it: the run identity of `eval.runner` (dataset, model
                     and its sha256, prompt and Cypher digests, seed, graph fingerprint)
                     and the MetaKGConfig the default setting used
    concepts.jsonl   ExtractConcepts per question id (null: no usable reply after a retry)
                     and how it was asked (`parallel`: 1 = one call, as `kgrag eval`)
    rows.jsonl       one line per (setting, method, question): what the evidence holds
                     (a committed study keeps them as rows.jsonl.gz: read the same way,
                     and new rows go to rows.jsonl beside it)
    evidence.md      the summary tables (`kgrag evidence --score-only` rewrites them)

A setting is "default" or `param=value` (`--param/--values`, any sweepable MetaKGConfig
field). Rows resume by (setting, method, question id). A directory written with another
identity or another default MetaKGConfig is refused, like a run directory (`--force`
mixes them, recorded in evidence.json's `forced_mix`); an unbuilt domain is refused before
any concept is extracted.

Measures per question (multiple choice: the options' texts; otherwise the gold answers),
each matched as whole normalised words in the evidence lines:
`answer` (a correct option's text is in the evidence), `distractor` (a wrong option's is),
`answer_only` (the correct one and no wrong one: evidence that points at the answer),
the option lift: how often the correct option is mentioned over how often one wrong
option is (1 = the evidence does not tell them apart), and, for options too long to occur
whole (MMLU law's), the option whose content words the evidence covers best
(`favoured_option`): how often there is one, and how often it is the correct one, beside
the 1/options of a blind pick.
Beside them the evidence size, the concept matching (share of concepts whose nearest
entity passed τ_entity, start entities), the PRR from the refine steps, Cypher round trips
and the retrieval time without the LLM, with the question's and its concepts' vectors
already embedded (all are embedded before the first method runs, so no method pays for
them and another does not). These are diagnostics of retrieval, not accuracy:
a method's answer also depends on how the model reads the evidence (`kgrag eval`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from eval.evidence_summary import (
    DEFAULT,
    EvidenceRow,
    EvidenceSummary,
    gold_and_wrong,
    mentions,
    read_rows,
    summarise,
    write_summary,
)
from eval.runner import RunConfig, build_config, identity_diff
from eval.sweep import Value, parse_values
from kgrag.datasets import load_dataset
from kgrag.errors import KgragError
from kgrag.locks import exclusive
from kgrag.method import Trace
from kgrag.types import Question
from metakg.config import MetaKGConfig
from metakg.cycle import normalise_concepts
from metakg.kg_method import (
    KGMethod,
    ask_concepts,
    concept_messages,
    embedding_text,
    extract_concepts_many,
)

if TYPE_CHECKING:
    from kgrag.platform import Platform
    from kgrag.store import GraphStore
    from metakg.kg_method import Gathered

log = logging.getLogger(__name__)
DEFAULT_METHODS = ("kg-vanilla", "metakgrag", "metakgrag-no-cycle",
                   "metakgrag-no-completeness", "metakgrag-no-relevance",
                   "metakgrag-no-restart")


def row_of(setting: str, method: str, q: Question, found: Gathered, trace: Trace,
           cypher_queries: int) -> EvidenceRow:
    steps = {s.stage: s.data for s in trace.steps}
    matches = steps.get("match", {}).get("matches", [])
    refines = [s.data for s in trace.steps if s.stage == "refine"]
    gold, wrong = gold_and_wrong(q)
    return EvidenceRow(
        setting=setting, method=method, id=q.id, concepts=len(found.ctx.concepts),
        concepts_matched=sum(bool(m.get("kept")) for m in matches), starts=len(found.starts),
        triples=len(found.triples), answer=mentions(gold, found.lines),
        distractor=None if wrong is None else mentions(wrong, found.lines),
        refined_starts=sum(bool(r.get("changed")) for r in refines),
        refine_steps=len(refines), cypher_queries=cypher_queries,
        retrieval_ms=round(found.retrieval_ms, 1), lines=found.lines)


def settings_of(param: str | None, values: Sequence[Value]) -> list[tuple[str, dict[str, Any]]]:
    """(label, MetaKGConfig update) per setting."""
    if param is None:
        return [(DEFAULT, {})]
    return [(f"{param}={v}", {param: v}) for v in values]


# ---------------------------------------------------------------------- the run
def run_evidence(p: Platform, dataset: str, *, out: Path, n: int | None,
                 domain: str | None = None, methods: Sequence[str] = DEFAULT_METHODS,
                 param: str | None = None, values: str | None = None, parallel: int = 1,
                 force: bool = False, progress: bool = True) -> list[EvidenceSummary]:
    """Gather every method's evidence for the first `n` questions into `out`, resuming,
    then write and return the summary."""
    with exclusive(out / ".writer.lock", lambda: KgragError(
            f"another `kgrag evidence` is writing to {out}", hint="wait for it to finish")):
        return _run(p, dataset, out=out, n=n, domain=domain, methods=methods, param=param,
                    values=values, parallel=parallel, force=force, progress=progress)


def _run(p: Platform, dataset: str, *, out: Path, n: int | None, domain: str | None,
         methods: Sequence[str], param: str | None, values: str | None, parallel: int,
         force: bool, progress: bool) -> list[EvidenceSummary]:
    if (param is None) != (values is None):
        raise KgragError("--param and --values go together",
                         hint="e.g. --param max_path_length --values 2,3,4")
    base = p.settings.metakg
    settings = settings_of(param, parse_values(param, values, base) if param and values
                           else [])
    loaded = load_dataset(dataset, p.settings.data_dir, limit=n)
    if not loaded.questions:
        raise KgragError(f"dataset {dataset!r} has no questions")
    questions = loaded.questions
    domain = domain or questions[0].domain
    if domain is None:
        raise KgragError(f"dataset {dataset!r} names no domain graph", hint="pass --domain")
    built = {name: p.method(name, domain) for name in methods}
    not_kg = [name for name, m in built.items()
              if not isinstance(m, KGMethod) or m.llm_in_retrieval]
    if not_kg:
        raise KgragError(f"{', '.join(not_kg)} do not retrieve from a domain graph without "
                         "the LLM, so there is no evidence to study",
                         hint=f"choose among: {', '.join(DEFAULT_METHODS)} (`tog` asks the "
                         "LLM at every hop: use `kgrag eval`)")
    # an unbuilt or unknown domain is refused before any concept is extracted
    next(m for m in built.values() if isinstance(m, KGMethod)).backend.check(domain)
    config = build_config(p, dataset, Path(loaded.path), domain, list(methods), n)
    _prepare(out, config, base, force)

    concepts = _concepts(p, out, questions, domain, base.max_concepts, parallel, progress)
    done = {(r.setting, r.method, r.id) for r in read_rows(out)}
    todo_any = [q for q in questions if any((label, name, q.id) not in done
                                            for label, _ in settings for name in methods)]
    if todo_any:  # every method then finds the vectors cached: its time is the same kind
        p.embedder.embed([t for q in todo_any for t in (
            embedding_text(q), *normalise_concepts(concepts[q.id] or (), base.max_concepts))])
    original = p.settings
    try:
        with (out / "rows.jsonl").open("a", encoding="utf-8") as f:
            for label, update in settings:
                # as `kgrag sweep` does: the methods are built from the settings they read
                p.settings = original.model_copy(update={"metakg": base.model_copy(update=update)})
                for name in methods:
                    method = p.method(name, domain)
                    assert isinstance(method, KGMethod)
                    todo = [q for q in questions if (label, name, q.id) not in done]
                    bar = tqdm(total=len(questions), initial=len(questions) - len(todo), unit="q",
                               desc=f"{name} [{label}]", disable=not progress, dynamic_ncols=True)
                    for q in todo:
                        q = q if q.domain == domain else q.model_copy(update={"domain": domain})
                        trace, q0 = Trace(), _queries(method.store)
                        found = method.gather(q, trace, concepts[q.id] or ())
                        row = row_of(label, name, q, found, trace, _queries(method.store) - q0)
                        f.write(row.model_dump_json() + "\n")
                        f.flush()
                        bar.update(1)
                    bar.close()
    finally:
        p.settings = original
    summaries = summarise(read_rows(out), {q.id: q for q in questions})
    write_summary(out, summaries, config)
    return summaries


def _queries(store: GraphStore | None) -> int:
    return store.stats.queries if store is not None else 0


def _prepare(out: Path, config: RunConfig, base: MetaKGConfig, force: bool) -> None:
    out.mkdir(parents=True, exist_ok=True)
    path = out / "evidence.json"
    record = {"run": json.loads(config.model_dump_json()), "metakg": base.model_dump()}
    if path.is_file():
        try:
            old = json.loads(path.read_text())
            recorded = RunConfig.model_validate(old["run"])
        except (ValueError, KeyError, TypeError) as e:
            raise KgragError(f"{path} is not an evidence record this kgrag version reads "
                             f"({str(e).splitlines()[0]})",
                             hint="use a new --out directory") from e
        diff = identity_diff(recorded.identity(), config.identity())
        if old.get("metakg") != record["metakg"]:
            diff["metakg"] = (old.get("metakg"), record["metakg"])
        if diff and not force:
            raise KgragError(f"{out} was written by a different configuration: {diff}",
                             hint="use a new --out directory, or --force to mix them")
        record["run"]["methods"] = sorted(set(old["run"]["methods"]) | set(config.methods))
        record["forced_mix"] = old.get("forced_mix", []) + ([repr(diff)] if diff else [])
    path.write_text(json.dumps(record, indent=2) + "\n")


def _concepts(p: Platform, out: Path, questions: Sequence[Question], domain: str,
              max_concepts: int, parallel: int, progress: bool
              ) -> dict[str, tuple[str, ...] | None]:
    """Concepts per question id: read from `concepts.jsonl`, the missing ones extracted
    (one call each, or `parallel` decoded together) and appended as they arrive, each
    line with the `parallel` it was extracted with."""
    path = out / "concepts.jsonl"
    known: dict[str, tuple[str, ...] | None] = {}
    if path.is_file():
        for raw in path.read_text(encoding="utf-8").splitlines():
            try:
                d = json.loads(raw)
                known[d["id"]] = tuple(d["concepts"]) if d["concepts"] is not None else None
            except (ValueError, KeyError, TypeError):
                log.warning("%s: an unreadable line was skipped", path)
    todo = [q for q in questions if q.id not in known]
    if todo:
        bar = tqdm(total=len(questions), initial=len(questions) - len(todo), unit="q",
                   desc="concepts", disable=not progress, dynamic_ncols=True)
        t0 = time.perf_counter()
        with path.open("a", encoding="utf-8") as f:
            def done(i: int, concepts: tuple[str, ...] | None) -> None:
                known[todo[i].id] = concepts
                f.write(json.dumps({"id": todo[i].id, "concepts": concepts,
                                    "parallel": parallel}) + "\n")
                f.flush()
                bar.update(1)

            if parallel > 1:
                extract_concepts_many(p.chat_model, todo, domain, max_concepts,
                                      parallel=parallel, on_done=done)
            else:  # one call per question, exactly as `kgrag eval`'s methods ask
                for i, q in enumerate(todo):
                    asked = ask_concepts(p.chat_model,
                                         concept_messages(q, domain, max_concepts),
                                         max_concepts)
                    done(i, normalise_concepts(asked.value.concepts, max_concepts)
                         if asked.value is not None else None)
        bar.close()
        log.info("concepts of %d questions in %.0f s", len(todo), time.perf_counter() - t0)
    return known
