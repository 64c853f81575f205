"""Load a passage corpus (JSON Lines of {id, title, text}) into Neo4j with MiniLM vectors.

The default corpus is the shared Wikipedia file (`wikipedia/wiki_passages.jsonl.gz`,
15,360 paragraphs); any JSONL (optionally gzipped) with the same fields works. Passages
become `(:Passage {id, title, text, embedding})` nodes, written in batches of
`UNWIND $rows` with `MERGE` on the id, the vector stored as a float32 vector property.
Another corpus (`textrag.corpora`, e.g. the MedQuAD answers of the medical domain) is
written under its own label, with its own indexes, and can leave out records that
repeat an evaluation question (`exclude`).

Loading is idempotent: passages already stored with the same title and text and a
vector are skipped before any embedding work, so a reload writes nothing. A broken line
(bad JSON, missing id or text, a repeated id) is reported with its line number, counted,
and skipped; it never stops the load.

    report = load_corpus(platform.store, platform.embedder, default_corpus_path(settings))
    report.written, report.skipped_existing, report.broken
    # -> (15360, 0, 0)
"""

from __future__ import annotations

import gzip
import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

from pydantic import ValidationError
from tqdm import tqdm

from kgrag.errors import KgragError
from kgrag.types import Passage
from kgrag.vectors import check_recorded
from textrag.corpora import DEFAULT, CorpusSpec, medquad_passage
from textrag.corpus_vectors import embed_command, scope

if TYPE_CHECKING:
    from kgrag.config import Settings
    from kgrag.embed import Embedder
    from kgrag.store import GraphStore

log = logging.getLogger(__name__)

DEFAULT_CORPUS = Path("wikipedia") / "wiki_passages.jsonl.gz"
MAX_PROBLEMS_KEPT = 100  # all are counted; the first ones are kept for the report


def default_corpus_path(settings: Settings) -> Path:
    return settings.data_dir / DEFAULT_CORPUS


def embedding_text(p: Passage) -> str:
    """What is embedded for a passage: its title, then its text."""
    return f"{p.title}: {p.text}" if p.title else p.text


@dataclass(frozen=True)
class LineProblem:
    line: int  # 1-based
    message: str


@dataclass
class LoadReport:
    """What a load did; `kgrag corpus load` prints it."""

    path: Path
    read: int = 0  # valid passages read
    written: int = 0  # passages created or updated, with their vector
    nodes_created: int = 0  # of those, new nodes (Neo4j's write counters)
    skipped_existing: int = 0  # already stored, unchanged and embedded
    broken: int = 0  # lines skipped
    excluded: int = 0  # valid records left out on purpose (they repeat an eval question)
    problems: list[LineProblem] = field(default_factory=list)
    seconds: float = 0.0

    def problem(self, line: int, message: str) -> None:
        self.broken += 1
        log.warning("%s:%d: %s (line skipped)", self.path, line, message)
        if len(self.problems) < MAX_PROBLEMS_KEPT:
            self.problems.append(LineProblem(line, message))

    def __str__(self) -> str:
        rate = self.written / self.seconds if self.seconds else 0.0
        return (f"{self.path.name}: read {self.read:,} passages; wrote {self.written:,} "
                f"({rate:,.0f}/s), skipped {self.skipped_existing:,} already embedded, "
                f"{self.broken:,} broken lines" + (f", left out {self.excluded:,} that "
                f"repeat an evaluation question" if self.excluded else "")
                + f"; {self.seconds:.1f} s")


def _open(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open(encoding="utf-8")


def count_lines(path: Path) -> int:
    with _open(path) as f:
        return sum(1 for _ in f)


def read_passages(path: Path, report: LoadReport, shape: str = "passage"
                  ) -> Iterator[tuple[int, Passage]]:
    """(line number, passage) for each valid line; problems go into `report`. `shape`
    "medquad" reads MedQuAD records ({qid, question, answer}) as passages."""
    seen: set[str] = set()
    try:
        f = _open(path)
    except OSError as e:
        raise KgragError(f"cannot read corpus file {path}: {e}",
                         hint="give an existing JSONL(.gz) file with --file") from e
    n = 0
    with f:
        try:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                p = _parse(line, n, report, medquad=shape == "medquad")
                if p is None:
                    continue
                if p.id in seen:
                    report.problem(n, f"repeated id {p.id!r}")
                    continue
                seen.add(p.id)
                yield n, p
        except (OSError, EOFError, UnicodeDecodeError) as e:  # truncated gzip, bad bytes
            report.problem(n + 1, f"file unreadable from here on: {e}")


def _parse(line: str, n: int, report: LoadReport, *, medquad: bool = False
           ) -> Passage | None:
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as e:
        report.problem(n, f"invalid JSON: {e.msg}")
        return None
    if not isinstance(raw, dict):
        report.problem(n, "not a JSON object")
        return None
    if medquad:  # a MedQuAD record: its id is its line (`textrag.corpora.medquad_id`)
        raw = medquad_passage(raw, n)
    if isinstance(raw.get("id"), int) and not isinstance(raw.get("id"), bool):
        raw["id"] = str(raw["id"])
    try:
        p = Passage.model_validate({k: raw[k] for k in ("id", "title", "text") if k in raw})
    except ValidationError as e:
        fields = ", ".join(".".join(map(str, err["loc"])) or "record" for err in e.errors())
        report.problem(n, f"invalid passage ({fields})")
        return None
    if not p.id.strip() or not p.text.strip():
        report.problem(n, "empty id or text")
        return None
    return p


def load_corpus(
    store: GraphStore,
    embedder: Embedder,
    path: Path,
    *,
    limit: int | None = None,
    batch_size: int = 256,
    progress: bool = True,
    id_prefix: str = "",
    corpus: CorpusSpec = DEFAULT,
    exclude: frozenset[str] = frozenset(),
) -> LoadReport:
    """Load (the first `limit` valid passages of) `path` into `corpus`; see the module
    docstring.

    `id_prefix` is prepended to every id (tests and benchmarks load under their own ids).
    Records whose (file) id is in `exclude` are counted in `report.excluded` and skipped.
    """
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    if not path.is_file():
        raise KgragError(f"corpus file {path} does not exist",
                         hint="check KGRAG_DATA_DIR, or give a file with --file")
    if not corpus.is_chunks:  # never mix two models' vectors in one corpus
        check_recorded(store, scope(corpus), embedder.name, embed_command(corpus))
    report = LoadReport(path)
    start = time.perf_counter()
    # the bar counts lines (broken ones too), or passages when a limit is given
    total = limit if limit is not None else count_lines(path)
    bar = tqdm(total=total, unit="passage", desc=f"load {path.name}", disable=not progress,
               dynamic_ncols=True)
    batch: list[Passage] = []

    def flush(line: int) -> None:
        _write_batch(store, embedder, batch, report, corpus)
        batch.clear()
        bar.update((report.read if limit is not None else line) - bar.n)

    try:
        for line, p in read_passages(path, report, corpus.record):
            if p.id in exclude:
                report.excluded += 1
                continue
            if limit is not None and report.read >= limit:
                break
            report.read += 1
            batch.append(p.model_copy(update={"id": id_prefix + p.id}) if id_prefix else p)
            if len(batch) >= batch_size:
                flush(line)
        flush(total)
    finally:
        bar.close()
        report.seconds = time.perf_counter() - start
    return report


def _write_batch(store: GraphStore, embedder: Embedder, batch: list[Passage],
                 report: LoadReport, corpus: CorpusSpec = DEFAULT) -> None:
    if not batch:
        return
    rows = [{"id": p.id, "title": p.title, "text": p.text} for p in batch]
    done = {r["id"] for r in store.read(corpus.statement("passages_embedded"), {"rows": rows})}
    todo = [p for p in batch if p.id not in done]
    report.skipped_existing += len(batch) - len(todo)
    if not todo:
        return
    vectors = embedder.embed([embedding_text(p) for p in todo])
    payload = [{"id": p.id, "title": p.title, "text": p.text, "embedding": v.tolist()}
               for p, v in zip(todo, vectors, strict=True)]
    for n, counters in store.write_batches(corpus.statement("merge_passages"), payload,
                                           batch_size=len(payload)):
        report.written += n
        report.nodes_created += counters.nodes_created


def delete_passages(store: GraphStore, prefix: str, corpus: CorpusSpec = DEFAULT) -> int:
    """Delete the passages of `corpus` whose id starts with `prefix` (never an empty
    prefix)."""
    if not prefix:
        raise ValueError("refusing to delete passages with an empty id prefix")
    rows = store.run(corpus.statement("delete_passages_by_prefix"), {"prefix": prefix})
    return int(rows[0]["deleted"]) if rows else 0
