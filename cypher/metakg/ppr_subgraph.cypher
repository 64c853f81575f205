// kg-ppr (metakg.ppr.GraphPPR.subgraph): the 2-hop neighbourhood of the seed entities
// $seeds over :REL, either direction, in one round trip. At most $fanout neighbours per
// seed; each of those with at most $max_degree facts is expanded by at most $fanout2
// more (hubs stay nodes but are not expanded). One row: the seeds found, each with the
// number of chunks that mention it (HippoRAG's node specificity), and the edges as
// [key, key] pairs, one per fact (parallel facts repeat the pair).
CALL () {
  UNWIND $seeds AS k
  MATCH (s:Entity {domain: $domain, key: k})
  USING INDEX s:Entity(domain, key)
  RETURN collect(DISTINCT s) AS found
}
CALL (found) {
  UNWIND found AS s
  CALL (s) {
    MATCH (s)-[:REL]-(n:Entity)
    WHERE n <> s
    RETURN n
    LIMIT $fanout
  }
  RETURN collect([s.key, n.key]) AS first, collect(DISTINCT n) AS near
}
CALL (near) {
  UNWIND near AS n
  WITH n
  WHERE COUNT { (n)-[:REL]-() } <= $max_degree
  CALL (n) {
    MATCH (n)-[:REL]-(m:Entity)
    WHERE m <> n
    RETURN m
    LIMIT $fanout2
  }
  RETURN collect([n.key, m.key]) AS second
}
RETURN [s IN found | {key: s.key, mentions: COUNT { (:Chunk)-[:MENTIONS]->(s) }}] AS seeds,
       first + second AS edges
