// Upsert a domain's chunk passages with their vectors; `corpus` is the domain's Lucene
// token (kgrag.passages.corpus_token), the filter of chunks/search_bm25.
UNWIND $rows AS row
MERGE (p:ChunkPassage {id: row.id})
SET p.domain = $domain, p.corpus = $corpus, p.title = row.title, p.text = row.text,
    p.source = row.source, p.line = row.line
WITH p, row
CALL db.create.setNodeVectorProperty(p, 'embedding', row.embedding)
