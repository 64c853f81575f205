// Fast path of merge_facts (a new domain): rows are unique by (head, predicate, tail);
// h and t are element ids returned by create_entities in the same write. score, freq and
// assertions: an imported knowledge base's weights and line numbers (null: not set).
UNWIND $rows AS row
MATCH (h:Entity) WHERE elementId(h) = row.h
MATCH (t:Entity) WHERE elementId(t) = row.t
CREATE (h)-[:REL {predicate: row.r, domain: $domain, kind: row.k, chunk_ids: row.chunks,
                  confidence: row.conf, extractor: coalesce(row.x, 'llm'),
                  score: row.score, freq: row.freq, assertions: row.assertions}]->(t)
