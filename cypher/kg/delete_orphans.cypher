// After kg/retract_chunks: delete the entities among $keys that no fact and no chunk
// names any more, and documents left without chunks.
CALL (){
  UNWIND $keys AS key
  MATCH (e:Entity {domain: $domain, key: key})
  WHERE NOT (e)-[:REL|CO_OCCURS]-() AND NOT ()-[:MENTIONS]->(e)
  DELETE e
  RETURN count(e) AS entities
}
CALL (){
  UNWIND $docs AS doc
  MATCH (d:Document {domain: $domain, id: doc})
  WHERE NOT (d)-[:HAS_CHUNK]->()
  DETACH DELETE d
  RETURN count(d) AS documents
}
RETURN entities, documents
