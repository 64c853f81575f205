// HippoRAG 2's synonym edges (sec. 3.1): each entity of $keys is joined to its nearest
// entities of $domain (of the $candidates nearest of every domain, by the entity vector
// index) whose cosine is at least $threshold, at most $top_k of them. One undirected edge
// per pair, kept with its cosine; returns how many pairs were joined.
UNWIND $keys AS key
MATCH (e:Entity {domain: $domain, key: key})
USING INDEX e:Entity(domain, key)
CALL db.index.vector.queryNodes('entity_embedding', $candidates, e.embedding)
YIELD node, score
WITH e, node, score
WHERE node.domain = $domain AND node <> e AND score >= $threshold
WITH e, node, score
ORDER BY score DESC
WITH e, collect({n: node, s: score})[..$top_k] AS near
UNWIND near AS x
WITH e, x.n AS n, x.s AS s
WHERE elementId(e) < elementId(n)
MERGE (e)-[r:SYNONYM]-(n)
SET r.score = s, r.domain = $domain
RETURN count(r) AS pairs
