// Test fixture statement: the (chunk)-[:MENTIONS]->(entity) pairs of one domain.
MATCH (c:Chunk)-[:MENTIONS]->(e:Entity {domain: $domain})
RETURN c.id AS chunk, e.key AS key
