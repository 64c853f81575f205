"""The kgrag explorer: a Streamlit app over the platform (`kgrag app`, `make demo`).

Pages: Ask (answer with several methods side by side), Reasoning (each method's trace,
MetaKGRAG's path graphs with Neo4j Browser links), Graphs (domain sizes, quality, build
jobs, entity search) and Results (run directories of `kgrag eval`). Only this package
imports `streamlit`; `asking`, `render`, `render_text`, `results` and `browser_links` are
plain Python and unit-tested without it.
"""
