// Co-occurrence edges from an export: created with their total weight and source chunks;
// an edge the domain already has is left as it is, so a re-import writes nothing.
UNWIND $rows AS row
MATCH (h:Entity {domain: $domain, key: row.h})
USING INDEX h:Entity(domain, key)
MATCH (t:Entity {domain: $domain, key: row.t})
USING INDEX t:Entity(domain, key)
MERGE (h)-[r:CO_OCCURS]->(t)
ON CREATE SET r.domain = $domain, r.weight = row.w, r.chunk_ids = row.chunks,
              r.extractor = 'spacy'
