// Stored as a float32 vector property (half the size of a list of doubles); only for
// entities still marked :Unembedded, so re-running sets nothing.
UNWIND $rows AS row
MATCH (e:Entity {domain: $domain, key: row.key})
USING INDEX e:Entity(domain, key)
WITH e, row
WHERE e:Unembedded
CALL db.create.setNodeVectorProperty(e, 'embedding', row.embedding)
REMOVE e:Unembedded
