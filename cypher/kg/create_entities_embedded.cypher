// Fast path of merge_entities for entities that come with their vector (an export's
// float16 vectors): created and vector-indexed in one pass, never :Unembedded. Rows are
// unique by key; the element ids let create_facts and create_mentions skip the index.
UNWIND $rows AS row
CREATE (e:Entity {domain: $domain, key: row.key, name: row.name, aliases: row.aliases})
WITH e, row
CALL db.create.setNodeVectorProperty(e, 'embedding', row.embedding)
RETURN row.key AS key, elementId(e) AS id
