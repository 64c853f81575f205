"""`kgrag bench extract`: extraction throughput and yield, without Neo4j or job state.

The records are a fixed selection: the first N chunks `kgrag build --domain D` would
extract (same sources and order, the same commonsense concept selection; unlike a
build, it does not skip chunks the graph already holds). The build's extractor runs over
them once per batch size, always on the same records, and each run reports: records per
minute (wall clock, the model loaded beforehand), prompts, triples per record, the share
of records with at least one triple, parse failures (first replies that needed the
retry, records whose batch failed twice) and prompt/generated tokens. Nothing is written:
no graph, no job folder.

`--extractor llm,fast` puts the fast extractor (spaCy, `kg_builder.fast_extract`) in the
same table, on the same records: its rows show the spaCy package as the model, the
saved-batch size as batch size and the parser processes as "parallel"; prompts, retries
and tokens are 0 for it, and `co-occ/rec` counts its co-occurrence pairs (not facts).

A record without triples is the signal to watch when batching: a model that answers only
the first record of a batch leaves the others empty. `with_triples_by_position` gives the
share per position in a batch (1st record, 2nd, ...), which shows that pattern directly.

    chunks, selection = bench_selection(platform, "wikipedia", None, records=8)
    rows = run_extract_bench(platform.chat_model, "wikipedia", chunks, [1, 4])
    [r.share_with_triples for r in rows]  # qwen2.5-coder-1.5b: batched paragraphs lost
    # -> [1.0, 0.25]
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, computed_field
from rich.console import Console
from rich.table import Table
from tqdm import tqdm

from kg_builder.build import plan_build
from kg_builder.domains import DomainSpec
from kg_builder.extract import ExtractConfig, ExtractionResult, TripleExtractor
from kg_builder.fast_extract import FastExtractor
from kg_builder.sources import Chunk
from kgrag.errors import KgragError
from kgrag.llm.base import ChatModel

if TYPE_CHECKING:
    from kgrag.platform import Platform


def _per(part: float, whole: float) -> float:
    """part / whole, 0.0 when nothing was measured."""
    return part / whole if whole else 0.0


class ExtractBenchRow(BaseModel):
    """What one batch size did on the benchmark's records."""

    model_config = ConfigDict(frozen=True)

    extractor: str = "llm"  # "llm" or "spacy" (the fast extractor)
    model: str = ""
    batch_size: int
    parallel: int = 1  # prompts decoded together
    records: int  # chunks, as in `kgrag build --status`
    prompts: int  # batches sent (first attempts)
    llm_calls: int  # prompts + retries
    seconds: float  # wall clock over all batches
    triples: int
    records_with_triples: int
    with_triples_by_position: list[float]  # share with ≥ 1 triple at batch position 1, 2, …
    retries: int  # prompts whose first reply was unusable (a parse failure)
    failed_records: int  # records whose batch was unusable twice
    bad_record_refs: int  # triples naming a record number not in the batch
    rejected: int  # empty, self-referential, too long, function words, duplicates
    prompt_tokens: int
    completion_tokens: int
    cooccurrences: int = 0  # fast extractor: co-occurrence pairs, not facts
    skipped: int = 0  # fast extractor: records skipped as bad input

    @computed_field  # type: ignore[prop-decorator]
    @property
    def records_per_minute(self) -> float:
        return _per(60 * self.records, self.seconds)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def triples_per_record(self) -> float:
        return _per(self.triples, self.records)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def share_with_triples(self) -> float:
        return _per(self.records_with_triples, self.records)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def retry_rate(self) -> float:
        """Parse failures of first replies per prompt."""
        return _per(self.retries, self.prompts)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def failure_rate(self) -> float:
        """Records lost to a batch unusable twice, per record (the build's rate)."""
        return _per(self.failed_records, self.records)


class ExtractBenchReport(BaseModel):
    """The benchmark's conditions and one row per batch size (`--json` prints this)."""

    domain: str
    model: str
    threads: int | None  # None: llama.cpp's default (all cores)
    selection: str
    record_ids: list[str]
    load_average: tuple[float, float, float]  # 1/5/15 min, sampled at the start
    rows: list[ExtractBenchRow]


def parse_batch_sizes(text: str | None, default: int, option: str = "--batch-size"
                      ) -> list[int]:
    """`"1,4"` → `[1, 4]`; None → `[default]`. Each size must be one `ExtractConfig` takes
    (1 to 16, for `--batch-size` and `--parallel` alike)."""
    if text is None:
        return [default]
    sizes: list[int] = []
    for part in text.split(","):
        try:
            size = int(part.strip())
        except ValueError:
            raise KgragError(f"bad {option} {text!r}", hint="write sizes as 1 or 1,4"
                             ) from None
        if not 1 <= size <= 16:
            raise KgragError(f"{option} {size} is out of range", hint="use 1 to 16")
        if size not in sizes:
            sizes.append(size)
    return sizes


def bench_selection(p: Platform, domain: str, sources: Sequence[Path] | None,
                    records: int) -> tuple[list[Chunk], str]:
    """The first `records` chunks `kgrag build` would extract, and how they were chosen.

    A build's `--limit` counts documents, each one chunk or more, so the first `records`
    documents hold at least the first `records` chunks."""
    plan = plan_build(p, domain, sources, limit=records)
    chunks = plan.chunks[:records]
    return chunks, f"first {len(chunks)} chunks of the build's order ({plan.selection})"


def run_extract_bench(model: ChatModel, domain: str, chunks: Sequence[Chunk],
                      batch_sizes: Sequence[int], *, parallel: Sequence[int] = (),
                      config: ExtractConfig | None = None, spec: DomainSpec | None = None,
                      progress: bool = True) -> list[ExtractBenchRow]:
    """Extract `chunks` once per batch size and parallel-prompt count (other settings from
    `config`; no `parallel`: the config's); one row each."""
    base = config or ExtractConfig()
    rows = []
    for size in batch_sizes:
        for par in parallel or [base.parallel]:
            cfg = ExtractConfig.model_validate({**base.model_dump(), "batch_size": size,
                                                "parallel": par})
            rows.append(_measure(TripleExtractor(model, domain, cfg, spec=spec), chunks,
                                 progress))
    return rows


def run_fast_bench(extractor: FastExtractor, chunks: Sequence[Chunk], *,
                   progress: bool = True) -> ExtractBenchRow:
    """The fast extractor over `chunks` once (the pipeline loaded beforehand)."""
    return _measure(extractor, chunks, progress)


def _measure(extractor: TripleExtractor | FastExtractor, chunks: Sequence[Chunk],
             progress: bool) -> ExtractBenchRow:
    total = ExtractionResult()
    at_position: list[int] = []  # records seen at batch position i
    with_triples_at: list[int] = []  # of them, records with ≥ 1 triple
    prompts = 0
    fast = isinstance(extractor, FastExtractor)
    size = extractor.config.batch_size
    par = extractor.config.n_process if fast else extractor.config.parallel  # type: ignore[union-attr]
    bar = tqdm(total=len(chunks), unit="record",
               desc=f"{'fast' if fast else 'llm'}: batch size {size}, parallel {par}",
               disable=not progress, dynamic_ncols=True)
    start = time.perf_counter()
    try:
        for batch, result in extractor.stream(chunks, on_reply=bar.update):
            prompts += 1
            for i, chunk in enumerate(batch):
                if i == len(at_position):
                    at_position.append(0)
                    with_triples_at.append(0)
                at_position[i] += 1
                with_triples_at[i] += bool(result.triples.get(chunk.id))
            total.add(result)
            bar.set_postfix(triples=total.stats.triples, retries=total.stats.retries)
    finally:
        bar.close()
    seconds = time.perf_counter() - start
    if fast:  # batches of hundreds: one share over all records, not one per position
        at_position, with_triples_at = [sum(at_position)], [sum(with_triples_at)]
    s = total.stats
    return ExtractBenchRow(
        extractor="spacy" if fast else "llm",
        model=extractor.model_name if fast else "",  # type: ignore[union-attr]
        batch_size=size, parallel=par, records=len(chunks),
        prompts=0 if fast else prompts,
        llm_calls=s.calls, seconds=seconds, triples=s.triples,
        records_with_triples=sum(with_triples_at),
        with_triples_by_position=[w / n for w, n in zip(with_triples_at, at_position,
                                                        strict=True)],
        retries=s.retries, failed_records=s.failed_records, bad_record_refs=s.bad_record_refs,
        rejected=sum(s.rejected.values()), prompt_tokens=s.prompt_tokens,
        completion_tokens=s.completion_tokens, cooccurrences=s.cooccurrences,
        skipped=sum(s.skipped.values()))


def print_report(report: ExtractBenchReport, console: Console) -> None:
    """The rows as a table, with the conditions above it."""
    load = "/".join(f"{x:.1f}" for x in report.load_average)
    console.print(f"{report.domain}: {report.selection}; model {report.model}, threads "
                  f"{report.threads or 'all'}, load average {load} at the start")
    table = Table("extractor", "batch size", "parallel", "records", "prompts", "rec/min",
                  "facts/rec", "co-occ/rec", "with ≥1 triple", "by position",
                  "retries (rate)", "failed (rate)", "tokens prompt+gen")
    for r in report.rows:
        positions = " ".join(f"{100 * p:.0f}%" for p in r.with_triples_by_position)
        table.add_row(r.extractor if r.extractor != "llm" else f"llm {report.model}",
                      str(r.batch_size), str(r.parallel), str(r.records), str(r.prompts),
                      f"{r.records_per_minute:.1f}", f"{r.triples_per_record:.2f}",
                      f"{r.cooccurrences / r.records if r.records else 0:.2f}",
                      f"{r.records_with_triples} ({100 * r.share_with_triples:.0f}%)",
                      positions, f"{r.retries} ({100 * r.retry_rate:.1f}%)",
                      f"{r.failed_records} ({100 * r.failure_rate:.1f}%)",
                      f"{r.prompt_tokens:,}+{r.completion_tokens:,}")
    console.print(table)
