// kg-ppr over the medical corpus (metakg.ppr.GraphPPR.scored_passages): as
// textrag/ppr_passages, but the passages are MedicalPassage nodes (MedQuAD answers): the
// medical graph's document `$doc_prefix + x` (medical:medquad_corpus:L12) is the passage
// `$passage_prefix + x` (medquad:L12). Records left out of the corpus (they repeat an
// evaluation question) have no passage and are left out here too.
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
MATCH (p:MedicalPassage {id: $passage_prefix + substring(d.id, size($doc_prefix))})
RETURN p.id AS id, p.title AS title, p.text AS text, score
ORDER BY score DESC, id
LIMIT $k
