"""Precision of the extractors: sample facts with their source text, judge them by hand,
score with a Wilson 95% interval.

    python research/precision_sample.py sample --extractor spacy --domain medical
    python research/precision_sample.py sample --extractor llm --domain medical
    (a person reads each line's `sentence` and sets "supported": true/false, "note")
    python research/precision_sample.py score          # the table for docs/benchmarks.md

Samples are fixed by the seed (42). spaCy facts: the chunks of the domain's knowledge
sources (all of them, as `kgrag build` reads them) are shuffled, the first 400 parsed with
the fast extractor's rules, and 50 facts drawn uniformly from the facts they gave; each
keeps the exact sentence it was read from. LLM facts: 50 facts drawn uniformly from the
committed export `data/graphs/<domain>.jsonl.gz` (LLM facts only), each with its first
source chunk (the text the model read; `sentence` is that chunk's sentence sharing the
most words with the fact, `chunk_text` the whole chunk). Lines already judged are kept when
a sample is written again.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import random
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "precision"
DOMAINS = ("commonsense", "medical", "legal", "wikipedia")
N, SEED, CHUNKS = 50, 42, 400
_WORD = re.compile(r"[^\W_]+")


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of k successes in n trials."""
    if n == 0:
        return 0.0, 0.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def sample_spacy(domain: str) -> list[dict]:
    from kg_builder.corpora import builtin_sources
    from kg_builder.fast_extract import load_pipeline, segments
    from kg_builder.fast_rules import sentence_facts
    from kg_builder.sources import load

    chunks = [c for s in builtin_sources(domain, ROOT.parent / "shared" / "data")
              for c in load(s)[0]]
    rng = random.Random(SEED)
    picked = rng.sample(chunks, min(CHUNKS, len(chunks)))
    nlp = load_pipeline()
    pool = []
    for c in picked:
        for seg in segments(c, 20_000):
            for sent in nlp(seg.text).sents:
                for f in sentence_facts(sent, seg.answer):
                    pool.append({"head": f.head, "relation": f.relation, "tail": f.tail,
                                 "kind": f.kind, "chunk_id": c.id, "sentence": sent.text,
                                 "answer": seg.answer})
    return rng.sample(pool, min(N, len(pool)))


def _best_sentence(text: str, words: set[str]) -> str:
    sents = re.split(r"(?<=[.!?])\s+|\n", text)
    return max(sents, key=lambda s: len(words & {w.lower() for w in _WORD.findall(s)}))


def sample_llm(domain: str) -> list[dict]:
    chunks: dict[str, str] = {}
    facts = []
    with gzip.open(ROOT / "data" / "graphs" / f"{domain}.jsonl.gz", "rt") as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("type") == "chunk":
                chunks[rec["id"]] = rec["text"]
            elif rec.get("type") == "fact" and rec.get("x", "llm") == "llm":
                facts.append(rec)
    rng = random.Random(SEED)
    out = []
    for rec in rng.sample(facts, min(N, len(facts))):
        text = chunks.get(rec["chunks"][0], "")
        words = {w.lower() for w in _WORD.findall(f"{rec['h']} {rec['t']}")}
        out.append({"head": rec["h"], "relation": rec["r"], "tail": rec["t"],
                    "kind": rec["k"], "chunk_id": rec["chunks"][0],
                    "sentence": _best_sentence(text, words), "chunk_text": text})
    return out


def write_sample(extractor: str, domain: str) -> Path:
    rows = sample_spacy(domain) if extractor == "spacy" else sample_llm(domain)
    path = OUT / f"{extractor}-{domain}.jsonl"
    old = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            r = json.loads(line)
            old[(r["head"], r["relation"], r["tail"], r["chunk_id"])] = r
    OUT.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        for i, r in enumerate(rows):
            prev = old.get((r["head"], r["relation"], r["tail"], r["chunk_id"]), {})
            r = {"n": i + 1, **r, "supported": prev.get("supported"),
                 "note": prev.get("note", "")}
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return path


def score() -> list[str]:
    lines = ["| extractor | domain | judged | supported | precision | Wilson 95% |",
             "|---|---|---|---|---|---|"]
    for path in sorted(OUT.glob("*.jsonl")):
        extractor, domain = path.stem.split("-", 1)
        rows = [json.loads(x) for x in path.read_text().splitlines()]
        judged = [r for r in rows if r["supported"] is not None]
        k = sum(1 for r in judged if r["supported"])
        lo, hi = wilson(k, len(judged))
        p = k / len(judged) if judged else 0.0
        lines.append(f"| {extractor} | {domain} | {len(judged)} | {k} | {p:.2f} | "
                     f"{lo:.2f}–{hi:.2f} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sample")
    s.add_argument("--extractor", choices=("spacy", "llm"), required=True)
    s.add_argument("--domain", choices=DOMAINS, action="append")
    sub.add_parser("score")
    args = ap.parse_args()
    if args.cmd == "sample":
        for d in args.domain or DOMAINS:
            print(write_sample(args.extractor, d))
    else:
        print("\n".join(score()))


if __name__ == "__main__":
    main()
