"""Long documents with questions that name their section, from MedQuAD's knowledge-source
file (`medical/medquad_corpus.jsonl.gz`, never an evaluation file): the input of the
chunk-size row of docs/benchmarks.md (`kgrag bench chunks`).

Each MedQuAD document (`document_id`) of one NIH source becomes a Markdown section
`# <focus>` with one `## <qtype>` subsection per record, its answer as the text. Each
record's own question becomes a question whose supporting title is its subsection's
heading path (`<focus> > <qtype>`). Records that repeat an evaluation question
(`kgrag/leave_out.json`) are left out of both.

    python research/medquad_sections.py --source NHLBI --out /tmp/medquad-nhlbi
    kgrag bench chunks --source /tmp/medquad-nhlbi/nhlbi.md \\
        --dataset /tmp/medquad-nhlbi/questions.jsonl --retrievers bm25,dense
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Annotated

import typer

from kgrag.config import Settings
from kgrag.leave_out import left_out_lines
from kgrag.script import run_script

CORPUS = "medical/medquad_corpus.jsonl.gz"


def main(out: Annotated[Path, typer.Option(help="Folder for <source>.md and "
                                           "questions.jsonl.")],
         source: Annotated[str, typer.Option(help="MedQuAD's NIH source (NHLBI, CancerGov, "
                                             "NIDDK, …).")] = "NHLBI") -> None:
    data_dir = Settings().data_dir
    skip = left_out_lines(CORPUS, data_dir)
    docs: dict[str, list[tuple[int, dict[str, str]]]] = {}
    with gzip.open(data_dir / CORPUS, "rt", encoding="utf-8") as f:
        for line, text in enumerate(f, 1):
            r = json.loads(text)
            if r["source"] == source and line not in skip and r["answer"].strip():
                docs.setdefault(r["document_id"], []).append((line, r))
    if not docs:
        raise typer.BadParameter(f"no record of source {source!r}", param_hint="--source")
    out.mkdir(parents=True, exist_ok=True)
    md, questions = [], []
    for records in docs.values():
        focus = " ".join(records[0][1]["focus"].split())
        md.append(f"# {focus}\n")
        for line, r in records:
            qtype = " ".join(r["qtype"].split())
            md.append(f"## {qtype}\n\n{' '.join(r['answer'].split())}\n")
            questions.append({"qid": f"{source}:L{line}", "question": r["question"],
                              "answer": r["answer"],
                              "supporting_titles": [f"{focus} > {qtype}"]})
    (out / f"{source.lower()}.md").write_text("\n".join(md), encoding="utf-8")
    with (out / "questions.jsonl").open("w", encoding="utf-8") as f:
        f.writelines(json.dumps(q) + "\n" for q in questions)
    words = sum(len(r["answer"].split()) for rs in docs.values() for _, r in rs)
    print(f"{out}: {len(docs)} documents, {len(questions)} sections and questions, "
          f"{words:,} words of answers ({len(skip)} corpus records left out of any source)")


if __name__ == "__main__":
    run_script(main, __doc__)
