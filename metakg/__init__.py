"""MetaKGRAG: the Perceive-Evaluate-Adjust cycle over knowledge-graph paths.

The pure core lives here (`config`, `similarity`, `graph`, `cycle`, `memory`); the LLM
steps (concept extraction, answer generation) use the prompt files in `prompts/`.
See `metakg/README.md` for the mapping to Algorithm 1 of the paper.
"""
