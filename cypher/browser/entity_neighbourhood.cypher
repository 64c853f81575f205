// An entity's neighbourhood: its facts in both directions, the facts of its most connected
// neighbours first, at most $limit of them.
// Browser: `:params {domain: "commonsense", key: "milk", limit: 50}`
WITH $domain AS domain, $key AS key, $limit AS lim
MATCH (e:Entity {domain: domain, key: key})
USING INDEX e:Entity(domain, key)
MATCH p = (e)-[r:REL]-(n:Entity)
WITH p, r, n, lim
ORDER BY COUNT { (n)-[:REL]-() } DESC, n.key, r.predicate
WITH collect({p: p, r: r}) AS facts, lim
UNWIND facts[..lim] AS f
WITH f.p AS p, f.r AS r
RETURN p, startNode(r).key AS head, startNode(r).name AS head_name, r.predicate AS predicate,
       endNode(r).key AS tail, endNode(r).name AS tail_name, size(r.chunk_ids) AS sources
