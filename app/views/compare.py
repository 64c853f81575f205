"""Compare: every method of one run side by side. Its rows (setting, headline score with
CI, EM, seconds per question), the score against seconds per question, the score by
question type where the questions have one (`kgrag breakdown`), and per question
each method's answer beside the evidence it read (paths for graph methods, passages for
text methods). The numbers are `kgrag score`'s (`eval.compare`, `eval.scoring`).
`/compare?run=hotpotqa-dev&methods=llm,rag,metakgrag` opens a run with those methods."""

from __future__ import annotations

import tempfile
from pathlib import Path

import streamlit as st

from app import icons, results, state
from app.render import escape_md
from eval.breakdown import markdown_table, type_breakdown
from eval.compare import CompareRow, compare_rows, evidence_items, plot_score_seconds
from eval.report import ABLATIONS, load_metrics
from eval.runner import RunLine, read_run
from eval.scoring import RunMetrics
from kgrag.errors import KgragError

COMMITTED = Path(__file__).resolve().parents[2] / "docs" / "results"
ABLATION_NAMES = frozenset(v for vs in ABLATIONS.values() for v in vs)
MAX_COLUMNS = 3


@st.cache_resource(show_spinner="Reading predictions…", max_entries=2)
def load(run: str, mtime: float) -> tuple[list[RunLine], list[results.QuestionRow]]:
    config, lines = read_run(Path(run))
    methods = [m for m in config.methods if any(ln.prediction.method == m for ln in lines)]
    return lines, results.question_rows(lines, methods)


@st.cache_data(show_spinner="Scoring…", max_entries=4)
def scored(run: str, mtime: float) -> RunMetrics:
    # metrics.json as `kgrag report` reads it: a committed run is never rescored in place
    # (that would drop its G-Eval and BERTScore); a stale one is flagged in its notes.
    return load_metrics(Path(run))


@st.cache_data(show_spinner=False, max_entries=8)
def scatter(run: str, mtime: float, ablations: bool) -> bytes | None:
    metrics = scored(run, mtime)
    with tempfile.TemporaryDirectory() as tmp:
        path = plot_score_seconds(metrics, Path(tmp) / "compare.png",
                                  exclude=() if ablations else tuple(ABLATION_NAMES))
        return path.read_bytes() if path else None


@st.cache_data(show_spinner=False, max_entries=4)
def by_type(run: str, mtime: float) -> str | None:
    b = type_breakdown(Path(run), scored(run, mtime).same)
    return markdown_table(b) if b else None


def default_root() -> Path:
    """The app's runs folder, or the committed runs when it holds none."""
    root = state.app_args().runs
    return root if results.find_runs(root) or not COMMITTED.is_dir() else COMMITTED


def pick_run(root: Path) -> results.RunInfo | None:
    runs = results.find_runs(root)
    if not runs:
        st.info(f"No runs in {root.resolve()}. Create one with `kgrag eval --dataset hotpotqa "
                "--methods llm,rag,kg-vanilla --n 20`, or type another folder above.",
                icon=icons.EMPTY)
        return None
    labels = {str(r.path): r.label for r in runs}
    names = [r.path.name for r in runs]
    wanted = st.query_params.get("run", "hotpotqa-dev")  # ?run=NAME links to a run
    first = names.index(wanted) if wanted in names else 0
    picked = st.selectbox("Run", list(labels), index=first, format_func=labels.__getitem__,
                          key="cmp_run")
    return next(r for r in runs if str(r.path) == picked)


def rows_table(rows: list[CompareRow]) -> list[dict[str, object]]:
    return [{"method": r.method, "setting": r.setting, "n": r.n,
             f"{r.headline} %": round(r.score.mean * 100, 1),
             "95% CI": f"{r.score.low * 100:.1f}–{r.score.high * 100:.1f}",
             "EM %": None if r.em is None else round(r.em.mean * 100, 1),
             "s/question": round(r.seconds, 1), "median s": round(r.median_seconds, 1),
             "LLM calls/q": round(r.llm_calls, 1)} for r in rows]


def overview(run: results.RunInfo) -> list[CompareRow]:
    metrics = scored(str(run.path), run.updated)
    rows = compare_rows(metrics)
    st.subheader(f"Every method ({len(rows)}) — {metrics.dataset}, {metrics.model}")
    st.dataframe(rows_table(rows), hide_index=True, width="stretch")
    if metrics.notes:
        with st.expander(f"Run notes ({len(metrics.notes)})"):
            for note in metrics.notes:
                st.caption(note)
    with_ablations = st.checkbox("Ablations in the plot", value=False, key="cmp_ablations")
    image = scatter(str(run.path), run.updated, with_ablations)
    if image:
        st.image(image, caption="Headline score against mean seconds per question (log "
                 "scale); bars: 95% bootstrap CI; (n) questions answered.")
    types = by_type(str(run.path), run.updated)
    if types:
        with st.expander("By question type"):
            st.markdown(types)
    return rows


def per_question(run: results.RunInfo, rows: list[CompareRow]) -> None:
    lines, qrows = load(str(run.path), run.updated)
    st.subheader("Per question: answers and the evidence they read")
    methods = [r.method for r in rows]
    asked = [m for m in st.query_params.get("methods", "").split(",") if m in methods]
    default = asked or [m for m in methods if m not in ABLATION_NAMES][:6]  # ?methods=a,b
    chosen = st.multiselect("Methods", methods, default=default, key="cmp_methods")
    needle = st.text_input("Question contains", key="cmp_text").strip().lower()
    shown = [r for r in qrows if not needle or needle in r.question.text.lower()]
    if not shown or not chosen:
        st.caption("No question matches." if not shown else "Choose methods above.")
        return
    ids = [r.id for r in shown]
    qid = st.selectbox(f"Question ({len(shown)} of {len(qrows)})", ids, key="cmp_q",
                       format_func=lambda i: f"{i}: {shown[ids.index(i)].question.text[:90]}")
    row = shown[ids.index(qid)]
    st.markdown(f"**Q:** {escape_md(row.question.text)}  \n**Gold:** {escape_md(row.gold())}")
    by_method = {ln.prediction.method: ln for ln in lines if ln.question.id == qid}
    cols = st.columns(min(MAX_COLUMNS, len(chosen)))
    for n, method in enumerate(chosen):
        with cols[n % len(cols)], st.container(border=True):
            answer_card(method, row.cells.get(method), by_method.get(method))


def answer_card(method: str, cell: results.MethodCell | None, line: RunLine | None) -> None:
    if cell is None or line is None:
        st.markdown(f"**{method}** · _did not answer this question_")
        return
    score = "–" if cell.score is None else f"{cell.score:.2f}"
    st.markdown(f"**{method}** · `{line.prediction.setting}` · score {score} · "
                f"{cell.seconds:.1f} s")
    st.markdown(escape_md(cell.answer.strip()[:1200]) or "_(empty)_")
    if cell.error:
        st.error(cell.error)
    items = evidence_items(line)
    kinds = {i.kind for i in items}
    label = ("paths" if kinds == {"path"} else "triples" if kinds == {"triple"}
             else "passages")
    if not items:
        st.caption("no evidence (closed-book, or nothing retrieved)")
        return
    st.markdown(f"_Evidence: {len(items)} {label}_")
    for item in items:
        if item.kind == "passage":
            st.markdown(f"- **{escape_md(item.title)}** {escape_md(item.text[:220])}")
        else:
            st.markdown(f"- {escape_md(item.title)}")


def page() -> None:
    st.title("Compare methods")
    root = Path(st.text_input("Runs folder", value=str(default_root()), key="cmp_root"))
    run = pick_run(root)
    if run is None:
        return
    try:
        rows = overview(run)
        per_question(run, rows)
    except (KgragError, OSError, ValueError) as e:
        st.error(f"Cannot read {run.path}: {e}")


page()
