// Is a domain's graph built? Checked once per KG method instance before the first question.
// `indexed` (every domain's entities, from the label count) tells the caller how much of
// the shared vector index the domain is, hence how far to over-fetch from it.
OPTIONAL MATCH (d:Domain {name: $domain})
CALL () {
  MATCH (e:Entity {domain: $domain})
  RETURN count(e) AS entities, count(e.embedding) AS embedded
}
CALL () {
  MATCH ()-[r:REL {domain: $domain}]->()
  RETURN count(r) AS facts
}
CALL () {
  MATCH (x:Entity)
  RETURN count(x) AS indexed
}
RETURN d IS NOT NULL AS registered, entities, embedded, facts, indexed
