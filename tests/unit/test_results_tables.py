"""eval/tables.py (and scripts/results_tables.py) renders the README's tables from committed
metrics.json."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eval import tables as tables_module
from kgrag.errors import KgragError

ROOT = Path(__file__).resolve().parents[2]
tables = vars(tables_module)
script = runpy.run_path(str(ROOT / "scripts" / "results_tables.py"))["app"]


@pytest.mark.results
def test_one_row_per_scored_method_with_its_numbers() -> None:
    for run in sorted((ROOT / "docs" / "results").glob("*/metrics.json")):
        methods = json.loads(run.read_text())["methods"]
        text, _, same = tables["render"](run.parent).partition("the same first")
        rows = [line for line in text.splitlines() if line.startswith("| `")]
        assert [r.split("`")[1] for r in rows] == list(methods)
        for row, m in zip(rows, methods.values(), strict=True):
            assert f"| {m['n']} |" in row
        recorded = json.loads(run.read_text()).get("same")
        if recorded and recorded["methods"]:  # a table of K-question rows, then the matrix
            same_rows = [ln for ln in same.splitlines() if ln.startswith("| `")]
            k = len(recorded["methods"])
            assert [r.split("`")[1] for r in same_rows[:k]] == list(recorded["methods"])
            assert all(f"| {recorded['k']} |" in r for r in same_rows[:k])
            if any("McNemar" in t["metric"] for t in recorded["pairs"]):  # its matrix follows
                assert len(same_rows) == 2 * k and same_rows[k].count("·") == 1
            else:  # open-ended rows: paired bootstraps only, no right/wrong matrix
                assert len(same_rows) == k


def test_percent_with_interval() -> None:
    assert tables["pct"]({"mean": 0.5, "low": 0.25, "high": 0.75}) == "50.0 [25.0, 75.0]"
    assert tables["pct"](None) == "–"


@pytest.mark.results
@pytest.mark.parametrize(("doc", "at_least"), [("README.md", 0), ("docs/results.md", 14)])
def test_every_marked_table_is_its_committed_run(doc: str, at_least: int) -> None:
    text = (ROOT / doc).read_text()
    markers = [ln for ln in text.splitlines()
               if tables["MARKER"].match(ln) or tables["SIDE"].match(ln)
               or ln == tables["SUMMARY_OPEN"]]
    assert len(markers) >= max(at_least, 1)  # the headline / detailed tables, not a vacuous pass
    _, changed = tables["refill"](text, ROOT)
    assert changed == [], "run `python scripts/results_tables.py --write README.md docs/results.md`"


def test_check_and_write_cover_every_file_given(tmp_path: Path) -> None:
    _scored_run(tmp_path)
    good = "<!-- results: docs/results/toy all -->\n" + tables["block"](
        tmp_path, "docs/results/toy", "all", None) + "\n"
    (tmp_path / "README.md").write_text(good)
    stale = tmp_path / "docs" / "results.md"
    stale.write_text("<!-- results: docs/results/toy all -->\n| old |\n")
    files = [str(tmp_path / "README.md"), str(stale)]
    runner = CliRunner()
    result = runner.invoke(script, ["--check", *files])
    assert result.exit_code == 1  # the second file's table is stale
    assert "differs from its run: " in result.output and "results.md: " in result.output
    assert runner.invoke(script, ["--write", *files]).exit_code == 0
    assert runner.invoke(script, ["--check", *files]).exit_code == 0
    assert stale.read_text() == good
    missing = runner.invoke(script, ["--check", str(tmp_path / "missing.md")])
    assert missing.exit_code == 2 and "no such file" in missing.output


def test_the_markers_of_docs_results_start_at_the_repository() -> None:
    assert tables["repo_root"](ROOT / "docs" / "results.md") == ROOT
    assert tables["repo_root"](ROOT / "README.md") == ROOT


def _scored_run(root: Path) -> None:
    run = root / "docs" / "results" / "toy"
    run.mkdir(parents=True)
    row = {"n": 4, "accuracy": {"mean": 0.5, "low": 0.0, "high": 1.0}, "correct": 2,
           "wrong": 2, "fail": 0, "llm_calls": 1.0, "cypher_queries": 0.0,
           "median_seconds": 3.0}
    same = {"k": 4, "methods": {"llm": row, "cot": row},
            "pairs": [{"a": "llm", "b": "cot", "metric": "accuracy (McNemar)",
                       "statistic": 0.0, "p_value": 1.0}]}
    (run / "metrics.json").write_text(json.dumps(
        {"dataset": "toy", "methods": {"llm": row, "cot": row}, "same": same}))


def test_refill_replaces_only_marked_tables_and_keeps_the_text(tmp_path: Path) -> None:
    _scored_run(tmp_path)
    readme = ("# R\n\n<!-- results: docs/results/toy all methods=cot -->\n| old |\n|---|\n\n"
              "prose\n\n| unmarked |\n\n<!-- results: docs/results/toy matrix -->\n| x |\n")
    text, changed = tables["refill"](readme, tmp_path)
    assert len(changed) == 2 and "prose\n\n| unmarked |\n" in text
    assert "| `cot` | 4 | 50.0 [0.0, 100.0] | 2 / 2 / 0 |" in text and "| `llm` | 4" not in text
    assert "| `cot` | +0 (1.000) | · |" in text  # a tie is +0, never -0
    assert tables["refill"](text, tmp_path) == (text, [])  # refilling again changes nothing


def test_refill_names_what_is_missing(tmp_path: Path) -> None:
    _scored_run(tmp_path)
    unscored = tmp_path / "docs" / "results" / "bare"
    unscored.mkdir()
    (unscored / "metrics.json").write_text(json.dumps({"methods": {}}))
    for marker, says in (("docs/results/gone all", "no metrics.json"),
                         ("docs/results/toy all methods=tog", "tog not among"),
                         ("docs/results/bare same", "scored without --same"),
                         ("docs/results/toy agreement", "no judge agreement")):
        with pytest.raises(KgragError, match=says):
            tables["refill"](f"<!-- results: {marker} -->\n| t |\n", tmp_path)
    with pytest.raises(KgragError, match="directly above its table"):
        tables["refill"]("<!-- results: docs/results/toy all -->\n\n| t |\n", tmp_path)


def test_agreement_marker_gives_the_judges_spearman_table(tmp_path: Path) -> None:
    _scored_run(tmp_path)
    path = tmp_path / "docs" / "results" / "toy" / "metrics.json"
    metrics = json.loads(path.read_text())
    metrics["agreement"] = [
        {"metric": "ROUGE-L", "level": "answers", "dimension": "mean of 4", "rho": 0.31,
         "p_value": 0.0004, "n": 60},
        {"metric": "BERTScore F1", "level": "questions", "dimension": "mean of 4",
         "rho": -0.05, "p_value": None, "n": 9}]
    path.write_text(json.dumps(metrics))
    text, changed = tables["refill"](
        "<!-- results: docs/results/toy agreement -->\n| old |\n\nafter\n", tmp_path)
    assert changed == ["<!-- results: docs/results/toy agreement -->"]
    assert ("| mean of 4 | ROUGE-L | answers | +0.31 | <0.001 | 60 |\n"
            "| mean of 4 | BERTScore F1 | questions | -0.05 | – | 9 |\n\nafter") in text


def test_summary_block_gives_one_row_per_named_method(tmp_path: Path) -> None:
    _scored_run(tmp_path)
    text = ("x\n<!-- results-summary\ndocs/results/toy=cot,llm\n-->\n| old |\n\nafter\n")
    new, changed = tables["refill"](text, tmp_path)
    assert changed == ["<!-- results-summary"] and new.endswith("\n\nafter\n")
    rows = [ln for ln in new.splitlines() if ln.startswith("| toy")]
    assert rows == ["| toy (accuracy) | `cot` | 4 | 50.0 [0.0, 100.0] |",
                    "| toy (accuracy) | `llm` | 4 | 50.0 [0.0, 100.0] |"]
    assert tables["refill"](new, tmp_path) == (new, [])
    with pytest.raises(KgragError, match="bad results-summary line"):
        tables["refill"]("<!-- results-summary\ndocs/results/toy\n-->\n| t |\n", tmp_path)


def test_side_by_side_gives_em_and_f1_per_run_and_says_what_is_missing(tmp_path: Path
                                                                       ) -> None:
    for name, em in (("a", 0.25), ("b", 0.5)):
        run = tmp_path / "docs" / "results" / name
        run.mkdir(parents=True)
        row = {"n": 4, "setting": "open", "em": {"mean": em, "low": 0.0, "high": 1.0},
               "f1": {"mean": em + 0.1, "low": 0.0, "high": 1.0}}
        partial = {**row, "n": 2, "setting": "kg"}
        every = {"rag": row, "tog": partial} if name == "a" else {"rag": row}
        (run / "metrics.json").write_text(json.dumps(
            {"dataset": "hotpotqa" if name == "a" else "2wiki", "methods": every,
             "same": {"k": 4, "methods": {"rag": row}, "pairs": []}}))
    text = "<!-- results-side docs/results/a,docs/results/b\nmethods=rag,tog -->\n| old |\n"
    new, changed = tables["refill"](text, tmp_path)
    assert changed == [text.splitlines()[0]]
    lines = new.splitlines()[1:]
    assert lines[1] == ("| method | setting | HotpotQA EM % [CI] | F1 % | "
                        "2WikiMultihopQA EM % [CI] | F1 % |")
    assert lines[3] == "| `rag` | open | 25.0 [0.0, 100.0] | 35.0 | 50.0 [0.0, 100.0] | 60.0 |"
    assert lines[4] == "| `tog` | kg | – (2 of 4 so far) | – | – | – |"
    assert tables["refill"](new, tmp_path) == (new, [])
    with pytest.raises(KgragError, match="flare not among"):
        tables["refill"](text.replace("rag,tog", "flare"), tmp_path)
    with pytest.raises(KgragError, match="next line must be methods"):
        tables["refill"](text.replace("methods=", ""), tmp_path)
    _scored_run(tmp_path)  # multiple choice: accuracy, no EM
    with pytest.raises(KgragError, match="not a short-answer run"):
        tables["refill"](text.replace("docs/results/b", "docs/results/toy")
                         .replace("rag,tog", "llm"), tmp_path)
