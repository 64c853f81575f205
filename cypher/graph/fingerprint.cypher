// What a domain graph's fingerprint is computed from (kg_builder.fingerprint): every entity
// key, every fact as one string (kg_builder.fingerprint.fact_key: length-prefixed head and
// predicate, then the tail; one string per fact is 2.5x faster to receive than a list),
// and the chunk count. One row, unsorted (the client sorts); 100k facts are ~5 MB.
CALL () { MATCH (e:Entity {domain: $domain}) RETURN collect(e.key) AS entities }
CALL () { MATCH (h:Entity {domain: $domain})-[r:REL]->(t:Entity)
          RETURN collect(toString(size(h.key)) + ':' + h.key + toString(size(r.predicate))
                         + ':' + r.predicate + t.key) AS facts }
CALL () { MATCH (c:Chunk {domain: $domain}) RETURN count(c) AS chunks }
RETURN entities, facts, chunks
