"""MetaRAG (Zhou et al., WWW 2024): answer, then monitor → evaluate → plan. `method`."""
