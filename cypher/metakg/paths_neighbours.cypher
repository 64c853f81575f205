// kg-paths (metakg.paths), the one read per question: for each entity of $keys (the
// question's seeds and its options' entities), its degree over :REL and its first $cap
// edges: [other key, relation kind, entity is the head, ConceptNet score, source chunk ids
// when there are at most 3 (the fit's own-record rule needs no more), else []].
UNWIND $keys AS k
MATCH (e:Entity {domain: $domain, key: k})
USING INDEX e:Entity(domain, key)
CALL (e) {
  MATCH (e)-[r:REL]-(n:Entity)
  WHERE n <> e
  WITH r, n
  LIMIT $cap
  RETURN collect([n.key, r.kind, startNode(r) = e, r.score,
                  CASE WHEN size(r.chunk_ids) <= 3 THEN r.chunk_ids ELSE [] END]) AS edges
}
RETURN k AS key, COUNT { (e)-[:REL]-() } AS degree, edges
