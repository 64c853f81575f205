"""Calibrated evidence trust (ours): how far this reader may trust this graph's evidence.

`metakgrag-oa`'s gate (`metakg.gate`) decides per question from what the reader saw. On
the graphs built from knowledge sources its switches were wrong more often than right,
because paths reach wrong options as often as right ones and the 1.5B reader picks an
option a path reaches whatever the question asks (docs/results.md). Whether the evidence
helps is a property of the (reader, graph, kind of question) triple, so it is measured
once on calibration questions, like the PriDe position prior: `kgrag reader trust`
answers a calibration file's questions with `metakgrag-oa`, leaving out each question's
own knowledge-source record from the paths (`SOURCE_DOCUMENT`), and counts the correct
answers of three policies:

- `closed-book`: never use the evidence (the `llm` row);
- `evidence`: use the evidence reading wherever paths reached an option;
- `gate`: `metakgrag-oa`'s per-question rules.

The policy with the most correct answers is kept; a tie goes to the one that uses the
evidence less (closed-book, then gate). `metakgrag-oa-trust` applies it.

    trust = EvidenceTrust.load(trust_path(root, "qwen2.5-coder-1.5b", "mmlu-law", "legal"))
    trust.policy
    # -> 'evidence'
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from kgrag.errors import KgragError

Policy = Literal["closed-book", "gate", "evidence"]
POLICIES: tuple[Policy, ...] = ("closed-book", "gate", "evidence")  # the tie order


def trust_path(root: Path, model: str, dataset: str, domain: str, bias: str = "prior"
               ) -> Path:
    """Where the trust of `model` in `domain`'s evidence on `dataset` is kept, for the
    letter reader's `bias` correction (`none` and `prior` share the first name they had;
    another correction has a file of its own: `<dataset>.<domain>.<bias>.trust.json`)."""
    tag = "" if bias in ("none", "prior") else f".{bias}"
    return root / model / f"{dataset}.{domain}{tag}.trust.json"


def replay_path(root: Path, model: str, dataset: str, domain: str) -> Path:
    """The replies calibrations decoded (`kgrag.llm.replay`), beside the trust files: a
    calibration under another bias correction replays them instead of decoding again."""
    return root / model / f"{dataset}.{domain}.trust-replay.sqlite"


def choose_policy(correct: Mapping[str, int]) -> Policy:
    """The policy with the most correct answers; ties go to the earlier of `POLICIES`."""
    best = max(correct.get(p, 0) for p in POLICIES)
    return next(p for p in POLICIES if correct.get(p, 0) == best)


@dataclass(frozen=True)
class EvidenceTrust:
    model: str
    dataset: str
    domain: str
    source: str  # the calibration file, relative to the data folder
    questions: int
    correct: dict[str, int] = field(default_factory=dict)  # policy -> correct answers
    evidence_read: int = 0  # questions where paths reached an option (evidence was read)
    bias: str = "none"  # the letter reader's bias correction it was calibrated with

    @property
    def policy(self) -> Policy:
        return choose_policy(self.correct)

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**asdict(self), "policy": self.policy}, indent=1) + "\n")

    @classmethod
    def load(cls, path: Path) -> EvidenceTrust:
        """Read a trust file; a damaged one is a clear error naming the command."""
        try:
            d = json.loads(path.read_text())
            d.pop("policy", None)  # derived from the counts
            return cls(**d)
        except (json.JSONDecodeError, TypeError, AttributeError) as e:
            raise KgragError(f"evidence trust file {path} is unreadable ({e})",
                             hint="make it again with `kgrag reader trust --dataset D "
                             "--domain G`") from None
