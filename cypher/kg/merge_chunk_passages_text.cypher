// Upsert a domain's chunk passages without vectors (BM25 only: `kgrag bench chunks
// --retrievers bm25`); as kg/merge_chunk_passages otherwise. An old vector is removed,
// so no passage keeps a vector of another text.
UNWIND $rows AS row
MERGE (p:ChunkPassage {id: row.id})
SET p.domain = $domain, p.corpus = $corpus, p.title = row.title, p.text = row.text,
    p.source = row.source, p.line = row.line, p.embedding = null
