// Think-on-Graph relation search: the distinct (predicate, direction) pairs leaving each
// beam entity of $keys towards entities not in $visited, with how many neighbours each
// reaches and the best raw cosine of those neighbours to the question $q. The caller
// shows the LLM the best $limit relations per entity.
UNWIND $keys AS key
MATCH (e:Entity {domain: $domain, key: key})
USING INDEX e:Entity(domain, key)
CALL (e) {
  MATCH (e)-[r:REL]->(n:Entity)
  RETURN r, n, 'out' AS direction
  UNION ALL
  MATCH (e)<-[r:REL]-(n:Entity)
  RETURN r, n, 'in' AS direction
}
WITH key, e, r, n, direction
WHERE n <> e AND n.domain = $domain AND NOT n.key IN $visited
WITH key, e.name AS name, r.predicate AS predicate, direction, count(n) AS neighbours,
     max(coalesce(2 * vector.similarity.cosine(n.embedding, $q) - 1, -1.0)) AS best
ORDER BY key, best DESC, predicate, direction
WITH key, name, collect({predicate: predicate, direction: direction, neighbours: neighbours,
                         best: best})[..$limit] AS relations
RETURN key, name, relations
