"""The graph store: the only module that imports the `neo4j` driver.

Every statement comes from a `cypher/**/*.cypher` file (see `cypher.load`) and
every value travels as a parameter. Driver errors are translated into
`KgragError`s that say what to do.

    store = GraphStore.connect("bolt://127.0.0.1:7687", "neo4j", "secret")
    store.run("graph/count_nodes")
    # -> [{'n': 0}]
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import neo4j
from neo4j.exceptions import (
    AuthError,
    ClientError,
    Neo4jError,
    ServiceUnavailable,
    SessionExpired,
    TransientError,
)

import cypher
from kgrag.errors import KgragError, Neo4jUnavailable

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServerInfo:
    """What `kgrag neo4j status` shows about a reachable server."""

    uri: str
    version: str
    edition: str
    browser_url: str | None


@dataclass
class WriteCounters:
    """Summed counters of write statements (used to prove idempotence)."""

    nodes_created: int = 0
    relationships_created: int = 0
    properties_set: int = 0
    labels_added: int = 0
    labels_removed: int = 0

    def add(self, c: neo4j.SummaryCounters) -> None:
        self.nodes_created += c.nodes_created
        self.relationships_created += c.relationships_created
        self.properties_set += c.properties_set
        self.labels_added += c.labels_added
        self.labels_removed += c.labels_removed


@dataclass
class QueryStats:
    """How many round trips a component made, and how long they took (for traces)."""

    queries: int = 0
    seconds: float = 0.0
    by_name: dict[str, int] = field(default_factory=dict)


class _Rows(list):  # type: ignore[type-arg]
    """A batch of rows whose repr is short. The driver formats every RUN's parameters for
    a debug log line even when debug logging is off; for 1,000 entity vectors that repr
    cost more client CPU than the write itself (measured: 0.62 s vs 0.03 s for 3,000
    rows of 384 floats). It packs as a plain list."""

    def __repr__(self) -> str:
        return f"<{len(self)} rows>"


class GraphStore:
    """A connection to one Neo4j database, speaking only named Cypher files."""

    def __init__(self, driver: neo4j.Driver, database: str, uri: str) -> None:
        self._driver = driver
        self.database = database
        self.uri = uri
        self.stats = QueryStats()
        self._folders: dict[str, Path] = {}  # prefix -> folder of statements outside cypher/

    def add_statements(self, prefix: str, folder: Path) -> None:
        """Also speak the statements of `folder` as `<prefix>/<name>`: the tests keep their
        own read-back statements in `tests/cypher/`, outside the package."""
        self._folders[prefix] = folder

    def _load(self, name: str) -> str:
        prefix, _, rest = name.partition("/")
        if prefix in self._folders:
            return cypher.load_file(self._folders[prefix] / f"{rest}.cypher", name)
        return cypher.load(name)

    @classmethod
    def connect(
        cls,
        uri: str,
        user: str,
        password: str,
        database: str = "neo4j",
        *,
        verify: bool = True,
        timeout_s: float = 10.0,
    ) -> GraphStore:
        """Open a driver; with `verify`, fail now (with a hint) if the server is not usable."""
        # UNRECOGNIZED: "property key does not exist" on a domain not built yet (e.g.
        # `merged_keys` before any entity resolution) is expected, not worth a log warning.
        driver = neo4j.GraphDatabase.driver(
            uri, auth=(user, password), connection_timeout=timeout_s, max_connection_pool_size=16,
            notifications_disabled_classifications=[
                neo4j.NotificationDisabledClassification.UNRECOGNIZED],
        )
        store = cls(driver, database, uri)
        if verify:
            try:
                driver.verify_connectivity()
            except BaseException:
                driver.close()
                raise
        return store

    def close(self) -> None:
        self._driver.close()

    def __enter__(self) -> GraphStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ reads and writes
    def run(self, name: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run the named statement in an auto-retried read-or-write transaction."""
        return self._execute(name, self._load(name), dict(params or {}), write=True)[0]

    def read(self, name: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run the named statement in a read transaction (routes to followers on a cluster)."""
        return self._execute(name, self._load(name), dict(params or {}), write=False)[0]

    def stream(self, name: str, params: Mapping[str, Any] | None = None,
               *, fetch_size: int = 10_000) -> Iterator[dict[str, Any]]:
        """Yield the records of a read statement one at a time, fetched `fetch_size` at a
        time: constant memory for statements that return every fact of a large graph
        (`read` holds them all; 640,000 facts took over 4 GB that way)."""
        with self._session_call(name), self._driver.session(
                database=self.database, fetch_size=fetch_size,
                default_access_mode=neo4j.READ_ACCESS) as session:
            result = session.run(neo4j.Query(self._load(name)),  # type: ignore[arg-type]
                                 dict(params or {}))
            for record in result:
                yield record.data()

    def write_batches(
        self,
        name: str,
        rows: Iterable[Mapping[str, Any]],
        *,
        batch_size: int = 1000,
        extra: Mapping[str, Any] | None = None,
    ) -> Iterator[tuple[int, WriteCounters]]:
        """Send `rows` as `$rows` to an `UNWIND $rows AS row ...` statement, one batch a call.

        Yields (rows in this batch, counters) so callers can drive a progress bar.
        """
        batch: list[Mapping[str, Any]] = []
        for row in rows:
            batch.append(row)
            if len(batch) >= batch_size:
                yield len(batch), self.write_batch(name, batch, extra)[1]
                batch = []
        if batch:
            yield len(batch), self.write_batch(name, batch, extra)[1]

    def write_batch(
        self, name: str, rows: Sequence[Mapping[str, Any]], extra: Mapping[str, Any] | None = None
    ) -> tuple[list[dict[str, Any]], WriteCounters]:
        """Send one batch as `$rows`; the records the statement returns, and its counters."""
        return self._execute(name, self._load(name), {**(extra or {}), "rows": _Rows(rows)})

    def run_autocommit(self, name: str, params: Mapping[str, Any] | None = None) -> None:
        """Run a `CALL { … } IN TRANSACTIONS` statement (needs an auto-commit transaction)."""
        with self._session_call(name), self._driver.session(database=self.database) as session:
            session.run(neo4j.Query(self._load(name)), dict(params or {})).consume()  # type: ignore[arg-type]

    @contextmanager
    def _session_call(self, name: str) -> Iterator[None]:
        """Translate a session's errors into kgrag's and count the call in `stats`."""
        start = time.perf_counter()
        try:
            yield
        except (ServiceUnavailable, SessionExpired) as e:
            raise Neo4jUnavailable(f"Neo4j at {self.uri} is not reachable",
                                   hint="start it with `kgrag neo4j start`, then re-run") from e
        except Neo4jError as e:
            raise KgragError(f"Cypher statement {name!r} failed: {e.message}") from e
        finally:
            self.stats.queries += 1
            self.stats.seconds += time.perf_counter() - start
            self.stats.by_name[name] = self.stats.by_name.get(name, 0) + 1

    def explain(self, name: str) -> None:
        """Plan the named statement without running it (raises on a Cypher error)."""
        self._execute(name, "EXPLAIN " + self._load(name), {}, write=False)

    def apply_schema(self, folder: str = "schema", await_seconds: int = 300) -> list[str]:
        """Create every constraint and index of `cypher/<folder>` (idempotent), then wait."""
        applied = []
        for name in cypher.names(folder):
            self.run(name)
            applied.append(name)
        self._execute("await", f"CALL db.awaitIndexes({int(await_seconds)})", {})
        return applied

    def info(self) -> ServerInfo:
        rows = self.read("admin/components")
        row = rows[0] if rows else {"version": "?", "edition": "?"}
        return ServerInfo(self.uri, row["version"], row["edition"], None)

    # ------------------------------------------------------------------ internals
    def _execute(
        self, name: str, query: str, params: dict[str, Any], *, write: bool = True
    ) -> tuple[list[dict[str, Any]], WriteCounters]:
        counters = WriteCounters()
        start = time.perf_counter()
        try:
            records, summary, _ = self._driver.execute_query(
                neo4j.Query(query),  # type: ignore[arg-type]
                params,
                database_=self.database,
                routing_=neo4j.RoutingControl.WRITE if write else neo4j.RoutingControl.READ,
            )
        except AuthError as e:
            raise KgragError(
                f"Neo4j at {self.uri} refused the credentials",
                hint="check NEO4J_USERNAME/NEO4J_PASSWORD, or for the managed server the "
                "password file shown by `kgrag neo4j status`",
            ) from e
        except (ServiceUnavailable, SessionExpired) as e:
            raise Neo4jUnavailable(
                f"Neo4j at {self.uri} is not reachable ({e.__class__.__name__})",
                hint="start it with `kgrag neo4j start`, or set NEO4J_URI to a running server; "
                "jobs are resumable, so re-run the same command afterwards",
            ) from e
        except ClientError as e:
            raise KgragError(f"Cypher statement {name!r} failed: {e.message}") from e
        except (TransientError, Neo4jError) as e:
            raise KgragError(f"Neo4j error in {name!r}: {e}") from e
        finally:
            elapsed = time.perf_counter() - start
            self.stats.queries += 1
            self.stats.seconds += elapsed
            self.stats.by_name[name] = self.stats.by_name.get(name, 0) + 1
        counters.add(summary.counters)
        return [r.data() for r in records], counters


def connect_checked(uri: str, user: str, password: str, database: str) -> GraphStore:
    """`GraphStore.connect` with the user-facing error translation applied."""
    try:
        return GraphStore.connect(uri, user, password, database)
    except AuthError as e:
        raise KgragError(
            f"Neo4j at {uri} refused the credentials for user {user!r}",
            hint="check NEO4J_USERNAME/NEO4J_PASSWORD (or the managed server's password file)",
        ) from e
    except (ServiceUnavailable, OSError, ValueError) as e:
        raise Neo4jUnavailable(
            f"Neo4j at {uri} is not reachable: {e}",
            hint="run `kgrag neo4j start` (managed server) or set NEO4J_URI to a running server",
        ) from e


def wait_until_ready(
    uri: str, user: str, password: str, timeout_s: float, alive: Any = None
) -> None:
    """Poll `verify_connectivity()` until Bolt answers; `alive()` False aborts early."""
    deadline = time.monotonic() + timeout_s
    last: BaseException | None = None
    while time.monotonic() < deadline:
        if alive is not None and not alive():
            raise Neo4jUnavailable("the Neo4j process exited during start-up")
        try:
            with neo4j.GraphDatabase.driver(uri, auth=(user, password)) as d:
                d.verify_connectivity()
            return
        except AuthError:
            raise
        except (ServiceUnavailable, SessionExpired, OSError) as e:
            last = e
            time.sleep(0.25)
    raise Neo4jUnavailable(
        f"Neo4j did not answer on {uri} within {timeout_s:.0f} s ({last})",
        hint="raise KGRAG_NEO4J__START_TIMEOUT_S, or read the log shown by `kgrag neo4j status`",
    )


