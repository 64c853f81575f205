// Retract what the given chunks contributed to a domain graph (their source text changed
// since they were extracted): each fact they support loses them as sources and is deleted
// when none is left; the chunks go. Returns the keys of the entities they mentioned, for
// kg/delete_orphans. A fact's chunks are always among its two entities' mentions.
UNWIND $ids AS cid
MATCH (c:Chunk {domain: $domain, id: cid})
OPTIONAL MATCH (c)-[:MENTIONS]->(e:Entity)
WITH c, cid, collect(e) AS ents
CALL (cid, ents) {
  UNWIND ents AS e
  MATCH (e)-[r:REL|CO_OCCURS]-(:Entity)
  WHERE cid IN r.chunk_ids
  WITH DISTINCT r
  SET r.chunk_ids = [x IN r.chunk_ids WHERE x <> cid]
  WITH r
  WHERE size(r.chunk_ids) = 0
  DELETE r
}
DETACH DELETE c
WITH ents
UNWIND ents AS e
RETURN DISTINCT e.key AS key
