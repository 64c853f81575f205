"""Which option the multiple-choice answer prompts pick, on questions no run evaluates.

Each prompt variant is asked with no evidence (the KG answer prompts get the no-evidence
line that `metakg` uses), so only the prompt differs. Reported per variant: accuracy,
Fails (read as the scorer reads answer-first replies: `parse_question_choice(…,
answer_first=True)`), how often each option position was chosen against how often it is
correct, and seconds per question. `--out F` keeps every reply (JSON lines);
`--replies F` reads such a file again with the current scorer, without the model.

    .venv/bin/python research/prompt_bias.py --n 40 --offset 9000 --out replies.jsonl
    .venv/bin/python research/prompt_bias.py --n 40 --offset 9000 --replies replies.jsonl

The default questions are CommonsenseQA *train* records 9000-9039: a knowledge source,
not an evaluation file (no evidence is given, so whether the graph holds them does not
matter). Variants:
`llm` (kgrag/prompts/llm_mcq.txt), `kg` (metakg/prompts/answer_mcq.txt, our rendering of
MetaKGRAG's Table 7) and `table7` (research/prompt_bias/answer_mcq_table7.txt, Table 7's
wording and order: question, evidence, then the instruction). Greedy decoding, the
model's answer budget (`KGMethod.answer_tokens`, `LLMOnly.max_tokens`).
"""

from __future__ import annotations

import collections
import json
import time
from pathlib import Path
from typing import Annotated

import typer

from kgrag.baselines import LLMOnly
from kgrag.datasets import load_dataset
from kgrag.llm.base import GenerationParams
from kgrag.parsing import parse_question_choice
from kgrag.platform import Platform
from kgrag.prompt import PromptTemplate
from kgrag.script import run_script
from metakg.kg_method import NO_EVIDENCE, KGMethod

ROOT = Path(__file__).resolve().parents[1]

VARIANTS = {
    "llm": (ROOT / "kgrag/prompts/llm_mcq.txt", LLMOnly.max_tokens[0]),
    "kg": (ROOT / "metakg/prompts/answer_mcq.txt", KGMethod.answer_tokens[True]),
    "table7": (ROOT / "research/prompt_bias/answer_mcq_table7.txt", KGMethod.answer_tokens[True]),
}


def main(data_file: Annotated[str, typer.Option("--data", help="Question file (a knowledge "
                                                           "source, not an eval file).")
                              ] = "commonsense/csqa_train.jsonl",
         domain: Annotated[str, typer.Option(help="Domain named in the KG prompt.")
                           ] = "commonsense",
         n: Annotated[int, typer.Option(help="Questions.")] = 40,
         offset: Annotated[int, typer.Option(help="First record.")] = 9000,
         variants: Annotated[str, typer.Option(help="Prompt variants.")] = "llm,kg,table7",
         out_path: Annotated[Path | None, typer.Option(
             "--out", help="Keep the replies here (JSON lines).")] = None,
         replies: Annotated[Path | None, typer.Option(
             help="Score the replies kept in this file instead of asking the model.")
         ] = None) -> None:
    """Ask each prompt variant with no evidence; print accuracy, Fails and options chosen."""
    out = out_path.open("w", encoding="utf-8") if out_path else None
    p = Platform()
    data = load_dataset(data_file, p.settings.data_dir, limit=offset + n)
    questions = data.questions[offset:]
    names = [v.strip() for v in variants.split(",")]
    kept: dict[tuple[str, str], dict] = {}
    if replies:
        for line in replies.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            kept[row["prompt"], row["id"]] = row
        names = [n for n in names if any(k[0] == n for k in kept)]
    model = None if replies else p.chat_model
    gold = collections.Counter(q.answers[0] for q in questions)
    print(f"{len(questions)} questions from {data.path} [{offset}, "
          f"{offset + len(questions)}); correct option: "
          + " ".join(f"{k} {gold[k]}" for k in sorted(gold)))
    print("| prompt | correct | fail | chosen (A B C D E …) | s/q |\n|---|---|---|---|---|")
    for name in names:
        path, budget = VARIANTS[name]
        template = PromptTemplate.load(path)
        chosen: collections.Counter[str | None] = collections.Counter()
        correct, start = 0, time.perf_counter()
        for q in questions:
            messages = template.render(
                question=q.text, choices=q.choices_block(), domain=domain,
                evidence=NO_EVIDENCE, letters="\\".join(c.label for c in q.choices))
            if model is None:
                reply = kept[name, q.id]["reply"]
            else:
                reply = model.chat(messages, GenerationParams(max_tokens=budget)).text
            label = parse_question_choice(reply, q, answer_first=True)
            if out:
                out.write(json.dumps({"prompt": name, "id": q.id, "gold": q.answers[0],
                                      "chosen": label, "reply": reply}) + "\n")
                out.flush()
            chosen[label] += 1
            correct += label == q.answers[0]
        seconds = (time.perf_counter() - start) / len(questions)
        labels = sorted({c.label for q in questions for c in q.choices})
        dist = " ".join(str(chosen[k]) for k in labels)
        if model is None:  # the recorded decoding time is not kept
            seconds = float("nan")
        print(f"| {name} | {correct} ({100 * correct / len(questions):.1f}%) | "
              f"{chosen[None]} | {dist} | {seconds:.1f} |", flush=True)


if __name__ == "__main__":
    run_script(main, __doc__)
