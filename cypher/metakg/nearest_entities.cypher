// MatchEntities and the +δ candidates of Adjust: for each vector of $vectors, the $k
// entities of $domain nearest to it, best first, one row per vector.
// The vector index is shared by every domain, so it is asked for $fetch (> $k) nodes and
// filtered here; `fetched` lets the caller see when other domains crowded the answer out
// (it then asks again with a wider fetch). The index only nominates: its scores are
// approximate (quantised vectors), so the domain's nodes are re-scored exactly and ranked.
// Scores are raw cosines (2 * s - 1). Only the first $embed hits of each vector carry
// their embedding (the start entities need it).
UNWIND range(0, size($vectors) - 1) AS i
CALL (i) {
  CALL db.index.vector.queryNodes('entity_embedding', $fetch, $vectors[i])
  YIELD node
  WITH collect(node) AS found
  CALL (found, i) {
    UNWIND found AS n
    WITH n
    WHERE n.domain = $domain
    WITH n, vector.similarity.cosine(n.embedding, $vectors[i]) AS s
    ORDER BY s DESC, n.key
    LIMIT $k
    RETURN collect({node: n, score: s}) AS hits
  }
  RETURN size(found) AS fetched, hits
}
RETURN i, fetched,
       [j IN range(0, size(hits) - 1) | {
          key: hits[j].node.key, name: hits[j].node.name, score: 2 * hits[j].score - 1,
          embedding: CASE WHEN j < $embed THEN hits[j].node.embedding END}] AS hits
ORDER BY i
