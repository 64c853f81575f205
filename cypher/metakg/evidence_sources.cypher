// The source chunks of evidence facts, with their document's title, for their source
// sentences or as whole passages (metakg.provenance): $facts are {i, head, predicate,
// tail} in stored orientation (entity keys); each fact gives at most $per_fact of its
// chunks (REL.chunk_ids, in extraction order). One round trip for a whole evidence set.
UNWIND $facts AS f
MATCH (h:Entity {domain: $domain, key: f.head})
USING INDEX h:Entity(domain, key)
MATCH (h)-[r:REL {predicate: f.predicate}]->(t:Entity {domain: $domain, key: f.tail})
UNWIND r.chunk_ids[0..$per_fact] AS cid
MATCH (c:Chunk {id: cid})
OPTIONAL MATCH (d:Document)-[:HAS_CHUNK]->(c)
RETURN f.i AS i, c.id AS chunk, c.text AS text, coalesce(d.title, '') AS title
ORDER BY i, chunk
