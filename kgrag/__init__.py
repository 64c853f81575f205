"""kgrag: knowledge-graph RAG on Neo4j with local quantized models.

Shared infrastructure lives here: configuration (`kgrag.config`), the Neo4j
launcher (`kgrag.neo4j_server`) and store (`kgrag.store`), model backends
(`kgrag.llm`), embeddings (`kgrag.embed`), the typed question/prediction model
(`kgrag.types`), the method base class (`kgrag.method`) and the CLI (`kgrag.cli`).
"""

__version__ = "0.1.0"
