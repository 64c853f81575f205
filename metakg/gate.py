"""The metacognitive evidence gate of `metakgrag-oa` (ours): trust the evidence or not.

Decided per question without the gold answer, from what the reader saw:
- `closed`: the option distribution without evidence (the `llm` row's own pass);
- `with_evidence`: the distribution with the option-grouped evidence;
- `supported`: the options reached by a path from the question's entities (None when the
  method has no per-option paths).

Rules, in order (the first that applies decides):
1. no evidence at all → closed-book;
2. paths were searched and reach no option → closed-book (the evidence supports none);
3. both readings choose the same option → the evidence (it changes nothing);
4. the evidence moved the choice to an option no path reaches → closed-book;
5. paths reach every option, or reach the closed-book choice as well as the new one → the
   evidence does not discriminate between the two, closed-book (`not-discriminative`; on
   the full graphs, `kgrag graph coverage` reaches wrong options as often as right ones);
6. the evidence moved the choice, but the reader is less sure of its new choice than it
   was of its closed-book one → closed-book;
7. otherwise → the evidence.

>>> d = decide({"A": 0.7, "B": 0.3}, {"A": 0.2, "B": 0.8}, frozenset({"B"}), True)
>>> d.use_evidence, d.rule
(True, 'supported-switch')
>>> decide({"A": 0.7, "B": 0.3}, {"A": 0.4, "B": 0.6}, frozenset(), True).rule
'no-option-supported'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kgrag.llm.letters import argmax


@dataclass(frozen=True)
class GateDecision:
    use_evidence: bool
    rule: str
    why: str

    @property
    def fired(self) -> bool:
        """The gate fired: the question is answered closed-book."""
        return not self.use_evidence


def decide(closed: Mapping[str, float], with_evidence: Mapping[str, float],
           supported: frozenset[str] | None, has_evidence: bool) -> GateDecision:
    """Whether to answer from the evidence (see the module docstring for the rules)."""
    if not has_evidence:
        return GateDecision(False, "no-evidence", "no KG evidence was found")
    if supported is not None and not supported:
        return GateDecision(False, "no-option-supported",
                            "no path from the question's entities reaches any option")
    a, b = argmax(closed), argmax(with_evidence)
    if a == b:
        return GateDecision(True, "agree", f"with and without evidence the reader picks {a}")
    if supported is not None and b not in supported:
        return GateDecision(False, "unsupported-switch",
                            f"the evidence moved the choice {a}→{b}, but no path reaches {b}")
    if supported is not None and (a in supported or supported >= set(closed)):
        return GateDecision(False, "not-discriminative",
                            f"the evidence moved the choice {a}→{b}, but paths reach "
                            + ("every option" if supported >= set(closed) else f"{a} too"))
    if with_evidence[b] < closed[a]:
        return GateDecision(False, "less-sure-switch",
                            f"the evidence moved the choice {a}→{b} with p={with_evidence[b]:.2f}"
                            f" < closed-book p={closed[a]:.2f}")
    return GateDecision(True, "supported-switch",
                        f"the evidence moved the choice {a}→{b}"
                        + (", and a path reaches it" if supported is not None else ""))
