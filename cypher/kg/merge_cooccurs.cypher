// Co-occurrence edges of the fast extractor (a kind of their own, not :REL facts): one
// per entity pair (keys ordered, h < t). `weight` counts the sentences naming both; a
// chunk adds its weight only the first time, so writing the same rows again sets nothing.
UNWIND $rows AS row
MATCH (h:Entity {domain: $domain, key: row.h})
USING INDEX h:Entity(domain, key)
MATCH (t:Entity {domain: $domain, key: row.t})
USING INDEX t:Entity(domain, key)
MERGE (h)-[r:CO_OCCURS]->(t)
ON CREATE SET r.domain = $domain, r.weight = 0, r.chunk_ids = [], r.extractor = 'spacy'
WITH r, row, [i IN range(0, size(row.chunks) - 1) WHERE NOT row.chunks[i] IN r.chunk_ids]
     AS new
WHERE size(new) > 0
SET r.weight = r.weight + reduce(s = 0, i IN new | s + row.ws[i]),
    r.chunk_ids = r.chunk_ids + [i IN new | row.chunks[i]]
