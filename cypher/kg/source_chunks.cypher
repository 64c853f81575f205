// The chunks a domain graph holds of documents read from the sources $sources (sources
// an earlier build read that are not knowledge sources: `kgrag build` retracts them with
// kg/retract_chunks).
MATCH (d:Document {domain: $domain})-[:HAS_CHUNK]->(c:Chunk)
WHERE d.source IN $sources
RETURN c.id AS id, d.id AS doc
