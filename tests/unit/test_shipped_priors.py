"""The published configuration is the default: the default model's position priors on
CommonsenseQA, MedQA and MMLU law ship with the package, and `kgrag eval` on those
datasets divides them out (`prompt-prior`) unless a bias is configured or given."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.cli import _published_bias
from kgrag.config import Settings
from kgrag.platform import Platform
from kgrag.reader import (
    CLOSED_BOOK_PROMPT,
    KG_CHOOSE_PROMPT,
    SHIPPED_PRIORS,
    PositionPrior,
    find_prior,
    prior_path,
)

MODEL = "qwen2.5-coder-1.5b"
SOURCES = {"csqa": "commonsense/csqa_train.jsonl", "medqa": "medical/medmcqa_dev.jsonl",
           "mmlu-law": "legal/mmlu_professional_law_val.jsonl"}


@pytest.mark.parametrize("dataset", sorted(SOURCES))
@pytest.mark.parametrize("prompt", [CLOSED_BOOK_PROMPT, KG_CHOOSE_PROMPT])
def test_each_shipped_prior_loads_and_comes_from_a_calibration_file(dataset: str,
                                                                    prompt: str) -> None:
    prior = PositionPrior.load(prior_path(SHIPPED_PRIORS, MODEL, dataset, prompt))
    assert prior.source == SOURCES[dataset] and "dev300" not in prior.source
    assert prior.dataset == dataset and prior.prompt == prompt and prior.model == MODEL
    assert abs(sum(prior.probs) - 1) < 1e-6 and prior.questions >= 60


def test_a_prior_of_the_home_wins_over_the_shipped_one(tmp_path: Path) -> None:
    assert find_prior(tmp_path, MODEL, "csqa") == prior_path(SHIPPED_PRIORS, MODEL, "csqa")
    own = prior_path(tmp_path, MODEL, "csqa")
    own.parent.mkdir(parents=True)
    own.write_text(json.dumps({"model": MODEL}))
    assert find_prior(tmp_path, MODEL, "csqa") == own
    missing = find_prior(tmp_path, MODEL, "mine")  # named in the error: the home's path
    assert missing == prior_path(tmp_path, MODEL, "mine") and not missing.is_file()


def platform(tmp_path: Path, **reader: object) -> Platform:
    return Platform(Settings(home=tmp_path / "home", data_dir=tmp_path / "data",
                             **({"reader": reader} if reader else {})))


def test_eval_takes_the_published_bias_for_datasets_with_priors(tmp_path: Path) -> None:
    def bias(dataset: str, rotations: int | None = None) -> str | None:
        p = platform(tmp_path)
        got = _published_bias(p, dataset, rotations)
        assert p.settings.reader.bias == (got or "none")  # the reader is set to it
        return got

    assert bias("csqa") == "prompt-prior" and bias("mmlu-law") == "prompt-prior"
    assert bias(str(tmp_path / "medqa.jsonl")) == "prompt-prior"
    assert bias("hotpotqa") is None  # no priors: no correction
    assert bias(str(tmp_path / "mine.jsonl")) is None
    assert bias("csqa", 0) is None  # rotations asked for: rotate's choice


def test_a_configured_bias_is_kept(tmp_path: Path) -> None:
    assert _published_bias(platform(tmp_path, bias="none"), "csqa", None) is None
