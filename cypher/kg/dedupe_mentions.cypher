UNWIND $keys AS k
MATCH (e:Entity {domain: $domain, key: k})
USING INDEX e:Entity(domain, key)
MATCH (c:Chunk)-[m:MENTIONS]->(e)
WITH c, e, collect(m) AS ms
WHERE size(ms) > 1
FOREACH (x IN tail(ms) | DELETE x)
