// Stored as a float32 vector property (half the size of a list of doubles).
UNWIND $rows AS row
MATCH (e:Entity {domain: $domain, key: row.key})
WHERE e.embedding IS NULL
CALL db.create.setNodeVectorProperty(e, 'embedding', row.embedding)
