// A domain's chunks as stored in its graph, with their document's title: what
// `kgrag corpus load --domain` indexes as passages for a graph built before passages were.
MATCH (d:Document)-[:HAS_CHUNK]->(c:Chunk {domain: $domain})
RETURN c.id AS id, coalesce(d.title, '') AS title, c.text AS text,
       coalesce(c.source, '') AS source, coalesce(c.line, 0) AS line
ORDER BY c.id
