// After merging entities, facts with the same (head, predicate, tail) collapse into one
// whose chunk_ids are the union; self-loops left by a merge are removed.
UNWIND $keys AS k
MATCH (h:Entity {domain: $domain, key: k})
USING INDEX h:Entity(domain, key)
MATCH (h)-[r:REL]-()
WITH DISTINCT r
WITH startNode(r) AS s, endNode(r) AS e, r.predicate AS p, collect(r) AS rs
WITH s, e, rs
WHERE size(rs) > 1 OR s = e
WITH s, e, head(rs) AS first, tail(rs) AS extra
SET first.chunk_ids = reduce(acc = first.chunk_ids, x IN extra |
                             acc + [c IN x.chunk_ids WHERE NOT c IN acc])
FOREACH (x IN extra | DELETE x)
FOREACH (x IN CASE WHEN s = e THEN [first] ELSE [] END | DELETE x)
