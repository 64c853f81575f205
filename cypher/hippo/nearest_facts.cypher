// kg-ppr recognition (HippoRAG 2, sec. 3.2 "query to triple"): the $k facts of $domain
// nearest the query vector, from the $candidates nearest of every domain (the index
// cannot filter before ranking). Each end comes with the number of chunks that mention
// it (node specificity, the divisor of its reset weight).
CALL db.index.vector.queryRelationships('fact_embedding', $candidates, $embedding)
YIELD relationship AS r, score
WHERE r.domain = $domain
WITH r, score
ORDER BY score DESC
LIMIT $k
WITH startNode(r) AS h, r, endNode(r) AS t, score
RETURN h.key AS head, r.predicate AS predicate, t.key AS tail, score,
       COUNT { (:Chunk)-[:MENTIONS]->(h) } AS head_chunks,
       COUNT { (:Chunk)-[:MENTIONS]->(t) } AS tail_chunks
