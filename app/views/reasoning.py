"""Reasoning: how each method answered the last question (or a prediction from a run).

MetaKGRAG: concepts, matched entities, per start entity the initial path and each cycle's
re-searched path as a graph (pivot, misleading and boosted entities marked, weights before
and after adjustment), coverage per concept, and the integrated evidence. SeaKR-style
uncertainty and MetaRAG-style rounds when a trace carries them. kg-paths and kg-fused: per
option the reader's probability, the graph's score, the fused probability and the paths.
Every path and evidence set comes with its Neo4j Browser link and Cypher; every step is
also shown as JSON.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import streamlit as st

from app import icons, render, render_options, render_text, state
from app.asking import ReasoningSource
from app.browser_links import BrowserQuery, evidence_query
from kgrag.types import Prediction, TraceStep

log = logging.getLogger(__name__)


def browser_block(query: BrowserQuery, key: str) -> None:
    """The "Open in Neo4j Browser" link and the Cypher it opens, for copying."""
    st.link_button("Open in Neo4j Browser", query.url, icon=icons.LINK, key=f"bl_{key}")
    with st.expander("Cypher of this subgraph"):
        st.code(query.statement, language="cypher")
        st.caption(f"Or run `{query.params_command}` first, then the saved query "
                   f"`cypher/{query.name}.cypher`.")


def concepts_and_matches(trace: Sequence[TraceStep]) -> None:
    concepts = render.concepts(trace)
    rows = render.matches(trace)
    if not concepts and not rows:
        return
    st.subheader("Concepts and matched entities")
    if concepts:
        st.markdown("Concepts: " + " · ".join(f"`{render.escape_md(c)}`" for c in concepts))
    if rows:
        st.dataframe(rows, hide_index=True, width="stretch")


def refinement_section(pred: Prediction, domain: str | None, base: str, tau: float) -> None:
    refs = render.refinements(pred.trace)
    if not refs:
        return
    st.subheader("Paths per start entity")
    st.caption(render.LEGEND)
    for n, ref in enumerate(refs):
        name = ref.names.get(ref.start, ref.start)
        title = (f"Start: {name} — {len(ref.cycles)} cycle(s), stop: {ref.stop}"
                 f"{', path refined' if ref.changed else ''}")
        with st.expander(title, expanded=n == 0):
            stages = render.refinement_stages(ref)
            titles = [s.title for s in stages]
            # The key names this refinement's stages, so a new answer starts at its final view.
            picked = st.segmented_control(
                "View", titles, default=titles[-1],
                key=f"stage_{pred.method}_{n}_{ref.start}_{len(titles)}") or titles[-1]
            stage = stages[titles.index(picked)]
            st.graphviz_chart(stage.dot)
            for note in stage.notes:
                st.markdown(f"- {render.escape_md(note)}")
            if stage.cycle is not None and stage.cycle.coverage:
                st.caption(f"Coverage per concept (τ_coverage = {tau})")
                st.vega_lite_chart(spec=render.coverage_spec(stage.cycle.coverage, tau),
                                   width="stretch")
            if domain and stage.triples:
                browser_block(evidence_query(base, domain, stage.triples),
                              f"{pred.method}_{n}_{picked}")


def evidence_section(pred: Prediction, domain: str | None, base: str) -> None:
    ev = render.evidence_view(pred.trace)
    if ev is None:
        return
    st.subheader("Integrated evidence")
    if not ev.lines:
        st.info("No evidence triples: the answer was generated without KG facts.")
        return
    st.markdown("\n".join(f"- {render.escape_md(line)}" for line in ev.lines))
    if ev.retrieval_ms is not None:
        st.caption(f"retrieval: {ev.retrieval_ms:.0f} ms without the LLM")
    if domain:
        browser_block(evidence_query(base, domain, ev.triples), f"{pred.method}_evidence")


def option_section(pred: Prediction, choices: Mapping[str, str]) -> None:
    """kg-paths and kg-fused: what the reader and the graph said about each option."""
    rows = render_options.option_rows(pred.trace, choices)
    if not rows:
        return
    st.subheader("Reader and graph per option")
    seeds = render_options.path_seeds(pred.trace)
    st.markdown("Question entities (where the paths start): " + (" · ".join(
        render.escape_md(s) for s in seeds) if seeds else "none found in the graph"))
    # a column nobody filled (kg-paths has no reader; a typed question no option texts)
    shown = [k for k in rows[0] if any(r[k] not in (None, "") for r in rows)]
    st.dataframe([{k: r[k] for k in shown} for r in rows], hide_index=True, width="stretch")
    options = [r["option"] for r in rows]
    probs = [k for k in ("reader p", "final p") if k in shown]
    if probs:
        bars: dict[str, list[Any]] = {"option": options}
        bars.update({k: [r[k] for r in rows] for k in probs})
        st.bar_chart(bars, x="option", y=probs, stack=False, y_label="probability",
                     height=220)
    if "graph score" in shown:
        st.bar_chart({"option": options, "graph score": [r["graph score"] for r in rows]},
                     x="option", y="graph score", height=180,
                     y_label="graph score (log-linear, not a probability)")
    weight = render_options.fusion_weight(pred.trace)
    if weight is not None:
        st.markdown(f"Fusion weight λ = {weight:g}: `log p(option) ∝ log p_reader(option) "
                    "+ λ·score(option)`, renormalised over the options (λ = 0: the reader "
                    "alone; an option the graph does not reach scores 0).")
    else:
        st.caption("No reader: the final probability is the softmax of the graph scores.")
    by_label = {r["option"]: r for r in rows}
    for label, paths in render_options.option_paths(pred.trace):
        row = by_label.get(label, {})
        text = f"{label}. {row['text']}" if row.get("text") else label
        title = f"{text} — {len(paths)} path(s)" + (" · chosen" if row.get("chosen") else "")
        with st.expander(title):
            if paths:
                st.markdown("\n".join(f"- {render.escape_md(p)}" for p in paths))
            else:
                st.caption("No path from a question entity reaches this option.")


def text_method_sections(trace: Sequence[TraceStep]) -> None:
    rows = render_text.uncertainty_rows(trace)
    if rows:
        st.subheader("Uncertainty per step")
        st.vega_lite_chart(spec=render_text.uncertainty_spec(rows), width="stretch")
        st.dataframe(rows, hide_index=True, width="stretch")
    for cand in render_text.candidate_sets(trace):
        st.markdown(f"**Candidates at step {cand['step']} ({cand['stage']})** — "
                    f"{render.escape_md(render.short(cand['summary'], 120))}")
        st.dataframe(cand["rows"], hide_index=True, width="stretch")
    rounds = render_text.rounds(trace)
    if rounds:
        st.subheader("Rounds: diagnosis and plan")
        st.dataframe(rounds, hide_index=True, width="stretch")
    passages = render_text.passages(trace)
    if passages:
        st.subheader("Retrieved passages")
        st.dataframe(passages, hide_index=True, width="stretch")


def other_triple_sets(pred: Prediction, domain: str | None, base: str) -> None:
    """Evidence sets of steps not drawn above (kg-vanilla facts, Think-on-Graph paths)."""
    special = render.known_stages(pred.trace)
    sets = [(i, label, triples) for i, s in enumerate(pred.trace) if i not in special
            for label, triples in render.triple_sets(s)]
    if not sets or not domain:
        return
    st.subheader("Evidence sets in the trace")
    for i, label, triples in sets:
        st.markdown(f"**{render.escape_md(label)}**: " + "; ".join(
            render.escape_md(" ".join(t)) for t in triples[:8]) + (" …" if len(triples) > 8
                                                                   else ""))
        browser_block(evidence_query(base, domain, triples), f"{pred.method}_set_{i}_{label}")


def full_trace(trace: Sequence[TraceStep]) -> None:
    st.subheader("Every step")
    for i, step in enumerate(trace, 1):
        g = render.generic_step(step)
        with st.expander(f"{i}. [{g.stage}] {render.short(g.summary, 110)} ({g.seconds:.2f} s)"):
            st.markdown(render.escape_md(g.summary))
            st.code(g.data_json, language="json")


def page() -> None:
    st.title("Reasoning")
    src: ReasoningSource | None = st.session_state.get("reasoning")
    if src is None or not src.predictions:
        st.info("Nothing to show yet: ask a question on the Ask page, or open a prediction "
                "from the Results page.", icon=icons.REASONING)
        st.page_link("views/ask.py", label="Go to Ask", icon=icons.ASK)
        return
    res = state.resources()
    base = state.browser_base(res.platform)
    st.caption(f"From {src.origin}")
    st.markdown(f"**Q:** {render.escape_md(src.question.text)}")
    methods = list(src.predictions)
    default = st.session_state.get("reasoning_method")
    method = st.radio("Method", methods, horizontal=True,
                      index=methods.index(default) if default in methods else 0,
                      key="reasoning_pick")
    pred = src.predictions[method]
    domain = render.trace_domain(pred.trace, src.domain or src.question.domain)
    st.markdown(f"**Answer ({method}):** {render.escape_md(pred.answer.strip())}")
    if pred.error:
        st.error(f"The method failed: {pred.error}")
    if not pred.trace:
        st.info("This method records no trace steps.")
        return
    tau = res.platform.settings.metakg.tau_coverage
    guarded(concepts_and_matches, pred.trace)
    guarded(refinement_section, pred, domain, base, tau)
    guarded(evidence_section, pred, domain, base)
    guarded(option_section, pred, {c.label: c.text for c in src.question.choices})
    guarded(text_method_sections, pred.trace)
    guarded(other_triple_sets, pred, domain, base)
    full_trace(pred.trace)


def guarded(section: Callable[..., None], *args: Any) -> None:
    """Draw a section; if a trace has a shape it does not expect, say so and go on (every
    step is still shown as JSON below)."""
    try:
        section(*args)
    except Exception as e:  # noqa: BLE001 - a trace from another version must not break the page
        log.warning("reasoning section %s failed", section.__name__, exc_info=True)
        st.caption(f"({section.__name__.replace('_', ' ')} could not be drawn for this trace: "
                   f"{type(e).__name__}: {e}; see every step below)")


page()
