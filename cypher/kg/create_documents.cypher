// Fast path of merge_chunks (a new domain, see domain_is_new): one row per document with
// its chunks, de-duplicated by GraphWriter.
UNWIND $rows AS row
CREATE (d:Document {id: row.doc, domain: $domain, source: row.source, title: row.title})
WITH d, row
UNWIND row.chunks AS ch
CREATE (d)-[:HAS_CHUNK]->(:Chunk {id: ch.id, domain: $domain, text: ch.text,
                                  source: ch.source, line: ch.line})
