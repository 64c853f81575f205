// One row per chunk with the keys of the entities its facts name.
UNWIND $rows AS row
MATCH (c:Chunk {id: row.chunk})
UNWIND row.keys AS key
MATCH (e:Entity {domain: $domain, key: key})
USING INDEX e:Entity(domain, key)
MERGE (c)-[:MENTIONS]->(e)
