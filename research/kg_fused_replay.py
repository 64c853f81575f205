"""kg-fused replayed from two committed runs, no model: `llm`'s debiased letter
distributions (the "choose" step of an `llm` run) fused with the kg-paths scores (the
"paths" step of a `kg-paths` run) at the fusion weight of the domain's weights file, or at
`--weight`. Prints accuracy with its bootstrap CI, McNemar against `llm`, and the share of
each letter chosen against its gold share.

    .venv/bin/python research/kg_fused_replay.py docs/results/reader-csqa-dev300 \
        docs/results/csqa-kg-paths --domain commonsense
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from kgrag.stats import bootstrap_ci, mcnemar
from metakg.kg_paths import fuse, load_model


def _steps(run: Path, method: str, stage: str
           ) -> dict[str, tuple[dict[str, Any], list[str]]]:
    """Question id → (the data of its last `stage` step, its gold answers)."""
    out = {}
    for line in (run / "predictions.jsonl").read_text().splitlines():
        row = json.loads(line)
        pred = row["prediction"]
        if pred["method"] != method:
            continue
        steps = [s for s in pred["trace"] if s["stage"] == stage]
        if steps:
            out[row["question"]["id"]] = (steps[-1]["data"], row["question"]["answers"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("llm_run", type=Path)
    ap.add_argument("paths_run", type=Path)
    ap.add_argument("--domain", default="commonsense")
    ap.add_argument("--weight", type=float, default=None)
    a = ap.parse_args()
    weight = a.weight if a.weight is not None else float(
        load_model(a.domain).meta.get("fused_weight", 0.0))  # type: ignore[arg-type]
    reader = _steps(a.llm_run, "llm", "choose")
    graph = _steps(a.paths_run, "kg-paths", "paths")
    ids = [i for i in reader if i in graph]
    fused_ok: list[bool] = []
    llm_ok: list[bool] = []
    chosen: Counter[str] = Counter()
    gold: Counter[str] = Counter()
    for i in ids:
        letters, answers = reader[i]
        scores = {k: v["score"] for k, v in graph[i][0]["options"].items()}
        p = fuse(letters["letters"], scores, weight)
        label = max(p, key=lambda k: (p[k], letters["letters"].get(k, 0.0)))
        fused_ok.append(label in answers)
        llm_ok.append(letters["label"] in answers)
        chosen[label] += 1
        gold[answers[0]] += 1
    ci, base = bootstrap_ci(fused_ok), bootstrap_ci(llm_ok)
    test = mcnemar(fused_ok, llm_ok)
    print(f"{len(ids)} questions, weight {weight:g}: kg-fused {100 * ci.mean:.1f} "
          f"[{100 * ci.low:.1f}, {100 * ci.high:.1f}], llm {100 * base.mean:.1f}; McNemar "
          f"b={test.b} c={test.c} p={test.p_exact:.3f}")
    print("letter shares (chosen / gold): " + ", ".join(
        f"{k} {chosen[k] / len(ids):.2f}/{gold[k] / len(ids):.2f}" for k in sorted(gold)))


if __name__ == "__main__":
    main()
