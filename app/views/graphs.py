"""Graphs: every domain's size, the quality report and build jobs of one domain, and an
entity search with the entity's neighbourhood and the provenance of its facts."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import streamlit as st

from app import icons, render, state
from app.browser_links import browser_query
from app.quality import QualityService
from kg_builder.jobs import JobRecord, list_jobs
from kgrag.errors import KgragError
from kgrag.platform import Platform

STALE_MINUTES = 10  # a running job writes its record after every batch


@st.cache_resource(show_spinner=False)
def quality_service(_p: Platform, key: str) -> QualityService:
    """One per server process and platform (`key`: the platform's id)."""
    return QualityService(_p)


def domain_sizes(p: Platform, names: tuple[str, ...]) -> list[dict[str, Any]]:
    """Each domain's counts from its cached quality report; a domain without one yet shows
    empty counts (`warm` is computing it in the background) instead of holding the page."""
    service = quality_service(p, str(id(p)))
    rows = []
    for name in names:
        entry = service.cached(name)
        s: dict[str, Any] = entry.stats if entry else {}
        rows.append({"domain": name, "entities": s.get("entities"), "facts": s.get("relations"),
                     "chunks": s.get("chunks"), "orphan entities": s.get("orphans"),
                     "without embedding": s.get("without_embedding")})
    return rows


def jobs_section(p: Platform, domain: str) -> None:
    st.subheader("Build jobs")
    jobs = list_jobs(p.settings.home, domain)
    if not jobs:
        st.info(f"No build job for {domain} on this machine (imported graphs have none). "
                f"Build with `kgrag build --domain {domain}`.")
        return
    for j in (j for j in jobs if j.status == "running"):
        extracted, total = j.progress
        idle = _minutes_since(j.updated)
        stale = (f" — no update for {idle:.0f} min: stopped? (`kgrag build` resumes it)"
                 if idle is not None and idle > STALE_MINUTES else "")
        st.progress(extracted / total if total else 0.0, text=f"running: {j.id} — "
                    f"{extracted:,}/{total:,} chunks, {j.triples:,} triples extracted, "
                    f"{j.records_per_minute:.1f} chunks/min{stale}")
    st.dataframe([_job_row(j) for j in jobs], hide_index=True, width="stretch")
    if st.button("Refresh", key="jobs_refresh"):
        st.rerun()


def _minutes_since(iso: str) -> float | None:
    try:
        then = datetime.fromisoformat(iso)
    except ValueError:
        return None
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    return (datetime.now(UTC) - then).total_seconds() / 60


def _job_row(j: JobRecord) -> dict[str, Any]:
    return {"job": j.id, "status": j.shown_status, "chunks": "{}/{}".format(*j.progress),
            "parse failures": f"{100 * j.parse_failure_rate:.1f}%",
            "triples extracted (all runs)": j.triples,
            "chunks/min": round(j.records_per_minute, 1), "model": j.model,
            "started": j.started, "updated": j.updated}


def quality_section(p: Platform, domain: str) -> None:
    st.subheader(f"Quality of {domain}")
    service = quality_service(p, str(id(p)))
    try:
        if service.cached(domain) is None:
            with st.spinner(f"Computing the quality report of {domain} (once per graph "
                            "version; seconds to a minute on a full graph)"):
                q, entry, checking = service.report(domain)
        else:
            q, entry, checking = service.report(domain)
    except KgragError as e:
        state.show_error(e)
        return
    cols = st.columns(4)
    cols[0].metric("entities", f"{q.entities:,}")
    cols[1].metric("facts", f"{q.relations:,}")
    cols[2].metric("mean degree", f"{q.mean_degree:.2f}")
    cols[3].metric("with provenance", f"{100 * q.provenance_rate:.0f}%")
    cols = st.columns(4)
    cols[0].metric("orphan entities", f"{q.orphan_entities:,}")
    cols[1].metric("without embedding", f"{q.entities_without_embedding:,}")
    cols[2].metric("parse failures (last job)", "–" if q.parse_failure_rate is None
                   else f"{100 * q.parse_failure_rate:.1f}%")
    cols[3].metric("triples / record", "–" if q.triples_per_record is None
                   else f"{q.triples_per_record:.2f}")
    cols = st.columns(4)
    cols[0].metric("connected components", f"{q.components:,}")
    cols[1].metric("largest component", f"{100 * q.largest_component_share:.0f}%",
                   help="Share of the entities in the largest connected component: a "
                        "path search never leaves the component of its start entity.")
    if q.relation_kinds:
        st.caption("relation kinds: " + ", ".join(f"{k} {v:,}"
                                                  for k, v in q.relation_kinds.items()))
    if q.last_job:
        st.caption(f"last build job: {q.last_job} ({q.last_job_status})")
    age = max(0.0, datetime.now(UTC).timestamp() - entry.checked)
    st.caption(f"Report of the graph with fingerprint {entry.fingerprint.digest}, checked "
               f"{_ago(age)} ago" + ("; checking now whether the graph changed (the next "
                                     "view shows the result)" if checking else "."))


def _ago(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def entity_section(p: Platform, domain: str, base: str) -> None:
    st.subheader("Entities")
    text = st.text_input("Search entities by name or alias", key="entity_search",
                         placeholder="e.g. milk")
    if not text.strip():
        st.caption("Type part of a name to see the entity's neighbourhood.")
        return
    hits = state.try_store(lambda: p.store.read(
        "browser/entity_search", {"domain": domain, "text": text, "limit": 20}), "search")
    if hits is None:
        return
    if not hits:
        st.info(f"No entity of {domain} has “{text.strip()}” in its name or aliases.")
        return
    keys = [str(h["key"]) for h in hits]
    labels = {str(h["key"]): f"{h['name']} ({h['degree']} facts)" for h in hits}
    key = st.selectbox("Entity", keys, format_func=labels.__getitem__, key="entity_pick")
    facts = state.try_store(lambda: p.store.read(
        "browser/entity_neighbourhood", {"domain": domain, "key": key, "limit": 40}),
        "neighbourhood")
    if facts is None:
        return
    if facts:
        st.graphviz_chart(render.neighbourhood_dot(key, facts))
    else:
        st.info("This entity has no facts (an orphan).")
    q = browser_query(base, "browser/entity_neighbourhood",
                      {"domain": domain, "key": key, "limit": 40})
    st.link_button("Open this neighbourhood in Neo4j Browser", q.url, icon=icons.LINK)
    with st.expander("Cypher of this neighbourhood"):
        st.code(q.statement, language="cypher")
    if facts:
        provenance(p, domain, base, facts)


def provenance(p: Platform, domain: str, base: str, facts: list[dict[str, Any]]) -> None:
    labels = [f"{f['head_name']} —{f['predicate']}→ {f['tail_name']}" for f in facts]
    i = st.selectbox("Where does a fact come from?", range(len(facts)),
                     format_func=labels.__getitem__, key="fact_pick")
    f = facts[i]
    params = {"domain": domain, "head": f["head"], "predicate": f["predicate"],
              "tail": f["tail"]}
    rows = state.try_store(lambda: p.store.read("browser/triple_provenance", params),
                           "provenance")
    for r in rows or []:
        if r.get("text"):
            st.markdown(f"> {render.escape_md(render.short(r['text'], 600))}")
            st.caption(f"{r.get('file') or ''}:{r.get('line') or ''} · chunk {r['chunk_id']}")
        else:
            st.caption("No source chunk is recorded for this fact.")
    q = browser_query(base, "browser/triple_provenance", params)
    st.link_button("Open this fact's provenance in Neo4j Browser", q.url, icon=icons.LINK)


def page() -> None:
    st.title("Graphs")
    res = state.resources()
    p = res.platform
    base = state.browser_base(p)
    names = state.try_store(lambda: state.domains(p), "Neo4j")
    if names is None:
        return
    if not names:
        st.info("No domain graph yet. Build one (`kgrag build --domain commonsense --limit 200`) "
                "or import an export (`kgrag graph import data/graphs/commonsense.jsonl.gz`).")
        return
    quality_service(p, str(id(p))).warm(names)  # reports of new graphs, in the background
    sizes = domain_sizes(p, tuple(names))
    st.dataframe(sizes, hide_index=True, width="stretch")
    pending = [r["domain"] for r in sizes if r["entities"] is None]
    if pending:
        st.caption(f"Counts of {', '.join(pending)} follow once their quality reports are "
                   "computed (in the background, once per graph version).")
    domain = st.selectbox("Domain", names, key="graphs_domain")
    overview = browser_query(base, "browser/domain_overview", {"domain": domain, "limit": 25})
    st.link_button(f"Open an overview of {domain} in Neo4j Browser", overview.url, icon=icons.LINK)
    left, right = st.columns([3, 2])
    with left:
        report = st.container()  # filled last: the search never waits for a first report
        entity_section(p, domain, base)
    with report:
        quality_section(p, domain)
    with right:
        jobs_section(p, domain)


page()
