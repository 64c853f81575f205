// Coverage, hop 1 (metakg.coverage): the neighbours over :REL, either direction, of each
// entity of $keys (a question's seeds and its option or title entities), at most $cap
// per entity (a hub's list is cut; the caller counts the cut lists).
UNWIND $keys AS k
MATCH (e:Entity {domain: $domain, key: k})
USING INDEX e:Entity(domain, key)
CALL (e) {
  MATCH (e)-[:REL]-(n:Entity)
  WHERE n <> e
  WITH DISTINCT n
  LIMIT $cap
  RETURN collect(n.key) AS neighbours
}
RETURN k AS key, neighbours
