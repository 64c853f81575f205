"""Result tables of the README and docs/results.md, refilled from committed `metrics.json`.

A table is marked by the comment line just above it,
`<!-- results: docs/results/csqa-dev-kg400 same -->`: the run, then `all` (every scored
row), `same` (the rows on the run's same first K questions), `matrix` (the paired tests
on those K) or `agreement` (an open-ended run's G-Eval judge against ROUGE-L and
BERTScore, `eval.agreement`), and optionally `methods=a,b` to show only those rows, in
that order.

The README's compact table has a block marker naming several runs and their rows:

    <!-- results-summary
    docs/results/csqa-dev-kg400=llm,metakgrag
    docs/results/hotpotqa-dev=metarag,seakr
    -->

and gets one row per method: dataset, method, n and the main score with its 95% CI
(accuracy for multiple choice, EM for short answers, ROUGE-L for open-ended answers), on
the run's same first K questions when it was scored with `--same`.

Short-answer runs scored with `--same` can stand side by side, one row per method and EM
with its CI and F1 per run (a method not yet on a run's K questions shows how many it has);
the marker takes two lines, the runs and then the methods:

    <!-- results-side docs/results/hotpotqa-dev,docs/results/2wiki-dev
    methods=rag,seakr -->

The significance matrix is `eval.report.significance_matrix`, the one `kgrag report` prints.
`python scripts/results_tables.py --write` refills the files; `--check` fails on a table
that differs from its run. Nothing here is typed by hand.

>>> pct({"mean": 0.5, "low": 0.25, "high": 0.75})
'50.0 [25.0, 75.0]'
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from kgrag.errors import KgragError

DOCS = ("README.md", "docs/results.md")  # the files with marked tables, from the repository
MARKER = re.compile(r"^<!-- results: (\S+) (all|same|matrix|agreement)(?: methods=(\S+))? -->$")
SIDE, SIDE_METHODS = re.compile(r"^<!-- results-side (\S+)$"), re.compile(r"^methods=(\S+) -->$")
SUMMARY_OPEN, SUMMARY_CLOSE = "<!-- results-summary", "-->"
DATASET_NAMES = {"csqa": "CommonsenseQA", "mmlu-law": "MMLU professional law", "medqa": "MedQA",
                 "hotpotqa": "HotpotQA", "2wiki": "2WikiMultihopQA", "medquad": "MedQuAD"}


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
              "G-Eval Coh. / Cons. / Flu. / Rel. (1–5)", "words/answer",
              "LLM calls/q", "median s/q"]
    rows = []
    for name, m in methods.items():
        g = m.get("geval") or {}
        dims = ["coherence", "consistency", "fluency", "relevance"]
        geval = (" / ".join(num(g["scores"][d]["mean"], "{:.2f}") for d in dims)
                 + f" ({g['answers']} answers, {g['unparsed']} of {4 * g['answers']}"
                 " judgements without a score)") if g else "–"
        rows.append([f"`{name}`", str(m["n"]), pct(m["rouge_l"]), pct(m["bertscore_f1"]), geval,
                     num(m.get("answer_words"), "{:.0f}"), num(m["llm_calls"]),
                     num(m["median_seconds"])])
    return table(header, rows)


def rows_of(methods: dict[str, Any]) -> str:
    first = next(iter(methods.values()))
    if first.get("accuracy") is not None:
        return choice_rows(methods)
    if first.get("em") is not None:
        return short_rows(methods)
    return open_rows(methods)


def matrix(order: list[str], pairs: list[dict[str, Any]]) -> str:
    """The significance matrix of `kgrag report`, from a metrics.json's recorded pairs."""
    from eval.report import significance_matrix
    from eval.scoring import PairTest

    return "\n".join(significance_matrix(order, [PairTest(**p) for p in pairs]))


def render(run: Path) -> str:
    """Every table of one scored run (the script's default output)."""
    metrics = json.loads((run / "metrics.json").read_text())
    out = f"<!-- {run}: {metrics.get('dataset')} -->\n{rows_of(metrics['methods'])}\n"
    same = metrics.get("same")
    if same and same["methods"]:
        out += (f"\n<!-- {run}: the same first {same['k']} questions -->\n"
                f"{rows_of(same['methods'])}\n\n{matrix(list(same['methods']), same['pairs'])}\n")
    return out


def _metrics(root: Path, run: str) -> dict[str, Any]:
    path = root / run / "metrics.json"
    if not path.exists():
        raise KgragError(f"{run}: no metrics.json", hint=f"score the run: kgrag score {run}")
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def _pick(run: str, methods: dict[str, Any], only: str | None) -> dict[str, Any]:
    if not only:
        return methods
    missing = [m for m in only.split(",") if m not in methods]
    if missing:
        raise KgragError(f"{run}: {', '.join(missing)} not among its scored methods",
                         hint="name methods of the run's metrics.json")
    return {m: methods[m] for m in only.split(",")}


def block(root: Path, run: str, kind: str, only: str | None) -> str:
    """The table one marker asks for, from the run's committed metrics.json."""
    metrics = _metrics(root, run)
    if kind == "agreement":
        from eval.agreement import Agreement, agreement_table

        if not metrics.get("agreement"):
            raise KgragError(f"{run}: no judge agreement in its metrics.json",
                             hint=f"score it with the judge: kgrag score {run} --bertscore "
                                  "--geval")
        return "\n".join(agreement_table([Agreement(**a) for a in metrics["agreement"]]))
    methods = metrics["methods"]
    pairs: list[dict[str, Any]] = []
    if kind != "all":
        same = metrics.get("same") or {}
        if not same.get("methods"):
            raise KgragError(f"{run}: scored without --same, so it has no '{kind}' table",
                             hint=f"kgrag score {run} --same K")
        methods, pairs = same["methods"], same["pairs"]
    methods = _pick(run, methods, only)
    return matrix(list(methods), pairs) if kind == "matrix" else rows_of(methods)


def _score(m: dict[str, Any]) -> tuple[str, dict[str, float] | None]:
    for key, name in (("accuracy", "accuracy"), ("em", "EM"), ("rouge_l", "ROUGE-L")):
        if m.get(key) is not None:
            return name, m[key]
    return "–", None


def summary(root: Path, specs: list[str]) -> str:
    """The compact table of a results-summary block: one row per `RUN=method,...` method."""
    rows = []
    for spec in specs:
        run, sep, only = spec.partition("=")
        if not sep or not only:
            raise KgragError(f"bad results-summary line {spec!r}",
                             hint="write RUN=method,method (e.g. docs/results/2wiki-dev=seakr)")
        metrics = _metrics(root, run)
        methods = (metrics.get("same") or {}).get("methods") or metrics["methods"]
        dataset = str(metrics.get("dataset"))
        for name, m in _pick(run, methods, only).items():
            metric, ci = _score(m)
            rows.append([f"{DATASET_NAMES.get(dataset, dataset)} ({metric})", f"`{name}`",
                         str(m["n"]), pct(ci)])
    return table(["dataset (score)", "method", "n", "score % [95% CI]"], rows)


def side_by_side(root: Path, runs: str, only: str) -> str:
    """The table of a results-side marker: per method its setting, then per run EM % with
    its 95% CI and F1 % on the run's same K questions."""
    header, columns = ["method", "setting"], []
    for run in runs.split(","):
        metrics = _metrics(root, run)
        same = metrics.get("same") or {}
        if not same.get("methods"):
            raise KgragError(f"{run}: scored without --same, so it has no side-by-side column",
                             hint=f"kgrag score {run} --same K")
        dataset = str(metrics.get("dataset"))
        header += [f"{DATASET_NAMES.get(dataset, dataset)} EM % [CI]", "F1 %"]
        columns.append((same, metrics["methods"]))
    rows = []
    for name in only.split(","):
        if not any(name in every for _, every in columns):
            raise KgragError(f"{runs}: {name} not among the runs' scored methods",
                             hint="name methods of the runs' metrics.json")
        setting = next(every[name].get("setting") or "–" for _, every in columns
                       if name in every)
        row = [f"`{name}`", setting]
        for same, every in columns:
            if name in same["methods"]:
                m = same["methods"][name]
                if not m.get("em") or not m.get("f1"):
                    raise KgragError(f"{runs}: {name} has no EM/F1 (not a short-answer run)",
                                     hint="results-side compares HotpotQA-style runs; use a "
                                          "results: marker for the others")
                row += [pct(m["em"]), num(100 * m["f1"]["mean"])]
            else:
                row += [f"– ({every[name]['n']} of {same['k']} so far)" if name in every
                        else "–", "–"]
        rows.append(row)
    return table(header, rows)


def _table_end(lines: list[str], start: int, marker: str) -> int:
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    if end == start:  # refilling would add a second table above a displaced one
        raise KgragError(f"{marker}: the marker must stand directly above its table",
                         hint="remove the blank line between the marker and the table")
    return end


def refill(text: str, root: Path) -> tuple[str, list[str]]:
    """Replace the table under each marker; return the new text and the markers that changed."""
    lines, out, changed, i = text.splitlines(), [], [], 0
    while i < len(lines):
        out.append(lines[i])
        found, side = MARKER.match(lines[i]), SIDE.match(lines[i])
        if lines[i].strip() == SUMMARY_OPEN:
            close = lines.index(SUMMARY_CLOSE, i)
            out.extend(lines[i + 1:close + 1])
            specs, marker, i = [s.strip() for s in lines[i + 1:close] if s.strip()], lines[i], close
            new = summary(root, specs)
        elif found:
            marker, new = lines[i], block(root, *found.groups())
        elif side:
            methods = SIDE_METHODS.match(lines[i + 1]) if i + 1 < len(lines) else None
            if not methods:
                raise KgragError(f"{lines[i]}: its next line must be methods=a,b -->",
                                 hint="name the rows on the marker's second line")
            i += 1
            out.append(lines[i])
            marker, new = lines[i - 1], side_by_side(root, side.group(1), methods.group(1))
        else:
            i += 1
            continue
        end = _table_end(lines, i + 1, marker)
        if "\n".join(lines[i + 1:end]) != new:
            changed.append(marker)
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


def refill_files(docs: list[Path], write: bool) -> list[str]:
    """Refill (or, without `write`, only compare) each file; the changed markers, each
    prefixed with its file."""
    for doc in docs:
        if not doc.is_file():
            raise KgragError(f"{doc}: no such file", hint="give the README and docs/results.md")
    changed: list[str] = []
    for doc in docs:
        text, markers = refill(doc.read_text(), repo_root(doc))
        changed += [f"{doc}: {m}" for m in markers]
        if write:
            doc.write_text(text)
    return changed
