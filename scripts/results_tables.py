"""Print result tables from scored run directories, or refill the marked tables of the
README and docs/results.md.

    python scripts/results_tables.py docs/results/csqa-dev docs/results/hotpotqa-dev
    python scripts/results_tables.py --write [FILE ...]   # refill every marked table
    python scripts/results_tables.py --check [FILE ...]   # exit 1 if one differs

FILE defaults to README.md and docs/results.md (run from the repository).

A table is marked by the comment line just above it,
`<!-- results: docs/results/csqa-dev-kg400 same -->`: the run, then `all` (every scored
row), `same` (the rows on the run's same first K questions) or `matrix` (the paired tests
on those K), and optionally `methods=a,b` to show only those rows, in that order.

Reads each run's `metrics.json` (written by `kgrag score`) and prints one Markdown table
per run in the README's layout: multiple choice (accuracy, correct/wrong/fail, answer in
evidence, PRR, cost), short answers (EM, F1, Passage EM, cost) or open-ended answers
(ROUGE-L, BERTScore, G-Eval). The full report with every column and the paired tests is
`kgrag report`; this script exists so the README's numbers are regenerated, not typed.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any


def pct(ci: dict[str, float] | None, digits: int = 1) -> str:
    if not ci:
        return "–"
    return (f"{100 * ci['mean']:.{digits}f} "
            f"[{100 * ci['low']:.{digits}f}, {100 * ci['high']:.{digits}f}]")


def num(value: float | None, fmt: str = "{:.1f}") -> str:
    return "–" if value is None else fmt.format(value)


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def choice_rows(methods: dict[str, Any]) -> str:
    header = ["method", "n", "accuracy % [95% CI]", "correct / wrong / fail",
              "answer in evidence %", "concepts matched % / starts/q",
              "PRR (questions / starts)", "LLM calls/q", "Cypher/q",
              "retrieval ms (median, no LLM)", "median s/q"]
    rows = []
    for name, m in methods.items():
        prr = m.get("prr")
        prr_text = (f"{prr['by_question']:.2f} / {prr['by_start']:.2f}"
                    if isinstance(prr, dict) else "–")
        match = m.get("matching")
        match_text = (f"{100 * match['kept_share']:.0f} / {match['starts_per_question']:.1f}"
                      if match else "–")
        rows.append([f"`{name}`", str(m["n"]), pct(m["accuracy"]),
                     f"{m['correct']} / {m['wrong']} / {m['fail']}", pct(m.get("evidence_hit")),
                     match_text, prr_text, num(m["llm_calls"]), num(m["cypher_queries"]),
                     num(m.get("retrieval_ms"), "{:.0f}"), num(m["median_seconds"])])
    return table(header, rows)


def short_rows(methods: dict[str, Any]) -> str:
    header = ["method", "setting", "n", "EM % [95% CI]", "F1 % [95% CI]", "Passage EM %",
              "all supporting read %", "supporting read (share) %", "LLM calls/q",
              "retrievals/q", "Cypher/q", "tokens/q (prompt+generated)", "median s/q"]
    rows = [[f"`{name}`", m.get("setting") or "–", str(m["n"]), pct(m["em"]), pct(m["f1"]),
             pct(m.get("passage_em")), pct(m.get("supporting_all")),
             num(100 * m["supporting_share"] if m.get("supporting_share") is not None
                 else None, "{:.1f}"),
             num(m["llm_calls"]), num(m["retrievals"]), num(m["cypher_queries"]),
             f"{m['prompt_tokens']:,.0f}+{m['completion_tokens']:,.0f}",
             num(m["median_seconds"])] for name, m in methods.items()]
    return table(header, rows)


def open_rows(methods: dict[str, Any]) -> str:
    header = ["method", "n", "ROUGE-L %", "BERTScore F1 %",
              "G-Eval Coh. / Cons. / Flu. / Rel. (1–5)",
              "LLM calls/q", "median s/q"]
    rows = []
    for name, m in methods.items():
        g = m.get("geval") or {}
        dims = ["coherence", "consistency", "fluency", "relevance"]
        geval = (" / ".join(num(g["scores"][d]["mean"], "{:.2f}") for d in dims)
                 + f" ({g['answers']} answers, {g['unparsed']} of {4 * g['answers']}"
                 " judgements without a score)") if g else "–"
        rows.append([f"`{name}`", str(m["n"]), pct(m["rouge_l"]), pct(m["bertscore_f1"]), geval,
                     num(m["llm_calls"]), num(m["median_seconds"])])
    return table(header, rows)


def rows_of(methods: dict[str, Any]) -> str:
    first = next(iter(methods.values()))
    if first.get("accuracy") is not None:
        return choice_rows(methods)
    if first.get("em") is not None:
        return short_rows(methods)
    return open_rows(methods)


def matrix(order: list[str], pairs: list[dict[str, Any]]) -> str:
    """Row minus column wins (McNemar on EM or accuracy) with the exact p."""
    tests = {(t["a"], t["b"]): t for t in pairs if "McNemar" in t["metric"]}
    rows = []
    for a in order:
        cells = []
        for b in order:
            t, sign = tests.get((a, b)), 1
            if t is None:
                t, sign = tests.get((b, a)), -1
            cells.append("·" if a == b else "–" if t is None else  # + 0.0: no "-0"
                         f"{sign * t['statistic'] + 0.0:+.0f} ({t['p_value']:.2f})")
        rows.append([f"`{a}`", *cells])
    return table(["", *(f"`{m}`" for m in order)], rows)


def render(run: Path) -> str:
    metrics = json.loads((run / "metrics.json").read_text())
    out = f"<!-- {run}: {metrics.get('dataset')} -->\n{rows_of(metrics['methods'])}\n"
    same = metrics.get("same")
    if same and same["methods"]:
        out += (f"\n<!-- {run}: the same first {same['k']} questions -->\n"
                f"{rows_of(same['methods'])}\n\n{matrix(list(same['methods']), same['pairs'])}\n")
    return out


DOCS = ("README.md", "docs/results.md")  # the files with marked tables, from the repository
MARKER = re.compile(r"^<!-- results: (\S+) (all|same|matrix)(?: methods=(\S+))? -->$")


def block(root: Path, run: str, kind: str, only: str | None) -> str:
    """The table one README marker asks for, from the run's committed metrics.json."""
    path = root / run / "metrics.json"
    if not path.exists():
        raise SystemExit(f"{run}: no metrics.json (score the run with `kgrag score {run}`)")
    metrics = json.loads(path.read_text())
    methods = metrics["methods"]
    pairs: list[dict[str, Any]] = []
    if kind != "all":
        same = metrics.get("same") or {}
        if not same.get("methods"):
            raise SystemExit(f"{run}: scored without --same, so it has no '{kind}' table")
        methods, pairs = same["methods"], same["pairs"]
    if only:
        missing = [m for m in only.split(",") if m not in methods]
        if missing:
            raise SystemExit(f"{run}: {', '.join(missing)} not among its scored methods")
        methods = {m: methods[m] for m in only.split(",")}
    return matrix(list(methods), pairs) if kind == "matrix" else rows_of(methods)


def refill(text: str, root: Path) -> tuple[str, list[str]]:
    """Replace the table under each marker; return the new text and the markers that changed."""
    lines, out, changed, i = text.splitlines(), [], [], 0
    while i < len(lines):
        out.append(lines[i])
        found = MARKER.match(lines[i])
        i += 1
        if not found:
            continue
        end = i
        while end < len(lines) and lines[end].startswith("|"):
            end += 1
        if end == i:  # refilling would add a second table above a displaced one
            raise SystemExit(f"{lines[i - 1]}: the marker must stand directly above its table")
        old, new = "\n".join(lines[i:end]), block(root, *found.groups())
        if old != new:
            changed.append(lines[i - 1])
        out.extend(new.splitlines())
        i = end
    return "\n".join(out) + ("\n" if text.endswith("\n") else ""), changed


def repo_root(doc: Path) -> Path:
    """The folder the markers' run paths start from: the nearest one holding docs/results
    (the README's own folder, or the repository above docs/results.md)."""
    for folder in doc.resolve().parents:
        if (folder / "docs" / "results").is_dir():
            return folder
    return doc.resolve().parent


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    if argv[0] in ("--write", "--check"):
        differ = False
        docs = [Path(a) for a in argv[1:]] or [Path(d) for d in DOCS]
        for doc in docs:
            if not doc.is_file():
                raise SystemExit(f"{doc}: no such file (give the README and docs/results.md)")
        for doc in docs:
            text, changed = refill(doc.read_text(), repo_root(doc))
            for marker in changed:
                print(f"{doc}: " + ("refilled " if argv[0] == "--write" else
                                    "differs from its run: ") + marker)
            if argv[0] == "--write":
                doc.write_text(text)
            differ = differ or bool(changed)
        return 1 if differ and argv[0] == "--check" else 0
    for arg in argv:
        print(render(Path(arg)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
