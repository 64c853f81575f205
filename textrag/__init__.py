"""Text-based adaptive RAG over a Wikipedia corpus in Neo4j: SeaKR, MetaRAG and baselines."""
