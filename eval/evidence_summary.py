"""The evidence study's rows and summary: what `kgrag evidence` writes per (setting,
method, question), the summary table with its paired comparisons, and `--score-only`.
The run that gathers the rows is `eval.evidence` (its docstring describes the measures).

    summaries = score_only(Path("docs/results/evidence-csqa"))
    print("\n".join(table(summaries)))
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from statistics import median
from typing import Any

from pydantic import BaseModel

from eval.runner import RunConfig, read_jsonl
from eval.stats import bootstrap_ci, mcnemar
from kgrag.datasets import load_dataset
from kgrag.errors import KgragError
from kgrag.normalize import normalize_answer
from kgrag.types import Question

DEFAULT = "default"  # the setting without a --param value


class EvidenceRow(BaseModel):
    """One line of rows.jsonl."""

    setting: str
    method: str
    id: str
    concepts: int
    concepts_matched: int
    starts: int
    triples: int
    answer: bool
    distractor: bool | None  # None: not a multiple-choice question
    refined_starts: int  # starts whose final path differs from the initial one
    refine_steps: int
    cypher_queries: int
    retrieval_ms: float
    lines: list[str]


class EvidenceSummary(BaseModel):
    """One row of the summary table: a method under a setting."""

    setting: str
    method: str
    n: int
    answer: list[float]  # mean, low, high (95% bootstrap)
    answer_only: list[float] | None
    distractor_only: float | None
    wrong_option_each: float | None  # one wrong option's text in the evidence
    option_lift: float | None  # correct option's rate over one wrong option's: 1 = blind
    favours: float | None  # share of questions whose evidence favours one option
    favours_correct: float | None  # of those, the share where it is the correct one
    chance: float | None  # 1 / options, the rate of a blind pick
    no_evidence: float
    triples_median: float
    concepts_matched: float
    starts_per_question: float
    prr_questions: float | None
    prr_starts: float | None
    cypher_per_question: float
    retrieval_ms_median: float


def mentions(texts: Iterable[str], lines: Sequence[str]) -> bool:
    """Whether any of `texts` occurs in `lines` as whole normalised words (SQuAD
    normalisation: lower case, no punctuation or articles).

    >>> mentions(["the countryside"], ["Evidence 1: farm is in countryside"])
    True
    >>> mentions(["art"], ["Evidence 1: a cart is a vehicle"])
    False
    """
    evidence = f" {normalize_answer(' '.join(lines))} "
    return any(f" {t} " in evidence for t in map(normalize_answer, texts) if t)


def gold_and_wrong(q: Question) -> tuple[list[str], list[str] | None]:
    """The texts that count as the answer, and the wrong options' (None: not multiple
    choice)."""
    if q.is_multiple_choice:
        return ([c.text for c in q.choices if c.label in q.answers],
                [c.text for c in q.choices if c.label not in q.answers])
    return list(q.answers), None


def read_rows(out: Path) -> list[EvidenceRow]:
    """The rows of `out`: `rows.jsonl.gz` (a finished study, compressed to be committed),
    then `rows.jsonl` (appended by the next run); a later row of the same key wins."""
    rows = {(r.setting, r.method, r.id): r
            for name in ("rows.jsonl.gz", "rows.jsonl")
            for r in read_jsonl(out / name, EvidenceRow, "row")}
    return list(rows.values())


def wrong_option_rate(rows: Sequence[EvidenceRow], questions: Mapping[str, Question]
                      ) -> float | None:
    """How often one wrong option's text is in the evidence: mentions over all wrong
    options of the multiple-choice rows (None without such rows)."""
    hits = total = 0
    for r in rows:
        q = questions.get(r.id)
        wrong = gold_and_wrong(q)[1] if q is not None else None
        if wrong:
            hits += sum(mentions([w], r.lines) for w in wrong)
            total += len(wrong)
    return hits / total if total else None


def content_words(text: str) -> set[str]:
    """The normalised words of `text` without closed-class words (SeaKR's list)."""
    from textrag.seakr.text import FUNCTION_WORDS

    return {w for w in normalize_answer(text).split() if w not in FUNCTION_WORDS}


def favoured_option(q: Question, lines: Sequence[str]) -> str | None:
    """The option whose content words the evidence covers best (share of the option's
    words found in the evidence); None when no option has any, or two tie. Works for long
    options (MMLU law's are sentences) where whole-text matching never fires.

        q = Question(id="q", text="?", answers=["B"], choices=[
            Choice(label="A", text="a forest"), Choice(label="B", text="a den in the hills")])
        favoured_option(q, ["Evidence 1: fox lives in den"]), favoured_option(q, [])
        # -> ('B', None)
    """
    evidence = content_words(" ".join(lines))
    shares = []
    for c in q.choices:
        words = content_words(c.text)
        shares.append((len(words & evidence) / len(words) if words else 0.0, c.label))
    shares.sort(reverse=True)
    if not shares or shares[0][0] == 0 or (len(shares) > 1 and shares[1][0] == shares[0][0]):
        return None
    return shares[0][1]


def summarise(rows: Sequence[EvidenceRow], questions: Mapping[str, Question]
              ) -> list[EvidenceSummary]:
    """One summary per (setting, method); `questions` by id give the wrong options."""
    groups: dict[tuple[str, str], list[EvidenceRow]] = defaultdict(list)
    for r in rows:
        groups[(r.setting, r.method)].append(r)
    out = []
    for (setting, method), rs in groups.items():
        ci = bootstrap_ci([float(r.answer) for r in rs])
        mc = [r for r in rs if r.distractor is not None]
        each = wrong_option_rate(mc, questions)
        picks = [(favoured_option(questions[r.id], r.lines), questions[r.id])
                 for r in mc if r.id in questions]
        only = bootstrap_ci([float(r.answer and not r.distractor) for r in mc]) if mc else None
        refined = [r for r in rs if r.refine_steps]
        concepts = sum(r.concepts for r in rs)
        out.append(EvidenceSummary(
            setting=setting, method=method, n=len(rs), answer=[ci.mean, ci.low, ci.high],
            answer_only=[only.mean, only.low, only.high] if only else None,
            distractor_only=(sum(bool(r.distractor) and not r.answer for r in mc) / len(mc)
                             if mc else None),
            wrong_option_each=each,
            option_lift=(sum(r.answer for r in mc) / len(mc) / each) if mc and each else None,
            favours=(sum(p is not None for p, _ in picks) / len(picks)) if picks else None,
            favours_correct=(sum(p in q.answers for p, q in picks if p is not None)
                             / max(1, sum(p is not None for p, _ in picks))) if picks else None,
            chance=(sum(1 / len(q.choices) for _, q in picks) / len(picks)) if picks else None,
            no_evidence=sum(r.triples == 0 for r in rs) / len(rs),
            triples_median=float(median(r.triples for r in rs)),
            concepts_matched=sum(r.concepts_matched for r in rs) / concepts if concepts else 0.0,
            starts_per_question=sum(r.starts for r in rs) / len(rs),
            prr_questions=(sum(r.refined_starts > 0 for r in rs) / len(rs)
                           if refined else None),
            prr_starts=(sum(r.refined_starts for r in rs) / sum(r.refine_steps for r in rs)
                        if refined else None),
            cypher_per_question=sum(r.cypher_queries for r in rs) / len(rs),
            retrieval_ms_median=float(median(r.retrieval_ms for r in rs))))
    return sorted(out, key=lambda s: (s.setting != DEFAULT, s.setting, s.method))


def paired(rows: Sequence[EvidenceRow], a: tuple[str, str], b: tuple[str, str]
           ) -> tuple[int, int, int, float] | None:
    """(shared questions, a-only, b-only, McNemar exact p) for "answer in evidence" of
    two (setting, method) pairs; None without shared questions."""
    by: dict[tuple[str, str], dict[str, bool]] = defaultdict(dict)
    for r in rows:
        by[(r.setting, r.method)][r.id] = r.answer
    shared = sorted(set(by[a]) & set(by[b]))
    if not shared:
        return None
    x, y = [by[a][q] for q in shared], [by[b][q] for q in shared]
    t = mcnemar(x, y)
    return len(shared), t.b, t.c, t.p_exact


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.1f}"


def table(summaries: Sequence[EvidenceSummary]) -> list[str]:
    lines = ["| setting | method | n | answer in evidence % [95% CI] | answer, no wrong "
             "option % | only a wrong option % | one wrong option % | lift | favours an "
             "option % | favoured is correct % (chance) | no evidence % "
             "| triples (median) | concepts matched % | starts/q | PRR (questions / starts) "
             "| Cypher/q | retrieval ms (median) |", "|" + "---|" * 17]
    for s in summaries:
        a = f"{_pct(s.answer[0])} [{_pct(s.answer[1])}, {_pct(s.answer[2])}]"
        prr = ("–" if s.prr_questions is None else
               f"{s.prr_questions:.2f} / {s.prr_starts:.2f}")
        lines.append(f"| {s.setting} | `{s.method}` | {s.n} | {a} | "
                     f"{_pct(s.answer_only[0] if s.answer_only else None)} | "
                     f"{_pct(s.distractor_only)} | {_pct(s.wrong_option_each)} | "
                     f"{'–' if s.option_lift is None else f'{s.option_lift:.2f}'} | "
                     f"{_pct(s.favours)} | {_pct(s.favours_correct)} ({_pct(s.chance)}) | "
                     f"{_pct(s.no_evidence)} | "
                     f"{s.triples_median:g} | {_pct(s.concepts_matched)} | "
                     f"{s.starts_per_question:.2f} | {prr} | {s.cypher_per_question:.1f} | "
                     f"{s.retrieval_ms_median:.0f} |")
    return lines


def comparisons(rows: Sequence[EvidenceRow], reference: str = "metakgrag") -> list[str]:
    """McNemar on "answer in evidence": every method against `reference` within a
    setting, and every setting against the default for the same method."""
    keys = sorted({(r.setting, r.method) for r in rows})
    pairs = [((s, reference), (s, m)) for s, m in keys if m != reference
             and (s, reference) in keys]
    pairs += [((DEFAULT, m), (s, m)) for s, m in keys if s != DEFAULT and (DEFAULT, m) in keys]
    if not pairs:
        return []
    out = ["| A | B | shared questions | answer only in A's evidence | only in B's | "
           "McNemar exact p |", "|---|---|---|---|---|---|"]
    for a, b in pairs:
        t = paired(rows, a, b)
        if t is not None:
            out.append(f"| {a[1]} [{a[0]}] | {b[1]} [{b[0]}] | {t[0]} | {t[1]} | {t[2]} | "
                       f"{t[3]:.3f} |")
    return out


def write_summary(out: Path, summaries: Sequence[EvidenceSummary],
                  config: RunConfig | Mapping[str, Any]) -> Path:
    rows = read_rows(out)
    run = config if isinstance(config, RunConfig) else RunConfig.model_validate(config)
    text = [f"# Evidence study: {run.dataset} over the {run.domain} graph", "",
            f"Model {run.model} (concepts), graph {run.graph}, first {run.n} questions.",
            "Answer in evidence = the correct option's text (or a gold answer) occurs in the "
            "evidence lines as whole normalised words; see `eval/evidence.py`.", "",
            *table(summaries), ""]
    comp = comparisons(rows)
    if comp:
        text += ["Paired comparisons of \"answer in evidence\" (same questions):", "",
                 *comp, ""]
    path = out / "evidence.md"
    path.write_text("\n".join(text), encoding="utf-8")
    (out / "summary.json").write_text(json.dumps([s.model_dump() for s in summaries],
                                                 indent=2) + "\n")
    return path


def score_only(out: Path, data_dir: Path | None = None) -> list[EvidenceSummary]:
    """Rewrite the summary of an existing evidence directory (the questions, for their
    options, come from the recorded dataset under `data_dir`, the settings' by default)."""
    path = out / "evidence.json"
    if not path.is_file():
        raise KgragError(f"{out} is not an evidence directory (no evidence.json)",
                         hint="create one with `kgrag evidence --out DIR`")
    run = RunConfig.model_validate(json.loads(path.read_text())["run"])
    if data_dir is None:
        from kgrag.config import load_settings

        data_dir = Path(load_settings().data_dir)
    questions = load_dataset(run.dataset, data_dir, limit=run.n).questions
    summaries = summarise(read_rows(out), {q.id: q for q in questions})
    write_summary(out, summaries, run)
    return summaries
