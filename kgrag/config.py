"""Typed settings: defaults < config file (kgrag.toml) < environment variables.

Environment variables use the `KGRAG_` prefix with `__` between levels, e.g.
`KGRAG_MODEL__CHAT=qwen2.5-coder-0.5b` or `KGRAG_NEO4J__HEAP=2g`. The standard
Neo4j variables `NEO4J_URI`, `NEO4J_USERNAME`, `NEO4J_PASSWORD`, `NEO4J_DATABASE`
are honoured too: with `NEO4J_URI` set, kgrag uses that server (a cluster, Aura)
and never starts its own.

Settings are read once, by `load_settings()` in the composition root; nothing
reads the environment at import time.

A package adds its own section (`[metakg]` in kgrag.toml, `KGRAG_METAKG__TAU_COVERAGE`,
`settings.metakg`) with an entry point of the group `kgrag.settings` that names a pydantic
model (pyproject.toml: `metakg = "metakg.config:MetaKGConfig"`); kgrag/ itself knows no
method's settings.
"""

from __future__ import annotations

import os
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from kgrag.errors import KgragError
from kgrag.reader import ReaderConfig


def _default_data_dir() -> Path:
    # The shared datasets sit beside the project checkout: <checkout>/../shared/data.
    return Path(__file__).resolve().parents[2] / "shared" / "data"


def _default_home() -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "kgrag"


class Neo4jSettings(BaseModel):
    """Where the graph lives. `uri=None` means the server kgrag manages itself."""

    model_config = ConfigDict(extra="forbid")  # a typo in kgrag.toml is an error

    uri: str | None = None
    user: str = "neo4j"
    password: str | None = None  # None: read the generated one of the managed server
    database: str = "neo4j"
    version: str = "5.26.19"  # Neo4j Community LTS; APOC core must match exactly
    browser_version: str = "5.24.0"  # newest Neo4j Browser on Maven Central
    bolt_port: int = 7687
    http_port: int = 7474
    # Bulk imports of 100k+ facts and 100k+ vectors (kgrag bench import, the demo's graph
    # exports) on the 24 GB machines; lower them with KGRAG_NEO4J__HEAP/__PAGECACHE.
    heap: str = "4g"
    pagecache: str = "2g"
    start_timeout_s: float = 120.0


class ModelSettings(BaseModel):
    """The chat model behind every method."""

    model_config = ConfigDict(extra="forbid")  # a typo in kgrag.toml is an error

    backend: Literal["llama", "openai"] = "llama"
    chat: str = "qwen2.5-coder-1.5b"  # a registry name or a path to a .gguf file
    n_ctx: int = 4096
    n_threads: int | None = None  # None: all cores
    n_batch: int = 512
    seed: int = 42
    # Reuse the whole blocks of this many tokens that a prompt shares with the previous
    # one (kgrag.llm.prefix); 0 turns reuse off. Results are the same either way.
    prefix_block: int = Field(default=64, ge=0)
    # OpenAI-compatible server (llama.cpp server, vLLM, Ollama) when backend == "openai"
    openai_base_url: str = "http://127.0.0.1:8080/v1"
    openai_api_key: str = "not-needed"
    openai_model: str = "default"
    # How a JSON schema is sent: OpenAI's `json_schema` (vLLM, llama.cpp's llama-server) or
    # `json_object` with a `schema` key (llama-cpp-python's server, which refuses the other).
    openai_json_format: Literal["json_schema", "json_object"] = "json_schema"

    @property
    def identity(self) -> str:
        """The model a run or a build job records: the registry name or `.gguf` path
        in-process, `<served name>@<base URL>` through a server (`chat` is unused then).

        >>> ModelSettings(backend="openai", openai_model="q", openai_base_url="http://h/v1"
        ...               ).identity
        'q@http://h/v1'
        """
        if self.backend == "llama":
            return self.chat
        return f"{self.openai_model}@{self.openai_base_url}"
    request_timeout_s: float = 300.0


class EmbeddingSettings(BaseModel):
    """Sentence embeddings for entities, passages and similarity scores."""

    model_config = ConfigDict(extra="forbid")  # a typo in kgrag.toml is an error

    model: str = "all-minilm-l6-v2"  # registry name or a local sentence-transformers folder
    # The embedder of passage corpora and their queries (None: `model`); a corpus records
    # the model of its vectors and refuses queries of another (kgrag.vectors).
    passage_model: str | None = None
    dimensions: int = 384  # must match the vector indexes in cypher/schema
    batch_size: int = 64
    cache_size: int = 100_000  # in-memory LRU entries


SECTIONS_GROUP = "kgrag.settings"


@cache
def registered_sections() -> dict[str, type[BaseModel]]:
    """The settings sections of the installed packages (entry points `kgrag.settings`:
    section name = `module:Model`).

    >>> "metakg" in registered_sections()
    True
    """
    return {ep.name: ep.load() for ep in entry_points(group=SECTIONS_GROUP)}


class _SectionEnv(PydanticBaseSettingsSource):
    """`KGRAG_<SECTION>__<FIELD>[__<FIELD>…]` for the registered sections (pydantic-settings
    reads nested variables of declared fields only)."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for name in registered_sections():
            prefix = f"KGRAG_{name.upper()}__"
            for var, value in os.environ.items():
                if not var.upper().startswith(prefix):
                    continue
                *path, last = var[len(prefix):].lower().split("__")
                node = found.setdefault(name, {})
                for key in path:
                    node = node.setdefault(key, {})
                node[last] = value
        return found


class Settings(BaseSettings):
    """All of kgrag's configuration. Build with `load_settings()`. Each registered section
    is an attribute too (`settings.metakg`), validated by the model its package names.

    >>> s = load_settings()
    >>> s.neo4j.bolt_port
    7687
    """

    model_config = SettingsConfigDict(
        # "allow" only for the registered sections: `_sections` refuses any other key.
        env_prefix="KGRAG_", env_nested_delimiter="__", extra="allow"
    )

    home: Path = Field(default_factory=_default_home)
    data_dir: Path = Field(default_factory=_default_data_dir)
    neo4j: Neo4jSettings = Field(default_factory=Neo4jSettings)
    model: ModelSettings = Field(default_factory=ModelSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    reader: ReaderConfig = Field(default_factory=ReaderConfig)

    @model_validator(mode="after")
    def _sections(self) -> Settings:
        """Validate each registered section (its defaults when not configured); any other
        extra key is a typo, as before sections were registered."""
        extra = self.__pydantic_extra__ if self.__pydantic_extra__ is not None else {}
        sections = registered_sections()
        unknown = sorted(set(extra) - set(sections))
        if unknown:
            raise ValueError(f"unknown settings {', '.join(unknown)}; known sections: "
                             f"{', '.join(sorted(sections))}")
        for name, model in sections.items():
            value = extra.get(name, {})
            extra[name] = value if isinstance(value, model) else model.model_validate(value)
        return self

    if TYPE_CHECKING:  # a registered section is an attribute (pydantic's extra)
        def __getattr__(self, name: str) -> Any: ...

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_file = os.environ.get("KGRAG_CONFIG", "kgrag.toml")
        return (
            init_settings,
            env_settings,
            _SectionEnv(settings_cls),
            TomlConfigSettingsSource(settings_cls, toml_file=toml_file),
        )

    # Derived locations, all outside the repository by default.
    @property
    def neo4j_dist_dir(self) -> Path:
        return self.home / "neo4j" / f"dist-{self.neo4j.version}"

    @property
    def neo4j_instance_dir(self) -> Path:
        return self.home / "neo4j" / "instance"

    @property
    def models_dir(self) -> Path:
        return self.home / "models"

    @property
    def managed_neo4j(self) -> bool:
        return self.neo4j.uri is None


_NEO4J_ENV = {
    "NEO4J_URI": "uri",
    "NEO4J_USERNAME": "user",
    "NEO4J_USER": "user",
    "NEO4J_PASSWORD": "password",
    "NEO4J_DATABASE": "database",
}


class SettingsError(KgragError, ValueError):
    """kgrag.toml or a KGRAG_* variable names an unknown key or a bad value (a ValueError
    too, as pydantic's was)."""


def settings_errors(e: ValidationError) -> str:
    """pydantic's errors as one line: `embedding.threads: extra inputs are not permitted`.

    >>> from pydantic import BaseModel, ConfigDict
    >>> class S(BaseModel):
    ...     model_config = ConfigDict(extra="forbid")
    >>> try:
    ...     S.model_validate({"threads": 1})
    ... except ValidationError as err:
    ...     print(settings_errors(err))
    threads: extra inputs are not permitted
    """
    parts = []
    for err in e.errors():
        where = ".".join(str(x) for x in err.get("loc", ()))
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        parts.append(f"{where}: {msg[:1].lower()}{msg[1:]}" if where else msg)
    return "; ".join(parts)


def load_settings(**overrides: object) -> Settings:
    """Read settings from kgrag.toml and the environment (the only place that does)."""
    try:
        settings = Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as e:
        raise SettingsError(f"invalid settings: {settings_errors(e)}",
                         hint="check kgrag.toml and the KGRAG_* environment variables "
                              "(a nested key is KGRAG_<SECTION>__<KEY>)") from None
    neo4j_env = {
        field: os.environ[var] for var, field in _NEO4J_ENV.items() if os.environ.get(var)
    }
    if neo4j_env:
        settings.neo4j = settings.neo4j.model_copy(update=neo4j_env)
    return settings
