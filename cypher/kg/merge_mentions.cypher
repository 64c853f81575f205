UNWIND $rows AS row
MATCH (c:Chunk {id: row.chunk})
MATCH (e:Entity {domain: $domain, key: row.key})
USING INDEX e:Entity(domain, key)
MERGE (c)-[:MENTIONS]->(e)
