// The domain's co-occurrence edges for an export (`kgrag graph export`).
MATCH (h:Entity {domain: $domain})-[r:CO_OCCURS]->(t:Entity)
RETURN h.key AS h, t.key AS t, r.weight AS w, r.chunk_ids AS chunks
ORDER BY h, t
