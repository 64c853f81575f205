// Coverage, hop 2 of the seeds (metakg.coverage): which entities of $wanted (the
// 1-neighbourhoods of the option entities not yet reached) are neighbours of the seeds'
// 1-hop frontier $frontier. Only the hits come back, never the whole 2-hop ball.
UNWIND $frontier AS k
MATCH (x:Entity {domain: $domain, key: k})
USING INDEX x:Entity(domain, key)
MATCH (x)-[:REL]-(y:Entity)
WHERE y.key IN $wanted
RETURN DISTINCT y.key AS key
