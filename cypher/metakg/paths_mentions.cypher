// kg-paths (metakg.paths), the second read per question: for each option entity of
// $options, the source chunks (at most $cap, none whose id starts with one of $skip) that
// mention it together with at least one of the question's entities $seeds: the chunk id,
// its text (a question/answer record names its answer) and the seeds it mentions.
UNWIND $options AS o
MATCH (e:Entity {domain: $domain, key: o})
USING INDEX e:Entity(domain, key)
CALL (e) {
  MATCH (c:Chunk)-[:MENTIONS]->(e)
  WHERE NONE(p IN $skip WHERE c.id STARTS WITH p)
  WITH c
  LIMIT $cap
  MATCH (c)-[:MENTIONS]->(s:Entity {domain: $domain})
  WHERE s.key IN $seeds
  RETURN c.id AS chunk, c.text AS text, collect(DISTINCT s.key) AS seeds
}
RETURN o AS key, chunk, text, seeds
