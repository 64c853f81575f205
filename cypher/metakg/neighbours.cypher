// One hop of MetaKGRAG's greedy walk (metakg.neo4j_source.CypherGraph.candidates).
// The unvisited neighbours of entity $key, over outgoing edges and (if $incoming)
// incoming ones, ranked by w_adjusted = w_original + adjustment:
//   w_original = sim(n, Q), the raw cosine in [-1, 1] (Neo4j's cosine function returns
//                (1 + cos) / 2, hence 2 * s - 1);
//   adjustment = $adjust[n.key] (±δ of Adjust), 0.0 for entities not in the map.
// Rows keep the stored orientation (head, predicate, tail). The rows that can win the hop
// (adjusted within $tie of the best) carry the neighbour's embedding, so the cycle can
// score the entity the walk takes without another round trip; $with_current also returns
// the current entity's (a walk started from a key). Other rows leave it out: the driver
// converts every float of a returned list one by one.
MATCH (e:Entity {domain: $domain, key: $key})
USING INDEX e:Entity(domain, key)
CALL (e) {
  MATCH (e)-[r:REL]->(n:Entity)
  RETURN r, n, 'out' AS direction
  UNION ALL
  MATCH (e)<-[r:REL]-(n:Entity)
  WHERE $incoming
  RETURN r, n, 'in' AS direction
}
WITH e, r, n, direction
WHERE n <> e AND n.domain = $domain AND n.embedding IS NOT NULL AND NOT n.key IN $visited
WITH e, r, n, direction, 2 * vector.similarity.cosine(n.embedding, $q) - 1 AS weight
WITH e, r, n, direction, weight, weight + coalesce($adjust[n.key], 0.0) AS adjusted
ORDER BY adjusted DESC, n.key, r.predicate
LIMIT $limit
WITH e, collect({r: r, n: n, direction: direction, weight: weight, adjusted: adjusted}) AS rows
UNWIND rows AS row
RETURN CASE row.direction WHEN 'out' THEN e.key ELSE row.n.key END AS head,
       row.r.predicate AS predicate,
       CASE row.direction WHEN 'out' THEN row.n.key ELSE e.key END AS tail,
       row.direction AS direction, row.n.key AS key, row.n.name AS name,
       row.weight AS weight, row.adjusted AS adjusted,
       CASE WHEN row.adjusted >= rows[0].adjusted - $tie THEN row.n.embedding END AS embedding,
       e.name AS current_name,
       CASE WHEN $with_current THEN e.embedding END AS current_embedding
