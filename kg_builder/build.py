"""What `kgrag build` runs: read a domain's sources in full, then a BuildJob.

Built-in domains read only their knowledge-source files (`kg_builder.corpora`), every
record of every file, in file order; a build never reads an evaluation file, not even the
concepts or contexts of its questions (a `--source` named like one is refused too), and
never writes the paper-protocol domain (`kg_builder.paper_protocol`). `--limit N` keeps
the first N records (documents).

    plan = plan_build(platform, "commonsense", sources=None, limit=300)
    BuildJob(platform, plan.domain, plan.chunks, plan.source_names, limit=300).run()
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kg_builder.chunking import CHUNK_WORDS
from kg_builder.corpora import (
    builtin_domains,
    builtin_sources,
    check_user_source,
    source_folders,
)
from kg_builder.domains import check_not_reserved
from kg_builder.sources import Chunk, LoadReport, Source, load, user_source
from kgrag.errors import KgragError

if TYPE_CHECKING:
    from kgrag.platform import Platform

log = logging.getLogger(__name__)


@dataclass
class BuildPlan:
    domain: str
    chunks: list[Chunk]
    source_names: list[str]
    reports: list[LoadReport]
    selection: str
    # folders whose files this plan does not read are taken back (corpora.source_folders)
    source_folders: list[str] = field(default_factory=list)

    @property
    def skipped_lines(self) -> int:
        return sum(r.skipped for r in self.reports)

    @property
    def left_out(self) -> list[str]:
        """Documents of records the sources leave out (they repeat an evaluation
        question): a build takes back whatever an earlier build made of them."""
        return [d for r in self.reports for d in r.left_out]


def plan_build(p: Platform, domain: str, sources: Sequence[Path] | None, limit: int | None,
               *, only: Sequence[str] = (), chunk_words: int = CHUNK_WORDS) -> BuildPlan:
    """Chunks to extract, in a stable order; `limit` counts records (documents);
    `chunk_words`: the passage size of the user's files (`kg_builder.chunking`)."""
    check_not_reserved(domain, "kgrag build")
    srcs: list[Source]
    if sources:
        for path in sources:
            check_user_source(path, p.settings.data_dir)
        srcs = [user_source(path, domain, chunk_words=chunk_words) for path in sources]
    elif domain in builtin_domains():
        srcs = list(builtin_sources(domain, p.settings.data_dir))
        if only:
            srcs = [s for s in srcs if any(o in s.name for o in only)]
            if not srcs:
                raise KgragError(f"--only {list(only)} matches none of {domain}'s sources")
    else:
        raise KgragError(f"{domain!r} is not a built-in domain and no --source was given",
                         hint=f"built-in: {', '.join(builtin_domains())}; or pass "
                         "--source FILE (.jsonl with a text field, .md or .txt)")
    chunks: list[Chunk] = []
    reports = []
    for s in srcs:
        got, report = load(s)
        chunks += got
        reports.append(report)
    selection = "all records, in file order"
    if limit is not None:
        keep: list[str] = []
        for c in chunks:
            if c.document_id not in keep:
                if len(keep) == limit:
                    break
                keep.append(c.document_id)
        wanted = set(keep)
        chunks = [c for c in chunks if c.document_id in wanted]
    if not chunks:
        raise KgragError(f"no records to build {domain!r} from ({selection}): "
                         + "; ".join(str(r) for r in reports),
                         hint="give a non-empty UTF-8 .md/.txt file, or .jsonl with a "
                              "'text' field")
    folders = [] if sources else source_folders(domain)
    return BuildPlan(domain, chunks, [s.name for s in srcs], reports, selection, folders)
