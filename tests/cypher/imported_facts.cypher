// Test fixture statement: the facts one importer wrote into a domain, with their weights.
MATCH (h:Entity)-[r:REL {domain: $domain}]->(t:Entity)
WHERE r.extractor = $extractor
RETURN h.key AS h, r.predicate AS r, t.key AS t, r.kind AS k, r.score AS score,
       r.freq AS freq, r.assertions AS assertions, r.chunk_ids AS chunks
