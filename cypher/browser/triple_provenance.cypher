// Where a fact comes from: the fact, the chunks it was extracted from, their documents, and
// the chunks' mentions of its two entities. One row per source chunk.
// Browser: `:params {domain: "commonsense", head: "milk", predicate: "stored in", tail: "refrigerator"}`
WITH $domain AS domain, $head AS head, $predicate AS predicate, $tail AS tail
MATCH (h:Entity {domain: domain, key: head})
USING INDEX h:Entity(domain, key)
MATCH (t:Entity {domain: domain, key: tail})
USING INDEX t:Entity(domain, key)
MATCH fact = (h)-[r:REL {predicate: predicate}]->(t)
UNWIND CASE WHEN size(r.chunk_ids) = 0 THEN [null] ELSE r.chunk_ids END AS chunk_id
OPTIONAL MATCH source = (d:Document)-[:HAS_CHUNK]->(c:Chunk {id: chunk_id})
OPTIONAL MATCH mention = (c)-[:MENTIONS]->(x:Entity)
WHERE x = h OR x = t
RETURN fact, source, collect(mention) AS mentions, chunk_id, c.text AS text,
       d.title AS title, c.source AS file, c.line AS line
