// The chunks a domain graph holds of the documents $docs (records a source now leaves
// out: `kgrag build` retracts them with kg/retract_chunks).
UNWIND $docs AS doc
MATCH (d:Document {id: doc})-[:HAS_CHUNK]->(c:Chunk {domain: $domain})
RETURN c.id AS id, d.id AS doc
