"""How a domain's passages are told apart in the one full-text index they share.

Every domain's chunks are `ChunkPassage` nodes (`kg_builder.passages` writes them,
`textrag.corpora` reads them). Their full-text index also indexes `corpus`, the token
`corpus_token(domain)`, and a query requires it, so BM25 ranks one domain's passages only.

>>> corpus_token("mydocs")
'ce2a7f1853207e3aff6e07a05'
"""

from __future__ import annotations

import hashlib

LABEL = "ChunkPassage"


def corpus_token(domain: str) -> str:
    """The Lucene term that marks `domain`'s passages: `c` + 24 hex digits of the sha256
    of its name, one lower-case alphanumeric token whatever the name holds (the standard
    analyzer would split `my-docs` and fold `Docs` into `docs`)."""
    return "c" + hashlib.sha256(domain.encode()).hexdigest()[:24]
