// Vanilla KG-RAG: for each matched entity of $keys, its $k facts (either direction) whose
// other entity is most similar to the question $q (raw cosine), best first.
UNWIND range(0, size($keys) - 1) AS i
MATCH (e:Entity {domain: $domain, key: $keys[i]})
USING INDEX e:Entity(domain, key)
CALL (e) {
  MATCH (e)-[r:REL]-(n:Entity)
  WHERE n <> e AND n.domain = $domain AND n.embedding IS NOT NULL
  WITH r, n, 2 * vector.similarity.cosine(n.embedding, $q) - 1 AS score
  ORDER BY score DESC, n.key, r.predicate
  LIMIT $k
  RETURN startNode(r).key AS head, r.predicate AS predicate, endNode(r).key AS tail,
         n.key AS target, n.name AS name, score
}
RETURN e.key AS source, e.name AS source_name, head, predicate, tail, target, name, score
ORDER BY i, score DESC, target, predicate
