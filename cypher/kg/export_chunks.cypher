MATCH (d:Document)-[:HAS_CHUNK]->(c:Chunk {domain: $domain})
RETURN c.id AS id, d.id AS doc, c.text AS text, c.source AS source, d.title AS title,
       c.line AS line
ORDER BY id
