// Fast path of merge_mentions (a new domain): one row per chunk with the element ids of
// the entities its facts name (unique, from create_entities in the same write).
UNWIND $rows AS row
MATCH (c:Chunk {id: row.chunk})
UNWIND row.ids AS id
MATCH (e:Entity) WHERE elementId(e) = id
CREATE (c)-[:MENTIONS]->(e)
