"""The multiple-choice reader: one shared answer step for every multiple-choice method.

The answer is read from the log-probabilities of the option letters at the answer
position (`ChatModel.next_token_logprobs`), renormalised over the valid letters, instead
of decoding a reply and parsing it. Every multiple-choice method (`llm`, `kg-no-evidence`,
`kg-vanilla`, `tog`, `metakgrag` and its ablations, `metakgrag-oa`) answers through
`read_choice`, so their comparisons differ only in the prompt and the evidence.

Position bias (`ReaderConfig.bias`), because small models prefer a letter (B on MedQA):
- `rotate`: k passes with the options cyclically rotated (the option texts move, the
  letters stay), each pass's letter probabilities mapped back to the options and
  averaged. Prompts put the options last, so the passes share every KV block before them.
- `prior`: PriDe (Zheng et al., ICLR 2024): a prior over letter positions, estimated once
  per model and dataset from permuted questions of a calibration file that is never an
  evaluation file (`eval.prior`), is divided out of one pass. The prior is estimated
  under the `llm` row's prompt (`llm_choose`) and divided out of every prompt.
- `prompt-prior` (ours): the same, but each answer prompt's pass is divided by a prior
  estimated under that prompt (the KG rows' `answer_choose` with its no-evidence line),
  since the preferred letter depends on the prompt: on MedQA dev300 the `llm` prior left
  `kg-no-evidence` choosing D 101 times where D is correct 60 times.

Shipped priors (`kgrag/priors/<model>/`): the default model's priors on CommonsenseQA,
MedQA and MMLU law under both prompts, estimated from their calibration files
(csqa_train, medmcqa_dev, the MMLU law validation file; 60 questions each), the ones the
published runs divided out. `find_prior` reads a prior from the kgrag home first, then
from there; `kgrag eval` on those datasets corrects with `prompt-prior` unless a bias is
configured or given (`published_bias`).

>>> cfg = ReaderConfig(bias="rotate")
>>> c = read_choice(model, question, lambda block: render(block), cfg)   # doctest: +SKIP
>>> c.label, round(sum(c.probs.values()), 6)                             # doctest: +SKIP
('B', 1.0)
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kgrag.errors import KgragError
from kgrag.llm.base import ChatModel, Message
from kgrag.llm.letters import argmax, renormalise
from kgrag.types import Question

Bias = Literal["none", "rotate", "prior", "prompt-prior"]
PRIOR_BIASES: frozenset[str] = frozenset({"prior", "prompt-prior"})
CLOSED_BOOK_PROMPT = "llm_choose"  # the prompt `prior` estimates under (the `llm` row's)
KG_CHOOSE_PROMPT = "answer_choose"  # the KG rows' answer prompt (`prompt-prior`'s second)
Render = Callable[[str], Sequence[Message]]  # options block -> the prompt


class ReaderConfig(BaseModel):
    """How multiple-choice answers are read (`[reader]` in kgrag.toml, KGRAG_READER__*)."""

    model_config = ConfigDict(extra="forbid")

    bias: Bias = "none"
    rotations: int = Field(default=0, ge=0)  # passes for `rotate`; 0: one per option
    explain: bool = False  # also generate an explanation after the choice (the app)
    gate: bool = True  # metakgrag-oa: answer closed-book when the evidence supports no option
    prior_dir: Path | None = None  # where `prior` files live; None: <home>/priors


@dataclass(frozen=True)
class PositionPrior:
    """P(letter position) of a model on a dataset's kind of question (PriDe's prior)."""

    model: str
    dataset: str
    source: str  # the calibration file it was estimated from
    labels: tuple[str, ...]
    probs: tuple[float, ...]
    questions: int
    prompt: str = CLOSED_BOOK_PROMPT  # the answer prompt it was estimated under

    def of(self, labels: Sequence[str]) -> dict[str, float]:
        if tuple(labels) != self.labels:
            raise KgragError(f"the position prior of {self.model} on {self.dataset} is for "
                             f"options {''.join(self.labels)}, not {''.join(labels)}",
                             hint="estimate one for this number of options")
        return dict(zip(self.labels, self.probs, strict=True))

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.__dict__ | {"labels": list(self.labels),
                                                    "probs": list(self.probs)}, indent=1))

    @classmethod
    def load(cls, path: Path) -> PositionPrior:
        try:
            d = json.loads(path.read_text())
            return cls(d["model"], d["dataset"], d["source"], tuple(d["labels"]),
                       tuple(float(p) for p in d["probs"]), int(d["questions"]),
                       d.get("prompt", CLOSED_BOOK_PROMPT))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as e:
            raise KgragError(f"position prior file {path} is unreadable ({e!r})",
                             hint="make it again with `kgrag reader prior --dataset D` "
                             "(add `--prompt answer_choose` for a `<D>.answer_choose.json`)"
                             ) from None


def prior_path(root: Path, model: str, dataset: str, prompt: str = CLOSED_BOOK_PROMPT
               ) -> Path:
    """`<root>/<model>/<dataset>.json` for the `llm` row's prompt, else
    `<dataset>.<prompt>.json`."""
    name = dataset if prompt == CLOSED_BOOK_PROMPT else f"{dataset}.{prompt}"
    return root / model.replace("/", "_") / f"{name}.json"


SHIPPED_PRIORS = Path(__file__).parent / "priors"


def find_prior(root: Path, model: str, dataset: str, prompt: str = CLOSED_BOOK_PROMPT
               ) -> Path:
    """The prior file under `root` (the kgrag home's, made by `kgrag reader prior`), else
    the shipped one of the package, else the path under `root` (to name in an error).

    >>> find_prior(Path("/nowhere"), "qwen2.5-coder-1.5b", "csqa").parent.name
    'qwen2.5-coder-1.5b'
    >>> find_prior(Path("/nowhere"), "qwen2.5-coder-1.5b", "csqa").is_file()
    True
    """
    own = prior_path(root, model, dataset, prompt)
    shipped = prior_path(SHIPPED_PRIORS, model, dataset, prompt)
    return own if own.is_file() or not shipped.is_file() else shipped


def published_bias(root: Path, model: str, dataset: str) -> Bias | None:
    """`prompt-prior` when priors under both prompts exist for this model and dataset
    (the published runs' correction), else None (the configured bias stays)."""
    found = all(find_prior(root, model, dataset, prompt).is_file()
                for prompt in (CLOSED_BOOK_PROMPT, KG_CHOOSE_PROMPT))
    return "prompt-prior" if found else None


@dataclass(frozen=True)
class Choice:
    """The option read, its distribution over the options (after any correction), and
    each pass's distribution over the displayed letters with the rotation it used."""

    label: str
    probs: dict[str, float]
    passes: tuple[dict[str, float], ...]
    shifts: tuple[int, ...]
    correction: Bias
    prompt_tokens: int

    def trace_data(self) -> dict[str, Any]:
        return {"label": self.label, "letters": _rounded(self.probs),
                "passes": [_rounded(p) for p in self.passes], "shifts": list(self.shifts),
                "correction": self.correction, "passes_n": len(self.passes)}

    @property
    def confidence(self) -> float:
        return self.probs[self.label]


def _rounded(p: Mapping[str, float]) -> dict[str, float]:
    return {k: round(v, 4) for k, v in p.items()}


def rotated_block(question: Question, shift: int) -> str:
    """The options block with option texts moved `shift` places up: letter i shows option
    (i + shift) mod n; the letters stay in order."""
    labels = [c.label for c in question.choices]
    texts = [c.text for c in question.choices]
    n = len(labels)
    return "\n".join(f"{labels[i]}. {texts[(i + shift) % n]}" for i in range(n))


def to_options(question: Question, shift: int, by_letter: Mapping[str, float]
               ) -> dict[str, float]:
    """A pass's probabilities over displayed letters, as probabilities of the options."""
    labels = [c.label for c in question.choices]
    n = len(labels)
    return {labels[(i + shift) % n]: by_letter[labels[i]] for i in range(n)}


def divide_prior(probs: Mapping[str, float], prior: Mapping[str, float]) -> dict[str, float]:
    """PriDe's debiasing: P(option) ∝ P_observed(letter) / P_prior(letter)."""
    raw = {k: probs[k] / max(prior[k], 1e-9) for k in probs}
    total = sum(raw.values())
    return {k: v / total for k, v in raw.items()}


def shifts_for(n: int, cfg: ReaderConfig) -> tuple[int, ...]:
    """The rotations asked for: (0,) without `rotate`; else k of the n evenly spread."""
    if cfg.bias != "rotate":
        return (0,)
    k = min(cfg.rotations or n, n)
    return tuple(sorted({round(i * n / k) % n for i in range(k)}))


def letter_pass(model: ChatModel, messages: Sequence[Message], labels: Sequence[str],
                prefill: str = "") -> tuple[dict[str, float], int]:
    """One forward pass: the letter distribution renormalised over `labels`."""
    scores = model.next_token_logprobs(messages, labels, prefill)
    return renormalise(scores.logprobs), scores.prompt_tokens


def read_choice(model: ChatModel, question: Question, render: Render, cfg: ReaderConfig,
                prior: PositionPrior | None = None) -> Choice:
    """The option of a multiple-choice question, read from letter probabilities.

    `render(options_block)` gives the prompt; its options must come last, before only
    the answer cue, so rotations share the prefix in the KV cache."""
    labels = [c.label for c in question.choices]
    if len(labels) < 2:
        raise KgragError(f"question {question.id} has {len(labels)} option(s)",
                         hint="multiple-choice questions need at least two options")
    passes, mapped, tokens = [], [], 0
    shifts = shifts_for(len(labels), cfg)
    for shift in shifts:
        by_letter, n_tok = letter_pass(model, render(rotated_block(question, shift)), labels)
        passes.append(by_letter)
        mapped.append(to_options(question, shift, by_letter))
        tokens += n_tok
    probs = {lb: sum(m[lb] for m in mapped) / len(mapped) for lb in labels}
    if cfg.bias in PRIOR_BIASES:
        if prior is None:
            raise KgragError(f"bias correction {cfg.bias!r} needs a position prior for "
                             f"{model.name} on {question.dataset}",
                             hint=f"run `kgrag reader prior --dataset {question.dataset}`")
        probs = divide_prior(probs, prior.of(labels))
    return Choice(argmax(probs), probs, tuple(passes), shifts, cfg.bias, tokens)


def option_text(question: Question, label: str) -> str:
    """The reply text of a choice: "B. forest" (what the scorer and the app show)."""
    text = next((c.text for c in question.choices if c.label == label), "")
    return f"{label}. {text}"


def entropy(probs: Mapping[str, float]) -> float:
    """Shannon entropy in nats (0: certain)."""
    return -sum(p * math.log(p) for p in probs.values() if p > 0)
