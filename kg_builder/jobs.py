# Over 400 lines: resume, replay, retraction and accounting share one job state.
"""Resumable, idempotent graph-construction jobs (`kgrag build`).

A job is identified by what determines its output: domain, sources, record limit, model
and prompt/config digests, and the extractor (`llm`, the default, or `fast`: spaCy, see
`kg_builder.fast_extract`; a fast job's model is the spaCy package and its "prompt" the
rules' version, so the two never share a job). Its state lives in
`$KGRAG_HOME/jobs/<domain>/<job id>/` (`kg_builder.domains.jobs_folder`: the domain name
percent-encoded where it would leave that folder):

    job.json           the job record: status, counts, failures, model, prompt hash, timings
    extractions.jsonl  one line per extracted batch (triples and failures), fsynced

Extraction results are saved locally before they are written to Neo4j, so Neo4j going
down mid-job loses nothing: re-running the same command re-sends the saved batches
(MERGE makes that a no-op for what was already written) and continues with the records
not yet extracted. The job record is mirrored to a `(:BuildJob)` node for the app.

    job = BuildJob(platform, "commonsense", sources, limit=200)
    job.run()          # progress bar with rate and ETA; Ctrl-C is safe
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, Field
from tqdm import tqdm

from kg_builder.domains import jobs_folder
from kg_builder.extract import (
    CoOccurrence,
    ExtractConfig,
    ExtractionResult,
    Triple,
    TripleExtractor,
)
from kg_builder.graph_io import GraphWriter, WriteReport
from kg_builder.job_rows import (
    chunk_row,
    entity_rows,
    fact_rows,
    text_digest,
    write_cooccurrences,
)
from kg_builder.resolution import merged_key_map, resolve_once
from kg_builder.sources import Chunk
from kgrag.errors import KgragError, Neo4jUnavailable
from kgrag.locks import exclusive, is_locked

if TYPE_CHECKING:
    from kgrag.platform import Platform

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[1]
LOCK = ".lock"  # held by the `kgrag build` running the job


class Extractor(Protocol):
    """What a build job needs of an extractor (`TripleExtractor`, `FastExtractor`)."""

    @property
    def config(self) -> BaseModel: ...

    def prompt_digest(self) -> str: ...

    def stream(self, chunks: Sequence[Chunk], on_reply: Callable[[int], None] | None = None
               ) -> Iterator[tuple[list[Chunk], ExtractionResult]]: ...


class JobFailure(BaseModel):
    record_ids: list[str]
    error: str
    raw_reply: str = ""


class JobRecord(BaseModel):
    """Everything `kgrag build --status` and the app show about a job."""

    id: str
    domain: str
    sources: list[str]
    limit: int | None
    model: str
    model_sha256: str | None = None
    extractor: str = "llm"  # "llm" or "spacy" (kgrag build --extractor fast)
    prompt_hash: str
    config: dict[str, Any]
    command: str = ""
    git_revision: str = ""
    status: Literal["running", "interrupted", "failed", "done"] = "running"
    # "records" below are the extractor's units, the plan's chunks (a long source record
    # is split into several), except records_left_out/records_withdrawn (documents)
    records_total: int = 0
    records_done: int = 0  # extraction work of every run (an edited chunk counts again)
    records_pending: int | None = None  # chunks of the plan not extracted yet (last run)
    records_failed: int = 0
    load_skipped_lines: int = 0
    records_in_graph: int = 0  # skipped: their chunks were already in the graph (an import)
    records_changed: int = 0  # last run: source text changed since extraction; redone
    records_left_out: int = 0  # records the sources leave out (they repeat an eval question)
    passages: str = ""  # what indexing the chunks as passages did (kg_builder.passages)
    records_withdrawn: int = 0  # last run: left-out records an earlier build had written
    triples: int = 0  # extracted by every run (work, like records_done; not graph size)
    triples_rejected: int = 0
    triples_capped: int = 0
    cooccurrences: int = 0  # co-occurrence pairs (fast extractor), not facts
    records_skipped: dict[str, int] = Field(default_factory=dict)  # bad input, by reason
    skipped_ids: list[str] = Field(default_factory=list)  # the first 1,000 of them
    llm_calls: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds_extract: float = 0.0
    seconds_write: float = 0.0
    nodes_created: int = 0
    relationships_created: int = 0
    started: str = ""
    updated: str = ""
    resolution: str = ""
    failures: list[JobFailure] = Field(default_factory=list)
    running_here: bool | None = Field(default=None, exclude=True)  # set by `list_jobs`

    @property
    def shown_status(self) -> str:
        """`status`, except that a job marked running whose `kgrag build` no longer holds
        the job's lock (killed hard, machine reset) shows as `stale`: re-running its
        command resumes it."""
        if self.status == "running" and self.running_here is False:
            return "stale"
        return self.status

    @property
    def progress(self) -> tuple[int, int]:
        """(chunks of the plan extracted by this job, chunks planned). `records_done`
        counts work, which can exceed the plan once chunks were edited or withdrawn."""
        total = self.records_total
        if self.records_pending is None:  # a job saved before this field existed
            return min(self.records_done, total), total
        return max(0, total - self.records_pending - self.records_in_graph), total

    @property
    def parse_failure_rate(self) -> float:
        return self.records_failed / self.records_done if self.records_done else 0.0

    @property
    def records_per_minute(self) -> float:
        return 60 * self.records_done / self.seconds_extract if self.seconds_extract else 0.0


def job_id(domain: str, sources: Sequence[str], model: str, prompt_hash: str,
           config: BaseModel) -> str:
    """Same domain, sources, model, prompt and settings → same job. The record limit is not
    part of it: a larger `--limit` resumes the same job and extracts only the new records."""
    key = json.dumps([domain, list(sources), model, prompt_hash,
                      config.model_dump(mode="json")], sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()[:12]


class BuildJob:
    """Extract triples from `chunks` into a domain graph: with the platform's chat model,
    or with `extractor` (e.g. `FastExtractor`, which names its model and its sha256)."""

    def __init__(self, platform: Platform, domain: str, chunks: Sequence[Chunk],
                 source_names: Sequence[str], *, limit: int | None = None,
                 config: ExtractConfig | None = None, load_skipped: int = 0,
                 command: str = "", resolve: bool = True,
                 extractor: Extractor | None = None, embed: bool = True,
                 left_out: Sequence[str] = (), source_folders: Sequence[str] = (),
                 passages: bool = True) -> None:
        self.p = platform
        self.passages = passages  # index every chunk as a passage (kg_builder.passages)
        self.left_out = sorted(set(left_out))  # documents the sources leave out on purpose
        self.source_folders = sorted(set(source_folders))  # unread files: taken back
        self.resolve = resolve
        self.domain = domain
        self.chunks = list(chunks)
        self.extractor: Any = extractor or TripleExtractor(platform.chat_model, domain,
                                                           config or ExtractConfig())
        self.kind = kind = getattr(self.extractor, "name", "llm")
        model = getattr(self.extractor, "model_name", None) or platform.settings.model.identity
        digest = self.extractor.prompt_digest()
        jid = job_id(domain, source_names, model, digest, self.extractor.config)
        self.dir = jobs_folder(platform.settings.home, domain) / jid
        self.dir.mkdir(parents=True, exist_ok=True)
        old = self._load_record()
        if old is not None:
            old.limit, old.command = limit, command or old.command
            old.records_total = len(self.chunks)
        self.record = old or JobRecord(
            id=jid, domain=domain, sources=list(source_names), limit=limit, model=model,
            model_sha256=getattr(self.extractor, "model_sha256", None)
            or _model_sha(platform, model), extractor=kind, prompt_hash=digest,
            config=self.extractor.config.model_dump(mode="json"), command=command,
            git_revision=_git_revision(), started=_now(),
            records_total=len(self.chunks),
            load_skipped_lines=load_skipped)
        self.writer = GraphWriter(platform.store, platform.embedder, domain, embed=embed)
        self.key_map = merged_key_map(platform.store, domain)  # earlier resolutions

    @property
    def extractions(self) -> Path:
        return self.dir / "extractions.jsonl"

    # ------------------------------------------------------------------ run
    def run(self, progress: bool = True) -> JobRecord:
        """Extract, write and resolve; one process at a time per job (a second
        `kgrag build` of the same job is refused, not interleaved)."""
        with exclusive(self.dir / LOCK, lambda: KgragError(
                f"build job {self.record.id} ({self.domain}) is already running",
                hint="wait for it, or stop it (Ctrl-C, or `kill` its process: progress is "
                     "kept) and run the same command again")):
            return self._run(progress)

    def _run(self, progress: bool) -> JobRecord:
        stored = self._stored_texts()
        changed = {c.id for c in self.chunks if c.id in stored and stored[c.id] != c.text}
        done = self._replay_saved(changed, set(stored))  # adds chunks changed since saved
        self.record.records_changed = len({c.document_id for c in self.chunks
                                           if c.id in changed})
        if changed:
            self._retract(changed)
        self.record.records_left_out = len(self.left_out)
        self._withdraw()
        if self.kind == "llm":  # the fast extractor is cheap: it reads imported chunks too
            done |= self._already_in_graph(done, set(stored) - changed)
        todo = [c for c in self.chunks if c.id not in done]
        pending = self.record.records_pending = len(todo)
        self.record.status = "running"
        self._save()
        bar = tqdm(total=len(self.chunks), initial=len(self.chunks) - len(todo), unit="chunk",
                   desc=f"build {self.domain}", disable=not progress, dynamic_ncols=True)
        try:
            for batch, result in self.extractor.stream(todo, on_reply=bar.update):
                self._append(batch, result)
                self._account(result)
                pending = self.record.records_pending = max(0, pending - len(batch))
                self._write(batch, result)
                bar.set_postfix(triples=self.record.triples, failed=self.record.records_failed)
                self._save()
        except (KeyboardInterrupt, Neo4jUnavailable):
            self.record.status = "interrupted"
            self._save(mirror=False)
            raise
        except OSError as e:  # disk full, job folder unwritable: what was saved stays saved
            self.record.status = "interrupted"
            with contextlib.suppress(OSError):
                self._save(mirror=False)
            raise KgragError(f"build {self.domain} stopped: cannot write {self.dir} ({e})",
                             hint="free disk space (or fix the folder's permissions) and "
                             "run the same command again: finished batches are kept") from e
        finally:
            bar.close()
        if self.passages and self.writer.embed:  # --defer-embeddings defers them too
            from kg_builder.passages import index_passages

            self.record.passages = str(index_passages(
                self.p.store, self.p.passage_embedder, self.domain, self.chunks,
                progress=progress,
                prune=self.record.limit is None))
            log.info("%s", self.record.passages)
        if self.resolve:
            report = resolve_once(self.p.store, self.domain, self.p.settings.home)
            self.record.resolution = (str(report) if report else
                                      "resolved already (the graph is as its last "
                                      "resolution left it)")
            log.info("entity resolution: %s", self.record.resolution)
        self.record.status = "done"
        self._save()
        return self.record

    def _stored_texts(self) -> dict[str, str]:
        """The text each chunk of this plan had when it was written to the graph."""
        rows = self.p.store.read("kg/chunk_texts", {"domain": self.domain,
                                                    "ids": [c.id for c in self.chunks]})
        return {r["id"]: r["text"] for r in rows}

    def _replay_saved(self, changed: set[str], stored: set[str] | None = None) -> set[str]:
        """Re-send saved batches to Neo4j (idempotent) and return the chunk ids done.
        Chunks whose source text changed since they were saved (`changed`, or a digest
        that no longer matches) are left out: they are extracted again. A batch whose
        chunks with facts the graph already holds (`stored`) is not sent again, except the
        last one: batches are written one after another, so only the last can have been
        cut off mid-write (an interrupt, Neo4j gone), and resuming a large job does not
        re-send everything it wrote."""
        if not self.extractions.is_file():
            return set()
        by_id = {c.id: c for c in self.chunks}
        done: set[str] = set()
        with self.extractions.open(encoding="utf-8") as f:
            lines = [json.loads(line) for line in f if line.strip()]
        latest = {i: n for n, entry in enumerate(lines) for i in entry["chunk_ids"]}
        for n, entry in enumerate(tqdm(lines, desc="re-sending saved batches", unit="batch",
                                       leave=False, disable=None)):
            digests = entry.get("digests", {})
            # later entries win; chunks no longer in the plan (a record now left out) are
            # not brought back
            ids = {i for i in entry["chunk_ids"] if latest[i] == n and i in by_id}
            stale = {i for i in ids if i in changed or (
                i in digests and i in by_id and digests[i] != text_digest(by_id[i].text))}
            changed |= stale
            keep = ids - stale
            batch = [by_id[i] for i in entry["chunk_ids"] if i in by_id and i in keep]
            triples = [t for t in (Triple(**t) for t in entry["triples"])
                       if t.record_id in keep]
            pairs = [c for c in (CoOccurrence(**c) for c in entry.get("cooccurrences", ()))
                     if c.record_id in keep]
            written = {t.record_id for t in triples} | {c.record_id for c in pairs}
            if stored is None or n == len(lines) - 1 or not written <= stored:
                self._write_rows(batch, triples, WriteReport(self.domain), pairs)
            done |= keep
        return done

    def _retract(self, changed: set[str]) -> None:
        """Take back what chunks whose source text changed contributed (facts keep their
        other sources), so that extracting them again replaces, not adds."""
        docs = sorted({c.document_id for c in self.chunks if c.id in changed})
        gone = self._take_back(sorted(changed), docs)
        log.warning("%d chunk(s) of %s changed since they were extracted: their facts were "
                    "retracted (%d entities left without facts deleted); extracting them "
                    "again", len(changed), self.domain, gone)

    def _withdraw(self) -> None:
        """Take back what an earlier build made of the records the sources now leave out
        (`left_out`: they repeat an evaluation question) and of the files in the sources'
        folders that this build does not read (`source_folders`: not knowledge sources),
        so the graph holds nothing of them whichever build wrote it."""
        self.record.records_withdrawn = 0
        rows = []
        if self.left_out:
            rows += self.p.store.read("kg/document_chunks", {"domain": self.domain,
                                                             "docs": self.left_out})
        if self.source_folders:
            rows += self.p.store.read("kg/source_chunks", {
                "domain": self.domain, "folders": self.source_folders,
                "read": self.record.sources})
        if not rows:
            return
        ids = sorted(r["id"] for r in rows)
        docs = sorted({r["doc"] for r in rows})
        gone = self._take_back(ids, docs)
        self.record.records_withdrawn = len(docs)
        log.warning("%d record(s) of %s that repeat an evaluation question or come from a "
                    "source that is not a knowledge source were in the graph (%d chunks): "
                    "their facts were retracted (%d entities left without facts deleted)",
                    len(docs), self.domain, len(ids), gone)

    def _take_back(self, ids: list[str], docs: list[str]) -> int:
        """Retract chunks `ids` (facts keep their other sources), then delete the entities
        and documents left with nothing; returns how many entities were deleted."""
        keys = [r["key"] for r in self.p.store.run("kg/retract_chunks",
                                                   {"domain": self.domain, "ids": ids})]
        gone = self.p.store.run("kg/delete_orphans",
                                {"domain": self.domain, "keys": keys, "docs": docs})[0]
        return int(gone["entities"])

    def _already_in_graph(self, done: set[str], stored: set[str]) -> set[str]:
        """Chunks of this plan that the graph already holds (`stored`, unchanged) though
        this job did not write them: an imported export, or a job whose local state is
        gone (another machine). Their extraction is not redone; to rebuild them, delete
        the domain first."""
        found = {c.id for c in self.chunks if c.id not in done and c.id in stored}
        if found:
            log.info("%d chunk(s) already in the %s graph are skipped", len(found),
                     self.domain)
        self.record.records_in_graph = len(found)
        return found

    # ------------------------------------------------------------------ internals
    def _append(self, batch: Sequence[Chunk], result: ExtractionResult) -> None:
        entry = {
            "chunk_ids": [c.id for c in batch],
            "digests": {c.id: text_digest(c.text) for c in batch},
            "triples": [vars(t) for t in result.all_triples()],
            "cooccurrences": [vars(c) for c in result.all_cooccurrences()],
            "skipped": result.skipped,
            "failures": [{"record_ids": list(f.record_ids), "error": f.error,
                          "raw_reply": f.raw_reply} for f in result.failures],
        }
        with self.extractions.open("a", encoding="utf-8") as f:
            f.write(json.dumps(entry, ensure_ascii=False) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def _account(self, result: ExtractionResult) -> None:
        r, s = self.record, result.stats
        r.records_done += s.records + s.failed_records
        r.records_failed += s.failed_records
        r.triples += s.triples
        r.triples_rejected += sum(s.rejected.values())
        r.triples_capped += s.capped
        r.cooccurrences += s.cooccurrences
        for reason, n in s.skipped.items():
            r.records_skipped[reason] = r.records_skipped.get(reason, 0) + n
        r.skipped_ids.extend(list(result.skipped)[: max(0, 1000 - len(r.skipped_ids))])
        r.llm_calls += s.calls
        r.retries += s.retries
        r.prompt_tokens += s.prompt_tokens
        r.completion_tokens += s.completion_tokens
        r.seconds_extract += s.seconds
        r.failures.extend(JobFailure(record_ids=list(f.record_ids), error=f.error,
                                     raw_reply=f.raw_reply[:300]) for f in result.failures)

    def _write(self, batch: Sequence[Chunk], result: ExtractionResult) -> None:
        report = WriteReport(self.domain)
        start = time.perf_counter()
        self._write_rows(batch, list(result.all_triples()), report,
                         list(result.all_cooccurrences()))
        self.record.seconds_write += time.perf_counter() - start
        self.record.nodes_created += report.nodes_created
        self.record.relationships_created += report.relationships_created

    def _write_rows(self, batch: Sequence[Chunk], triples: Sequence[Triple],
                    report: WriteReport, pairs: Sequence[CoOccurrence] = ()) -> None:
        if self.key_map:
            km = self.key_map
            triples = [replace(t, head_key=km.get(t.head_key, t.head_key),
                               tail_key=km.get(t.tail_key, t.tail_key)) for t in triples]
            pairs = [replace(c, head_key=km.get(c.head_key, c.head_key),
                             tail_key=km.get(c.tail_key, c.tail_key)) for c in pairs]
            pairs = [c for c in pairs if c.head_key != c.tail_key]
        with_facts = {t.record_id for t in triples} | {c.record_id for c in pairs}
        chunks = [chunk_row(c) for c in batch if c.id in with_facts]
        self.writer.write(chunks, entity_rows(triples, pairs), fact_rows(triples), report)
        if pairs:
            fact_keys: dict[str, set[str]] = {}
            for t in triples:
                fact_keys.setdefault(t.record_id, set()).update((t.head_key, t.tail_key))
            write_cooccurrences(self.p.store, self.domain, pairs, fact_keys, report)

    def _load_record(self) -> JobRecord | None:
        path = self.dir / "job.json"
        return JobRecord.model_validate_json(path.read_text()) if path.is_file() else None

    def _save(self, mirror: bool = True) -> None:
        self.record.updated = _now()
        path = self.dir / "job.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(self.record.model_dump_json(indent=2))
        tmp.replace(path)
        if mirror:
            self.p.store.run("kg/merge_job", {"job": job_properties(self.record)})


def job_properties(r: JobRecord) -> dict[str, Any]:
    """Flat properties for the (:BuildJob) node (Neo4j stores no nested maps)."""
    return {
        "id": r.id, "domain": r.domain, "status": r.status, "model": r.model,
        "prompt_hash": r.prompt_hash, "sources": r.sources, "records_total": r.records_total,
        "records_done": r.records_done, "records_failed": r.records_failed,
        "triples": r.triples, "extractor": r.extractor, "started": r.started, "updated": r.updated,
        "seconds_extract": r.seconds_extract, "record_json": r.model_dump_json(),
    }


def list_jobs(home: Path, domain: str | None = None) -> list[JobRecord]:
    # the folder is a path, not a pattern: a domain name with `[` or `*` globs nothing else
    paths = ((jobs_folder(home, domain).glob("*/job.json")) if domain
             else (home / "jobs").glob("*/*/job.json"))
    jobs = []
    for path in paths:
        job = JobRecord.model_validate_json(path.read_text())
        job.running_here = is_locked(path.parent / LOCK)
        jobs.append(job)
    return sorted(jobs, key=lambda j: j.updated, reverse=True)


def export_meta(p: Platform, domain: str) -> dict[str, Any]:
    """What an export records about how its graph was built: the latest job that extracted
    anything (finished or not: a partial graph is exported too, and says so in
    `job_status`) and, under `jobs`, every build job of the domain on this machine."""
    jobs = [j for j in list_jobs(p.settings.home, domain) if j.records_done]
    meta: dict[str, Any] = {"exported": _now(), "git_revision": _git_revision(),
                            "embedding_model": p.settings.embedding.model}
    if jobs:
        j = jobs[0]
        meta.update(model=j.model, model_sha256=j.model_sha256, prompt_hash=j.prompt_hash,
                    command=j.command, sources=j.sources, limit=j.limit, job_id=j.id,
                    job_status=j.shown_status, records=j.records_done,
                    parse_failure_rate=round(j.parse_failure_rate, 4),
                    records_per_minute=round(j.records_per_minute, 2))
        meta["jobs"] = [{"id": k.id, "model": k.model, "prompt_hash": k.prompt_hash,
                         "command": k.command, "status": k.shown_status,
                         "records": k.records_done, "triples": k.triples,
                         "failed": k.records_failed, "started": k.started,
                         "updated": k.updated} for k in jobs]
    return meta


def _model_sha(p: Platform, name: str) -> str | None:
    from kgrag.models import REGISTRY

    spec = REGISTRY.get(name)
    return spec.sha256 if spec else None


def _git_revision() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,  # noqa: S607
                             capture_output=True, text=True, timeout=5)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
