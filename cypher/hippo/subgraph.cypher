// kg-ppr (metakg.hippo): the 2-hop neighbourhood of the seed entities over :REL and
// :SYNONYM, either direction, in one round trip: at most $fanout neighbours per seed,
// each of those with at most $max_degree edges expanded by at most $fanout2 more. Edges
// come as [key, key, weight, kind]: a fact weighs 1, a synonym edge its cosine (the
// client keeps one edge per pair and kind).
CALL () {
  UNWIND $seeds AS k
  MATCH (s:Entity {domain: $domain, key: k})
  USING INDEX s:Entity(domain, key)
  RETURN collect(DISTINCT s) AS found
}
CALL (found) {
  UNWIND found AS s
  CALL (s) {
    MATCH (s)-[e:REL|SYNONYM]-(n:Entity)
    WHERE n <> s
    RETURN n, e
    LIMIT $fanout
  }
  RETURN collect([s.key, n.key, coalesce(e.score, 1.0), type(e)]) AS first,
         collect(DISTINCT n) AS near
}
CALL (near) {
  UNWIND near AS n
  WITH n
  WHERE COUNT { (n)-[:REL|SYNONYM]-() } <= $max_degree
  CALL (n) {
    MATCH (n)-[e:REL|SYNONYM]-(m:Entity)
    WHERE m <> n
    RETURN m, e
    LIMIT $fanout2
  }
  RETURN collect([n.key, m.key, coalesce(e.score, 1.0), type(e)]) AS second
}
RETURN [s IN found | s.key] AS seeds, first + second AS edges
