"""End to end: the explorer in a real browser against the real Neo4j and a real small model.

Writes a small graph into a throw-away domain, starts `streamlit run app/main.py` on a free
port (as `kgrag app` does), and drives it with `app/e2e/explore.js` (playwright-core +
Debian's /usr/bin/chromium): asks a question with `llm` and `metakgrag`,
waits for the answers and the path graph, opens the Graphs and Results pages (the latter
on a synthetic 300-question run), opens an "Open in Neo4j Browser" link, checks that
Neo4j Browser has the Cypher the app shows in its editor, and runs it.
Screenshots go to test-output/e2e/. The timings it prints are measurements for the README,
not assertions.

Needs `make e2e-deps` (Debian chromium, `npm ci` in app/e2e; `make test` runs it). Skips
without them, but fails under CI=true (`.ci/run`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.cli import streamlit_argv
from app.state import browser_base
from kg_builder.graph_io import GraphWriter, WriteReport
from kgrag.platform import available_methods
from tests.e2e.synthetic import write_synthetic_run

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
E2E = ROOT / "app" / "e2e"
OUT = ROOT / "test-output" / "e2e"
CHROMIUM = os.environ.get("KGRAG_E2E_CHROMIUM", "/usr/bin/chromium")
QUESTION = "Where would you keep milk so that it stays cold?"
FACTS = [("milk", "stored in", "refrigerator"), ("refrigerator", "keeps food", "cold"),
         ("freezer", "colder than", "refrigerator"), ("milk", "comes from", "cow"),
         ("refrigerator", "located in", "kitchen"), ("cupboard", "located in", "kitchen"),
         ("oven", "makes food", "hot"), ("milk", "spoils when", "warm"),
         ("cold", "slows", "bacteria"), ("cheese", "made from", "milk")]


def _missing_tools() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    if not Path(CHROMIUM).is_file():
        return f"{CHROMIUM} is missing (apt-get install -y chromium)"
    if not (E2E / "node_modules" / "playwright-core").is_dir():
        return "playwright-core is missing (npm ci --prefix app/e2e)"
    return None


@pytest.fixture()
def e2e_tools() -> None:
    """Skip without the browser tools, except under CI (CI=true), where that is a failure:
    `make e2e-deps` (a prerequisite of `make test`) installs them."""
    missing = _missing_tools()
    if missing and os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"browser test tools: {missing}; `make e2e-deps` installs them")
    if missing:
        pytest.skip(f"browser test tools: {missing} (`make e2e-deps`)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture()
def milk_graph(platform, test_domain) -> str:
    """A small graph with real embeddings, so MetaKGRAG can match and walk it."""
    keys = sorted({k for h, _, t in FACTS for k in (h, t)})
    chunk = {"id": f"{test_domain}:c1", "doc": f"{test_domain}:d1", "title": "kitchen",
             "text": ". ".join(f"{h} {r} {t}" for h, r, t in FACTS), "source": "e2e",
             "line": 1}
    GraphWriter(platform.store, platform.embedder, test_domain).write(
        [chunk], [{"key": k, "name": k, "aliases": []} for k in keys],
        [{"h": h, "r": r, "t": t, "k": "spatial", "chunks": [chunk["id"]], "conf": 1.0}
         for h, r, t in FACTS], WriteReport(test_domain))
    return test_domain


@pytest.fixture()
def app_url(tmp_path: Path, test_model_name: str) -> Iterator[tuple[str, Path]]:
    runs = tmp_path / "runs"
    write_synthetic_run(runs / "synthetic-300", n=300)
    port = _free_port()
    env = {**os.environ, "KGRAG_MODEL__CHAT": test_model_name}
    log = (tmp_path / "streamlit.log").open("wb")
    proc = subprocess.Popen(streamlit_argv(port, "127.0.0.1", runs), cwd=ROOT, env=env,  # noqa: S603
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:  # noqa: S310
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("streamlit did not start:\n"
                                   + (tmp_path / "streamlit.log").read_text()[-3000:])
            time.sleep(0.5)
        yield url, runs
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_explorer_end_to_end(e2e_tools: None, platform, milk_graph: str,
                             app_url: tuple[str, Path]) -> None:
    url, _ = app_url
    methods = ["llm", "metakgrag"]
    assert set(methods) <= set(available_methods())
    password = (platform.neo4j.password() if platform.settings.managed_neo4j
                else platform.settings.neo4j.password)
    shutil.rmtree(OUT, ignore_errors=True)
    cfg = {"url": url, "domain": milk_graph, "question": QUESTION, "methods": methods,
           "run": "synthetic-300", "out": str(OUT), "entity": "milk",
           "browserPassword": password, "chromium": CHROMIUM, "answerTimeoutMs": 1_500_000}
    proc = subprocess.run(["node", str(E2E / "explore.js"), json.dumps(cfg)],  # noqa: S603, S607
                          cwd=ROOT, capture_output=True, text=True, timeout=2400)
    lines = proc.stdout.strip().splitlines()
    report = json.loads(lines[-1]) if lines else {}
    assert proc.returncode == 0, f"{proc.stderr[-4000:]}\nreport: {report}"

    for m in methods:  # every method's card shows an answer below its name
        card = report["answers"][m]
        assert card.startswith(m) and len(card.split("\n", 1)[-1].strip()) > 3, card
    assert report["path_graph"] >= 1  # a start entity's path drawn as a graph
    assert report["browser_links"] >= 1
    # The link opens this server's Browser with exactly the Cypher the app shows, and
    # the Browser's editor holds that Cypher after the login frame; running it draws.
    assert report["browser_url_prefix"] == browser_base(platform) + "?cmd=edit&arg="
    cypher = report["app_cypher"]
    assert cypher.startswith(f'WITH "{milk_graph}" AS domain, [[') and "MATCH" in cypher
    assert report["browser_url_cypher"] == cypher
    if password:
        assert report["browser_editor_cypher"] == cypher
        assert re.fullmatch(r"Displaying [0-9]+ nodes?, [1-9][0-9]* relationships?\.?",
                            report["neo4j_browser"]), report["neo4j_browser"]
    assert report["external_requests"] == []  # graphviz and vega-lite are bundled: no CDN
    shots = [Path(p) for p in report["screenshots"]]
    assert len(shots) >= (6 if password else 4), shots
    assert all(p.is_file() and p.stat().st_size > 10_000 for p in shots), shots
    print(f"\nE2E timings: Ask → first progress {report['ask_to_progress_ms']} ms; "
          f"Ask → all answers {report['ask_to_answer_ms'] / 1000:.1f} s ({', '.join(methods)}); "
          f"Results page with a 300-question run {report['results_load_ms']} ms "
          f"(first view, scoring included; {report['results_reload_ms']} ms when revisited); "
          f"{report.get('disagreements', '')}; Neo4j Browser: {report.get('neo4j_browser')}")
