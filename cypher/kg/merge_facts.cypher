// One REL per (head, predicate, tail); source chunk ids accumulate without duplicates.
// `extractor` is the kind of extraction that first read the fact (llm, spacy, wordnet).
UNWIND $rows AS row
MATCH (h:Entity {domain: $domain, key: row.h})
USING INDEX h:Entity(domain, key)
MATCH (t:Entity {domain: $domain, key: row.t})
USING INDEX t:Entity(domain, key)
MERGE (h)-[r:REL {predicate: row.r}]->(t)
ON CREATE SET r.domain = $domain, r.kind = row.k, r.chunk_ids = row.chunks,
              r.confidence = row.conf, r.extractor = coalesce(row.x, 'llm'),
              r.score = row.score, r.freq = row.freq, r.assertions = row.assertions
WITH r, row
WHERE any(c IN row.chunks WHERE NOT c IN r.chunk_ids)
SET r.chunk_ids = r.chunk_ids + [c IN row.chunks WHERE NOT c IN r.chunk_ids]
