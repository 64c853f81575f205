// The chunks a domain graph holds of documents from a source under one of the folders
// $folders that this build does not read ($read: a file of the folder an earlier build
// read and the domain no longer reads). `kgrag build` retracts them with kg/retract_chunks.
MATCH (d:Document {domain: $domain})-[:HAS_CHUNK]->(c:Chunk)
WHERE any(f IN $folders WHERE d.source STARTS WITH f) AND NOT d.source IN $read
RETURN c.id AS id, d.id AS doc
