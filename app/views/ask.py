"""Ask: a dataset question or a typed one, answered by several methods side by side.

The answer runs in a worker thread (`app.asking.AnswerJob`) while this script shows live
progress; a second session that asks while the model is busy sees "busy" and waits.
"""

from __future__ import annotations

import time
from pathlib import Path

import streamlit as st

from app import icons, state
from app.asking import (
    Answered,
    AnswerJob,
    CheckedText,
    Holder,
    MethodOutcome,
    ReasoningSource,
    check_question_text,
    parse_choices,
    user_question,
    verdict,
)
from app.render import escape_md
from kg_builder.domains import PAPER_PROTOCOL_DOMAIN
from kgrag.datasets import DATASETS, load_dataset
from kgrag.errors import KgragError
from kgrag.platform import available_methods
from kgrag.types import Question

NO_GRAPH = "(no graph)"
JOB, ANSWERED = "ask_job", "ask_answered"


@st.cache_data(show_spinner="Loading questions…")
def dataset_questions(name: str, data_dir: str) -> tuple[list[Question], str]:
    loaded = load_dataset(name, Path(data_dir))
    return list(loaded.questions), loaded.domain


def pick_question(data_dir: Path) -> tuple[Question | None, CheckedText | None]:
    """The question widgets: returns (dataset question, None) or (None, typed text)."""
    source = st.radio("Question", ["Type a question", "Dataset question"], horizontal=True,
                      key="ask_source", label_visibility="collapsed")
    if source == "Dataset question":
        name = st.selectbox("Dataset", list(DATASETS), key="ask_dataset")
        try:
            questions, _ = dataset_questions(name, str(data_dir))
        except (FileNotFoundError, OSError, ValueError) as e:
            st.error(f"Cannot read the {name} questions from {data_dir}: {e}")
            st.caption("→ set KGRAG_DATA_DIR to the folder with the shared datasets")
            return None, None
        if not questions:
            st.warning(f"{name} has no questions.")
            return None, None
        i = st.selectbox("Question", range(len(questions)), key=f"ask_q_{name}",
                         format_func=lambda k: f"{k + 1}. {questions[k].text[:110]}")
        q = questions[i]
        options = "  \n".join(f"**{c.label}.** {escape_md(c.text)}" for c in q.choices)
        st.markdown(escape_md(q.text) + (f"  \n{options}" if options else ""))
        return q, None
    text = st.text_area("Your question", key="ask_text", height=110,
                        placeholder="Where would you keep milk so that it stays cold?")
    with st.expander("Answer options (optional, multiple choice)"):
        st.text_area("One per line, e.g. `A. refrigerator`", key="ask_options", height=110)
    return None, check_question_text(text or "")


def default_domain_index(options: list[str], preferred: str | None) -> int:
    """The preferred graph, else the first built one that is not the paper-protocol
    graph (built from the evaluation answers: chosen only by hand), else no graph."""
    if preferred in options:
        return options.index(preferred)
    return next((i for i, d in enumerate(options)
                 if d not in (NO_GRAPH, PAPER_PROTOCOL_DOMAIN)), 0)


def choose_domain(domains: list[str], preferred: str | None) -> str | None:
    options = [NO_GRAPH, *domains]
    index = default_domain_index(options, preferred)
    picked = st.selectbox("Domain graph (for the KG methods)", options, index=index,
                          key="ask_domain")
    return None if picked == NO_GRAPH else picked


def start_job(res: state.Resources, question: Question, methods: list[str],
              domain: str | None) -> AnswerJob | None:
    """Take the model gate (showing "busy" while another session holds it), then start."""
    busy = st.empty()

    def waiting(holder: Holder | None, waited: float) -> None:
        what = f"{holder.label}, {holder.seconds():.0f} s so far" if holder else "finishing"
        busy.warning(f"Busy — another question is being answered ({what}). Yours starts when "
                     f"it finishes (waiting {waited:.0f} s; press Stop to give up).",
                     icon=icons.BUSY)

    label = f"{', '.join(methods)} on “{question.text[:40]}”"
    if not res.gate.acquire(state.session_id(), label, wait_s=state.BUSY_WAIT_S,
                            on_wait=waiting):
        busy.warning("Busy — another question is still being answered. Press Ask again in "
                     "a moment.", icon=icons.BUSY)
        return None
    busy.empty()
    return AnswerJob(res.platform, res.gate, question, methods, domain).start()


def follow(job: AnswerJob) -> None:
    """Live progress until the job is done (the worker runs on if this script stops)."""
    with st.status(f"Answering with {len(job.methods)} method(s)…", expanded=True) as status:
        shown: set[str] = set()
        while True:
            finished = job.done
            for name, outcome in list(job.outcomes.items()):
                if name not in shown:
                    shown.add(name)
                    st.markdown(_progress_line(outcome))
            if finished:
                break
            pr = job.progress()
            status.update(label=f"{pr.method or '…'} is answering ({pr.index + 1}/{pr.total}) — "
                                f"{pr.seconds:.0f} s, {pr.llm_calls} LLM call(s) so far")
            time.sleep(0.25)
        took = (job.finished or time.monotonic()) - job.started
        status.update(label=f"Answered in {took:.1f} s", state="complete", expanded=False)


def _progress_line(o: MethodOutcome) -> str:
    if o.prediction is None:
        return f"✗ {o.method}: {escape_md(o.problem or 'failed')}"
    return f"✓ {o.method}: {o.prediction.usage.seconds:.1f} s, {o.prediction.usage.llm_calls} " \
           "LLM call(s)"


def show_answered(a: Answered) -> None:
    if a.notice:
        st.warning(a.notice)
    names = list(a.outcomes)
    for start in range(0, len(names), 3):
        cols = st.columns(min(3, len(names) - start))
        for col, name in zip(cols, names[start:start + 3], strict=False):
            with col, st.container(border=True, key=f"answer_{name}"):
                show_outcome(a.question, a.outcomes[name])
    if a.question.answers:
        gold = ", ".join(a.question.answers)
        texts = {c.label: c.text for c in a.question.choices}
        if a.question.is_multiple_choice:
            gold = ", ".join(f"{g}. {texts.get(g, '')}" for g in a.question.answers)
        st.info(f"Gold answer: {gold}", icon=icons.GOLD)
    if any(o.prediction is not None for o in a.outcomes.values()):
        st.page_link("views/reasoning.py", label="See how each method reasoned →",
                     icon=icons.REASONING)


def show_outcome(question: Question, o: MethodOutcome) -> None:
    st.subheader(o.method)
    if o.prediction is None:
        st.error(o.problem or "failed", icon=icons.WARN)
        return
    pred = o.prediction
    if pred.error:
        st.error(f"The method failed: {pred.error}", icon=icons.WARN)
    st.markdown(escape_md(pred.answer.strip()) or "_(empty answer)_")
    v = verdict(question, o)
    if v == "correct":
        st.success("correct", icon=icons.OK)
    elif v in ("wrong", "no option found"):
        st.error(v, icon=icons.WRONG)
    elif v:
        st.info(v)
    u = pred.usage
    st.caption(f"{u.seconds:.1f} s · {u.llm_calls} LLM call(s) · "
               f"{u.prompt_tokens}+{u.completion_tokens} tokens · {u.cypher_queries} Cypher · "
               f"setting {pred.setting}")
    if pred.evidence:
        with st.expander(f"Evidence ({len(pred.evidence)})"):
            st.markdown("\n".join(f"- {escape_md(e[:300])}" for e in pred.evidence[:50]))


def page() -> None:
    st.title("Ask")
    res = state.resources()
    p = res.platform
    try:
        domains = state.domains(p)
    except KgragError as e:
        domains = []
        st.warning(f"Neo4j is not reachable ({e.message}): the KG and text-retrieval methods "
                   "cannot run; `llm` and `cot` still work.", icon=icons.WARN)
    left, right = st.columns([3, 2])
    with left:
        dataset_q, typed = pick_question(p.settings.data_dir)
    with right:
        preferred = dataset_q.domain if dataset_q else None
        domain = choose_domain(domains, preferred)
        if preferred and preferred not in domains and domains:
            st.caption(f"The {preferred} graph is not built; KG methods will say so.")
        methods = st.multiselect("Methods", sorted(available_methods()), default=["llm"],
                                 key="ask_methods")
        asked = st.button("Ask", type="primary", key="ask_button", width="stretch")
    job: AnswerJob | None = st.session_state.get(JOB)
    if asked and (job is None or job.done):
        job = submit(res, dataset_q, typed, methods, domain)
    elif asked:
        st.info("Still answering your previous question; it is shown below when done.")
    if job is not None:
        follow(job)
        if job.done:
            st.session_state[ANSWERED] = Answered.of(job, st.session_state.pop("ask_notice",
                                                                               None))
            st.session_state.pop(JOB, None)
            a: Answered = st.session_state[ANSWERED]
            st.session_state["reasoning"] = ReasoningSource(
                a.question, a.domain, {m: o.prediction for m, o in a.outcomes.items()
                                       if o.prediction is not None}, "the Ask page")
    if st.session_state.get(ANSWERED) is not None:
        show_answered(st.session_state[ANSWERED])


def submit(res: state.Resources, dataset_q: Question | None, typed: CheckedText | None,
           methods: list[str], domain: str | None) -> AnswerJob | None:
    if not methods:
        st.warning("Pick at least one method.")
        return None
    if dataset_q is not None:
        question = dataset_q.model_copy(update={"domain": domain})
    elif typed is None:
        return None
    elif typed.problem:
        st.warning(typed.problem)
        return None
    else:
        try:
            choices = parse_choices(st.session_state.get("ask_options", "") or "")
        except ValueError as e:
            st.warning(f"Answer options: {e}")
            return None
        question = user_question(typed.text, domain, choices)
        st.session_state["ask_notice"] = typed.notice
        if typed.notice:
            st.warning(typed.notice)
    st.session_state.pop(ANSWERED, None)
    job = start_job(res, question, methods, domain)
    if job is not None:
        st.session_state[JOB] = job
    return job


page()
