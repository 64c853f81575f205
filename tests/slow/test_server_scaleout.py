"""The scale-out path against a real model server: llama-cpp-python's own OpenAI-compatible
server (`python -m llama_cpp.server`, the `[server]` extra) on 127.0.0.1 with the test model,
and the `kgrag` CLI pointed at it (`KGRAG_MODEL__BACKEND=openai`): a build with four
requests in flight, MetaKGRAG asking, and a three-question evaluation. Real Neo4j, a
throw-away domain. The server serves one request at a time (no slots), so this checks that
the path works, not that it is fast; speeds are `kgrag bench extract` rows in
docs/benchmarks.md."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
KGRAG = [sys.executable, "-m", "kgrag.cli"]

pytestmark = [pytest.mark.slow, pytest.mark.integration]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(test_model_name: str) -> Iterator[str]:
    """The server process on a free port; its base URL once `/v1/models` answers."""
    try:
        import llama_cpp.server.app  # noqa: F401 - the [server] extra (make install has it)
    except ImportError:
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail("llama-cpp-python's server deps are missing: pip install -e '.[server]'")
        pytest.skip("pip install -e '.[server]' for llama-cpp-python's server")
    from kgrag.config import load_settings
    from kgrag.models import ModelRegistry

    path = ModelRegistry(load_settings().models_dir).resolve(test_model_name)
    port = _free_port()
    log = open(ROOT / "test-output" / "llama-server.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(path), "--host",
         "127.0.0.1", "--port", str(port), "--n_ctx", "4096", "--model_alias", "test",
         "--n_threads", "2"], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert proc.poll() is None, f"the server exited: see {log.name}"
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the server did not answer in 180 s"
            time.sleep(1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


@pytest.fixture()
def env(server: str) -> dict[str, str]:
    return dict(os.environ, KGRAG_MODEL__BACKEND="openai", KGRAG_MODEL__OPENAI_BASE_URL=server,
                KGRAG_MODEL__OPENAI_MODEL="test", KGRAG_MODEL__OPENAI_JSON_FORMAT="json_object")


def _kgrag(env: dict[str, str], *args: str, timeout: int = 1200) -> str:
    out = subprocess.run([*KGRAG, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=timeout)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out.stdout


(ROOT / "test-output").mkdir(exist_ok=True)


def test_build_ask_and_eval_through_the_server(env, platform, test_domain, tmp_path) -> None:  # type: ignore[no-untyped-def]
    try:
        _kgrag(env, "build", "--domain", test_domain, "--source",
               str(DATA / "scaleout_notes.md"), "--parallel", "4")
        stats = platform.store.read("kg/stats", {"domain": test_domain})[0]
        assert stats["entities"] >= 5 and stats["relations"] >= 3, stats

        pred = json.loads(_kgrag(env, "ask", "Where is milk kept so that it stays cold?",
                                 "--method", "metakgrag", "--domain", test_domain, "--json"))
        stages = [s["stage"] for s in pred["trace"]]
        assert stages[:4] == ["domain", "concepts", "match", "refine"], stages
        assert pred["error"] is None and pred["answer"].strip()
        assert pred["usage"]["llm_calls"] >= 2

        run = tmp_path / "run"
        _kgrag(env, "eval", "--dataset", str(DATA / "scaleout_questions.jsonl"), "--methods",
               "metakgrag", "--n", "3", "--domain", test_domain, "--out", str(run))
        lines = [json.loads(ln) for ln in (run / "predictions.jsonl").read_text().splitlines()]
        assert len(lines) == 3 and all(ln["prediction"]["error"] is None for ln in lines)
        config = json.loads((run / "config.json").read_text())
        assert config["model_backend"] == "openai" and config["model"].startswith("test@")
        assert "em" in _kgrag(env, "score", str(run)).lower()
    finally:
        shutil.rmtree(Path(platform.settings.home) / "jobs" / test_domain, ignore_errors=True)
