from pathlib import Path

import pytest

from kgrag.config import load_settings


def test_defaults_point_outside_the_repository(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NEO4J_URI", raising=False)
    s = load_settings()
    assert s.managed_neo4j
    assert s.neo4j.bolt_port == 7687 and s.neo4j.http_port == 7474
    assert s.model.chat == "qwen2.5-coder-1.5b"
    repo = Path(__file__).resolve().parents[2]
    assert repo not in s.neo4j_instance_dir.parents


def test_nested_environment_variables_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KGRAG_MODEL__CHAT", "qwen2.5-coder-0.5b")
    monkeypatch.setenv("KGRAG_NEO4J__HEAP", "2g")
    monkeypatch.setenv("KGRAG_HOME", "/tmp/kgrag-home")
    s = load_settings()
    assert s.model.chat == "qwen2.5-coder-0.5b"
    assert s.neo4j.heap == "2g"
    assert s.neo4j_dist_dir == Path("/tmp/kgrag-home/neo4j/dist-5.26.19")


def test_standard_neo4j_variables_select_an_external_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NEO4J_URI", "neo4j+s://example.databases.neo4j.io")
    monkeypatch.setenv("NEO4J_USERNAME", "reader")
    monkeypatch.setenv("NEO4J_PASSWORD", "pw")
    s = load_settings()
    assert not s.managed_neo4j
    assert (s.neo4j.uri, s.neo4j.user, s.neo4j.password) == (
        "neo4j+s://example.databases.neo4j.io", "reader", "pw")


def test_toml_file_is_read_and_env_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "kgrag.toml"
    cfg.write_text('[model]\nchat = "smollm2-135m"\nn_ctx = 2048\n')
    monkeypatch.setenv("KGRAG_CONFIG", str(cfg))
    monkeypatch.setenv("KGRAG_MODEL__N_CTX", "1024")
    s = load_settings()
    assert s.model.chat == "smollm2-135m"
    assert s.model.n_ctx == 1024


def test_unknown_setting_is_rejected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "kgrag.toml"
    cfg.write_text("[model]\nchatt = 'typo'\n")
    monkeypatch.setenv("KGRAG_CONFIG", str(cfg))
    with pytest.raises(ValueError, match="chatt"):
        load_settings()


def test_a_registered_section_reads_toml_and_env_and_refuses_typos(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """metakg's [metakg] section comes through the kgrag.settings entry point, not
    kgrag/config.py: the same keys and variables as when kgrag declared it."""
    cfg = tmp_path / "kgrag.toml"
    cfg.write_text("[metakg]\ntau_coverage = 0.65\nn_max = 2\n")
    monkeypatch.setenv("KGRAG_CONFIG", str(cfg))
    monkeypatch.setenv("KGRAG_METAKG__N_MAX", "5")
    monkeypatch.setenv("KGRAG_METAKG__ABLATION__CYCLE", "false")
    s = load_settings()
    assert (s.metakg.tau_coverage, s.metakg.n_max, s.metakg.ablation.cycle) == (0.65, 5, False)
    assert load_settings(metakg={"delta": 0.3}).metakg.delta == 0.3
    cfg.write_text("[metakg]\ntau_coverag = 0.65\n")
    with pytest.raises(ValueError, match="tau_coverag"):
        load_settings()
    cfg.write_text("[metakgg]\nn_max = 2\n")
    with pytest.raises(ValueError, match="unknown settings metakgg"):
        load_settings()


def test_a_bad_environment_variable_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Named with its section and key, with the variable's form as the hint; no
    pydantic traceback."""
    from kgrag.errors import KgragError

    monkeypatch.setenv("KGRAG_EMBEDDING__THREADS", "1")
    with pytest.raises(KgragError, match=r"embedding\.threads: extra inputs") as e:
        load_settings()
    assert "KGRAG_<SECTION>__<KEY>" in (e.value.hint or "")
    monkeypatch.delenv("KGRAG_EMBEDDING__THREADS")
    monkeypatch.setenv("KGRAG_MODEL__N_CTX", "many")
    with pytest.raises(KgragError, match=r"model\.n_ctx: "):
        load_settings()
