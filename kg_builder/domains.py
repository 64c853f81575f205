"""Relation kinds per domain and the prompt each domain's extraction uses.

The six base kinds are the MetaKGRAG paper's (Appendix B, Table 8): conceptual,
property, function, spatial, temporal, causal. Medical, legal and Wikipedia add a few
kinds of their own. The kinds are rendered into the prompt (`$kinds`) and are the
enum of the JSON schema's `k` field, so prompt and schema can never disagree.

>>> spec = domain_spec("medical")
>>> spec.prompt, "treatment" in spec.kind_names
('extract_medical', True)
>>> domain_spec("my-notes").prompt
'extract_generic'
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from kgrag.errors import KgragError

# The graph built from the CommonsenseQA evaluation questions with their correct answers,
# the MetaKGRAG paper's Appendix B protocol (`kg_builder.paper_protocol`): a labelled
# experiment in a domain of its own, never a default, never written into another way.
PAPER_PROTOCOL_DOMAIN = "csqa-dev300-paper-protocol"
PAPER_PROTOCOL_TITLE = "graph built from the evaluation answers (paper's Appendix B protocol)"


@dataclass(frozen=True)
class RelationKind:
    name: str
    description: str


BASE_KINDS: tuple[RelationKind, ...] = (
    RelationKind("conceptual", "what something is: is a, type of, part of, also called"),
    RelationKind("property", "qualities and attributes: has, is <adjective>, made of"),
    RelationKind("function", "what something does or is used for: used for, capable of"),
    RelationKind("spatial", "where: located in, found at, near, contains"),
    RelationKind("temporal", "when and in which order: happens before, during, after"),
    RelationKind("causal", "what causes, prevents or results from what"),
)

_EXTRA_KINDS: dict[str, tuple[RelationKind, ...]] = {
    "medical": (
        RelationKind("symptom", "a condition and its signs or symptoms: has symptom"),
        RelationKind("treatment", "a drug or procedure and what it treats or manages"),
        RelationKind("diagnosis", "a test or finding and what it diagnoses or indicates"),
        RelationKind("mechanism", "how a drug or organ acts: inhibits, binds, secretes"),
        RelationKind("adverse_effect", "side effects, contraindications, interactions"),
        RelationKind("risk_factor", "what raises the risk of a condition"),
    ),
    "legal": (
        RelationKind("rule", "a doctrine or statute and what it requires or provides"),
        RelationKind("element", "a crime, tort or claim and an element it requires"),
        RelationKind("exception", "a rule and its exception, defence or privilege"),
        RelationKind("consequence", "conduct or breach and its legal result or remedy"),
    ),
    "wikipedia": (
        RelationKind("biographical", "a person's birth, death, nationality, occupation, "
                     "family"),
        RelationKind("creation", "who made, wrote, directed, founded or performed what"),
        RelationKind("membership", "member of, plays for, works for, belongs to"),
    ),
}


@dataclass(frozen=True)
class DomainSpec:
    """What extraction needs to know about a domain: its prompt file and relation kinds."""

    name: str
    prompt: str  # template name under kg_builder/prompts/
    kinds: tuple[RelationKind, ...]

    @property
    def kind_names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.kinds)

    def kinds_block(self) -> str:
        """The kinds as prompt lines: `- causal: what causes, prevents …`."""
        return "\n".join(f"- {k.name}: {k.description}" for k in self.kinds)


def domain_spec(domain: str) -> DomainSpec:
    """The built-in spec of commonsense/medical/legal/wikipedia, else the generic one."""
    if domain == "commonsense" or domain in _EXTRA_KINDS:
        return DomainSpec(domain, f"extract_{domain}", BASE_KINDS + _EXTRA_KINDS.get(domain, ()))
    return DomainSpec(domain, "extract_generic", BASE_KINDS)


def check_not_reserved(domain: str, action: str) -> None:
    """Refuse `action` on the paper-protocol domain: it holds the graph built from the
    evaluation answers and nothing else, and nothing is added to it another way.

    >>> check_not_reserved("commonsense", "kgrag build")
    """
    if domain == PAPER_PROTOCOL_DOMAIN:
        raise KgragError(f"{domain!r} is reserved for the {PAPER_PROTOCOL_TITLE}; "
                         f"{action} may not write into it",
                         hint="build it only with `kgrag graph paper-protocol --dataset "
                              "csqa`; use another domain name for anything else")


def jobs_folder(home: Path, domain: str) -> Path:
    """The folder of a domain's build jobs and resolution marker, always one folder inside
    `home/jobs`: `%`, `/`, `\\`, `~`, control characters and a leading dot are
    percent-encoded, every other character (letters of any script, spaces) is kept, so the
    folders of earlier builds stay where they were; a name over 200 bytes keeps its first
    160 and a digest of the whole name (`~` marks it), so it stays one valid folder name.

    >>> jobs_folder(Path("/h"), "wikipedia").as_posix()
    '/h/jobs/wikipedia'
    >>> jobs_folder(Path("/h"), "../../etc").as_posix()
    '/h/jobs/%2E.%2F..%2Fetc'
    >>> jobs_folder(Path("/h"), "médical notes").name
    'médical notes'
    """
    folder = "".join("".join(f"%{b:02X}" for b in c.encode())
                     if c in "%/\\~" or not c.isprintable() else c for c in domain)
    if folder.startswith("."):
        folder = "%2E" + folder[1:]
    folder = folder or "%"  # the empty name (every real "%" is encoded as "%25")
    if len(folder.encode()) > 200:
        digest = hashlib.sha256(domain.encode()).hexdigest()[:16]
        folder = folder.encode()[:160].decode(errors="ignore") + "~" + digest
    return home / "jobs" / folder
