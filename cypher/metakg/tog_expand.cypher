// Think-on-Graph entity search: for each chosen relation of $picks ({key, predicate,
// direction}), the $limit unvisited entities it reaches that are most similar to $q.
UNWIND range(0, size($picks) - 1) AS i
WITH i, $picks[i] AS pick
MATCH (e:Entity {domain: $domain, key: pick.key})
USING INDEX e:Entity(domain, key)
CALL (e, pick) {
  CALL (e, pick) {
    MATCH (e)-[r:REL {predicate: pick.predicate}]->(n:Entity)
    WHERE pick.direction = 'out'
    RETURN r, n
    UNION ALL
    MATCH (e)<-[r:REL {predicate: pick.predicate}]-(n:Entity)
    WHERE pick.direction = 'in'
    RETURN r, n
  }
  WITH r, n
  WHERE n <> e AND n.domain = $domain AND NOT n.key IN $visited
  WITH r, n, coalesce(2 * vector.similarity.cosine(n.embedding, $q) - 1, -1.0) AS score
  ORDER BY score DESC, n.key
  LIMIT $limit
  RETURN startNode(r).key AS head, endNode(r).key AS tail, n.key AS target,
         n.name AS name, score
}
RETURN i, pick.key AS source, pick.predicate AS predicate, head, tail, target, name, score
ORDER BY i, score DESC, target
