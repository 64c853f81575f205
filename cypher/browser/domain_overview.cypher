// A domain's graph at a glance: its $limit most connected entities and the facts among them.
// Browser: `:params {domain: "commonsense", limit: 25}`
WITH $domain AS domain, $limit AS lim
MATCH (e:Entity {domain: domain})
WITH e, lim
ORDER BY COUNT { (e)-[:REL]-() } DESC, e.key
WITH collect(e) AS ranked, lim
WITH ranked[..lim] AS hubs
UNWIND hubs AS h
OPTIONAL MATCH p = (h)-[r:REL]->(x:Entity)
WHERE x IN hubs
RETURN h, p, h.key AS key, h.name AS name, COUNT { (h)-[:REL]-() } AS degree,
       r.predicate AS predicate, x.key AS tail
