// The stored vectors of some entities of a domain (entity resolution's candidates).
UNWIND $keys AS k
MATCH (e:Entity {domain: $domain, key: k})
USING INDEX e:Entity(domain, key)
RETURN e.key AS key, e.embedding AS embedding
