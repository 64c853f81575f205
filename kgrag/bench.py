"""Benchmarks of the foundation (numbers for the README come from these, not from tests)."""

from __future__ import annotations

import statistics
import time

from rich.console import Console

from kgrag.errors import KgragError
from kgrag.llm.base import GenerationParams, Message
from kgrag.platform import Platform

_BENCH_PROMPT = (
    "Explain in a short paragraph how a knowledge graph can help a language model answer "
    "multi-hop questions, and name one risk of relying on it."
)


def bench_neo4j_start(p: Platform, console: Console, runs: int) -> list[float]:
    """Stop → start → Bolt-ready, `runs` times, with the jars already cached."""
    if not p.settings.managed_neo4j:
        raise KgragError("NEO4J_URI is set: the cold-start benchmark measures the managed server")
    p.neo4j.fetch()
    times = []
    for i in range(runs):
        p.neo4j.stop()
        start = time.perf_counter()
        p.neo4j.start()
        times.append(time.perf_counter() - start)
        console.print(f"run {i + 1}: {times[-1]:.1f} s to Bolt-ready")
    console.print(f"Neo4j cold start: median {statistics.median(times):.1f} s "
                  f"(min {min(times):.1f}, max {max(times):.1f}, n={runs})")
    return times


def bench_model_speed(p: Platform, console: Console, model: str | None, tokens: int) -> None:
    """Load time, prompt processing and generation speed of one chat model (greedy)."""
    from kgrag.llm.llama import LlamaCppModel
    from kgrag.models import REGISTRY

    name = model or p.settings.model.chat
    path = p.models.resolve(name)
    spec = REGISTRY.get(name)
    start = time.perf_counter()
    m = LlamaCppModel(path, name=name, n_ctx=p.settings.model.n_ctx,
                      n_threads=p.settings.model.n_threads,
                      n_layers=spec.n_layers if spec else None)
    load = time.perf_counter() - start
    msgs = [Message("user", _BENCH_PROMPT)]
    m.chat(msgs, GenerationParams(max_tokens=8))  # warm-up
    # prompt speed: a long prompt, one generated token
    long_msgs = [Message("user", (_BENCH_PROMPT + " ") * 12)]
    start = time.perf_counter()
    g = m.chat(long_msgs, GenerationParams(max_tokens=1))
    prompt_tps = g.prompt_tokens / (time.perf_counter() - start)
    start = time.perf_counter()
    g = m.chat(msgs, GenerationParams(max_tokens=tokens, stop=()))
    gen_s = time.perf_counter() - start
    gen_tps = g.completion_tokens / gen_s
    console.print(f"{name}: load {load:.1f} s; prompt {prompt_tps:.0f} tokens/s; "
                  f"generation {gen_tps:.1f} tokens/s ({g.completion_tokens} tokens in "
                  f"{gen_s:.1f} s, threads={p.settings.model.n_threads or 'all'})")


BENCH_CORPUS = "wikipedia/wiki_passages.jsonl.gz"  # under the data folder


def bench_texts(p: Platform, n: int) -> tuple[list[str], list[str]]:
    """The first `n` titles (short names) and paragraphs of the shared Wikipedia corpus."""
    import gzip
    import json

    path = p.settings.data_dir / BENCH_CORPUS
    if not path.is_file():
        raise KgragError(f"{path} does not exist", hint="set KGRAG_DATA_DIR to the data folder")
    titles: list[str] = []
    paragraphs: list[str] = []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            titles.append(str(row.get("title") or ""))
            paragraphs.append(str(row["text"]))
            if len(paragraphs) >= n:
                break
    return titles, paragraphs


def bench_embed(p: Platform, console: Console, models: list[str], n: int) -> None:
    """Load time and texts/s of each embedder on short names and on paragraphs (the
    first `n` of the Wikipedia corpus; a fresh embedder per model, so no cache hits)."""
    import os

    titles, paragraphs = bench_texts(p, n)
    words = statistics.mean(len(t.split()) for t in paragraphs)
    console.print(f"{len(titles)} names (mean {statistics.mean(len(t.split()) for t in titles):.1f}"
                  f" words) and {len(paragraphs)} paragraphs (mean {words:.0f} words); "
                  f"load average {os.getloadavg()[0]:.2f}")
    for name in models:
        start = time.perf_counter()
        emb = p.embedder_named(name)
        load = time.perf_counter() - start
        emb.embed(["warm-up"])
        rates = []
        for texts in (titles, paragraphs):
            start = time.perf_counter()
            emb.embed(texts)
            rates.append(len(texts) / (time.perf_counter() - start))
        console.print(f"{name}: load {load:.1f} s; names {rates[0]:,.0f} texts/s; "
                      f"paragraphs {rates[1]:,.1f} texts/s")
