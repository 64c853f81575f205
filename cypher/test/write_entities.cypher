// Test fixture statement: upsert entities of one domain from parameters only.
UNWIND $rows AS row
MERGE (e:Entity {domain: $domain, key: row.key})
SET e.name = row.name
