// Source text units and their documents (provenance of every fact).
UNWIND $rows AS row
MERGE (c:Chunk {id: row.id})
ON CREATE SET c.domain = $domain, c.text = row.text, c.source = row.source, c.line = row.line
MERGE (d:Document {id: row.doc})
ON CREATE SET d.domain = $domain, d.source = row.source, d.title = row.title
MERGE (d)-[:HAS_CHUNK]->(c)
