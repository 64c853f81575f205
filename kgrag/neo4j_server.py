"""A real Neo4j Community server, assembled from Maven Central jars and run by kgrag.

Layout (all under `settings.home`, outside the repository):

    neo4j/dist-<version>/lib        Neo4j Community + Neo4j Browser jars (Maven)
    neo4j/dist-<version>/plugins    APOC core and its own dependencies
    neo4j/instance/conf/neo4j.conf  written from settings on every start
    neo4j/instance/{data,logs,run}  the database, logs, pid file
    neo4j/instance/password         generated password (mode 0600), read by CLI and app

    server = ManagedNeo4j(load_settings())
    server.start()        # downloads jars once, then ~20 s to Bolt-ready
    server.status().running
    # -> True
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from kgrag.config import Settings
from kgrag.errors import KgragError, Neo4jUnavailable

log = logging.getLogger(__name__)

MAVEN_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
MIN_JAVA, MAX_JAVA = 17, 21  # the Java versions Neo4j 5.26 supports

# Flags Neo4j's own boot loader would add; without the add-opens the server dies with a
# LinkageError about DirectByteBuffer on Java 17+.
JVM_FLAGS = [
    "-XX:+UseG1GC",
    "-XX:+ExitOnOutOfMemoryError",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--enable-native-access=ALL-UNNAMED",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Dfile.encoding=UTF-8",
]

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kgrag</groupId><artifactId>{artifact}</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
{deps}
  </dependencies>
</project>
"""
_DEP = (
    "    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId>"
    "<version>{v}</version></dependency>"
)


@dataclass(frozen=True)
class Neo4jStatus:
    running: bool
    pid: int | None
    version: str | None
    bolt_uri: str
    browser_url: str
    password_file: Path
    log_file: Path
    detail: str = ""


class ManagedNeo4j:
    """Fetches, configures, starts and stops the local Neo4j server."""

    def __init__(self, settings: Settings) -> None:
        self.s = settings
        self.dist = settings.neo4j_dist_dir
        self.inst = settings.neo4j_instance_dir

    # ------------------------------------------------------------------ paths
    @property
    def bolt_uri(self) -> str:
        return f"bolt://127.0.0.1:{self.s.neo4j.bolt_port}"

    @property
    def browser_url(self) -> str:
        return f"http://127.0.0.1:{self.s.neo4j.http_port}/browser/"

    @property
    def password_file(self) -> Path:
        return self.inst / "password"

    @property
    def pid_file(self) -> Path:
        return self.inst / "run" / "kgrag-neo4j.pid"

    @property
    def log_file(self) -> Path:
        return self.inst / "logs" / "neo4j.log"

    @property
    def console_log(self) -> Path:
        return self.inst / "logs" / "console.log"

    # ------------------------------------------------------------------ public API
    def password(self) -> str:
        if not self.password_file.is_file():
            raise KgragError(
                f"no password file at {self.password_file}: the managed Neo4j was never started",
                hint="run `kgrag neo4j start` (or set NEO4J_URI/NEO4J_PASSWORD for another server)",
            )
        return self.password_file.read_text().strip()

    def start(self) -> Neo4jStatus:
        """Start the server (fetching jars on first use) and wait until Bolt answers."""
        from kgrag.store import wait_until_ready  # the driver lives in kgrag.store only

        current = self.status(probe=False)
        if current.running:
            log.info("Neo4j already running (pid %s)", current.pid)
            return self.status()
        java = check_java()
        for port in (self.s.neo4j.bolt_port, self.s.neo4j.http_port):
            if port_in_use(port):
                raise KgragError(
                    f"port {port} on 127.0.0.1 is already taken by another process",
                    hint="stop that process, or pick other ports with KGRAG_NEO4J__BOLT_PORT / "
                    "KGRAG_NEO4J__HTTP_PORT",
                )
        self.fetch()
        self._write_conf()
        self._ensure_password(java)
        self.console_log.parent.mkdir(parents=True, exist_ok=True)
        cmd = [java, *self._memory_flags(), *JVM_FLAGS, "-cp", self._classpath(),
               "org.neo4j.server.CommunityEntryPoint",
               f"--home-dir={self.inst}", f"--config-dir={self.inst / 'conf'}"]
        with open(self.console_log, "ab") as out:
            proc = subprocess.Popen(  # noqa: S603 - fixed argv, no shell
                cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                cwd=self.inst, start_new_session=True,
            )
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
        self.pid_file.write_text(str(proc.pid))
        try:
            wait_until_ready(self.bolt_uri, self.s.neo4j.user, self.password(),
                             self.s.neo4j.start_timeout_s, alive=lambda: proc.poll() is None)
        except Neo4jUnavailable as e:
            self._kill(proc.pid)
            raise Neo4jUnavailable(
                f"{e.message}\n--- last lines of {self.log_file} ---\n{self._log_tail()}",
                hint=e.hint or "read the log above",
            ) from e
        return self.status()

    def stop(self, timeout_s: float = 60.0) -> bool:
        """Stop the server gracefully (SIGTERM, then SIGKILL). False if it was not running."""
        pid = self._pid()
        if pid is None:
            return False
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.2)
        if _alive(pid):
            self._kill(pid)
        self.pid_file.unlink(missing_ok=True)
        return True

    def status(self, probe: bool = True) -> Neo4jStatus:
        pid = self._pid()
        version, detail = None, ""
        if pid is not None and probe:
            from kgrag.store import connect_checked

            try:
                with connect_checked(self.bolt_uri, self.s.neo4j.user, self.password(),
                                     self.s.neo4j.database) as store:
                    info = store.info()
                    version = f"{info.version} {info.edition}"
            except KgragError as e:
                detail = e.message
        return Neo4jStatus(pid is not None, pid, version, self.bolt_uri, self.browser_url,
                           self.password_file, self.log_file, detail)

    def fetch(self) -> Path:
        """Download Neo4j, Neo4j Browser and APOC jars from Maven Central once (atomically)."""
        marker = self.dist / ".complete"
        if marker.is_file():
            return self.dist
        mvn = shutil.which("mvn")
        if mvn is None:
            raise KgragError(
                "Maven (`mvn`) is not installed; kgrag fetches Neo4j's jars with it",
                hint="install it (`apt-get install maven`), or point NEO4J_URI at a running Neo4j",
            )
        v = self.s.neo4j.version
        self.dist.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=self.dist.parent, prefix=".fetch-") as tmp:
            work = Path(tmp)
            lib, plugins = work / "lib", work / "plugins"
            print(f"Fetching Neo4j {v} jars from Maven Central (once, about 130 MB)…", flush=True)
            self._copy_dependencies(mvn, work / "server", lib, [
                ("org.neo4j", "neo4j", v),
                ("org.neo4j.client", "neo4j-browser", self.s.neo4j.browser_version),
            ])
            # APOC core 5.26.x is published as a thin jar plus apoc-common and a few libraries.
            self._copy_dependencies(mvn, work / "apoc", work / "apoc-all", [
                ("org.neo4j.procedure", "apoc-core", v),
                ("org.neo4j.procedure", "apoc-common", v),
            ])
            plugins.mkdir()
            present = {_artifact_name(p.name) for p in lib.glob("*.jar")}
            for jar in (work / "apoc-all").glob("*.jar"):
                if _artifact_name(jar.name) not in present:  # never two versions on the classpath
                    shutil.copy2(jar, plugins / jar.name)
            if not (lib / f"neo4j-{v}.jar").is_file():
                raise KgragError(f"Maven finished but neo4j-{v}.jar is missing from {lib}")
            if self.dist.exists():
                shutil.rmtree(self.dist)
            self.dist.mkdir(parents=True)
            lib.rename(self.dist / "lib")
            plugins.rename(self.dist / "plugins")
            marker.write_text(v)
        return self.dist

    # ------------------------------------------------------------------ internals
    def _copy_dependencies(
        self, mvn: str, project: Path, out: Path, deps: list[tuple[str, str, str]]
    ) -> None:
        project.mkdir(parents=True)
        body = "\n".join(_DEP.format(g=g, a=a, v=v) for g, a, v in deps)
        (project / "pom.xml").write_text(_POM.format(artifact=project.name, deps=body))
        cmd = [mvn, "-B", "-q", f"{MAVEN_DEPENDENCY_PLUGIN}:copy-dependencies",
               f"-DoutputDirectory={out}", "-DincludeScope=runtime"]
        proc = subprocess.run(cmd, cwd=project, capture_output=True, text=True)  # noqa: S603
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise KgragError(
                f"Maven could not fetch {', '.join(a for _, a, _ in deps)}:\n{tail}",
                hint="check that Maven Central is reachable (proxy settings in ~/.m2/settings.xml);"
                " nothing was installed, so simply re-run",
            )

    def _classpath(self) -> str:
        return os.pathsep.join([str(self.dist / "plugins" / "*"), str(self.inst / "conf" / "*"),
                                str(self.dist / "lib" / "*")])

    def _memory_flags(self) -> list[str]:
        heap = self.s.neo4j.heap
        return [f"-Xms{heap}", f"-Xmx{heap}"]

    def _write_conf(self) -> None:
        n, i = self.s.neo4j, self.inst
        for sub in ("conf", "data", "logs", "run", "import"):
            (i / sub).mkdir(parents=True, exist_ok=True)
        conf = {
            "server.default_listen_address": "127.0.0.1",
            "server.bolt.listen_address": f"127.0.0.1:{n.bolt_port}",
            "server.bolt.advertised_address": f"127.0.0.1:{n.bolt_port}",
            "server.http.listen_address": f"127.0.0.1:{n.http_port}",
            "server.http.advertised_address": f"127.0.0.1:{n.http_port}",
            "server.https.enabled": "false",
            "server.directories.data": str(i / "data"),
            "server.directories.logs": str(i / "logs"),
            "server.directories.run": str(i / "run"),
            "server.directories.import": str(i / "import"),
            "server.directories.plugins": str(self.dist / "plugins"),
            "server.directories.lib": str(self.dist / "lib"),
            "server.memory.heap.initial_size": n.heap,
            "server.memory.heap.max_size": n.heap,
            "server.memory.pagecache.size": n.pagecache,
            "dbms.security.procedures.unrestricted": "apoc.*",
            "dbms.security.procedures.allowlist": "apoc.*,db.*,dbms.*,gds.*",
            "dbms.usage_report.enabled": "false",
            "db.tx_log.rotation.retention_policy": "2 days 2G",
        }
        text = "# Written by kgrag on every start; edit kgrag settings instead.\n"
        text += "".join(f"{k}={v}\n" for k, v in conf.items())
        (i / "conf" / "neo4j.conf").write_text(text)

    def _ensure_password(self, java: str) -> None:
        if self.password_file.is_file():
            return
        if (self.inst / "data" / "dbms").exists():
            raise KgragError(
                f"the Neo4j data in {self.inst / 'data'} exists but its password file is gone",
                hint=f"restore {self.password_file}, or delete {self.inst} to start afresh",
            )
        password = secrets.token_urlsafe(18)
        env = {**os.environ, "NEO4J_HOME": str(self.inst), "NEO4J_CONF": str(self.inst / "conf")}
        cmd = [java, "-cp", self._classpath(), "org.neo4j.server.startup.Neo4jAdminCommand",
               "dbms", "set-initial-password", password]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=self.inst)  # noqa: S603
        if proc.returncode != 0:
            raise KgragError(f"could not set Neo4j's initial password:\n{proc.stderr[-2000:]}")
        tmp = self.password_file.with_suffix(".tmp")
        tmp.write_text(password + "\n")
        tmp.chmod(0o600)
        tmp.rename(self.password_file)

    def _pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        if _alive(pid):
            return pid
        self.pid_file.unlink(missing_ok=True)
        return None

    def _kill(self, pid: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        self.pid_file.unlink(missing_ok=True)

    def _log_tail(self, lines: int = 20) -> str:
        for path in (self.log_file, self.console_log):
            if path.is_file():
                return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        return "(no log written)"


def check_java() -> str:
    """Path of a usable `java` (17–21), or a clear error."""
    java = shutil.which("java")
    if java is None:
        raise KgragError(
            "Java is not installed; Neo4j 5.26 needs Java 17 or 21",
            hint="install OpenJDK 17 (`apt-get install openjdk-17-jre-headless`), or set NEO4J_URI",
        )
    out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr  # noqa: S603
    major = java_major(out)
    if major is None or not MIN_JAVA <= major <= MAX_JAVA:
        raise KgragError(
            f"Java {major or '?'} found at {java}; Neo4j 5.26 needs Java {MIN_JAVA}–{MAX_JAVA}",
            hint="install OpenJDK 17 and put it first on PATH (or set JAVA_HOME accordingly)",
        )
    return java


def java_major(version_output: str) -> int | None:
    """Major version from `java -version` output ('17.0.15', '1.8.0_392' → 8)."""
    m = re.search(r'version "(\d+)(?:\.(\d+))?', version_output)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child still "exists"; treat it as dead.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def _artifact_name(jar: str) -> str:
    """'commons-lang3-3.12.0.jar' → 'commons-lang3'."""
    return re.sub(r"-\d[^-]*(-[A-Za-z0-9_]+)?\.jar$", "", jar)
