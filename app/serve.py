"""`python -m app.serve run app/main.py [options]`: Streamlit's command line, after the
explorer's heavy modules are imported (`kgrag app` starts the server this way).

Streamlit imports a page's modules on the first script run, so the first visitor after
the server started waited for the Neo4j driver, the method registry, scoring and
matplotlib (several seconds on 2 busy cores). Imported here, before the server listens,
they are ready for the first visit.
"""

from __future__ import annotations

import sys


def preload() -> None:
    """Import what the pages import on their first run."""
    import matplotlib

    matplotlib.use("Agg")  # as eval.plots does: no display
    import matplotlib.pyplot  # noqa: F401

    import app.asking  # noqa: F401
    import app.render  # noqa: F401
    import app.results  # noqa: F401
    import eval.compare  # noqa: F401
    import eval.report  # noqa: F401
    import kgrag.datasets  # noqa: F401
    from kgrag.platform import available_methods

    available_methods()  # imports every method package once


def main() -> None:
    preload()
    from streamlit.web import cli

    sys.argv = ["streamlit", *sys.argv[1:]]
    sys.exit(cli.main())


if __name__ == "__main__":
    main()
