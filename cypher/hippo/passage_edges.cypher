// kg-ppr passage nodes (HippoRAG 2, sec. 3.1 "context edges"): [passage id, entity key]
// for the passages whose chunks mention one of $entities (at most $per_entity documents
// each), and for the dense-seeded passages $passages, the entities their chunks mention.
// A document `$doc_prefix + x` is the passage `$passage_prefix + x`.
CALL () {
  UNWIND $entities AS key
  MATCH (e:Entity {domain: $domain, key: key})
  USING INDEX e:Entity(domain, key)
  CALL (e) {
    MATCH (d:Document)-[:HAS_CHUNK]->(:Chunk)-[:MENTIONS]->(e)
    WHERE d.id STARTS WITH $doc_prefix
    WITH DISTINCT d
    LIMIT $per_entity
    RETURN d
  }
  RETURN collect([$passage_prefix + substring(d.id, size($doc_prefix)), e.key]) AS near
}
CALL () {
  UNWIND $passages AS pid
  MATCH (d:Document {id: $doc_prefix + substring(pid, size($passage_prefix))})
  MATCH (d)-[:HAS_CHUNK]->(:Chunk)-[:MENTIONS]->(e:Entity)
  WITH DISTINCT pid, e
  RETURN collect([pid, e.key]) AS seeded
}
RETURN near + seeded AS pairs
