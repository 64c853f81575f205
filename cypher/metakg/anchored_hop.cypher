// One hop of option-anchored retrieval (metakg.anchored, ours): from each entity of
// $frontier, its neighbours over :REL in either direction, not in $visited. Neighbours in
// $targets (an option's entities) come first and are always kept; the rest are ranked by
// cosine to $q (the question with its options) and cut at $cap per frontier entity, so a
// hub costs one capped list. Rows keep the stored orientation (head, predicate, tail).
// $exclude: source documents left out (a calibration question's own knowledge-source
// record, `kgrag reader trust`): a fact all of whose chunks come from them is not used.
UNWIND $frontier AS k
MATCH (x:Entity {domain: $domain, key: k})
USING INDEX x:Entity(domain, key)
CALL (x) {
  MATCH (x)-[r:REL]-(y:Entity)
  WHERE y <> x AND y.domain = $domain AND NOT y.key IN $visited
    AND (size($exclude) = 0 OR size(coalesce(r.chunk_ids, [])) = 0
         OR any(c IN r.chunk_ids WHERE NOT any(d IN $exclude WHERE c = d OR c STARTS WITH d + ':')))
  WITH r, y, y.key IN $targets AS hit,
       CASE WHEN y.embedding IS NULL THEN -1.0
            ELSE 2 * vector.similarity.cosine(y.embedding, $q) - 1 END AS s
  ORDER BY hit DESC, s DESC, y.key
  LIMIT $cap
  RETURN startNode(r).key AS head, r.predicate AS predicate, endNode(r).key AS tail,
         y.key AS key, y.name AS name, hit, s
}
RETURN x.key AS source, x.name AS source_name, head, predicate, tail, key, name, hit, s
