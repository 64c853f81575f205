// Coverage, hop 1 (metakg.coverage): the neighbours over :REL, either direction, of each
// entity of $keys (a question's seeds and its option or title entities), at most $cap
// per entity (a hub's list is cut; the caller counts the cut lists), each with the
// relation kinds of the edges that join them (`kinds`, parallel to `neighbours`).
UNWIND $keys AS k
MATCH (e:Entity {domain: $domain, key: k})
USING INDEX e:Entity(domain, key)
CALL (e) {
  MATCH (e)-[r:REL]-(n:Entity)
  WHERE n <> e
  WITH n, collect(DISTINCT coalesce(r.kind, 'none')) AS kinds
  LIMIT $cap
  RETURN collect(n.key) AS neighbours, collect(kinds) AS kinds
}
RETURN k AS key, neighbours, kinds
