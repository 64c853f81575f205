"""The Graphs page's quality reports: served from their cache at once, re-checked behind.

A report is computed once per graph fingerprint and kept in a file
(`kg_builder.quality`); comparing the fingerprint itself takes seconds on a full graph, so
the page shows the cached report at once and, when the last comparison is older than
`recheck_s`, compares again in a background thread (one at a time per domain). A changed
graph's report shows on the next view. The one wait left is a graph with no report yet:
its first view computes it (or waits for the background computation `warm` started when
the Graphs page first listed the domain).

    service = QualityService(platform)
    report, entry, checking = service.report("medical")
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from kg_builder.quality import (
    CachedReport,
    QualityReport,
    read_cached,
    refresh_cached,
    report_of,
)

if TYPE_CHECKING:
    from kgrag.platform import Platform

log = logging.getLogger(__name__)
RECHECK_S = 120.0  # compare a cached report's fingerprint again after this long


class QualityService:
    """Process-wide (the app holds one in `st.cache_resource`): cached reports, checked in
    one background thread."""

    def __init__(self, platform: Platform, recheck_s: float = RECHECK_S) -> None:
        self.platform = platform
        self.recheck_s = recheck_s
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="quality")
        self._pending: dict[str, Future[CachedReport]] = {}
        self._lock = threading.Lock()

    def report(self, domain: str) -> tuple[QualityReport, CachedReport, bool]:
        """(the report, its cache entry, whether a re-check is under way). Raises
        `DomainNotBuilt` for an empty domain without a cached report."""
        entry = read_cached(self.platform.settings.home, domain)
        if entry is None:  # the first report of this graph: wait for it
            with self._lock:
                running = self._pending.get(domain)
                # Still queued behind other domains' reports: compute it here instead.
                if running is not None and running.cancel():
                    running = None
            entry = (running.result() if running is not None and not running.done()
                     else refresh_cached(self.platform, domain))
        elif time.time() - entry.checked > self.recheck_s:
            self.recheck(domain)
        return report_of(self.platform, entry), entry, self.checking(domain)

    def cached(self, domain: str) -> CachedReport | None:
        """The cache entry as it is (no Neo4j read)."""
        return read_cached(self.platform.settings.home, domain)

    def recheck(self, domain: str) -> Future[CachedReport]:
        """Compare `domain`'s fingerprint with its cache in the background (once at a time)."""
        with self._lock:
            running = self._pending.get(domain)
            if running is not None and not running.done():
                return running
            future = self._pool.submit(refresh_cached, self.platform, domain)
            future.add_done_callback(lambda f: self._log_failure(domain, f))
            self._pending[domain] = future
            return future

    def warm(self, domains: Iterable[str]) -> None:
        """Start computing the reports of the domains that have none yet."""
        for d in domains:
            if self.cached(d) is None:
                self.recheck(d)

    def checking(self, domain: str) -> bool:
        with self._lock:
            f = self._pending.get(domain)
            return f is not None and not f.done()

    @staticmethod
    def _log_failure(domain: str, f: Future[CachedReport]) -> None:
        if not f.cancelled() and (e := f.exception()) is not None:
            log.warning("re-checking the quality report of %s failed: %s", domain, e)
