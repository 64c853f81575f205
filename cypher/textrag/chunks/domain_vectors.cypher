// Every embedded passage of a domain with its vector: dense search over a domain is a
// matrix product in numpy (textrag.retrievers.DomainVectors), since Neo4j Community's
// vector index cannot filter by domain before ranking.
MATCH (p:ChunkPassage {domain: $domain})
WHERE p.embedding IS NOT NULL
RETURN p.id AS id, p.title AS title, p.text AS text, p.embedding AS embedding
ORDER BY p.id
