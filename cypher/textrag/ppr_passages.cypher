// kg-ppr (metakg.ppr.GraphPPR.scored_passages): passages ranked by the PPR scores of the
// entities their chunks mention. $entities are {key, score}; each entity counts once per
// document (at most $per_entity documents per entity); a document `$doc_prefix + x` is
// the corpus passage `$passage_prefix + x`, and documents without one are left out.
// Score = sum of the mentioned entities' scores; the $k best, ties by passage id.
UNWIND $entities AS row
MATCH (e:Entity {domain: $domain, key: row.key})
USING INDEX e:Entity(domain, key)
CALL (e) {
  MATCH (d:Document)-[:HAS_CHUNK]->(:Chunk)-[:MENTIONS]->(e)
  WHERE d.id STARTS WITH $doc_prefix
  WITH DISTINCT d
  LIMIT $per_entity
  RETURN d
}
WITH d, sum(row.score) AS score
MATCH (p:Passage {id: $passage_prefix + substring(d.id, size($doc_prefix))})
RETURN p.id AS id, p.title AS title, p.text AS text, score
ORDER BY score DESC, id
LIMIT $k
