import socket
from pathlib import Path

import pytest

from kgrag.config import Settings
from kgrag.errors import KgragError
from kgrag.neo4j_server import ManagedNeo4j, _artifact_name, java_major, port_in_use


@pytest.mark.parametrize(("text", "major"), [
    ('openjdk version "17.0.15" 2025-04-15', 17),
    ('java version "1.8.0_392"', 8),
    ('openjdk version "21" 2023-09-19', 21),
    ("garbage", None),
])
def test_java_major(text: str, major: int | None) -> None:
    assert java_major(text) == major


def test_artifact_name_strips_versions() -> None:
    assert _artifact_name("commons-lang3-3.12.0.jar") == "commons-lang3"
    assert _artifact_name("apoc-core-5.26.19.jar") == "apoc-core"
    assert _artifact_name("HdrHistogram-2.1.9.jar") == "HdrHistogram"


def test_port_in_use_sees_a_bound_socket() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        assert port_in_use(s.getsockname()[1])


def test_conf_binds_loopback_only(tmp_path: Path) -> None:
    server = ManagedNeo4j(Settings(home=tmp_path))
    server._write_conf()
    conf = (tmp_path / "neo4j" / "instance" / "conf" / "neo4j.conf").read_text()
    assert "server.default_listen_address=127.0.0.1\n" in conf
    assert "server.bolt.listen_address=127.0.0.1:7687\n" in conf
    assert "server.https.enabled=false\n" in conf
    assert "dbms.security.procedures.unrestricted=apoc.*\n" in conf
    assert "0.0.0.0" not in conf


def test_taken_port_gives_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        settings = Settings(home=tmp_path)
        settings.neo4j.bolt_port = port
        with pytest.raises(KgragError, match=f"port {port}"):
            ManagedNeo4j(settings).start()
    assert not (tmp_path / "neo4j" / "instance" / "password").exists()


def test_password_is_required_before_first_start(tmp_path: Path) -> None:
    with pytest.raises(KgragError, match="never started"):
        ManagedNeo4j(Settings(home=tmp_path)).password()
