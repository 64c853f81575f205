// Lucene BM25 over every domain's passages; `corpus` (a token made from the domain name)
// is indexed too, so a query requires it and ranks only that domain's passages.
CREATE FULLTEXT INDEX chunk_passage_text IF NOT EXISTS FOR (p:ChunkPassage) ON EACH [p.title, p.text, p.corpus]
