MATCH (h:Entity {domain: $domain})-[r:REL]->(t:Entity)
RETURN h.key AS h, r.predicate AS r, t.key AS t, r.kind AS k, r.chunk_ids AS chunks,
       r.confidence AS conf, coalesce(r.extractor, 'llm') AS x, r.score AS score,
       r.freq AS freq, r.assertions AS assertions
ORDER BY h, r, t
