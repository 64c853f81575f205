// kg-ppr over a domain's chunk passages (metakg.ppr.GraphPPR.scored_passages): passages
// ranked by the PPR scores of the entities their chunks mention. $entities are
// {key, score}; each entity counts once per chunk (at most $per_entity chunks each); the
// passage of a chunk has the chunk's id. Score = sum of the mentioned entities' scores.
UNWIND $entities AS row
MATCH (e:Entity {domain: $domain, key: row.key})
USING INDEX e:Entity(domain, key)
CALL (e) {
  MATCH (c:Chunk)-[:MENTIONS]->(e)
  WITH DISTINCT c
  LIMIT $per_entity
  RETURN c
}
WITH c, sum(row.score) AS score
MATCH (p:ChunkPassage {id: c.id})
RETURN p.id AS id, p.title AS title, p.text AS text, score
ORDER BY score DESC, id
LIMIT $k
