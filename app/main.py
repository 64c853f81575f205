"""Entry point of the explorer: `streamlit run app/main.py [-- --runs DIR]` or `kgrag app`.

Registers the five pages and shows, in the sidebar, whether Neo4j answers, the chat model,
whether the model is busy, and the Neo4j Browser link.
"""

from __future__ import annotations

import threading
from pathlib import Path

import streamlit as st

from app import icons, state

HERE = Path(__file__).resolve().parent
FAVICON = Path(st.__file__).resolve().parent / "static" / "favicon.png"  # Streamlit's own


@st.cache_data(ttl=10, show_spinner=False)
def _health(_platform: object, key: str) -> tuple[bool, str]:
    # Cached for a few seconds: every click reruns the script, Neo4j need not be asked.
    return state.neo4j_health(_platform)  # type: ignore[arg-type]


def _import_plotting() -> None:
    import matplotlib

    matplotlib.use("Agg")  # as eval.plots does: no display
    import matplotlib.pyplot  # noqa: F401

    import eval.compare  # noqa: F401
    import eval.report  # noqa: F401


@st.cache_resource(show_spinner=False)
def _preload() -> threading.Thread:
    """Import the Results and Compare pages' scoring and plotting modules in a background
    thread, once per server, while the first page is shown: their first view would
    otherwise spend ~2.5 s importing them (Python's import locks make a page that
    arrives early wait for the same import, never run it twice)."""
    t = threading.Thread(target=_import_plotting, name="kgrag-preload", daemon=True)
    t.start()
    return t


def sidebar() -> None:
    res = state.resources()
    p = res.platform
    with st.sidebar:
        ok, line = _health(p, str(id(p)))
        if ok:
            st.success(f"Neo4j: {line}", icon=icons.OK)
        else:
            st.error(f"Neo4j: {line}", icon=icons.DOWN)
        st.caption(f"Chat model: `{p.settings.model.chat}` ({p.settings.model.backend})")
        holder = res.gate.holder
        if holder is not None:
            st.warning(f"Model busy: {holder.label} ({holder.seconds():.0f} s)", icon=icons.BUSY)
        st.link_button("Open Neo4j Browser", state.browser_base(p), width="stretch")
        st.caption("Browser login: user `neo4j`; password in "
                   f"`{p.neo4j.password_file}`" if p.settings.managed_neo4j
                   else "Browser login: your NEO4J_USERNAME / NEO4J_PASSWORD")


def main() -> None:
    # A local favicon: a :material: one (or a page's icon) is fetched from fonts.gstatic.com.
    st.set_page_config(page_title="kgrag explorer", page_icon=str(FAVICON), layout="wide")
    pages = [
        st.Page(HERE / "views" / "ask.py", title="Ask", icon=icons.ASK, default=True),
        st.Page(HERE / "views" / "reasoning.py", title="Reasoning", icon=icons.REASONING),
        st.Page(HERE / "views" / "graphs.py", title="Graphs", icon=icons.GRAPH),
        st.Page(HERE / "views" / "results.py", title="Results", icon=icons.RESULTS),
        st.Page(HERE / "views" / "compare.py", title="Compare", icon=icons.COMPARE),
    ]
    nav = st.navigation(pages)
    _preload()
    sidebar()
    nav.run()


main()
