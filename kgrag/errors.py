"""One exception type for everything a user can fix, always with a hint."""

from __future__ import annotations

from collections.abc import Sequence


class KgragError(Exception):
    """An error the user can act on: `message` says what happened, `hint` what to do.

    The CLI prints both and exits non-zero; nothing else is shown (no traceback)
    unless `--debug` is given.

    >>> str(KgragError("Neo4j is not running", hint="run `kgrag neo4j start`"))
    'Neo4j is not running\\n  → run `kgrag neo4j start`'
    """

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  → {self.hint}" if self.hint else self.message


class DomainNotBuilt(KgragError):
    """The graph of a domain is missing or empty: the one error every command and method
    raises for it, naming the domains that are built and the commands that build one.

    >>> str(DomainNotBuilt("law", "has no entities", ["legal"])).splitlines()[0]
    "domain 'law' has no entities. Built domains: legal."
    """

    def __init__(self, domain: str, problem: str = "is not built",
                 known: Sequence[str] = (), *, hint: str = "") -> None:
        built = f" Built domains: {', '.join(known)}." if known else ""
        super().__init__(
            f"domain {domain!r} {problem}.{built}",
            hint=hint or f"build it with `kgrag build --domain {domain}` or load an export "
            f"with `kgrag graph import data/graphs/{domain}.jsonl.gz`")
        self.domain = domain


class Neo4jUnavailable(KgragError):
    """Neo4j cannot be reached (not started, wrong URI, or went down mid-job)."""


class ModelError(KgragError):
    """A model is unknown, missing, corrupt, or lacks a capability a method needs."""


class LLMOutputError(KgragError):
    """A model reply could not be parsed into the expected typed output."""


class DataError(KgragError, ValueError):
    """A dataset or question file is unknown, missing, or holds no usable record (a
    `ValueError` too, for callers that read files without the CLI)."""

