"""Results: browse the run directories of `kgrag eval` (default ./runs): the metrics table
and plots of `eval/`, and every question's predictions, filterable (e.g. where two methods
disagree), with a way into the Reasoning page for any prediction."""

from __future__ import annotations

import tempfile
from pathlib import Path

import streamlit as st

from app import icons, results, state
from app.asking import ReasoningSource
from app.render import escape_md
from eval.report import markdown, plot_accuracy, plot_cost
from eval.runner import RunLine, read_run
from kgrag.errors import KgragError


@st.cache_resource(show_spinner="Reading predictions…", max_entries=4)  # no copies
def load(run: str, mtime: float) -> tuple[list[str], list[RunLine], list[results.QuestionRow]]:
    config, lines = read_run(Path(run))
    methods = [m for m in config.methods if any(ln.prediction.method == m for ln in lines)]
    methods += sorted({ln.prediction.method for ln in lines} - set(methods))
    return methods, lines, results.question_rows(lines, methods)


@st.cache_data(show_spinner="Scoring…", max_entries=4)
def scored(run: str, mtime: float) -> tuple[str, bool, list[bytes]]:
    metrics, now = results.run_metrics(Path(run))
    images = []
    with tempfile.TemporaryDirectory() as tmp:
        for fn, name in ((plot_accuracy, "accuracy.png"), (plot_cost, "cost.png")):
            path = fn(metrics, Path(tmp) / name)
            if path is not None:
                images.append(path.read_bytes())
    return markdown(metrics), now, images


def pick_run(root: Path) -> results.RunInfo | None:
    runs = results.find_runs(root)
    if not runs:
        st.info(f"No runs yet in {root.resolve()}. Create one with "
                "`kgrag eval --dataset csqa --methods llm,metakgrag --n 50 --domain commonsense`"
                " (it writes runs/csqa-50/), or type another folder above.",
                icon=icons.EMPTY)
        return None
    labels = {str(r.path): r.label for r in runs}
    picked = st.selectbox("Run", list(labels), format_func=labels.__getitem__, key="run_pick")
    return next(r for r in runs if str(r.path) == picked)


def summary(run: results.RunInfo) -> None:
    try:
        md, now, images = scored(str(run.path), run.updated)
    except (KgragError, OSError, ValueError) as e:
        st.error(f"Cannot score {run.path}: {e}")
        return
    st.markdown(md)
    if now:
        st.caption("Scored just now (metrics.json written, as `kgrag score` does).")
    cols = st.columns(max(len(images), 1))
    for col, img in zip(cols, images, strict=False):
        col.image(img)


def questions(run: results.RunInfo, methods: list[str], lines: list[RunLine],
              rows: list[results.QuestionRow]) -> None:
    st.subheader(f"Per question ({len(rows)} questions × {len(methods)} methods)")
    c = st.columns([2, 1, 1, 2])
    mode = c[0].selectbox("Show", list(results.FILTERS),
                          format_func=lambda k: results.FILTERS[k], key="res_filter")
    a = c[1].selectbox("A", methods, index=0, key="res_a")
    b = c[2].selectbox("B", methods, index=min(1, len(methods) - 1), key="res_b")
    text = c[3].text_input("Question contains", key="res_text")
    shown = results.filter_rows(rows, mode or "all", a, b, text or "")
    st.caption(f"{len(shown)} of {len(rows)} questions")
    st.dataframe(results.table(shown, methods), hide_index=True, width="stretch", height=360)
    if not shown:
        return
    ids = [r.id for r in shown]
    qid = st.selectbox("Question details", ids, key="res_q",
                       format_func=lambda i: f"{i}: {shown[ids.index(i)].question.text[:90]}")
    row = shown[ids.index(qid)]
    options = "  \n".join(f"**{ch.label}.** {escape_md(ch.text)}" for ch in row.question.choices)
    st.markdown(f"**Q:** {escape_md(row.question.text)}" + (f"  \n{options}" if options else ""))
    st.markdown(f"**Gold:** {escape_md(row.gold())}")
    cols = st.columns(min(3, len(row.cells)) or 1)
    for n, (m, cell) in enumerate(row.cells.items()):
        with cols[n % len(cols)], st.container(border=True):
            score = "–" if cell.score is None else f"{cell.score:.2f}"
            st.markdown(f"**{m}** · score {score} · {cell.seconds:.1f} s · "
                        f"{cell.llm_calls} LLM calls")
            st.markdown(escape_md(cell.answer.strip()[:1500]) or "_(empty)_")
            if cell.error:
                st.error(cell.error)
    if st.button("Show the reasoning of these predictions", key="res_reasoning"):
        preds = {ln.prediction.method: ln.prediction for ln in lines if ln.question.id == qid}
        st.session_state["reasoning"] = ReasoningSource(row.question, row.question.domain,
                                                        preds, f"run {run.path.name}")
        st.switch_page("views/reasoning.py")


def page() -> None:
    st.title("Results")
    root = Path(st.text_input("Runs folder", value=str(state.app_args().runs),
                              key="runs_root"))
    run = pick_run(root)
    if run is None:
        return
    try:
        methods, lines, rows = load(str(run.path), run.updated)
    except (KgragError, OSError, ValueError) as e:
        st.error(f"Cannot read {run.path}: {e}")
        return
    if not lines:
        st.info("This run has no predictions yet.")
        return
    summary(run)
    questions(run, methods, lines, rows)


page()
